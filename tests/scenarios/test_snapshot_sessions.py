"""readConcern snapshot at a cluster time: pymongo snapshot sessions, and snapshot transactions.

A snapshot session's first read gets `atClusterTime` from the server; every
later read of the session reads at that time, on every shard, whatever was
written since. A transaction with readConcern snapshot reads every shard at
the one time mongos picked when it started (shardsim/snapshot_reads.py).
"""

from __future__ import annotations

import pymongo
import pytest
import trio
from bson import Timestamp
from hypothesis import given, settings
from hypothesis import strategies as st
from pymongo.read_concern import ReadConcern

from mongosim import Cluster
from mongosim.core import open_cluster
from mongosim.testing import AsyncClient
from mongosim.oplog.clock import key_ts
from mongosim.shardsim.snapshots import HISTORY_WINDOW_S
from tests.scenarios.conftest import shard_three_ways


@pytest.fixture(scope="module", params=["sharded", "replset"])
def deployment(request):
    with Cluster(shards=3, port=0, instant_hwm=True, topology=request.param) as cluster:
        client = pymongo.MongoClient(cluster.uri, serverSelectionTimeoutMS=10000)
        yield request.param, client
        client.close()


def _seed(topology, client, name):
    if topology == "sharded":
        shard_three_ways(client, f"snapsess.{name}")
    coll = client.snapsess[name]
    coll.insert_many([{"_id": k, "k": k, "v": 0} for k in (5, 150, 250)])  # one per shard
    return coll


def test_a_snapshot_session_reads_every_shard_at_its_first_reads_time(deployment):
    topology, client = deployment
    coll = _seed(topology, client, "s1")
    with client.start_session(snapshot=True) as s:
        first = list(coll.find({}, session=s).sort("k"))
        at = s._snapshot_time
        assert isinstance(at, Timestamp)
        coll.update_many({}, {"$inc": {"v": 1}})  # on every shard, outside the session
        coll.delete_one({"k": 150})
        coll.insert_one({"_id": 300, "k": 300, "v": 0})
        assert list(coll.find({}, session=s).sort("k")) == first
        assert sorted(coll.distinct("k", session=s)) == [5, 150, 250]
        assert [d["k"] for d in coll.aggregate([{"$sort": {"k": 1}}], session=s)] == [5, 150, 250]
        assert coll.find_one({"_id": 150}, session=s) == {"_id": 150, "k": 150, "v": 0}
        assert s._snapshot_time == at
    assert sorted((d["k"], d["v"]) for d in coll.find()) == [(5, 1), (250, 1), (300, 0)]


def test_the_server_returns_the_time_it_read_at_where_drivers_look(deployment):
    topology, client = deployment
    coll = _seed(topology, client, "s2")
    reply = client.snapsess.command("find", "s2", readConcern={"level": "snapshot"})
    assert list(reply["cursor"]) == ["firstBatch", "id", "ns", "atClusterTime"]
    distinct = client.snapsess.command("distinct", "s2", key="k", readConcern={"level": "snapshot"})
    assert list(distinct)[:3] == ["values", "atClusterTime", "ok"]
    plain = client.snapsess.command("find", "s2")
    assert "atClusterTime" not in plain["cursor"]  # only snapshot reads carry it
    at = reply["cursor"]["atClusterTime"]
    coll.insert_one({"_id": 1, "k": 1})
    again = client.snapsess.command("find", "s2", readConcern={"level": "snapshot", "atClusterTime": at})
    assert again["cursor"]["firstBatch"] == reply["cursor"]["firstBatch"]
    assert again["cursor"]["atClusterTime"] == at


def test_a_time_beyond_the_cluster_time_is_refused(deployment):
    _topology, client = deployment
    future = Timestamp(2**32 - 1, 1)
    with pytest.raises(pymongo.errors.OperationFailure) as err:
        client.snapsess.command("find", "s1", readConcern={"level": "snapshot", "atClusterTime": future})
    assert err.value.code == 72 and "greater than the current clusterTime" in str(err.value)


def test_count_does_not_support_snapshot_reads(deployment):
    _topology, client = deployment
    with pytest.raises(pymongo.errors.OperationFailure) as err:
        client.snapsess.command("count", "s1", readConcern={"level": "snapshot"})
    assert err.value.code == 72 and str(err.value).startswith(
        'Command count does not support { readConcern: { level: "snapshot", provenance: "clientSupplied" } } '
        ":: caused by :: read concern snapshot not supported")


