"""Predicates on measurements rewritten as predicates on buckets (the server's BucketSpec, bucket_spec.cpp).

A query on a time-series collection filters measurements; the buckets collection holds buckets.
A *loose* bucket-level predicate keeps every bucket that may hold a matching measurement (the
measurement-level filter still runs on what the buckets unpack into), so a planner can use the
buckets' indexes:

* a predicate on the meta field (or a subfield) holds for every measurement of a bucket or none:
  it is renamed to `meta` and kept whole (`{tag.a: 1}` -> `{meta.a: 1}`);
* a comparison on the time field or a measurement field bounds the bucket's `control.min` /
  `control.max` with the `$_internalExpr*` comparisons (full BSON order: a bucket's values of a
  field share one type, `timeseries_minmax.Schema`; an array on the path matches): `$gt` ->
  `control.max.<f> > v`, `$lt` -> `control.min.<f> < v`, `$eq` -> both; on the time field also
  the bounds the bucket span gives (`control.min.t > v - bucketMaxSpanSeconds` for `$gt`, ...) and,
  for an index's partial filter, the bucket `_id`'s time;
* `$in` is the `$or` of its `$eq`s, `$exists: true` the presence of `control.min/max.<f>`;
* within `$and` an ineligible child is dropped (the bucket filter is looser), within `$or` it makes
  the whole `$or` ineligible.

Ineligible: comparisons with null, objects or arrays, regex queries, strings under another collation
than the collection's, the time field against a non-date, and any other operator.  Under the
*error* policy (an index's partialFilterExpression) an ineligible predicate is error 5916301.

`split_meta` separates the conjuncts that read the meta field only (splitOutMetaOnlyPredicate):
a write whose filter is all meta applies to whole buckets.
"""

from __future__ import annotations

import datetime
import math
import re
from typing import Any

from bson import MaxKey, MinKey, ObjectId, Regex

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.fmt import bson_str

_MIN_PREFIX, _MAX_PREFIX = "control.min.", "control.max."
_TOP_LEVEL_OPAQUE = frozenset({"$expr", "$where", "$text", "$jsonSchema", "$comment", "$alwaysTrue", "$alwaysFalse",
                               "$sampleRate", "$nor"})
_COMPARISONS = {"$eq", "$gt", "$gte", "$lt", "$lte"}
_MAX_32BIT_MILLIS = 0xFFFFFFFF * 1000
_EPOCH = datetime.datetime(1970, 1, 1)


class Ineligible(Exception):
    """A predicate that has no bucket-level form (the error policy reports it)."""

    def __init__(self, why: str, pred: dict) -> None:
        super().__init__(why)
        self.why = why
        self.pred = pred


class BucketSpec:
    """The time-series options a rewrite needs: the time and meta fields, the bucket span."""

    def __init__(self, ts: dict) -> None:
        self.time_field: str = ts["timeField"]
        self.meta_field: str | None = ts.get("metaField")
        self.span = int(ts["bucketMaxSpanSeconds"])

    def is_meta_path(self, path: str) -> bool:
        meta = self.meta_field
        return meta is not None and (path == meta or path.startswith(meta + "."))

    def rename_meta(self, path: str) -> str:
        return "meta" + path[len(self.meta_field):]


def conjuncts(flt: dict) -> list[dict]:
    """The top-level conjuncts of a filter (its fields, and the members of a top-level `$and`)."""
    out: list[dict] = []
    for k, v in flt.items():
        if k == "$and" and isinstance(v, list):
            for sub in v:
                out.extend(conjuncts(sub) if isinstance(sub, dict) else [{k: v}])
        else:
            out.append({k: v})
    return out


def _meta_only(pred: dict, spec: BucketSpec) -> bool:
    """Whether `pred` reads nothing but the meta field."""
    if not pred:
        return False
    for k, v in pred.items():
        if k in ("$and", "$or"):
            if not isinstance(v, list) or not v or not all(isinstance(x, dict) and _meta_only(x, spec) for x in v):
                return False
        elif k.startswith("$") or not spec.is_meta_path(k):
            return False
    return True


def _renamed(pred: dict, spec: BucketSpec) -> dict:
    out: dict[str, Any] = {}
    for k, v in pred.items():
        if k in ("$and", "$or"):
            out[k] = [_renamed(x, spec) for x in v]
        else:
            out[spec.rename_meta(k)] = v
    return out


def split_meta(flt: dict, spec: BucketSpec) -> tuple[dict | None, dict | None]:
    """(the meta-only part renamed onto the buckets, the rest of the filter); None for an empty part."""
    if spec.meta_field is None:
        return None, (flt or None)
    meta: list[dict] = []
    rest: list[dict] = []
    for c in conjuncts(flt):
        (meta if _meta_only(c, spec) else rest).append(c)
    return _and([_renamed(m, spec) for m in meta]), _and(rest)


