"""$densify: documents generated where a numeric or date sequence has gaps (document_source_densify.cpp).

`{$densify: {field, partitionByFields, range: {step, unit, bounds}}}` desugars, as on the server, into
`{$sort: {<partition fields>..., <field>: 1}}` (with bounds "full", the field alone) and
`$_internalDensify`, which walks the sorted stream:

- documents whose field is null or missing pass unchanged; any other value must be a number (no
  `unit`) or a date (with `unit`): 5733201 / 6053600;
- the values are a grid of `step`s (dates moved by `unit` in UTC, as $dateAdd does) anchored at the
  range's lower end: `[lo, hi]` explicit bounds (grid values `lo <= v < hi`), "partition" (each
  partition from its least to its greatest value) or "full" (every partition from the least to the
  greatest value of the whole input, the greatest included when it lies on the grid);
- before each input document come the grid values below it the partition has not yet reached, as
  new documents holding only the partition fields and the field; a document on the grid stands for
  its value.  The rest of a partition's range ("full" and explicit bounds with partitions) is
  generated after the last input document, partition by partition in first-seen order.  Without
  partitions and with explicit bounds the range is generated even from an empty input.

At most 500,000 documents are generated (internalQueryMaxAllowedDensifyDocs; 5897900).  Parse
errors are the server's (RangeStatement::parse: 5733401, 6586400, 5733402-5733410, 5876900,
5946800, 5946802, 5733404, 5733408; the IDL's 40414/40415).
"""

from __future__ import annotations

import datetime
from typing import Any, Callable, Iterable, Iterator

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.expression_date import UTC_ZONE, date_add
from mongosim.shardsim.query.expression_numeric import as_decimal
from mongosim.shardsim.query.document_sources.sub_pipeline import field_path, idl_fields
from mongosim.shardsim.query.expressions import field_path_get
from mongosim.shardsim.query.idl_errors import wrong_type
from mongosim.shardsim.query.pipeline_context import PipelineContext
from mongosim.shardsim.query.sorting import sort_key_fn
from mongosim.shardsim.query.stage_registry import register
from mongosim.shardsim.query.values import MISSING, compare, date_millis, hashable, is_number, type_name
from mongosim.shardsim.query.window_bounds import parse_time_unit
from mongosim.shardsim.query.window_functions import arith

__all__ = ["parse_densify", "desugar_densify", "DensifySpec", "MAX_GENERATED"]

MAX_GENERATED = 500_000  # internalQueryMaxAllowedDensifyDocs