def test_a_snapshot_transaction_reads_every_shard_at_one_time(deployment):
    topology, client = deployment
    coll = _seed(topology, client, "t1")
    with client.start_session() as s:
        with s.start_transaction(read_concern=ReadConcern("snapshot")):
            assert coll.find_one({"k": 5}, session=s)["v"] == 0  # only the first shard so far
            coll.update_many({}, {"$set": {"v": 7}})  # every shard, before the others join
            assert [d["v"] for d in coll.find({"k": {"$gte": 100}}, session=s)] == [0, 0]
        with s.start_transaction():  # readConcern local: each shard's present at its first statement
            assert coll.find_one({"k": 5}, session=s)["v"] == 7
            coll.update_many({}, {"$set": {"v": 8}})
            # one node: its snapshot was taken at the first read; shards joining later read their present
            expected = [7, 7] if topology == "replset" else [8, 8]
            assert [d["v"] for d in coll.find({"k": {"$gte": 100}}, session=s)] == expected


async def test_history_is_kept_for_the_window_then_too_old(autojump_clock):
    async with open_cluster(shards=2, listen=False, epoch=1_700_000_000, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await c.insert("db", "c", [{"_id": 1, "v": 0}])
        reply = await c.command("db", {"find": "c", "readConcern": {"level": "snapshot"}})
        at = reply["cursor"]["atClusterTime"]
        await c.update("db", "c", {"_id": 1}, {"$set": {"v": 1}})
        await trio.sleep(HISTORY_WINDOW_S - 10)
        inside = await c.command("db", {"find": "c", "readConcern": {"level": "snapshot", "atClusterTime": at}})
        assert inside["cursor"]["firstBatch"] == [{"_id": 1, "v": 0}]
        await trio.sleep(20)
        await c.update("db", "c", {"_id": 1}, {"$set": {"v": 2}})  # (writes let expired pins go)
        late = await c.command("db", {"find": "c", "readConcern": {"level": "snapshot", "atClusterTime": at}},
                               check=False)
        assert late["codeName"] == "SnapshotTooOld" and late["code"] == 239
        for node in core.shards.values():  # and no history is kept for it any more
            assert not node.catalog.snapshots.readers and not node.catalog.snapshots.pinned


# -- the pin rule, against a model -----------------------------------------------------------

_steps = st.lists(st.one_of(
    st.tuples(st.just("write"), st.integers(0, 4), st.integers(0, 3)),  # set _id's v (3: delete)
    st.tuples(st.just("read"), st.just(0), st.just(0)),  # a snapshot read now: remember its time
    st.tuples(st.just("noop"), st.just(0), st.just(0)),
), max_size=40)


@settings(max_examples=60, deadline=None)
@given(_steps)
def test_every_read_at_a_pinned_time_sees_the_data_of_that_time(steps):
    async def main():
        async with open_cluster(topology="replset", listen=False, epoch=1_700_000_000) as core:
            c = AsyncClient(core.frontend)
            node = core.frontend.node
            model: dict[int, int] = {}
            seen: list[tuple[Timestamp, list]] = []
            for kind, i, v in steps:
                if kind == "write" and v == 3:
                    await c.command("db", {"delete": "c", "deletes": [{"q": {"_id": i}, "limit": 1}]})
                    model.pop(i, None)
                elif kind == "write":
                    await c.command("db", {"update": "c", "updates": [{"q": {"_id": i}, "u": {"$set": {"v": v}},
                                                                     "upsert": True}]})
                    model[i] = v
                elif kind == "noop":
                    node.log({"op": "n", "ns": "", "o": {"msg": "periodic noop"}})
                else:
                    r = await c.command("db", {"find": "c", "readConcern": {"level": "snapshot"}})
                    seen.append((r["cursor"]["atClusterTime"], sorted((d["_id"], d["v"]) for d in r["cursor"]["firstBatch"])))
                    assert seen[-1][1] == sorted(model.items())
            for at, docs in seen:
                r = await c.command("db", {"find": "c", "readConcern": {"level": "snapshot", "atClusterTime": at}})
                assert sorted((d["_id"], d["v"]) for d in r["cursor"]["firstBatch"]) == docs
            # the newest entry's time (a noop, perhaps) reads the present
            r = await c.command("db", {"find": "c", "readConcern": {"level": "snapshot",
                                                                   "atClusterTime": key_ts(node.oplog.last_key)}})
            assert sorted((d["_id"], d["v"]) for d in r["cursor"]["firstBatch"]) == sorted(model.items())

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_a_snapshot_session_keeps_its_documents_across_a_chunk_migration(deployment):
    topology, client = deployment
    if topology != "sharded":
        pytest.skip("chunks live on a sharded cluster")
    coll = _seed(topology, client, "m1")
    with client.start_session(snapshot=True) as s:
        before = sorted((d["k"], d["v"]) for d in coll.find({}, session=s))
        # k=150 moves from shard01 to shard02 (cloned there, deleted on shard01), then changes
        client.admin.command("moveChunk", "snapsess.m1", find={"k": 150}, to="shard02")
        coll.update_one({"k": 150}, {"$set": {"v": 5}})
        assert sorted((d["k"], d["v"]) for d in coll.find({}, session=s)) == before
        assert coll.count_documents({"k": 150}, session=s) == 1
        assert coll.find_one({"k": 150}, session=s)["v"] == 0
    assert coll.find_one({"k": 150})["v"] == 5


async def _two_chunks(c: AsyncClient) -> None:
    """db.c sharded on k, documents k = 0..3, chunks [MinKey, 2) and [2, MaxKey) on shard00."""
    await c.admin({"enableSharding": "db", "primaryShard": "shard00"})
    await c.admin({"shardCollection": "db.c", "key": {"k": 1}})
    await c.insert("db", "c", [{"_id": i, "k": i} for i in range(4)])
    await c.admin({"split": "db.c", "middle": {"k": 2}})


async def test_a_snapshot_time_is_not_picked_inside_a_migration(autojump_clock, monkeypatch):
    # Between a migration's clone and its commit both shards hold the moving documents; the
    # read waits for the migration's critical section before it picks its time.
    async with open_cluster(shards=2, listen=False, epoch=1_700_000_000, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await _two_chunks(c)
        recipient = core.router.shard("shard01")
        real, cloned, gate = recipient.command, trio.Event(), trio.Event()

        async def held_after_clone(db, cmd, **kw):
            reply = await real(db, cmd, **kw)
            if "_recvChunkDocs" in cmd:
                cloned.set()
                await gate.wait()
            return reply

        monkeypatch.setattr(recipient, "command", held_after_clone)
        read: list = []

        async def snapshot_read():
            read.append(await c.command("db", {"find": "c", "readConcern": {"level": "snapshot"}}))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(c.admin, {"moveChunk": "db.c", "find": {"k": 3}, "to": "shard01"})
            await cloned.wait()  # the documents of k >= 2 are on both shards now
            nursery.start_soon(snapshot_read)
            await trio.sleep(5)
            assert read == []  # waiting for the migration
            gate.set()
        assert sorted(d["_id"] for d in read[0]["cursor"]["firstBatch"]) == [0, 1, 2, 3]


async def test_a_shard_added_later_held_nothing_at_an_earlier_time(autojump_clock):
    from mongosim.router.sharding import add_shard

    async with open_cluster(shards=2, listen=False, epoch=1_700_000_000, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await _two_chunks(c)
        first = await c.command("db", {"find": "c", "readConcern": {"level": "snapshot"}})
        at = first["cursor"]["atClusterTime"]
        await add_shard(core.router, "new1")
        await c.admin({"moveChunk": "db.c", "find": {"k": 3}, "to": "new1"})
        again = await c.command("db", {"find": "c", "readConcern": {"level": "snapshot", "atClusterTime": at}})
        assert sorted(d["_id"] for d in again["cursor"]["firstBatch"]) == [0, 1, 2, 3]


async def test_a_restarted_shard_has_no_history_to_read_at(autojump_clock):
    async with open_cluster(shards=2, listen=False, epoch=1_700_000_000, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await _two_chunks(c)
        at = (await c.command("db", {"find": "c", "readConcern": {"level": "snapshot"}}))["cursor"]["atClusterTime"]
        await c.update("db", "c", {"_id": 1}, {"$set": {"v": 1}})
        core.faults.restart("shard00")
        late = await c.command("db", {"find": "c", "readConcern": {"level": "snapshot", "atClusterTime": at}},
                               check=False)
        assert late["code"] == 239
        assert not core.shards["shard00"].catalog.snapshots.readers  # its history is not kept
