"""Time-series collections: measurements stored in buckets, read through a view.

`create {timeseries: {timeField, metaField?, granularity?}}` makes two things,
as the server does:

* `system.buckets.<coll>`: a clustered collection holding *buckets*, with the
  options `{validator, clusteredIndex: true, timeseries: {...}}`;
* `<coll>`: a view of `system.buckets.<coll>` whose pipeline is
  `[{$_internalUnpackBucket: {timeField, metaField?, bucketMaxSpanSeconds}}]`.
  listCollections shows it with `type: "timeseries"`.

An insert into `<coll>` adds each measurement to an open bucket of the same
`meta` value whose span (`bucketMaxSpanSeconds` from its rounded minimum
time) covers the measurement's time and that holds fewer than 1000
measurements; otherwise a new bucket starts.  A bucket (version 1: one column
per field, keyed "0", "1", ...) is

    {_id: ObjectId(<rounded min time>...), control: {version: 1, min: {...}, max: {...}},
     meta: <metaField value>, data: {<field>: {"0": v0, "1": v1, ...}, ...}}

A new bucket is an insert into the buckets collection; a measurement added to
one is an update (a `$v: 2` diff), as the oplog shows them.  Measurements
have no unique `_id` (two with the same `_id` are both kept).  Reads unpack
each bucket: the time field first, then the meta field, then the other
fields in column order (BucketUnpacker::getNext).  Change streams exclude the
system.buckets namespace, and a change stream on the view is refused like
one on any view.

Not done: 8.0 writes compressed (version 2) buckets; updates and deletes of
measurements, and secondary indexes on the view, are refused as on a view.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from bson import ObjectId

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.collection_options import canonical
from mongosim.shardsim.create_collection import create_collection, ensure_collection
from mongosim.shardsim.operation_context import OpCtx
from mongosim.shardsim.query.stages import STREAM_STAGES
from mongosim.shardsim.query.values import hashable
from mongosim.shardsim.timeseries_index_conversion import create_default_index
from mongosim.shardsim.timeseries_minmax import Schema
from mongosim.shardsim.timeseries_write_util import (
    GRANULARITIES,
    MAX_COUNT,
    BucketWrites,
    append,
    bucket_oid,
    comparator,
    count_of,
    new_bucket,
    normalize_metadata,
    round_time,
    rounding_seconds,
    series_key,
    time_of,
    unpack_bucket,
)
from mongosim.shardsim.writes import WriteErrors, WriteSession, _write_concern_reply, insert_one

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

BUCKETS = "system.buckets."
ALLOWED_WITH = frozenset({"timeseries", "expireAfterSeconds", "storageEngine", "indexOptionDefaults", "collation",
                          "capped", "validator", "clusteredIndex"})


def buckets_of(name: str) -> str:
    return BUCKETS + name


def normalize_options(db: str, name: str, opts: dict) -> dict:
    """The create command's time-series checks; the `timeseries` options as the server stores them."""
    ts = opts["timeseries"]
    if not isinstance(ts, dict):
        raise MongoError("TypeMismatch", "'timeseries' must be a document")
    for field in opts:
        if field == "capped" and not opts[field]:
            continue
        if field not in ALLOWED_WITH or field in ("validator", "clusteredIndex", "capped"):
            raise MongoError("InvalidOptions", f"{db}.{name}: 'timeseries' is not allowed with '{field}'")
    for field in ts:
        if field not in ("timeField", "metaField", "granularity", "bucketMaxSpanSeconds", "bucketRoundingSeconds"):
            raise MongoError(40415, f"BSON field 'TimeseriesOptions.{field}' is an unknown field.")
    time_field = ts.get("timeField")
    if time_field is None:
        raise MongoError(40414, "BSON field 'TimeseriesOptions.timeField' is missing but a required field")
    if not isinstance(time_field, str):
        raise MongoError("TypeMismatch", "BSON field 'TimeseriesOptions.timeField' is the wrong type, expected "
                                         "type 'string'")
    if "." in time_field:
        raise MongoError("InvalidOptions", f"{db}.{name}: 'timeField' must be a top-level field and not contain a '.'")
    meta = ts.get("metaField")
    if meta is not None:
        if not isinstance(meta, str):
            raise MongoError("TypeMismatch", "BSON field 'TimeseriesOptions.metaField' is the wrong type, expected "
                                             "type 'string'")
        if meta == "_id":
            raise MongoError("InvalidOptions", "'metaField' cannot be \"_id\"")
        if meta == time_field:
            raise MongoError("InvalidOptions", "'metaField' cannot be the same as 'timeField'")
        if "." in meta:
            raise MongoError("InvalidOptions", f"{db}.{name}: 'metaField' must be a top-level field and not contain "
                                               "a '.'")
    out: dict[str, Any] = {"timeField": time_field}
    if meta is not None:
        out["metaField"] = meta
    span, rounding = ts.get("bucketMaxSpanSeconds"), ts.get("bucketRoundingSeconds")
    if span is not None or rounding is not None:
        if "granularity" in ts:
            raise MongoError("InvalidOptions", "Timeseries 'bucketMaxSpanSeconds' is not allowed with granularity "
                                               "other than 'seconds'")
        if span != rounding:
            raise MongoError("InvalidOptions", "Timeseries 'bucketMaxSpanSeconds' and 'bucketRoundingSeconds' fields "
                                               "must be present together and must be equal")
        out["bucketRoundingSeconds"] = int(rounding)
        out["bucketMaxSpanSeconds"] = int(span)
    else:
        granularity = ts.get("granularity", "seconds")
        if granularity not in GRANULARITIES:
            raise MongoError("BadValue", f"Enumeration value '{granularity}' for field 'TimeseriesOptions.granularity' "
                                         "is not a valid value.")
        out["granularity"] = granularity
        out["bucketMaxSpanSeconds"] = GRANULARITIES[granularity][1]
    return {**opts, "timeseries": out}