class DensifySpec:
    def __init__(self, spec: Any) -> None:
        if not isinstance(spec, dict):
            raise MongoError("FailedToParse", f"The $densify stage specification must be an object, found "
                                              f"{type_name(spec)}")
        idl_fields("$densify", spec, ("field", "partitionByFields", "range"), ("field", "range"))
        field = spec["field"]
        if not isinstance(field, str):
            raise wrong_type("$densify.field", field, "string")
        field_path(field)
        self.field = field
        parts = spec.get("partitionByFields", [])
        if not isinstance(parts, list):
            raise wrong_type("$densify.partitionByFields", parts, "array")
        for i, p in enumerate(parts):
            if not isinstance(p, str):
                raise wrong_type(f"$densify.partitionByFields.{i}", p, "string")
            field_path(p)
        self.partitions: list[str] = list(parts)
        rng = spec["range"]
        if not isinstance(rng, dict):
            raise wrong_type("$densify.range", rng, "object")
        idl_fields("$densify.range", rng, ("step", "unit", "bounds"), ("step", "bounds"))
        self.range = rng
        step = rng["step"]
        if not is_number(step) or type(step) is bool or not as_decimal(step) > 0:
            raise MongoError(5733401, "The step parameter in a range statement must be a strictly positive numeric "
                                      "value")
        self.step = step
        self.unit: str | None = None
        if "unit" in rng:
            unit = rng["unit"]
            if not isinstance(unit, str):
                raise wrong_type("$densify.range.unit", unit, "string")
            d = as_decimal(step)
            if d != d.to_integral_value() or not -(2**63) <= d < 2**63:
                raise MongoError(6586400, "The step parameter in a range statement must be a whole number when "
                                          "densifying a date range")
            self.unit = parse_time_unit(unit)
        bounds = rng["bounds"]
        if isinstance(bounds, list):
            if len(bounds) != 2:
                raise MongoError(5733403, "A bounding array in a range statement must have exactly two elements")
            lo, hi = bounds
            if compare(lo, hi) > 0:
                raise MongoError(5733402, "A bounding array must be an ascending array of either two dates or two "
                                          "numbers")
            if is_number(lo) and type(lo) is not bool:
                if self.unit is not None:
                    raise MongoError(5733409, "Numeric bounds may not have unit parameter")
                if not (is_number(hi) and type(hi) is not bool):
                    raise MongoError(5733406, "A bounding array must contain either both dates or both numeric types")
                if not (type(lo) is type(hi) and type(lo) is type(step)):
                    raise MongoError(5876900, "Upper bound, lower bound, and step must all have the same type")
            elif isinstance(lo, datetime.datetime):
                if not isinstance(hi, datetime.datetime):
                    raise MongoError(5733405, "A bounding array must contain either both dates or both numeric types")
                if self.unit is None:
                    raise MongoError(5733410, "A bounding array of dates must specify a unit")
            else:
                raise MongoError(5946800, "Explicit bounds must be numeric or dates")
            self.bounds: Any = (lo, hi)
        elif isinstance(bounds, str):
            if bounds not in ("full", "partition"):
                raise MongoError(5946802, "Bounds string must either be 'full' or 'partition'")
            self.bounds = bounds
        else:
            raise MongoError(5733404, "The bounds in a range statement must be the string 'full', 'partition', or an "
                                      "ascending array of two numbers or two dates")
        if self.bounds == "partition" and not self.partitions:
            raise MongoError(5733408, "One cannot specify the bounds as 'partition' without specifying a non-empty "
                                      "array of partitionByFields. You may have meant to specify 'full' bounds.")

    def sort_pattern(self) -> dict:
        out = {} if self.bounds == "full" else {p: 1 for p in self.partitions}
        out[self.field] = 1
        return out

    def internal_spec(self) -> dict:
        rng: dict = {"step": self.step, "bounds": list(self.bounds) if isinstance(self.bounds, tuple) else self.bounds}
        if self.unit is not None:
            rng["unit"] = self.unit
        return {"field": self.field, "partitionByFields": list(self.partitions), "range": rng}


def desugar_densify(spec: Any, pctx: PipelineContext | None = None) -> list[dict]:
    parsed = DensifySpec(spec)
    return [{"$sort": {"sortKey": parsed.sort_pattern()}}, {"$_internalDensify": parsed.internal_spec()}]


def _set_path(doc: dict, parts: list[str], v) -> None:
    cur = doc
    for p in parts[:-1]:
        nxt = cur.get(p)
        if type(nxt) is list:
            raise MongoError(5733307, "$densify cannot generate fields nested inside arrays")
        if type(nxt) is not dict:
            if nxt is not None and nxt is not MISSING:
                raise MongoError(5733308, "$densify cannot overwrite non-object values with objects")
            nxt = cur[p] = {}
        cur = nxt
    cur[parts[-1]] = v


