"""$bucketAuto: `buckets` buckets of about equal size over the sorted `groupBy` values (document_source_bucket_auto.cpp).

The input is sorted by the `groupBy` value (missing is null); each bucket takes
round(n / buckets) documents (at least one; the last takes the rest), then every
further document with the same value as its last, so equal values never straddle
two buckets; a bucket's `max` is the next bucket's `min` (the last's, its largest
value).  With a `granularity`, values must be non-negative numbers (40258-40260) and
boundaries are rounded to the series (`granularity_rounder`): the max rounds up
(absorbing the documents below it), the next bucket starts where the previous ended,
the first's min rounds down.  Output: `{_id: {min, max}, <output fields>}` —
`count: {$sum: 1}` by default; the accumulators see the documents in sorted order.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.accumulators import parse_statement, to_double
from mongosim.shardsim.query.collation import compare_for, sort_key_for
from mongosim.shardsim.query.document_sources.granularity_rounder import rounder
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.pipeline_context import PipelineContext
from mongosim.shardsim.query.stage_registry import register
from mongosim.shardsim.query.stages import _compile
from mongosim.shardsim.query.values import MISSING, is_number, type_name

__all__ = ["parse_bucket_auto"]


def _round_half_away(x: float) -> int:
    return int(x + 0.5) if x >= 0 else -int(-x + 0.5)


@register("$bucketAuto")
def parse_bucket_auto(spec: Any, pctx: PipelineContext) -> Callable[[Iterable[dict]], Iterator[dict]]:
    if not isinstance(spec, dict):
        raise MongoError(40240, f"The argument to $bucketAuto must be an object, but found type: {type_name(spec)}")
    variables, checked = pctx.variables, pctx.checked
    group_by = None
    n_buckets = None
    statements = []
    rounding = None
    for name, arg in spec.items():
        if name == "groupBy":
            if isinstance(arg, dict) and arg and next(iter(arg)).startswith("$"):
                group_by = _compile(arg, variables, checked)
            elif isinstance(arg, str) and len(arg) > 1 and arg.startswith("$"):
                group_by = _compile(arg, variables, checked)
            else:
                raise MongoError(40239, "The $bucketAuto 'groupBy' field must be defined as a $-prefixed path or an "
                                        f"expression object, but found: {bson_str(arg)}")
        elif name == "buckets":
            if not is_number(arg) or isinstance(arg, bool):
                raise MongoError(40241, "The $bucketAuto 'buckets' field must be a numeric value, but found type: "
                                        f"{type_name(arg)}")
            f = to_double(arg)
            if f != f or f != int(f) or not -(2**31) <= f < 2**31:
                raise MongoError(40242, "The $bucketAuto 'buckets' field must be representable as a 32-bit integer, "
                                        f"but found {bson_str(f)}")
            n_buckets = int(f)
        elif name == "output":
            if not isinstance(arg, dict):
                raise MongoError(40244, "The $bucketAuto 'output' field must be an object, but found type: "
                                        f"{type_name(arg)}")
            for field, acc in arg.items():
                statements.append(parse_statement(field, acc, lambda e: _compile(e, variables, checked),
                                                  pctx.collator))
        elif name == "granularity":
            if not isinstance(arg, str):
                raise MongoError(40261, "The $bucketAuto 'granularity' field must be a string, but found type: "
                                        f"{type_name(arg)}")
            rounding = rounder(arg)
        else:
            raise MongoError(40245, f"Unrecognized option to $bucketAuto: {name}")
    if group_by is None or n_buckets is None:
        raise MongoError(40246, "$bucketAuto requires 'groupBy' and 'buckets' to be specified")
    if n_buckets <= 0:
        raise MongoError(40243, f"The $bucketAuto 'buckets' field must be greater than 0, but found: {n_buckets}")
    if not statements:
        statements.append(parse_statement("count", {"$sum": 1}, lambda e: _compile(e, variables, checked)))
    key_of = sort_key_for(pctx.collator)
    cmp = compare_for(pctx.collator)

    def extract(doc):
        v = group_by(doc, variables)
        if rounding is not None:
            if not is_number(v) or isinstance(v, bool):
                raise MongoError(40258, "$bucketAuto can specify a 'granularity' with numeric boundaries only, but "
                                        f"found a value with type: {type_name(v)}")
            f = to_double(v)
            if f != f:
                raise MongoError(40259, "$bucketAuto can specify a 'granularity' with numeric boundaries only, but "
                                        "found a NaN")
            if f < 0:
                raise MongoError(40260, "$bucketAuto can specify a 'granularity' with non-negative numbers only, but "
                                        "found a negative number")
        return None if v is MISSING else v

    def run(stream: Iterable[dict]) -> Iterator[dict]:
        entries = [(extract(doc), doc) for doc in stream]
        entries.sort(key=lambda e: key_of(e[0]))
        n = len(entries)
        if not n:
            return
        size = max(_round_half_away(n / n_buckets), 1)
        pos = 0
        previous_max = MISSING
        bucket_num = 0
        while pos < n and bucket_num < n_buckets:
            bucket_num += 1
            accs = [st.new({}, variables) for st in statements]  # (`n` sees no group key here)
            first_value = entries[pos][0]
            bmin = first_value
            if rounding is not None:
                bmin = previous_max if previous_max is not MISSING else rounding[1](first_value)
            last = bucket_num == n_buckets
            end = n if last else min(pos + size, n)
            bmax = entries[end - 1][0]
            # documents equal to the bucket's last value join it
            while end < n and cmp(entries[end][0], bmax) == 0:
                end += 1
            if rounding is not None:
                boundary = rounding[0](bmax)
                while end < n and (cmp(boundary, entries[end][0]) > 0 or cmp(bmax, entries[end][0]) == 0):
                    bmax = entries[end][0]
                    end += 1
                if to_double(boundary) == 0.0 and end < n:
                    bmax = rounding[1](entries[end][0])
                else:
                    bmax = boundary
            elif end < n:
                bmax = entries[end][0]
            for value, doc in entries[pos:end]:
                for st, acc in zip(statements, accs):
                    acc.add(st.arg(doc, variables) if st.arg is not None else 1)
            out: dict = {"_id": {"min": bmin, "max": bmax}}
            for st, acc in zip(statements, accs):
                v = acc.result()
                out[st.field] = None if v is MISSING else v
            yield out
            previous_max = bmax
            pos = end

    return run