def _and(preds: list[dict]) -> dict | None:
    if not preds:
        return None
    if len(preds) == 1:
        return preds[0]
    return {"$and": preds}


# -- loose bucket-level predicates ---------------------------------------------------------------
def bucket_predicate(flt: dict, spec: BucketSpec, *, strings_ok: bool = True, strict: bool = False,
                     with_ids: bool = False) -> dict | None:
    """The loose bucket-level predicate of `flt` (None: every bucket).  `strings_ok`: the query's
    collation is the collection's; `strict`: raise Ineligible instead of dropping; `with_ids`: add
    the bucket `_id` bounds of time predicates."""
    ctx = _Ctx(spec, strings_ok, strict, with_ids)
    return ctx.pred(flt)


class _Ctx:
    def __init__(self, spec: BucketSpec, strings_ok: bool, strict: bool, with_ids: bool) -> None:
        self.spec = spec
        self.strings_ok = strings_ok
        self.strict = strict
        self.with_ids = with_ids

    def ineligible(self, why: str, pred: dict) -> None:
        if self.strict:
            raise Ineligible(why, pred)
        return None

    def pred(self, flt: dict) -> dict | None:
        items = list(flt.items())
        if len(items) != 1:
            return _and([p for p in (self.pred({k: v}) for k, v in items) if p is not None])
        key, value = items[0]
        if key == "$and":
            return _and([p for p in (self.pred(x) for x in value) if p is not None])
        if key == "$or":
            arms = [self.pred(x) for x in value]
            if any(a is None for a in arms):
                return None
            return arms[0] if len(arms) == 1 else {"$or": arms}
        if key.startswith("$"):
            return self.ineligible("can't handle this expression", flt)
        if self.spec.is_meta_path(key):
            return {self.spec.rename_meta(key): value}
        if isinstance(value, dict) and value and next(iter(value)).startswith("$"):
            if "$options" in value or "$regex" in value:
                return self.ineligible("can't handle a regex", flt)
            return _and([p for p in (self.leaf(key, op, arg) for op, arg in value.items()) if p is not None])
        if isinstance(value, (re.Pattern, Regex)):
            return self.ineligible("can't handle a regex", flt)
        return self.leaf(key, "$eq", value)

    def leaf(self, path: str, op: str, arg: Any) -> dict | None:
        if op in _COMPARISONS:
            return self.comparison(path, op, arg)
        if op == "$in" and isinstance(arg, list):
            if any(isinstance(v, (re.Pattern, Regex)) for v in arg):
                return self.ineligible("can't handle a regex", {path: {op: arg}})
            arms = [self.comparison(path, "$eq", v) for v in arg]
            if any(a is None for a in arms):
                return None
            return arms[0] if len(arms) == 1 else {"$or": arms}
        if op == "$exists" and arg not in (False, 0, None):
            return {"$and": [{_MIN_PREFIX + path: {"$exists": True}}, {_MAX_PREFIX + path: {"$exists": True}}]}
        return self.ineligible("can't handle this predicate", {path: {op: arg}})

    def comparison(self, path: str, op: str, v: Any) -> dict | None:
        pred = {path: {op: v}}
        if isinstance(v, (dict, list)):
            return self.ineligible("operand can't be an object or array", pred)
        if v is None:
            return self.ineligible("can't handle {$eq: null}", pred)
        if isinstance(v, (MinKey, MaxKey)) or type(v).__name__ == "Undefined":
            return self.ineligible("can't handle this operand", pred)
        if isinstance(v, str) and not self.strings_ok:
            return self.ineligible("can't handle string comparison with a non-default collation", pred)
        low, high = _MIN_PREFIX + path, _MAX_PREFIX + path
        if path != self.spec.time_field:
            if op == "$eq":
                return {"$and": [{low: {"$_internalExprLte": v}}, {high: {"$_internalExprGte": v}}]}
            if op in ("$gt", "$gte"):
                return {high: {"$_internalExpr" + op[1:].capitalize(): v}}
            return {low: {"$_internalExpr" + op[1:].capitalize(): v}}
        if not isinstance(v, datetime.datetime):
            return self.ineligible("This predicate will never be true, because the time field always contains a "
                                   "Date", pred)
        return self.time_comparison(op, v.replace(tzinfo=None), low, high)

    def time_comparison(self, op: str, v: datetime.datetime, low: str, high: str) -> dict:
        span = datetime.timedelta(seconds=self.spec.span)
        millis = (v - _EPOCH) // datetime.timedelta(milliseconds=1)
        ids = self.with_ids and 0 <= millis <= _MAX_32BIT_MILLIS
        if self.with_ids and not ids:
            if millis < 0 and op in ("$lt", "$lte", "$eq"):
                return {"$alwaysFalse": 1}
            if millis > _MAX_32BIT_MILLIS and op in ("$lt", "$lte"):
                return {"$alwaysTrue": 1}
        if op == "$eq":
            preds = [{low: {"$_internalExprLte": v}}, {low: {"$_internalExprGte": v - span}},
                     {high: {"$_internalExprGte": v}}, {high: {"$_internalExprLte": v + span}}]
            if ids:
                preds += [{"_id": {"$lte": _oid(millis, up=False, fill=0xFF)}},
                          {"_id": {"$gte": _oid(millis - self.spec.span * 1000, up=False, fill=0)}}]
        elif op in ("$gt", "$gte"):
            name = "$_internalExpr" + op[1:].capitalize()
            preds = [{high: {name: v}}, {low: {name: v - span}}]
            if ids:
                preds.append({"_id": {op: _oid(millis - self.spec.span * 1000, up=False,
                                               fill=0xFF if op == "$gt" else 0)}})
        else:
            name = "$_internalExpr" + op[1:].capitalize()
            preds = [{low: {name: v}}, {high: {name: v + span}}]
            if ids:
                preds.append({"_id": {op: _oid(millis, up=True, fill=0 if op == "$lt" else 0xFF)}})
        return {"$and": preds}