_rounding = rounding_seconds


def bucket_validator(time_field: str) -> dict:
    """The validator the server puts on a buckets collection (version 1 and 2 buckets)."""
    return {"$jsonSchema": {
        "bsonType": "object", "required": ["_id", "control", "data"],
        "properties": {
            "_id": {"bsonType": "objectId"},
            "control": {"bsonType": "object", "required": ["version", "min", "max"], "properties": {
                "version": {"bsonType": "number"},
                "min": {"bsonType": "object", "required": [time_field],
                        "properties": {time_field: {"bsonType": "date"}}},
                "max": {"bsonType": "object", "required": [time_field],
                        "properties": {time_field: {"bsonType": "date"}}},
                "closed": {"bsonType": "bool"}, "count": {"bsonType": "number", "minimum": 1}},
                "additionalProperties": False},
            "data": {"bsonType": "object"}, "meta": {}},
        "additionalProperties": False}}


def create(node: Node, ctx: OpCtx, db: str, name: str, opts: dict) -> None:
    """The buckets collection and the view over it."""
    ts = opts["timeseries"]
    bucket_opts: dict[str, Any] = {"validator": bucket_validator(ts["timeField"]), "clusteredIndex": True,
                                   "timeseries": ts}
    if "expireAfterSeconds" in opts:
        bucket_opts["expireAfterSeconds"] = opts["expireAfterSeconds"]
    create_default_index(node, ctx, create_collection(node, ctx, db, buckets_of(name), bucket_opts))
    views = ensure_collection(node, ctx, db, "system.views")
    view = {"_id": f"{db}.{name}", "viewOn": buckets_of(name), "pipeline": view_pipeline(ts)}
    insert_one(node, ctx, views, view, WriteSession(node, OpCtx(db, {})), 0)


def view_pipeline(ts: dict) -> list:
    """generateViewPipeline: the view's `$_internalUnpackBucket` for the options `ts`."""
    unpack: dict[str, Any] = {"timeField": ts["timeField"]}
    if "metaField" in ts:
        unpack["metaField"] = ts["metaField"]
    unpack["bucketMaxSpanSeconds"] = ts["bucketMaxSpanSeconds"]
    return [{"$_internalUnpackBucket": unpack}]


