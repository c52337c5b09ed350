"""$fill: null and missing fields filled in (document_source_fill.cpp).

The server rewrites `{$fill: {sortBy, partitionBy | partitionByFields, output}}` into other stages:

- each `output` field with `method: "locf"` or `"linear"` becomes an output of one
  `$setWindowFields` (`{$locf: "$f"}` / `{$linearFill: "$f"}`), with the same sortBy and the
  partition (`partitionByFields: [a, b]` -> `partitionBy: {a: "$a", b: "$b"}`);
- each field with `value: <expr>` becomes `{$addFields: {f: {$ifNull: ["$f", <expr>]}}}`, after it.

Checks: 6050203 (empty output), 6050200 (a field's spec not an object), 6050201 (both method and
value), 6050202 (unknown method), 6050204 (both partitionBy and partitionByFields), and the IDL's
unknown / missing fields (40415 / 40414).  The window functions' own checks follow ($linearFill
needs a single-field sortBy: 605001).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.document_sources.set_window_fields import desugar_set_window_fields, \
    parse_set_window_fields
from mongosim.shardsim.query.document_sources.sub_pipeline import idl_fields
from mongosim.shardsim.query.idl_errors import wrong_type
from mongosim.shardsim.query.pipeline_context import PipelineContext
from mongosim.shardsim.query.stage_registry import register
from mongosim.shardsim.query.stages import _add_fields, _map_stage
from mongosim.shardsim.query.values import type_name

__all__ = ["parse_fill", "desugar_fill", "fill_stages"]


def fill_stages(spec: Any) -> list[dict]:
    """The user-level stages `$fill` stands for: [$setWindowFields?, $addFields?]."""
    if not isinstance(spec, dict):
        raise MongoError("FailedToParse", f"The $fill stage specification must be an object, found {type_name(spec)}")
    idl_fields("$fill", spec, ("sortBy", "partitionBy", "partitionByFields", "output"), ("output",))
    output = spec["output"]
    if not isinstance(output, dict):
        raise wrong_type("$fill.output", output, "object")
    if not output:
        raise MongoError(6050203, "The output field in '$fill' must contain an object with at least one element")
    window_out: dict = {}
    add_fields: dict = {}
    for field, fspec in output.items():
        if not isinstance(fspec, dict):
            raise MongoError(6050200, "Each fill output specification must be an object with exactly one field")
        idl_fields("$fill", fspec, ("method", "value"))
        if "method" in fspec:
            if "value" in fspec:
                raise MongoError(6050201, "Each fill output specification must have exactly one of 'method' or "
                                          "'value' fields, not both")
            method = fspec["method"]
            if not isinstance(method, str):
                raise wrong_type("$fill.method", method, "string")
            if method not in ("locf", "linear"):
                raise MongoError(6050202, "Method must be either locf or linear")
            window_out[field] = {"$linearFill" if method == "linear" else "$locf": "$" + field}
        if "value" in fspec:
            add_fields[field] = {"$ifNull": ["$" + field, fspec["value"]]}
    swf: dict = {}
    if "sortBy" in spec:
        if not isinstance(spec["sortBy"], dict):
            raise wrong_type("$fill.sortBy", spec["sortBy"], "object")
        swf["sortBy"] = spec["sortBy"]
    if "partitionBy" in spec:
        if "partitionByFields" in spec:
            raise MongoError(6050204, "Maximum one of 'partitionBy' and 'partitionByFields can be specified in '$fill'")
        p = spec["partitionBy"]
        if not isinstance(p, (str, dict)):
            raise wrong_type("$fill.partitionBy", p, ("string", "object"))
        swf["partitionBy"] = p
    if "partitionByFields" in spec:
        fields = spec["partitionByFields"]
        if not isinstance(fields, list):
            raise wrong_type("$fill.partitionByFields", fields, "array")
        for i, f in enumerate(fields):
            if not isinstance(f, str):
                raise wrong_type(f"$fill.partitionByFields.{i}", f, "string")
        swf["partitionBy"] = {f: "$" + f for f in fields}
    out: list[dict] = []
    if window_out:
        swf["output"] = window_out
        out.append({"$setWindowFields": swf})
    if add_fields:
        out.append({"$addFields": add_fields})
    return out


def desugar_fill(spec: Any, pctx: PipelineContext | None = None) -> list[dict]:
    out: list[dict] = []
    for st in fill_stages(spec):
        if "$setWindowFields" in st:
            out.extend(desugar_set_window_fields(st["$setWindowFields"], pctx))
        else:
            out.append(st)
    return out


@register("$fill", desugar=desugar_fill)
def parse_fill(spec: Any, pctx: PipelineContext) -> Callable[[Iterable[dict]], Iterator[dict]]:
    steps: list[Callable] = []
    for st in fill_stages(spec):
        if "$setWindowFields" in st:
            steps.append(parse_set_window_fields(st["$setWindowFields"], pctx))
        else:
            f = _add_fields("$addFields", st["$addFields"], pctx.variables, pctx.checked)
            steps.append(lambda s, f=f: _map_stage(s, f))

    def run(stream: Iterable[dict]) -> Iterator[dict]:
        for step in steps:
            stream = step(stream)
        return iter(stream)

    return run
