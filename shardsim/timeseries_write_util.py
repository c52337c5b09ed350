"""Bucket documents and their writes (the server's timeseries_write_util.cpp, metadata.cpp).

A version-1 bucket, as makeNewDocument lays it out:

    {_id: <OID whose time is the rounded minimum time>,
     control: {version: 1, min: {...}, max: {...}}, meta: <meta value>?,
     data: {<field>: {"0": v0, "1": v1, ...}, ...}}

`control.min`/`control.max` are the MinMax of the measurements' fields but the meta field
(`timeseries_minmax.py`), the minimum time rounded down to `bucketRoundingSeconds`.  The meta
value is *normalized* first (metadata.cpp): the fields of every object in it, however deep,
sorted by name, so `{b: 1, a: 1}` and `{a: 1, b: 1}` are one series.

The writes a time-series update or delete makes to one bucket are applied together
(`performAtomicWrites`): outside a transaction, when the original bucket's write comes with
inserts or updates of other buckets, they are logged as one `applyOps` entry without session
fields (a WriteUnitOfWork that groups its oplog entries); a single write is logged alone; in a
transaction they join the transaction's operations.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from bson import ObjectId

from mongosim.oplog import entry as E
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.collation import command_collator
from mongosim.shardsim.query.collation.comparison_keys import compare_for
from mongosim.shardsim.query.values import MISSING, hashable
from mongosim.shardsim.timeseries_minmax import MinMax, diff

if TYPE_CHECKING:
    from mongosim.shardsim.catalog import Collection
    from mongosim.shardsim.node import Node
    from mongosim.shardsim.operation_context import OpCtx
    from mongosim.shardsim.writes import WriteSession

GRANULARITIES = {"seconds": (60, 3600), "minutes": (3600, 86400), "hours": (86400, 2592000)}  # rounding, max span
MAX_COUNT = 1000  # timeseriesBucketMaxCount
EPOCH = datetime.datetime(1970, 1, 1)


# -- the bucketing parameters ------------------------------------------------------------------
def rounding_seconds(ts: dict) -> int:
    return int(ts.get("bucketRoundingSeconds") or GRANULARITIES[ts.get("granularity", "seconds")][0])


def millis(d: datetime.datetime) -> int:
    return int((d.replace(tzinfo=None) - EPOCH) / datetime.timedelta(milliseconds=1))


def round_time(when: datetime.datetime, ts: dict) -> datetime.datetime:
    """roundTimestampToGranularity: the time rounded down to whole `bucketRoundingSeconds`."""
    seconds = millis(when) // 1000
    return EPOCH + datetime.timedelta(seconds=seconds - seconds % rounding_seconds(ts))


def bucket_oid(start: datetime.datetime) -> ObjectId:
    """A bucket's `_id`: the rounded minimum time in its first 4 bytes, then unique bytes."""
    seconds = int((start - EPOCH).total_seconds()) & 0xFFFFFFFF
    return ObjectId(seconds.to_bytes(4, "big") + ObjectId().binary[4:])


def time_of(measurement: dict, ts: dict) -> datetime.datetime:
    """The measurement's time (extractBucketingParameters: BadValue when it is not a date)."""
    when = measurement.get(ts["timeField"], MISSING)
    if not isinstance(when, datetime.datetime):
        raise MongoError("BadValue", f"'{ts['timeField']}' must be present and contain a valid BSON UTC datetime "
                                     "value")
    return when.replace(tzinfo=None)