class _Densifier:
    """The walk of $_internalDensify over a sorted stream."""

    def __init__(self, spec: DensifySpec) -> None:
        self.spec = spec
        self.field_parts = tuple(spec.field.split("."))
        self.partition_parts = [tuple(p.split(".")) for p in spec.partitions]
        self.generated = 0

    def value_of(self, doc):
        v = field_path_get(doc, self.field_parts)
        if v is None or v is MISSING:
            return MISSING
        is_date = isinstance(v, datetime.datetime)
        if not (is_date or (is_number(v) and type(v) is not bool)):
            raise MongoError(5733201, "Densify field type must be numeric or a date")
        if self.spec.unit is not None and not is_date:
            raise MongoError(6053600, "Encountered non-date value in collection when step has a date unit.")
        if self.spec.unit is None and is_date:
            raise MongoError(6053600, "Encountered date value in collection when step does not have a date unit.")
        return v

    def step_from(self, v, k: int = 1):
        if self.spec.unit is not None:
            ms = date_add(date_millis(v), self.spec.unit, int(as_decimal(self.spec.step)) * k, UTC_ZONE)
            return datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)
        return arith("$add", v, self.spec.step if k == 1 else arith("$multiply", self.spec.step, k))

    def partition_doc(self, doc) -> dict:
        out: dict = {}
        for parts in self.partition_parts:
            v = field_path_get(doc, parts)
            if v is not MISSING:
                _set_path(out, list(parts), v)
        return out

    def make(self, pdoc: dict, v) -> dict:
        self.generated += 1
        if self.generated > MAX_GENERATED:
            raise MongoError(5897900, f"Generated {self.generated} documents in $densify, which is over the limit "
                                      f"of {MAX_GENERATED}. Increase the 'internalQueryMaxAllowedDensifyDocs' "
                                      "parameter to allow more generated documents")
        out = _copy(pdoc)
        _set_path(out, list(self.field_parts), v)
        return out

    def fill(self, pdoc: dict, nxt, below, stop_inclusive: bool = False) -> tuple[list[dict], Any]:
        """Grid values from `nxt` while below `below` (or equal when `stop_inclusive`): (docs, next grid value)."""
        out = []
        while True:
            c = compare(nxt, below)
            if c > 0 or (c == 0 and not stop_inclusive):
                break
            out.append(self.make(pdoc, nxt))
            nxt = self.step_from(nxt)
        return out, nxt

    def run(self, stream: Iterable[dict]) -> Iterator[dict]:
        spec = self.spec
        bounds = spec.bounds
        explicit = isinstance(bounds, tuple)
        # per partition: [partition doc, the next grid value it has not reached (None: not anchored yet)]
        states: dict = {}
        global_min = global_max = MISSING
        for doc in stream:
            v = self.value_of(doc)
            if v is MISSING:
                yield doc
                continue
            key = tuple(hashable(field_path_get(doc, p)) for p in self.partition_parts)
            st = states.get(key)
            if st is None:
                if bounds == "full":
                    if global_min is MISSING:
                        global_min = v
                    start = global_min
                elif explicit:
                    start = bounds[0]
                else:
                    start = v
                st = states[key] = [self.partition_doc(doc), start]
            if bounds == "full":
                global_max = v
            nxt = st[1]
            limit = v if not explicit or compare(v, bounds[1]) < 0 else bounds[1]
            gen, nxt = self.fill(st[0], nxt, limit)
            yield from gen
            if compare(v, nxt) == 0:
                nxt = self.step_from(nxt)
            st[1] = nxt
            yield doc
        if explicit:
            if not self.partition_parts and not states:
                states[()] = [{}, bounds[0]]
            for pdoc, nxt in states.values():
                gen, _ = self.fill(pdoc, nxt, bounds[1])
                yield from gen
        elif bounds == "full" and self.partition_parts:
            for pdoc, nxt in states.values():
                gen, _ = self.fill(pdoc, nxt, global_max, stop_inclusive=True)
                yield from gen


def _copy(d: dict) -> dict:
    return {k: _copy(v) if type(v) is dict else v for k, v in d.items()}


@register("$densify", desugar=desugar_densify)
def parse_densify(spec: Any, pctx: PipelineContext) -> Callable[[Iterable[dict]], Iterator[dict]]:
    parsed = DensifySpec(spec)
    key = sort_key_fn(parsed.sort_pattern(), pctx.collator)

    def run(stream: Iterable[dict]) -> Iterator[dict]:
        return _Densifier(parsed).run(sorted(stream, key=key))

    return run
