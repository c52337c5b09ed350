"""The TTL monitor: every 60 s (ttlMonitorSleepSecs), delete what has expired.

`run_once` is one pass over a node; the cluster's periodic reaper (mongosim/core.py, every 60 s)
runs it on every node.

What expires, for a collection's `expireAfterSeconds` (E) at wall time now:

* a TTL index (`{key: {<field>: 1}, expireAfterSeconds: E}`, one field): a
  document whose field holds a date — for an array, its earliest date — at or
  before now - E; documents without a date there never expire;
* a clustered collection: a document whose `_id` is a date before now - E;
* a time-series collection (on its buckets): a bucket whose newest possible
  measurement (its `_id`'s time + bucketMaxSpanSeconds) is before now - E.

Each removal is an ordinary delete, logged as one (change streams see them as
deletes), as the server's TTL deletes are.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from bson import ObjectId

from mongosim.shardsim.catalog import Collection
from mongosim.shardsim.operation_context import OpCtx
from mongosim.shardsim.writes import WriteSession, delete_document

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

def _earliest_date(value: Any) -> datetime.datetime | None:
    if isinstance(value, datetime.datetime):
        return value.replace(tzinfo=None)
    if isinstance(value, list):
        dates = [v.replace(tzinfo=None) for v in value if isinstance(v, datetime.datetime)]
        return min(dates) if dates else None
    return None


def _expiry_tests(coll: Collection) -> list:
    """(expireAfterSeconds, the document's expiry date or None) pairs that apply to `coll`."""
    tests = []
    opts = coll.options
    if "expireAfterSeconds" in opts:
        seconds = float(opts["expireAfterSeconds"])
        ts = opts.get("timeseries")
        if ts is not None:
            span = datetime.timedelta(seconds=int(ts.get("bucketMaxSpanSeconds", 3600)))

            def bucket_end(doc: dict, span: datetime.timedelta = span) -> datetime.datetime | None:
                oid = doc.get("_id")
                return oid.generation_time.replace(tzinfo=None) + span if isinstance(oid, ObjectId) else None

            tests.append((seconds, bucket_end))
        elif "clusteredIndex" in opts:
            tests.append((seconds, lambda doc: _earliest_date(doc.get("_id"))))
    for spec in coll.indexes:
        if "expireAfterSeconds" in spec and len(spec["key"]) == 1:
            field = next(iter(spec["key"]))
            tests.append((float(spec["expireAfterSeconds"]),
                          lambda doc, field=field: _earliest_date(_get(doc, field))))
    return tests


def _get(doc: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(doc, dict):
            return None
        doc = doc.get(part)
    return doc


def run_once(node: Node) -> int:
    """One pass over the node's collections; the number of documents deleted."""
    now = node.wall.wall()
    deleted = 0
    for coll in node.catalog.all_collections():
        tests = _expiry_tests(coll)
        if not tests:
            continue
        ctx = OpCtx(coll.db, {})
        ws = WriteSession(node, ctx)
        for doc in list(coll.scan()):
            for seconds, expiry in tests:
                when = expiry(doc)
                if when is not None and when <= now - datetime.timedelta(seconds=seconds):
                    delete_document(node, ctx, coll, doc, ws, 0)
                    deleted += 1
                    break
    return deleted