_BAD_TRANSITION = "Invalid transition for timeseries.granularity. Can only transition from 'seconds' to 'minutes' or " \
                  "'minutes' to 'hours'."


def modified_options(ts: dict, mod: dict) -> dict | None:
    """collMod's `timeseries` (granularity | bucketMaxSpanSeconds + bucketRoundingSeconds) applied to the
    options `ts` (timeseries_options.cpp applyTimeseriesOptionsModifications and its
    isTimeseriesGranularityValidAndUnchanged): the new options, or None when nothing changes; the
    server's InvalidOptions for a change it refuses (only ever to coarser buckets)."""
    target = mod.get("granularity")
    span, rounding = mod.get("bucketMaxSpanSeconds"), mod.get("bucketRoundingSeconds")
    if target is None and span is None and rounding is None:
        return None
    current = ts.get("granularity")
    if target is not None:
        if span is not None and span != GRANULARITIES[target][1]:
            raise MongoError("InvalidOptions", "Timeseries 'bucketMaxSpanSeconds' is not configurable to a value other "
                                               "than the default for the provided granularity")
        if rounding is not None:
            raise MongoError("InvalidOptions", "Timeseries 'bucketRoundingSeconds' is not configurable alongside the "
                                               "granularity parameter")
        if current is not None:
            if current == target:
                return None
            if current == "hours" or (current == "minutes" and target != "hours"):
                raise MongoError("InvalidOptions", _BAD_TRANSITION)
        span, rounding = GRANULARITIES[target][1], GRANULARITIES[target][0]
    else:
        if span is None or rounding is None:
            raise MongoError("InvalidOptions", "Timeseries 'bucketMaxSpanSeconds' and 'bucketRoundingSeconds' need to "
                                               "be set alongside each other")
        if span != rounding:
            raise MongoError("InvalidOptions", "Timeseries 'bucketRoundingSeconds' needs to be equal to "
                                               "'bucketMaxSpanSeconds'")
    current_span, current_rounding = int(ts["bucketMaxSpanSeconds"]), _rounding(ts)
    if current_span == span and current_rounding == rounding:
        return None
    if current_span > span:
        raise MongoError("InvalidOptions", "Timeseries 'bucketMaxSpanSeconds' needs to be equal or greater to "
                                           "transition")
    if current_rounding > rounding:
        raise MongoError("InvalidOptions", "Timeseries 'bucketRoundingSeconds' needs to be equal or greater to "
                                           "transition")
    out = {k: ts[k] for k in ("timeField", "metaField") if k in ts}
    if target is not None:
        out["granularity"] = target
    else:
        out["bucketRoundingSeconds"] = rounding
    out["bucketMaxSpanSeconds"] = span
    return out


MIXED_SCHEMA = "timeseriesBucketsMayHaveMixedSchemaData"


def set_mixed_schema(options: dict, flag: bool) -> dict:
    """The buckets collection's options with its mixed-schema flag set: 8.0 keeps it in the storage
    engine's options (`storageEngine.wiredTiger.configString: "app_metadata=(<flag>=true)"`,
    SERVER-91195), which listCollections shows."""
    engine = dict(options.get("storageEngine") or {})
    wired_tiger = dict(engine.get("wiredTiger") or {})
    wired_tiger["configString"] = f"app_metadata=({MIXED_SCHEMA}={'true' if flag else 'false'})"
    engine["wiredTiger"] = wired_tiger
    return {**options, "storageEngine": engine}


def options_of(node: Node, db: str, view: dict) -> dict | None:
    """The buckets collection's options when `view` is a time-series view (else None)."""
    backing = view.get("viewOn", "")
    if not backing.startswith(BUCKETS):
        return None
    coll = node.catalog.collection(db, backing)
    return coll.options if coll is not None and "timeseries" in coll.options else None


_LISTED = ("storageEngine", "indexOptionDefaults", "collation", "expireAfterSeconds", "timeseries")