def _oid(millis: int, *, up: bool, fill: int) -> ObjectId:
    """An ObjectId of the date's second (rounded up when a millisecond part would otherwise be lost
    and `up`), its other 8 bytes all `fill`."""
    seconds = math.ceil(millis / 1000) if up else millis // 1000
    seconds = max(0, min(seconds, 0xFFFFFFFF))
    return ObjectId(seconds.to_bytes(4, "big") + bytes([fill]) * 8)


def partial_filter(flt: dict, spec: BucketSpec) -> tuple[dict, bool]:
    """An index's partialFilterExpression on the buckets (BucketSpec::pushdownPredicate, error policy):
    the meta-only part then the rest, and whether the rest reads a measurement or the time field."""
    meta, rest = split_meta(flt, spec)
    out: dict[str, Any] = {}
    if meta is not None:
        out.update(_explicit(meta))
    if rest is not None:
        try:
            pred = bucket_predicate(rest, spec, strict=True, with_ids=True)
        except Ineligible as err:
            raise MongoError(5916301, "Error translating non-metadata time-series predicate to operate on buckets: "
                             f"{err.why}: {bson_str(_explicit(err.pred))}") from None
        if pred:
            if "$and" in out and "$and" in pred:
                out["$and"] = out["$and"] + pred["$and"]
            else:
                out.update(pred)
    return out, rest is not None


def _explicit(pred: dict) -> dict:
    """A predicate in the server's serialized form: each leaf `{path: {$op: value}}`."""
    out: dict[str, Any] = {}
    for k, v in pred.items():
        if k in ("$and", "$or", "$nor"):
            out[k] = [_explicit(x) for x in v]
        elif k.startswith("$") or (isinstance(v, dict) and v and next(iter(v)).startswith("$")):
            out[k] = v
        elif isinstance(v, (re.Pattern, Regex)):
            out[k] = {"$regex": v}
        else:
            out[k] = {"$eq": v}
    return out


# -- the read pushdown -----------------------------------------------------------------------------
def unpack_options(stage: Any) -> dict | None:
    """The time-series options of a `$_internalUnpackBucket` stage (None when `stage` is not one)."""
    if not isinstance(stage, dict) or len(stage) != 1 or not isinstance(stage.get("$_internalUnpackBucket"), dict):
        return None
    spec = stage["$_internalUnpackBucket"]
    if not isinstance(spec.get("timeField"), str) or not isinstance(spec.get("bucketMaxSpanSeconds"), int):
        return None
    return spec


def pushdown(pipeline: list, default_collation: dict | None, collator: Any) -> list:
    """DocumentSourceInternalUnpackBucket's rewrite of `[$_internalUnpackBucket, $match, ...]`: a
    `$match` on the buckets first (the meta-only conjuncts renamed, bounds on control.min/max for
    the rest), which the query layer plans; the measurement-level `$match` stays after the unpack."""
    spec = unpack_options(pipeline[0]) if len(pipeline) > 1 else None
    second = pipeline[1] if spec is not None else None
    if spec is None or not (isinstance(second, dict) and len(second) == 1 and isinstance(second.get("$match"), dict)):
        return pipeline
    bucket_spec = BucketSpec(spec)
    meta, rest = split_meta(second["$match"], bucket_spec)
    strings_ok = (collator.spec if collator is not None else None) == (default_collation or None)
    loose = bucket_predicate(rest, bucket_spec, strings_ok=strings_ok) if rest is not None else None
    parts = [p for p in (meta, loose) if p is not None]
    if not parts:
        return pipeline
    return [{"$match": _and(parts)}, *pipeline]
