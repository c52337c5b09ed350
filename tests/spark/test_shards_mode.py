"""`mongodb-changestream` with `mode=shards`: one partition per shard (`$_passthroughToShard`), batches
gated by the shards' minimum promise — each micro-batch, sorted by token, is the next stretch of the
router's merged stream: across a killed driver and a restart from the checkpoint, and across an
`addShard` in mid-stream."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mongosim.spark.schema import decode_event
from tests.spark.conftest import now_token
from tests.spark.helpers import checkpoint_offsets, committed, drain
from tests.spark.stream_driver import batch_writer


def tokens(raws: list[bytes]) -> list[str]:
    return [decode_event(r)["_id"]["_data"] for r in raws]


def batches_written(spark, sink: Path) -> dict[int, list[str]]:
    """batch id -> the tokens of that micro-batch (foreachBatch wrote each to `batch=<id>`)."""
    out = {}
    for d in sorted(sink.glob("batch=*")):
        if (d / "_SUCCESS").exists():
            out[int(d.name.split("=")[1])] = [r.token for r in spark.read.parquet(str(d)).select("token").collect()]
    return out


def test_batches_are_the_router_stream_across_a_killed_driver_and_an_added_shard(spark, three, killed_driver):
    cluster, client = three
    coll = client.s.c
    k = killed_driver["shards"]
    start, sink, ck, batch, planned = k.start, k.sink, k.checkpoint, k.batch, k.planned
    assert batch not in committed(ck)
    assert set(planned["shards"]) == {"shard00", "shard01", "shard02"}  # the offset: a vector of positions

    # meanwhile a shard joins, takes a chunk, and events come from it
    new = cluster.add_shard()
    client.admin.command("moveChunk", "s.c", find={"_id": 300}, to=new)
    coll.insert_many([{"_id": i, "v": i} for i in range(301, 340, 4)])  # on the new shard
    coll.update_many({"_id": {"$gte": 200}}, {"$set": {"late": True}})
    routed = drain(cluster.uri, start, ("s", None), {})
    expected = tokens(routed)
    assert len(expected) > 60 and {decode_event(r)["documentKey"]["_id"] for r in routed} >= set(range(301, 340, 4))

    # restarted from the checkpoint: the killed batch is replayed as planned, then batches of 9
    df = (spark.readStream.format("mongodb-changestream").option("uri", cluster.uri).option("database", "s")
          .option("startAfter", start).option("mode", "shards").option("maxEventsPerBatch", "9").load())
    q = (df.writeStream.foreachBatch(batch_writer(str(sink))).option("checkpointLocation", str(ck))
         .trigger(availableNow=True).start())
    q.awaitTermination(180)
    assert q.exception() is None
    offs = checkpoint_offsets(ck)
    assert offs[batch] == planned and batch in committed(ck)
    got = batches_written(spark, sink)
    assert sorted(got) == sorted(committed(ck)) == list(range(len(got)))
    # batch after batch, each sorted by token: exactly the router's merged stream
    assert [t for b in sorted(got) for t in sorted(got[b])] == expected
    assert max(len(t) for t in got.values()) <= 9
    # the new shard's partition appeared: the vector grew, from the batch where it joined
    joined = [b for b in sorted(offs) if new in offs[b]["shards"]]
    assert joined and new in offs[joined[0]].get("added", {}) and new not in offs[joined[0] - 1]["shards"]


def reader(uri: str, **options):
    from pyspark.sql.types import StringType, StructField, StructType

    from mongosim.spark.source import MongoChangeStreamDataSource

    schema = StructType([StructField("fullDocument", StringType())])
    return MongoChangeStreamDataSource({"uri": uri, **options}).streamReader(schema)


def run_batches(r, limit) -> list[list[bytes]]:
    """Plan and read batches until the reader has nothing more (the driver's loop, without Spark)."""
    out, s0 = [], r.initialOffset()
    while True:
        e = r.latestOffset(s0, limit)
        if e == s0:
            return out
        batch = [raw for p in r.partitions(s0, e)
                 for raw in (r.read_shard(p.shard, p.start, p.end) if hasattr(p, "shard") else r.read_raw(p.start, p.end))]
        out.append(sorted(batch, key=lambda raw: decode_event(raw)["_id"]["_data"]))
        s0 = e


@pytest.mark.parametrize("limit", ["all", 4])
def test_collection_streams_go_on_past_an_invalidate_like_router_mode(three, limit):
    """drop -> invalidate (on the primary shard) ends a collection stream; each shard's stream goes on,
    and the batches are what router mode reads (which reopens the merged stream after it)."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

    cluster, client = three
    start = now_token(client)
    client.admin.command("shardCollection", "s.inv", key={"_id": 1})
    client.admin.command("split", "s.inv", middle={"_id": 100})
    client.admin.command("moveChunk", "s.inv", find={"_id": 100}, to="shard02")
    inv = client.s.inv
    inv.insert_many([{"_id": i} for i in (1, 150, 2, 151)])
    inv.drop()
    inv.insert_many([{"_id": i} for i in (3, 4)])  # a new, unsharded collection of the same name
    limit_ = ReadAllAvailable() if limit == "all" else ReadMaxRows(limit)
    opts = {"database": "s", "collection": "inv", "startAfter": start}
    shards = run_batches(reader(cluster.uri, mode="shards", **opts), limit_)
    routed = run_batches(reader(cluster.uri, **opts), limit_)
    flat = [raw for b in shards for raw in b]
    assert flat == [raw for b in routed for raw in b]
    assert [decode_event(r)["operationType"] for r in flat] == ["insert"] * 4 + ["drop", "invalidate"] + ["insert"] * 2
    if limit != "all":
        assert [len(b) for b in shards] == [4, 4]
    # started after the invalidate token (not knowing its shard), every shard goes on from there
    after = tokens(flat)[5]
    rest = run_batches(reader(cluster.uri, mode="shards", database="s", collection="inv", startAfter=after), limit_)
    assert [raw for b in rest for raw in b] == flat[6:]


def test_mode_is_checked(three):
    cluster, _client = three
    with pytest.raises(ValueError, match="mode must be one of"):
        reader(cluster.uri, mode="mongos")


def test_an_executors_tasks_share_their_workers_client(three, monkeypatch):
    """On an executor each task's copy of the reader takes its worker's client (`client_cache`) and
    leaves it open: one client for all the shards' tasks, not one each.  The driver's reader keeps
    its own.  The batch is the same either way."""
    import pickle

    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from mongosim.spark import client_cache
    from mongosim.spark.shards_reader import ShardsStreamReader

    cluster, client = three
    start = now_token(client)
    client.s.shared.insert_many([{"_id": i} for i in range(12)])
    driver = reader(cluster.uri, mode="shards", database="s", collection="shared", startAfter=start)
    s0 = driver.initialOffset()
    end = driver.latestOffset(s0, ReadAllAvailable())
    parts = driver.partitions(s0, end)  # one per shard (three, or four once a test added one)
    assert len(parts) >= 3

    opened = []
    open_client = ShardsStreamReader._open_client
    monkeypatch.setattr(ShardsStreamReader, "_open_client", lambda self: opened.append(1) or open_client(self))

    def run_tasks() -> list[bytes]:
        out = []
        for p in parts:
            task = pickle.loads(pickle.dumps(driver))  # each task's own copy, as Spark ships it
            out += task.read_shard(p.shard, p.start, p.end)
        return sorted(out, key=lambda raw: decode_event(raw)["_id"]["_data"])

    on_driver = run_tasks()
    assert len(opened) == len(parts) and not client_cache._clients  # a client per task, each closed after it
    monkeypatch.setattr(client_cache, "on_executor", lambda: True)
    try:
        opened.clear()
        assert run_tasks() == on_driver and run_tasks() == on_driver
        assert len(opened) == 1 and list(client_cache._clients) == [cluster.uri]
        assert client_cache._clients[cluster.uri].admin.command("ping")["ok"] == 1  # left open for the next task
    finally:
        client_cache.close_all()
        driver.stop()
    assert len(on_driver) == 12


_COLLECTIONS = iter(range(10**6))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(placement=st.lists(st.sampled_from([0, 0, 0, 0, 1, 2]), min_size=1, max_size=60), limit=st.integers(1, 25))
@example(placement=[0, 1, 2] * 30, limit=20)  # every shard with more than a batch: n from each would be 60
def test_property_limited_batches_are_the_router_stream_and_probe_about_a_batch(three, placement, limit):
    """With maxEventsPerBatch n, over a random (skewed) spread of writes on the shards: every batch has
    at most n events, the batches are the router's stream, and planning a batch pulls about n tokens
    plus a share per shard (`_gate`), not n from every shard.  As in Spark, the batches are read by
    copies of the driver's reader, whose probes go on from plan to plan: one per shard, each token
    pulled once."""
    import pickle

    from pyspark.sql.streaming.datasource import ReadMaxRows

    from mongosim.spark import shards_reader

    cluster, client = three
    name = f"gate{next(_COLLECTIONS)}"
    client.admin.command("shardCollection", f"s.{name}", key={"_id": 1})
    client.admin.command("split", f"s.{name}", middle={"_id": 100})
    client.admin.command("split", f"s.{name}", middle={"_id": 200})
    client.admin.command("moveChunk", f"s.{name}", find={"_id": 100}, to="shard01")
    client.admin.command("moveChunk", f"s.{name}", find={"_id": 200}, to="shard02")
    start = now_token(client)
    coll = client.s[name]
    for i, shard in enumerate(placement):
        coll.insert_one({"_id": 100 * shard + i})
        if i % 5 == 4:
            coll.update_one({"_id": 100 * shard + i}, {"$set": {"u": 1}})
    expected = tokens(drain(cluster.uri, start, ("s", name), {}))

    pulled: list[int] = []  # the tokens each pull took
    opened: list[str] = []
    probe_class = shards_reader._ShardProbe

    class CountedProbe(probe_class):
        def __init__(self, reader, shard, *args, **kwargs) -> None:
            opened.append(shard)
            super().__init__(reader, shard, *args, **kwargs)

        def pull(self, n: int) -> None:
            before = len(self.keys)
            super().pull(n)
            pulled.append(len(self.keys) - before)

    shards_reader._ShardProbe = CountedProbe
    try:
        r = reader(cluster.uri, mode="shards", database="s", collection=name, startAfter=start)
        s0, got, all_pulled = r.initialOffset(), [], 0
        while True:
            pulled.clear()
            e = r.latestOffset(s0, ReadMaxRows(limit))
            all_pulled += sum(pulled)
            if e == s0:
                break
            k = len(e["shards"])
            share = -(-limit // k)
            assert sum(pulled) <= limit + (k + 1) * share, (pulled, limit)
            task = pickle.loads(pickle.dumps(r))  # an executor's copy: no probe goes with it
            assert task._probes == {}
            batch = sorted(tokens([raw for p in r.partitions(s0, e) for raw in task.read_shard(p.shard, p.start, p.end)]))
            assert 0 < len(batch) <= limit
            got.append(batch)
            s0 = e
        r.stop()
        assert r._probes == {}
    finally:
        shards_reader._ShardProbe = probe_class
    assert [t for b in got for t in b] == expected
    # one probe per shard (the cluster's shards: an earlier test of the module may have added one)
    assert sorted(opened) == sorted(s["_id"] for s in client.admin.command("listShards")["shards"])
    assert all_pulled == len(expected)