def list_entry(node: Node, db: str, view: dict, name_only: bool) -> dict | None:
    """listCollections' entry for a time-series view (None when the view is an ordinary one)."""
    opts = options_of(node, db, view)
    if opts is None:
        return None
    info: dict[str, Any] = {"name": view["_id"].split(".", 1)[1], "type": "timeseries"}
    if not name_only:  # (the buckets' options a create may give, in the server's order)
        info["options"] = {k: opts[k] for k in canonical(opts) if k in _LISTED}
        info["info"] = {"readOnly": False}
    return info


# -- inserts ---------------------------------------------------------------------------------
def _open_bucket(coll: Any, ts: dict, doc: dict, when: datetime.datetime, owns: Any = None) -> dict | None:
    """The newest bucket of the measurement's series if it may take it (its span, its count); `owns`:
    whether this shard owns a bucket (an orphan left by a migration takes nothing)."""
    series = series_key(doc, ts)
    span = datetime.timedelta(seconds=int(ts["bucketMaxSpanSeconds"]))
    for bucket in reversed(list(coll.docs.values())):
        if (("meta", hashable(bucket["meta"])) if "meta" in bucket else None) != series:
            continue
        if owns is not None and not owns(coll.ns, bucket):
            continue
        control = bucket["control"]
        start = control["min"][ts["timeField"]]
        if start <= when < start + span and count_of(bucket, ts) < MAX_COUNT and \
                Schema.of(control["min"], control["max"]).update(doc, ts.get("metaField")):
            return bucket
        return None  # (a schema change, a time outside its span, or full: a new bucket)
    return None


async def insert(node: Node, ctx: OpCtx, name: str) -> dict:
    """An insert into the time-series collection `name`: each measurement into a bucket."""
    docs = ctx.cmd.get("documents")
    if not isinstance(docs, list):
        raise MongoError("FailedToParse", "BSON field 'insert.documents' is missing but a required field")
    if ctx.txn is not None:
        raise MongoError("OperationNotSupportedInTransaction", f"time-series insert failed: {ctx.db}.{name} :: caused "
                         "by :: Cannot insert into a time-series collection in a multi-document transaction: "
                         f"{ctx.db}.{name}")
    coll = ensure_collection(node, ctx, ctx.db, buckets_of(name))
    ts = coll.options["timeseries"]
    compare = comparator(coll)
    ws = WriteSession(node, ctx)
    n = 0
    errors = WriteErrors(ctx, ws)
    for i, doc in errors.statements(docs):
        with errors.statement(i):
            if ws.already(i) is not None:
                n += 1
                continue
            if not isinstance(doc, dict):
                raise MongoError("TypeMismatch", "document to insert must be an object")
            when = time_of(doc, ts)
            if "_id" not in doc:
                doc = {"_id": ObjectId(), **doc}
            meta = ts.get("metaField")
            if meta is not None and meta in doc:
                doc = {**doc, meta: normalize_metadata(doc[meta])}
            writes = BucketWrites(coll)
            bucket = _open_bucket(coll, ts, doc, when, node.owns if coll.shard_key else None)
            if bucket is None:
                writes.insert(new_bucket(bucket_oid(round_time(when, ts)), [doc], ts, compare))
            else:
                writes.update(bucket, *append(bucket, [doc], ts, compare))
            writes.commit(node, ctx, ws, i, group=False)
            n += 1
    return _write_concern_reply({"n": n}, errors.errors)


# -- reads -------------------------------------------------------------------------------------
def unpack(buckets: Iterable[dict], spec: dict) -> Iterator[dict]:
    """$_internalUnpackBucket: each bucket's measurements, the time field first, then the meta field."""
    if not isinstance(spec, dict) or not isinstance(spec.get("timeField"), str):
        raise MongoError(5346504, "The $_internalUnpackBucket stage requires a timeField parameter")
    time_field, meta_field = spec["timeField"], spec.get("metaField")
    for bucket in buckets:
        yield from unpack_bucket(bucket, time_field, meta_field)


STREAM_STAGES["$_internalUnpackBucket"] = unpack
