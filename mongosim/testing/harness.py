"""Apply workloads and faults to a running `mongosim.Cluster`, and check what a consumer made of them.

    with mongosim.Cluster(shards=2, port=0, instant_hwm=True) as cluster:
        client = pymongo.MongoClient(cluster.uri)
        source = apply_workload(cluster, client.db.c, workload, faults)
        ... your consumer reads client.db.c.watch(...) into a sink ...
        assert_sink_matches_source(sink, source)

`apply_workload` returns the collection's final contents as the workload
left them (the reference for "my sink ends identical to the source").
`reference_sink` replays change events into a dict the way a correct
consumer would.
"""

from __future__ import annotations

from typing import Any, Iterable

import pymongo
from pymongo.errors import OperationFailure, PyMongoError

from mongosim.testing.strategies import Fault, WriteOp


def apply_fault(cluster: Any, fault: Fault) -> None:
    """Apply one fault to a running Cluster (through its event loop)."""

    def run() -> None:
        f = cluster.core.faults
        if fault.kind == "delay":
            f.delay(fault.shard, fault.arg)
        elif fault.kind == "fail_getmore":
            f.fail(fault.shard, 1, fault.arg, commands=["getMore"])
        elif fault.kind == "drop_connection":
            f.drop_connection(fault.shard)
        elif fault.kind == "restart":
            f.restart(fault.shard)
        elif fault.kind == "pause_noop":
            f.pause_noop(fault.shard, True)
        elif fault.kind == "skew":
            f.skew(fault.shard, fault.arg)
        elif fault.kind == "clear":
            f.clear(fault.shard)

    cluster.call(run)


def _apply_one(coll: Any, op: WriteOp, session: Any = None) -> None:
    if op.kind == "insert":
        try:
            coll.insert_one({"_id": op.id, "v": op.value}, session=session)
        except pymongo.errors.DuplicateKeyError:
            if session is not None:
                raise
    elif op.kind == "update":
        coll.update_one({"_id": op.id}, {"$set": {"v": op.value}}, session=session)
    elif op.kind == "replace":
        coll.replace_one({"_id": op.id}, {"v": op.value, "replaced": True}, session=session)
    elif op.kind == "delete":
        coll.delete_one({"_id": op.id}, session=session)


def apply_workload(cluster: Any, coll: Any, workload: Iterable[WriteOp], faults: Iterable[Fault] = ()) -> dict:
    """Run the workload (retrying writes a fault interrupted) and return `{_id: doc}` of the result."""
    pending = list(faults)
    client = coll.database.client
    for i, op in enumerate(workload):
        while pending and pending[0].at <= i:
            apply_fault(cluster, pending.pop(0))
        for _attempt in range(5):
            try:
                if op.kind == "transaction":
                    with client.start_session() as s:
                        s.with_transaction(lambda s: [_apply_one(coll, o, s) for o in op.ops])
                else:
                    _apply_one(coll, op)
                break
            except (OperationFailure, PyMongoError) as err:
                if isinstance(err, pymongo.errors.DuplicateKeyError):
                    break  # a transaction that inserts an existing _id aborts: nothing committed
                continue
    cluster.call(lambda: cluster.core.faults.clear())
    return {d["_id"]: d for d in coll.find()}


def reference_sink(events: Iterable[dict], sink: dict | None = None) -> dict:
    """Replay change events into `{_id: document}` the way a correct consumer would."""
    sink = {} if sink is None else sink
    for ev in events:
        op = ev["operationType"]
        key = ev.get("documentKey", {}).get("_id")
        if op in ("insert", "replace"):
            sink[key] = ev["fullDocument"]
        elif op == "update":
            if ev.get("fullDocument") is not None:
                sink[key] = ev["fullDocument"]
            else:
                doc = dict(sink.get(key, {"_id": key}))
                desc = ev["updateDescription"]
                for f in desc.get("removedFields", []):
                    doc.pop(f, None)
                doc.update(desc.get("updatedFields", {}))
                sink[key] = doc
        elif op == "delete":
            sink.pop(key, None)
        elif op in ("drop", "dropDatabase", "invalidate"):
            sink.clear() if op != "invalidate" else None
    return sink


def assert_stream_consistent(events: list[dict]) -> None:
    """Events sorted by resume token, no duplicates."""
    keys = [e["_id"]["_data"] for e in events]
    assert keys == sorted(keys), "change events out of resume-token order"
    assert len(set(keys)) == len(keys), "duplicate change events"


def assert_sink_matches_source(sink: dict, source: dict) -> None:
    missing = sorted(set(source) - set(sink), key=str)
    extra = sorted(set(sink) - set(source), key=str)
    differ = sorted((k for k in set(sink) & set(source) if sink[k] != source[k]), key=str)
    assert not (missing or extra or differ), f"sink differs from source: missing {missing}, extra {extra}, different {differ}"
