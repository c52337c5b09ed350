"""$setWindowFields: fields computed over windows of sorted partitions (document_source_set_window_fields.cpp).

The server desugars the stage (document_source_set_window_fields::create):

    {$setWindowFields: {partitionBy: P, sortBy: S, output: O}}
      ->  [{$addFields: {__internal_setWindowFields_partition_key: P}}]   (P not a plain field path)
          {$sort: {<P's path or the temporary field>: 1, ...S}}           (none without P and S)
          {$_internalSetWindowFields: {partitionBy: P', sortBy: S, output: O}}
          [{$unset: __internal_setWindowFields_partition_key}]

and `$_internalSetWindowFields` walks the sorted stream partition by partition (a change of the
partition key's value — missing counts as null, an array is TypeMismatch — starts the next), giving
each document the outputs of its window functions (shardsim/query/window_functions.py; a missing
result removes the field).  A constant partitionBy is no partition (an array constant is refused).

Memory: the server holds a partition in a SpillableCache of at most
internalDocumentSourceSetWindowFieldsMaxMemoryBytes (100 MB) and spills to disk beyond with
allowDiskUse; mongosim holds each partition in memory and neither limits nor spills.

Through mongos the stage runs in the merging part (router/cluster_aggregate.py): the router gathers
the shards' documents and sorts them itself, so sharded results equal a replica set's.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.collation import compare_for
from mongosim.shardsim.query.document_metadata import carry
from mongosim.shardsim.query.document_path_support import set_nested
from mongosim.shardsim.query.document_sources.sub_pipeline import idl_fields
from mongosim.shardsim.query.expressions import compile_expression, field_path_get
from mongosim.shardsim.query.idl_errors import wrong_type
from mongosim.shardsim.query.pipeline_context import PipelineContext
from mongosim.shardsim.query.sorting import parse_sort, sort_key_fn
from mongosim.shardsim.query.stage_registry import register
from mongosim.shardsim.query.stages import _set_computed
from mongosim.shardsim.query.values import MISSING, type_name
from mongosim.shardsim.query.variables import check_references, constant_value
from mongosim.shardsim.query.window_bounds import PartitionKeys
from mongosim.shardsim.query.window_functions import WindowFunction, parse_window_function

__all__ = ["parse_set_window_fields", "desugar_set_window_fields", "SetWindowFieldsSpec", "run_internal"]

PARTITION_KEY = "__internal_setWindowFields_partition_key"
_FIELDS = ("partitionBy", "sortBy", "output")


class _Ctx:
    """What window functions compile in: expressions (with the command's variables checked), the collation."""

    __slots__ = ("pctx", "collator", "variables")

    def __init__(self, pctx: PipelineContext) -> None:
        self.pctx = pctx
        self.collator = pctx.collator
        self.variables = pctx.variables

    def compile(self, expr):
        if self.pctx.checked:
            check_references(expr, self.pctx.variables or ())
        return compile_expression(expr)


class SetWindowFieldsSpec:
    """The parsed stage: partitionBy (None, or a field path, or a computed key), sortBy, outputs."""

    def __init__(self, name: str, spec: Any, pctx: PipelineContext) -> None:
        if not isinstance(spec, dict):
            raise MongoError("FailedToParse", f"the {name} stage specification must be an object, found "
                                              f"{type_name(spec)}")
        idl_fields(name, spec, _FIELDS, ("output",))
        for k in ("sortBy", "output"):
            if k in spec and not isinstance(spec[k], dict):
                raise wrong_type(f"{name}.{k}", spec[k], "object")
        ctx = _Ctx(pctx)
        self.sort_spec: dict | None = spec.get("sortBy")
        self.sort_by = parse_sort(self.sort_spec) if self.sort_spec is not None else None
        # partitionBy: None, ("path", "a.b") or ("expr", raw expression)
        self.partition: tuple[str, Any] | None = None
        if "partitionBy" in spec:
            p = spec["partitionBy"]
            ctx.compile(p)  # (parse errors now)
            const = constant_value(p)
            if const is not MISSING:
                if type(const) is list:
                    raise MongoError("TypeMismatch", "An expression used to partition cannot evaluate to value of "
                                                     "type array")
            elif isinstance(p, str) and p.startswith("$") and not p.startswith("$$"):
                self.partition = ("path", p[1:])
            else:
                self.partition = ("expr", p)
        self.outputs: list[tuple[str, WindowFunction]] = []
        paths: list[str] = []
        for field, fspec in spec["output"].items():
            for other in paths:
                if field == other or field.startswith(other + ".") or other.startswith(field + "."):
                    raise MongoError(6307900, "$setWindowFields 'output' specification contains two conflicting "
                                              "paths")
            paths.append(field)
            if field.startswith("$"):
                raise MongoError(16410, "FieldPath field names may not start with '$'. Consider using $getField or "
                                        "$setField.")
            self.outputs.append((field, parse_window_function(field, fspec, self.sort_by, ctx)))
        self.ctx = ctx

    def partition_path(self) -> str | None:
        if self.partition is None:
            return None
        return self.partition[1] if self.partition[0] == "path" else PARTITION_KEY

    def sort_pattern(self) -> dict | None:
        """The combined $sort the stage desugars into (None when neither partitionBy nor sortBy)."""
        out: dict = {}
        pp = self.partition_path()
        if pp is not None:
            out[pp] = 1
        for k, v in (self.sort_spec or {}).items():
            if k != pp:
                out[k] = v
        return out or None

    def internal_spec(self) -> dict:
        pp = self.partition_path()
        out: dict = {}
        if pp is not None:
            out["partitionBy"] = "$" + pp
        if self.sort_spec is not None:
            out["sortBy"] = self.sort_spec
        out["output"] = {field: fn.serialize() for field, fn in self.outputs}
        return out


def desugar_set_window_fields(spec: Any, pctx: PipelineContext | None = None) -> list[dict]:
    """The stages the server turns `$setWindowFields` into, in explain form."""
    parsed = SetWindowFieldsSpec("$setWindowFields", spec, pctx or PipelineContext())
    out: list[dict] = []
    if parsed.partition is not None and parsed.partition[0] == "expr":
        out.append({"$addFields": {PARTITION_KEY: parsed.partition[1]}})
    sort = parsed.sort_pattern()
    if sort is not None:
        out.append({"$sort": {"sortKey": sort}})
    out.append({"$_internalSetWindowFields": parsed.internal_spec()})
    if parsed.partition is not None and parsed.partition[0] == "expr":
        out.append({"$project": {PARTITION_KEY: False, "_id": True}})
    return out


def run_internal(parsed: SetWindowFieldsSpec, stream: Iterable[dict], partition_fn: Callable | None
                 ) -> Iterator[dict]:
    """$_internalSetWindowFields over a stream sorted by partition key and sortBy."""
    variables = parsed.ctx.variables
    same = compare_for(parsed.ctx.collator)
    sort_parts = tuple(parsed.sort_by[0][0].split(".")) if parsed.sort_by and len(parsed.sort_by) == 1 else None
    outputs = [(tuple(f.split(".")), fn) for f, fn in parsed.outputs]
    need_keys = any(fn.bounds.kind == "range" for _p, fn in outputs)

    def flush(part: list[dict]) -> Iterator[dict]:
        keys = PartitionKeys(field_path_get(d, sort_parts) for d in part) if need_keys and sort_parts else None
        columns = [fn.compute(part, keys, variables) for _p, fn in outputs]
        for i, d in enumerate(part):
            for (parts, _fn), col in zip(outputs, columns):
                d = set_nested(d, parts, col[i])  # (MutableDocument::setNestedField: missing removes)
            yield d

    part: list[dict] = []
    current = MISSING
    for doc in stream:
        if partition_fn is not None:
            key = partition_fn(doc, variables)
            if key is MISSING:
                key = None
            if type(key) is list:
                raise MongoError("TypeMismatch", "Cannot 'partitionBy' an expression of type array")
            if part and same(key, current) != 0:
                yield from flush(part)
                part = []
            current = key
        part.append(doc)
    if part:
        yield from flush(part)


@register("$setWindowFields", desugar=desugar_set_window_fields)
def parse_set_window_fields(spec: Any, pctx: PipelineContext) -> Callable[[Iterable[dict]], Iterator[dict]]:
    parsed = SetWindowFieldsSpec("$setWindowFields", spec, pctx)
    sort = parsed.sort_pattern()
    key = sort_key_fn(sort, pctx.collator) if sort is not None else None
    complex_key = parsed.partition is not None and parsed.partition[0] == "expr"
    partition_expr = compile_expression(parsed.partition[1]) if complex_key else None
    pp = parsed.partition_path()
    partition_fn = compile_expression("$" + pp) if pp is not None else None
    variables = pctx.variables

    def run(stream: Iterable[dict]) -> Iterator[dict]:
        docs: Iterable[dict] = stream
        if complex_key:
            def with_key(d):
                out = dict(d)
                _set_computed(out, (PARTITION_KEY,), partition_expr(d, variables))
                return carry(d, out)

            docs = [with_key(d) for d in docs]
        if key is not None:
            docs = sorted(docs, key=key)
        result = run_internal(parsed, docs, partition_fn)
        if complex_key:
            return (_without_key(d) for d in result)
        return result

    return run


def _without_key(d: dict) -> dict:
    out = dict(d)
    out.pop(PARTITION_KEY, None)
    return carry(d, out)


@register("$_internalSetWindowFields")
def parse_internal_set_window_fields(spec: Any, pctx: PipelineContext) -> Callable[[Iterable[dict]], Iterator[dict]]:
    parsed = SetWindowFieldsSpec("$_internalSetWindowFields", spec, pctx)
    p = spec.get("partitionBy") if isinstance(spec, dict) else None
    partition_fn = compile_expression(p) if parsed.partition is not None else None
    return lambda stream: run_internal(parsed, stream, partition_fn)
