"""$bucket: documents grouped into ranges of `groupBy` (document_source_bucket.cpp).

The server expands the stage into a `$group` whose `_id` is a `$switch` — the
bucket `[boundaries[i], boundaries[i+1])` whose range holds the `groupBy` value
gives its lower boundary, else `default` — followed by `$sort: {_id: 1}`; the
output fields default to `count: {$sum: 1}`.  A value in no bucket without a
`default` fails the `$switch` (40066).  Parse checks: boundaries an array of at
least two constants (40192, 40191) of one canonical type (40193), strictly
ascending (40194); `default` a constant (40195) outside the boundaries' range when
of their type (40199); `groupBy` a `$`-path or an operator object (40202).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.collation import compare_for
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.pipeline_context import PipelineContext
from mongosim.shardsim.query.stage_registry import register
from mongosim.shardsim.query.stages import compile_group
from mongosim.shardsim.query.values import MISSING, canonical_rank, type_name
from mongosim.shardsim.query.variables import constant_value
from mongosim.shardsim.query.sorting import sort_key_fn

__all__ = ["parse_bucket"]


@register("$bucket")
def parse_bucket(spec: Any, pctx: PipelineContext) -> Callable[[Iterable[dict]], Iterator[dict]]:
    if not isinstance(spec, dict):
        raise MongoError(40201, f"Argument to $bucket stage must be an object, but found type: {type_name(spec)}.")
    group_by = MISSING
    boundaries: list = []
    default = MISSING
    output: dict | None = None
    cmp = compare_for(pctx.collator)
    for name, arg in spec.items():
        if name == "groupBy":
            ok = (isinstance(arg, dict) and arg and next(iter(arg)).startswith("$")) or \
                 (isinstance(arg, str) and arg.startswith("$"))
            if not ok:
                raise MongoError(40202, "The $bucket 'groupBy' field must be defined as a $-prefixed path or an "
                                        f"expression, but found: {bson_str(arg)}.")
            group_by = arg
        elif name == "boundaries":
            if not isinstance(arg, list):
                raise MongoError(40200, f"The $bucket 'boundaries' field must be an array, but found type: "
                                        f"{type_name(arg)}.")
            for b in arg:
                v = constant_value(b)
                if v is MISSING:
                    raise MongoError(40191, "The $bucket 'boundaries' field must be an array of constant values, but "
                                            f"found value: {bson_str(b)}.")
                boundaries.append(v)
            if len(boundaries) < 2:
                raise MongoError(40192, "The $bucket 'boundaries' field must have at least 2 values, but found "
                                        f"{len(boundaries)} value(s).")
            for i in range(1, len(boundaries)):
                lo, hi = boundaries[i - 1], boundaries[i]
                if canonical_rank(lo) != canonical_rank(hi):
                    raise MongoError(40193, "All values in the the 'boundaries' option to $bucket must have the same "
                                            f"type. Found conflicting types {type_name(lo)} and {type_name(hi)}.")
                if not cmp(lo, hi) < 0:
                    raise MongoError(40194, f"The 'boundaries' option to $bucket must be sorted, but elements {i - 1} "
                                            f"and {i} are not in ascending order ({bson_str(lo)} is not less than "
                                            f"{bson_str(hi)}).")
        elif name == "default":
            v = constant_value(arg)
            if v is MISSING:
                raise MongoError(40195, f"The $bucket 'default' field must be a constant expression, but found: "
                                        f"{bson_str(arg)}.")
            default = v
        elif name == "output":
            if not isinstance(arg, dict):
                raise MongoError(40196, f"The $bucket 'output' field must be an object, but found type: "
                                        f"{type_name(arg)}.")
            output = arg
        else:
            raise MongoError(40197, f"Unrecognized option to $bucket: {name}.")
    if group_by is MISSING or not boundaries:
        raise MongoError(40198, "$bucket requires 'groupBy' and 'boundaries' to be specified.")
    if default is not MISSING and canonical_rank(default) == canonical_rank(boundaries[0]):
        if not (cmp(default, boundaries[0]) < 0 or cmp(default, boundaries[-1]) >= 0):
            raise MongoError(40199, "The $bucket 'default' field must be less than the lowest boundary or greater "
                                    "than or equal to the highest boundary.")
    branches = [{"case": {"$and": [{"$gte": [group_by, {"$literal": lo}]}, {"$lt": [group_by, {"$literal": hi}]}]},
                 "then": {"$literal": lo}} for lo, hi in zip(boundaries, boundaries[1:])]
    switch: dict = {"branches": branches}
    if default is not MISSING:
        switch["default"] = {"$literal": default}
    group_spec: dict = {"_id": {"$switch": switch}}
    group_spec.update(output if output is not None else {"count": {"$sum": 1}})
    group = compile_group(group_spec, pctx)
    key = sort_key_fn({"_id": 1}, pctx.collator)

    def run(stream: Iterable[dict]) -> Iterator[dict]:
        return iter(sorted(group(stream), key=key))

    return run