def normalize_metadata(value: Any) -> Any:
    """normalizeMetadata: every object's fields sorted by name, at any depth (arrays keep their order)."""
    if isinstance(value, dict):
        return {k: normalize_metadata(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [normalize_metadata(v) for v in value]
    return value


def series_key(measurement: dict, ts: dict) -> Any:
    """The series a measurement belongs to: its normalized meta value (or none)."""
    meta = ts.get("metaField")
    if meta is None or meta not in measurement:
        return None
    return ("meta", hashable(normalize_metadata(measurement[meta])))


def comparator(coll: Collection | None) -> Any:
    """How the bucket's min/max compare values: under the collection's default collation."""
    return compare_for(command_collator(None, coll))


# -- building buckets --------------------------------------------------------------------------
def new_bucket(oid: ObjectId, measurements: list[dict], ts: dict, compare: Any = None) -> dict:
    """makeNewDocument: the version-1 bucket holding `measurements` (the meta of the first)."""
    meta_field = ts.get("metaField")
    mm = MinMax(compare)
    data: dict[str, dict] = {}
    for i, m in enumerate(measurements):
        mm.update(m, meta_field)
        for k, v in m.items():
            if k != meta_field:
                data.setdefault(k, {})[str(i)] = v
    time_field = ts["timeField"]
    low = mm.min()
    low[time_field] = round_time(low[time_field], ts)  # (below every time: it keeps its place)
    bucket: dict[str, Any] = {"_id": oid, "control": {"version": 1, "min": low, "max": mm.max()}}
    first = measurements[0]
    if meta_field is not None and meta_field in first:
        bucket["meta"] = normalize_metadata(first[meta_field])
    bucket["data"] = data
    return bucket


def count_of(bucket: dict, ts: dict) -> int:
    return len((bucket.get("data") or {}).get(ts["timeField"]) or {})


def append(bucket: dict, measurements: list[dict], ts: dict, compare: Any = None) -> tuple[dict, dict]:
    """`measurements` added to a version-1 bucket: the new bucket and its `$v: 2` diff
    (makeTimeseriesUpdateOpEntry: `scontrol` with the min/max changes, `sdata` with the new
    columns under `i` and the new values of existing columns as `s<field>: {i: {...}}`)."""
    meta_field = ts.get("metaField")
    control = bucket["control"]
    mm = MinMax.of(control["min"], control["max"], compare)
    data = {k: dict(v) for k, v in bucket["data"].items()}
    new_columns: dict[str, dict] = {}
    added: dict[str, dict] = {}
    n = count_of(bucket, ts)
    for i, m in enumerate(measurements, n):
        mm.update(m, meta_field)
        for k, v in m.items():
            if k == meta_field:
                continue
            key = str(i)
            if k in bucket["data"]:
                added.setdefault(k, {})[key] = v
            else:
                new_columns.setdefault(k, {})[key] = v
            data.setdefault(k, {})[key] = v
    low, high = mm.min(), mm.max()
    new = {**bucket, "control": {**control, "min": low, "max": high}, "data": data}
    d: dict[str, Any] = {}
    control_diff: dict[str, Any] = {}
    for side, doc in (("min", low), ("max", high)):
        sub = diff(control[side], doc)
        if sub:
            control_diff["s" + side] = sub
    if control_diff:
        d["scontrol"] = control_diff
    data_diff: dict[str, Any] = {}
    if new_columns:
        data_diff["i"] = new_columns
    for k, values in added.items():
        data_diff["s" + k] = {"i": values}
    d["sdata"] = data_diff
    return new, d


def unpack_bucket(bucket: dict, time_field: str, meta_field: str | None) -> Iterator[dict]:
    """A version-1 bucket's measurements as BucketUnpacker rebuilds them: the time field first, then the
    meta field, then the other fields in column order."""
    data = bucket.get("data") or {}
    times = data.get(time_field) or {}
    columns = [(f, col) for f, col in data.items() if f != time_field]
    for key, when in times.items():
        doc: dict[str, Any] = {time_field: when}
        if meta_field is not None and "meta" in bucket:
            doc[meta_field] = bucket["meta"]
        for field, column in columns:
            if key in column:
                doc[field] = column[key]
        yield doc


def measurements_of(bucket: dict, ts: dict) -> list[dict]:
    """The bucket's measurements, meta field included (what a write unpacks)."""
    return list(unpack_bucket(bucket, ts["timeField"], ts.get("metaField")))


# -- atomic writes ------------------------------------------------------------------------------
class BucketWrites:
    """The writes of one atomic unit: each (kind, old, new, oplog operation); the operations' document
    keys are the buckets' (the shard key's fields of a sharded buckets collection, then `_id`)."""

    def __init__(self, coll: Collection) -> None:
        self.coll = coll
        self.items: list[tuple[str, dict | None, dict | None, dict]] = []
        self.first_stmt: int | None = None  # the write that carries the statement's id (retryable)

    def insert(self, doc: dict) -> None:
        self.items.append(("insert", None, doc, E.insert_op(self.coll.ns, self.coll.uuid, doc, self.coll.document_key(doc))))

    def replace(self, old: dict, new: dict) -> None:
        op = E.replace_op(self.coll.ns, self.coll.uuid, new, self.coll.document_key(old))
        self.items.append(("replace", old, new, op))

    def update(self, old: dict, new: dict, d: dict) -> None:
        self.items.append(("replace", old, new, E.update_op(self.coll.ns, self.coll.uuid, d, self.coll.document_key(old))))

    def delete(self, old: dict) -> None:
        self.items.append(("delete", old, None, E.delete_op(self.coll.ns, self.coll.uuid, self.coll.document_key(old))))

    def __bool__(self) -> bool:
        return bool(self.items)

    def commit(self, node: Node, ctx: OpCtx, ws: WriteSession, index: int, group: bool,
               stmt_id: int | None = None, stmt_on: Iterable[int] = (0,)) -> None:
        """Apply and log the writes: in the transaction, alone, or (`group`) as one applyOps entry.
        In a transaction, `stmt_id` (a retryable write's statement run in an internal transaction) goes
        on the operations at the positions `stmt_on` (the original bucket's write, an upsert's insert)."""
        coll = self.coll
        ws.before_write()
        if ws.txn is not None:
            marked = set(stmt_on) if stmt_id is not None else set()
            for i, (kind, old, new, op) in enumerate(self.items):
                _apply(ws, coll, kind, old, new)
                ws.log({**op, "stmtId": stmt_id} if i in marked else op, index)
            return
        for kind, old, new, _op in self.items:
            if kind == "insert":
                coll.check_insert(new)
        if group and len(self.items) > 1:
            for kind, old, new, _op in self.items:
                _apply(ws, coll, kind, old, new)
            node.log(E.command_op("admin", E.apply_ops_o([op for *_x, op in self.items])), ctx)
            return
        for kind, old, new, op in self.items:
            _apply(ws, coll, kind, old, new)
            ws.log(op, index)


def _apply(ws: WriteSession, coll: Collection, kind: str, old: dict | None, new: dict | None) -> None:
    if kind == "insert":
        ws.insert(coll, new)
    elif kind == "replace":
        ws.replace(coll, old, new)
    else:
        ws.delete(coll, old)
