"""Indexes of a time-series collection (timeseries_index_schema_conversion_functions.cpp,
timeseries_commands_conversion_helper.cpp).

The indexes live on the buckets collection; the user names fields of measurements.  A key
pattern is translated field by field (createBucketsSpecFromTimeseriesSpec):

    metaField / metaField.x   -> meta / meta.x (any index type)
    timeField: 1 / -1         -> control.min.t: 1, control.max.t: 1 / control.max.t: -1, control.min.t: -1
                                 (a shard key: control.min.t alone)
    measurement: 1 / -1       -> control.min.x: 1, control.max.x: 1 / control.max.x: -1, control.min.x: -1
    measurement: "2dsphere"   -> data.x: "2dsphere_bucket"

and anything else on a measurement is refused.  createIndexes also refuses unique and text
indexes, sparse ones on measurements, a partialFilterExpression together with a collation, and
TTL indexes but on the time field under a partial filter on the meta field; a partial filter is
rewritten onto the buckets (timeseries_predicates.partial_filter).  An index that does not only
read the meta and time fields (or has a partial filter) keeps the user's spec as `originalSpec`.

listIndexes on the time-series collection shows each bucket index in the user's terms: its
`originalSpec`, else the bucket index with its key pattern mapped back
(createTimeseriesIndexSpecFromBucketsIndexSpec) and its other fields as they are (hidden, sparse,
collation, expireAfterSeconds...: so collMod's `hidden`, which changes the bucket index and not its
originalSpec, shows only on an index without one); a bucket index with no such form is not shown.  dropIndexes takes a user key pattern (translated)
or a name; a `hint` given as a user key pattern is translated the same way.

A time-series collection with a metaField gets at creation the index `{<meta>: 1, <time>: 1}`
(`_createDefaultTimeseriesIndex`), named `<meta>_1_<time>_1`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.values import is_number
from mongosim.shardsim.timeseries_predicates import BucketSpec, partial_filter

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node
    from mongosim.shardsim.operation_context import OpCtx

_MIN, _MAX = "control.min.", "control.max."


class InvalidSpec(Exception):
    """A user key pattern with no bucket form (the callers' error codes differ)."""


def bucket_key(ts: dict, key: dict, shard_key: bool = False) -> dict:
    """createBucketsSpecFromTimeseriesSpec."""
    if not key:
        raise InvalidSpec("BadValue: Empty object is not a valid index spec")
    first = next(iter(key))
    if first in ("$hint", "$natural"):
        raise InvalidSpec("BadValue: Invalid index spec (perhaps it's a valid hint, that was incorrectly passed to "
                          f"createBucketsSpecFromTimeseriesSpec): {bson_str(key)}")
    time_field, meta = ts["timeField"], ts.get("metaField")
    out: dict[str, Any] = {}
    for field, value in key.items():
        if field == time_field:
            if not is_number(value):
                raise InvalidSpec(f"BadValue: Invalid index spec for time-series collection: {bson_str(key)}. Indexes "
                                  f"on the time field must be ascending or descending (numbers only): "
                                  f"{field}: {bson_str(value)}")
            if value >= 0:
                out[_MIN + time_field] = value
                if not shard_key:
                    out[_MAX + time_field] = value
            else:
                out[_MAX + time_field] = value
                out[_MIN + time_field] = value
        elif meta is not None and field == meta:
            out["meta"] = value
        elif meta is not None and field.startswith(meta + "."):
            out["meta" + field[len(meta):]] = value
        elif value == "2dsphere":
            out["data." + field] = "2dsphere_bucket"
        elif not is_number(value):
            raise InvalidSpec(f"BadValue: Invalid index spec for time-series collection: {bson_str(key)}. Indexes on "
                              "measurement fields must be ascending or descending (numbers only), or '2dsphere': "
                              f"{field}: {bson_str(value)}")
        elif value >= 0:
            out[_MIN + field] = value
            out[_MAX + field] = value
        else:
            out[_MAX + field] = value
            out[_MIN + field] = value
    return out


def user_key(ts: dict, key: dict) -> dict | None:
    """createTimeseriesIndexSpecFromBucketsIndexSpec: a bucket key pattern in user terms, or None."""
    time_field, meta = ts["timeField"], ts.get("metaField")
    items = list(key.items())
    out: dict[str, Any] = {}
    i = 0
    while i < len(items):
        field, value = items[i]
        i += 1
        if field == _MIN + time_field:
            if not is_number(value):
                return None
            out[time_field] = value
            continue
        if field == _MAX + time_field:
            continue
        if meta is not None and field == "meta":
            out[meta] = value
            continue
        if meta is not None and field.startswith("meta."):
            out[meta + field[4:]] = value
            continue
        if field.startswith("data.") and value == "2dsphere_bucket":
            out[field[5:]] = "2dsphere"
            continue
        if not field.startswith((_MIN, _MAX)) or i >= len(items):
            return None
        second, second_value = items[i]
        i += 1
        if not second.startswith((_MIN, _MAX)) or not is_number(value) or not is_number(second_value):
            return None
        a, b = field[len(_MIN):], second[len(_MIN):]
        ascending = field.startswith(_MIN) and second.startswith(_MAX) and value >= 0 and second_value >= 0
        descending = field.startswith(_MAX) and second.startswith(_MIN) and value < 0 and second_value < 0
        if a != b or not (ascending or descending):
            return None
        out[a] = second_value
    return out


def user_index(ts: dict, spec: dict) -> dict | None:
    """createTimeseriesIndexFromBucketsIndex: listIndexes' entry for a bucket index, or None."""
    if "originalSpec" in spec:
        return dict(spec["originalSpec"])
    key = user_key(ts, spec.get("key") or {})
    if key is None:
        return None
    return {k: (key if k == "key" else v) for k, v in spec.items() if k != "originalSpec"}


def _reads_measurements(ts: dict, key: dict) -> bool:
    """shouldIncludeOriginalSpec: the bucket key pattern maps back only through measurement fields."""
    time_field, meta = ts["timeField"], ts.get("metaField")
    for field in key:
        if field in (_MIN + time_field, _MAX + time_field):
            continue
        if meta is not None and (field == "meta" or field.startswith("meta.")):
            continue
        return True
    return False


def bucket_index_specs(ts: dict, cmd: dict, specs: list) -> list[dict]:
    """makeTimeseriesCreateIndexesCommand: the bucket index spec of each user spec."""
    spec_of = BucketSpec(ts)
    out = []
    for spec in specs:
        if not isinstance(spec, dict):
            out.append(spec)  # (createIndexes refuses it as for any collection)
            continue
        built: dict[str, Any] = {}
        key: dict | None = None
        original_key: Any = None
        ttl = meta_partial = False
        keep_original = False
        for field, value in spec.items():
            if field == "partialFilterExpression":
                keep_original = True
                if "collation" in spec:
                    raise MongoError("IndexOptionsConflict", "On a time-series collection, partialFilterExpression "
                                                             "and collation arguments are incompatible")
                if not isinstance(value, dict):
                    raise MongoError(10065, "invalid parameter: expected an object (partialFilterExpression)")
                built[field], reads_measurements = partial_filter(value, spec_of)
                meta_partial = not reads_measurements
                continue
            if field == "sparse" and value:
                for k in (spec.get("key") or {}):
                    if k == ts["timeField"] or spec_of.is_meta_path(k):
                        continue
                    raise MongoError("InvalidOptions", "Sparse indexes are not supported on time-series measurements")
            if field == "expireAfterSeconds":
                ttl = True
                built[field] = value
                continue
            if field == "unique" and value:
                raise MongoError("InvalidOptions", "Unique indexes are not supported on time-series collections")
            if field == "key" and isinstance(value, dict):
                original_key = value
                if "text" in value.values():
                    raise MongoError("InvalidOptions", "Text indexes are not supported on time-series collections")
                try:
                    key = bucket_key(ts, value)
                except InvalidSpec as err:
                    raise MongoError("CannotCreateIndex", f"{err} Command request: {_request(cmd)}") from None
                keep_original = keep_original or _reads_measurements(ts, key)
                continue
            built[field] = value
        if ttl:
            if not meta_partial:
                raise MongoError("InvalidOptions", "TTL indexes on time-series collections require a "
                                                   "partialFilterExpression on the metaField")
            if len(original_key) != 1:
                raise MongoError("CannotCreateIndex", "TTL indexes are single-field indexes, compound indexes do not "
                                                      f"support TTL. Index spec: {bson_str(original_key)}")
            field, value = next(iter(original_key.items()))
            if field != ts["timeField"]:
                raise MongoError("InvalidOptions", "TTL indexes on non-time fields are not supported on time-series "
                                                   "collections")
            key = {_MIN + field: value}
        if key is not None:
            built["key"] = key
        elif "key" in spec:
            built["key"] = spec["key"]
        if keep_original:
            original = dict(spec)
            if "v" not in original:
                original["v"] = 2  # (validateIndexSpec adds the version the original spec omits, last)
            built["originalSpec"] = original
        out.append(built)
    return out


_GENERIC = frozenset({"lsid", "txnNumber", "$clusterTime", "$db", "$readPreference", "writeConcern", "readConcern",
                      "apiVersion", "apiStrict", "apiDeprecationErrors", "autocommit", "startTransaction", "maxTimeMS",
                      "comment", "shardVersion", "databaseVersion", "isTimeseriesNamespace"})


def _request(cmd: dict) -> str:
    """The command as the error quotes it (its own fields, then `$db`)."""
    out = {k: v for k, v in cmd.items() if k not in _GENERIC}
    if "$db" in cmd:
        out["$db"] = cmd["$db"]
    return bson_str(out)


def drop_target(ts: dict, cmd: dict, index: Any) -> Any:
    """makeTimeseriesDropIndexesCommand: a key pattern translated, names as they are."""
    if isinstance(index, dict):
        try:
            return bucket_key(ts, index)
        except InvalidSpec as err:
            raise MongoError("IndexNotFound", f"{err} Command request: {_request(cmd)}") from None
    return index


def hint(ts: dict, value: Any) -> Any:
    """timeseriesHintTranslation: a hint that is a user key pattern, as the bucket index's."""
    if isinstance(value, dict) and value and next(iter(value)) not in ("$hint", "$natural"):
        try:
            return bucket_key(ts, value)
        except InvalidSpec:
            return value
    return value


def default_index(ts: dict) -> dict | None:
    """The index a new time-series collection with a metaField gets."""
    meta = ts.get("metaField")
    if meta is None:
        return None
    return {"v": 2, "name": f"{meta}_1_{ts['timeField']}_1", "key": bucket_key(ts, {meta: 1, ts["timeField"]: 1})}


def create_default_index(node: Node, ctx: OpCtx, coll: Any) -> None:
    """The new buckets collection's default index (an index on an empty collection: one entry)."""
    from mongosim.oplog import entry as E
    from mongosim.shardsim.collation import index_collation

    spec = default_index(coll.options["timeseries"])
    if spec is None:
        return
    spec = index_collation(spec, coll)
    coll.add_index(spec)
    node.log(E.command_op(coll.db, {"createIndexes": coll.name, **spec}, ui=coll.uuid), ctx,
             from_migrate=bool(ctx.cmd.get("fromMigrate")))
