"""Workloads and readers shared by the Spark tests."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

import pymongo
from bson.raw_bson import RawBSONDocument


def shard_across(client, db: str, coll: str, split_at: int = 50, to: str = "shard01") -> None:
    """`db.coll` sharded on {_id: 1} with the range [split_at, max) on `to` (the other shard is primary)."""
    client.admin.command("enableSharding", db)
    client.admin.command("shardCollection", f"{db}.{coll}", key={"_id": 1})
    client.admin.command("split", f"{db}.{coll}", middle={"_id": split_at})
    primary = client.config.databases.find_one({"_id": db})
    if primary is None or primary.get("primary") != to:
        client.admin.command("moveChunk", f"{db}.{coll}", find={"_id": split_at}, to=to)


def read_events(uri: str, start_token: str, n: int, *, db: str | None = None, coll: str | None = None,
                timeout: float = 30.0, **watch_kw) -> list[bytes]:
    """n events after `start_token` straight from the router (raw BSON): the reference for Spark."""
    import pymongo

    raw_client = pymongo.MongoClient(uri, document_class=RawBSONDocument)
    try:
        target = raw_client[db][coll] if coll else (raw_client[db] if db else raw_client)
        out: list[bytes] = []
        deadline = time.monotonic() + timeout
        with target.watch(start_after={"_data": start_token}, max_await_time_ms=100, **watch_kw) as cs:
            while len(out) < n:
                ev = cs.try_next()
                if ev is not None:
                    out.append(ev.raw)
                    continue
                if not cs.alive:
                    break
                assert time.monotonic() < deadline, f"only {len(out)} of {n} events"
        return out
    finally:
        raw_client.close()


def checkpoint_offsets(checkpoint: Path) -> dict[int, dict]:
    """batch id -> the source's end offset, from `<checkpoint>/offsets/<batch>`."""
    out = {}
    d = Path(checkpoint) / "offsets"
    if not d.exists():
        return out
    for f in d.iterdir():
        if f.name.isdigit():
            lines = f.read_text().splitlines()
            if len(lines) >= 3:
                out[int(f.name)] = json.loads(lines[-1])
    return out


def committed(checkpoint: Path) -> set[int]:
    d = Path(checkpoint) / "commits"
    return {int(f.name) for f in d.iterdir() if f.name.isdigit()} if d.exists() else set()


# (name, watch target, watch options, source options)
STREAMS = [
    ("cluster", None, {}, {}),
    ("cluster-expanded", None, {"show_expanded_events": True}, {"showExpandedEvents": "true"}),
    ("collection-match", ("eq", "orders"),
     {"pipeline": [{"$match": {"operationType": {"$ne": "update"}}}]},
     {"database": "eq", "collection": "orders",
      "pipeline": json.dumps([{"$match": {"operationType": {"$ne": "update"}}}])}),
    ("database", ("eq", None), {}, {"database": "eq"}),
]


def transactions(client, cluster, coll, ids_a: list, ids_b: list) -> None:
    """Two transactions on `coll`: one over both shards (prepare, then commitTransaction entries that
    point back at it), one large enough for a chain of `partialTxn` applyOps entries (the shards'
    applyOps limit lowered to 400 bytes while it commits)."""
    with client.start_session() as s, s.start_transaction():
        coll.update_one({"_id": ids_a[0]}, {"$set": {"txn": "both"}}, session=s)
        coll.update_one({"_id": ids_b[0]}, {"$set": {"txn": "both"}}, session=s)
    nodes = list(cluster.core.shards.values())
    for node in nodes:
        node.apply_ops_limit = 400
    try:
        with client.start_session() as s, s.start_transaction():
            for i in ids_a:
                coll.update_one({"_id": i}, {"$set": {"txn": "chain", "pad": "p" * 60}}, session=s)
    finally:
        for node in nodes:
            del node.apply_ops_limit


def workload(client, cluster) -> None:
    """DDL, CRUD on both shards, transactions (prepared, and a partialTxn chain), chunk migrations (to a
    shard without chunks, twice), renames and drops."""
    shard_across(client, "eq", "orders", split_at=50, to="shard01")
    orders = client.eq.orders
    orders.insert_many([{"_id": i, "n": i, "tags": ["a", "b"], "nested": {"x": i}} for i in range(100)])
    orders.update_many({"_id": {"$lt": 60}}, {"$inc": {"n": 1}, "$set": {"nested.y": True}})
    transactions(client, cluster, orders, list(range(10, 22)), [77])
    orders.update_one({"_id": 70}, {"$pop": {"tags": 1}, "$unset": {"nested": 1}})
    orders.replace_one({"_id": 5}, {"n": -5, "replaced": True})
    orders.delete_many({"_id": {"$gte": 90}})
    orders.create_index([("n", 1)])
    # every chunk back to shard00, then one to shard01 again: shard01 gets a chunk while owning none
    client.admin.command("moveChunk", "eq.orders", find={"_id": 50}, to="shard00")
    client.admin.command("moveChunk", "eq.orders", find={"_id": 50}, to="shard01")
    orders.update_many({"_id": {"$gte": 45, "$lt": 55}}, {"$set": {"moved": True}})
    log = client.eq.log
    log.insert_many([{"_id": 1000 + i, "msg": f"m{i}", "at": dt.datetime(2024, 1, 1, 0, 0, i)} for i in range(5)])
    log.rename("log2")
    client.eq.log2.drop()
    client.eq2.things.insert_many([{"_id": i} for i in range(3)])
    client.drop_database("eq2")
    orders.drop()  # sharded drop: the primary's entry; shard01's is fromMigrate


def drain(uri: str, start: str, target, watch_kw: dict, quiet: int = 3) -> list[bytes]:
    c = pymongo.MongoClient(uri, document_class=RawBSONDocument)
    try:
        t = c if target is None else (c[target[0]] if target[1] is None else c[target[0]][target[1]])
        out: list[bytes] = []
        nones = 0
        deadline = time.monotonic() + 60
        with t.watch(start_after={"_data": start}, max_await_time_ms=100, **watch_kw) as cs:
            while nones < quiet and cs.alive:
                ev = cs.try_next()
                if ev is None:
                    nones += 1
                else:
                    nones = 0
                    out.append(ev.raw)
                assert time.monotonic() < deadline
        return out
    finally:
        c.close()


def spark_row(row) -> tuple:
    """A collected Row as plain tuples, timestamps back to aware UTC (the session time zone is UTC)."""
    out = []
    for v in row:
        if isinstance(v, dt.datetime):  # collect() gives naive local time
            v = v.astimezone(dt.timezone.utc)
        elif isinstance(v, tuple):
            v = tuple(v)
        elif isinstance(v, bytearray):
            v = bytes(v)
        out.append(v)
    return tuple(out)
