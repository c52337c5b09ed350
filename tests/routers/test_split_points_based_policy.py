"""shardCollection's initial chunks for an EMPTY collection with NO zone ranges and a hashed shard key
(router/initial_split_policy.py: the server's SplitPointsBasedSplitPolicy, as 8.0's create collection
coordinator picks it).  A key whose first field is hashed gets one chunk per shard of the cluster, split
at calculateHashedSplitPoints' points (symmetric around 0, (LLONG_MAX / n) * 2 apart), the i-th chunk in
key order on the (i mod k)-th of the k non-draining shards in getAllNonDrainingShardIdsShuffled's order;
a hashed field after the first gets no split: one chunk on the primary shard."""

from __future__ import annotations

import pymongo
import pytest
import trio
import trio.testing
from bson import Int64, MaxKey, MinKey, Timestamp
from hypothesis import given, settings
from hypothesis import strategies as st

import mongosim
from mongosim.core import open_cluster
from mongosim.router.initial_split_policy import default_engine_shuffle
from mongosim.shardsim.shard_key import ShardKeyPattern, hash64
from mongosim.testing import AsyncClient

EPOCH = 1_700_000_000
MIN, MAX = MinKey(), MaxKey()
LLONG_MAX = 2**63 - 1

# What 8.0 makes for {h: "hashed"} on an empty collection with n shards (shard00.. added in name order):
# the split points are calculateHashedSplitPoints' (interval (LLONG_MAX / n) * 2, C integer division;
# an even n splits at 0 and every interval out from it, an odd n at half an interval either side of 0
# and every interval out from there), the shards g++'s std::shuffle with a default-seeded
# std::default_random_engine gives for shard00..shard{n-1}.
SERVER_LAYOUT = {
    1: ([], ["shard00"]),
    2: ([0], ["shard01", "shard00"]),
    3: ([-3074457345618258602, 3074457345618258602], ["shard02", "shard00", "shard01"]),
    4: ([-4611686018427387902, 0, 4611686018427387902], ["shard02", "shard03", "shard01", "shard00"]),
    5: ([-5534023222112865483, -1844674407370955161, 1844674407370955161, 5534023222112865483],
        ["shard03", "shard00", "shard04", "shard02", "shard01"]),
}


async def _chunks(c: AsyncClient, ns: str) -> list[dict]:
    """`ns`'s config.chunks documents in key order."""
    [coll] = await c.find("config", "collections", {"_id": ns})
    docs = await c.find("config", "chunks", {"uuid": coll["uuid"]})
    pattern = ShardKeyPattern(coll["key"])
    return sorted(docs, key=lambda d: ShardKeyPattern.comparable(pattern.values_of_bound(d["min"])))


def _holders(core, db: str, name: str, _id) -> list[str]:
    return [s for s, node in sorted(core.nodes.items()) if s in core.router.shards
            and (coll := node.catalog.collection(db, name)) is not None and coll.get(_id) is not None]


def _in_chunk(d: dict, field: str, value: Int64) -> bool:
    lo, hi = d["min"][field], d["max"][field]
    return (isinstance(lo, MinKey) or lo <= value) and (isinstance(hi, MaxKey) or value < hi)


@pytest.mark.parametrize("n", sorted(SERVER_LAYOUT))
async def test_one_chunk_per_shard_at_the_servers_points_on_its_shards(autojump_clock, n):
    points, shards = SERVER_LAYOUT[n]
    async with open_cluster(shards=n, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await c.admin({"balancerStop": 1})
        await c.admin({"enableSharding": "db", "primaryShard": f"shard{n - 1:02d}"})  # (the primary: no say)
        await c.admin({"shardCollection": "db.h", "key": {"h": "hashed"}})
        chunks = await _chunks(c, "db.h")
        edges = [MIN, *(Int64(p) for p in points), MAX]
        assert [(d["min"], d["max"], d["shard"]) for d in chunks] == [
            ({"h": edges[i]}, {"h": edges[i + 1]}, shards[i]) for i in range(n)]
        assert all(type(d["min"]["h"]) in (Int64, MinKey) for d in chunks)  # NumberLong bounds, not int32/double
        assert [d["lastmod"] for d in chunks] == [Timestamp(1, i) for i in range(n)]  # numbered in key order
        [coll] = await c.find("config", "collections", {"_id": "db.h"})
        [end] = await c.find("config", "changelog", {"what": "shardCollection.end", "ns": "db.h"})
        assert end["details"]["numChunks"] == n and end["details"]["empty"] is True
        assert end["details"]["placementVersion"] == \
            f"1|{n - 1}||{coll['lastmodEpoch']}||{coll['timestamp']}"

        # every document on the shard of the chunk its hash falls in
        await c.insert("db", "h", [{"_id": i, "h": i} for i in range(40)])
        for i in range(40):
            [owner] = [d["shard"] for d in chunks if _in_chunk(d, "h", hash64(i))]
            assert _holders(core, "db", "h", i) == [owner]
        assert sorted(d["_id"] for d in await c.find("db", "h")) == list(range(40))


async def test_a_compound_key_with_a_hashed_prefix_splits_on_it(autojump_clock):
    """calculateHashedSplitPoints with no prefix: each point is the hashed value, then MinKey."""
    async with open_cluster(shards=3, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await c.admin({"enableSharding": "db", "primaryShard": "shard00"})
        await c.admin({"shardCollection": "db.c", "key": {"h": "hashed", "b": 1}})
        p = Int64(3074457345618258602)
        assert [(d["min"], d["max"], d["shard"]) for d in await _chunks(c, "db.c")] == [
            ({"h": MIN, "b": MIN}, {"h": Int64(-p), "b": MIN}, "shard02"),
            ({"h": Int64(-p), "b": MIN}, {"h": p, "b": MIN}, "shard00"),
            ({"h": p, "b": MIN}, {"h": MAX, "b": MAX}, "shard01")]


async def test_a_hashed_field_after_the_first_gets_one_chunk_on_the_primary(autojump_clock):
    """No hashed prefix, no zones: SingleChunkOnPrimarySplitPolicy, however many shards."""
    async with open_cluster(shards=3, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await c.admin({"balancerStop": 1})
        await c.admin({"enableSharding": "db", "primaryShard": "shard01"})
        await c.admin({"shardCollection": "db.c", "key": {"a": 1, "h": "hashed"}})
        chunks = await _chunks(c, "db.c")
        assert [(d["min"], d["max"], d["shard"], d["lastmod"]) for d in chunks] == [
            ({"a": MIN, "h": MIN}, {"a": MAX, "h": MAX}, "shard01", Timestamp(1, 0))]
        [end] = await c.find("config", "changelog", {"what": "shardCollection.end", "ns": "db.c"})
        assert end["details"]["numChunks"] == 1 and end["details"]["placementVersion"].startswith("1|0||")
        await c.insert("db", "c", [{"_id": i, "a": i % 3, "h": i} for i in range(10)])
        assert all(_holders(core, "db", "c", i) == ["shard01"] for i in range(10))


async def test_a_draining_shard_counts_but_gets_no_chunk(autojump_clock):
    """getNumShards counts every shard; the chunks go round the shuffled non-draining ones only."""
    async with open_cluster(shards=3, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await c.admin({"balancerStop": 1})
        await c.admin({"enableSharding": "db", "primaryShard": "shard01"})
        assert (await c.admin({"removeShard": "shard00"}))["state"] == "started"
        await c.admin({"shardCollection": "db.h", "key": {"h": "hashed"}})
        order = default_engine_shuffle(["shard01", "shard02"])
        assert order == ["shard02", "shard01"]
        p = Int64(3074457345618258602)
        assert [(d["min"]["h"], d["max"]["h"], d["shard"]) for d in await _chunks(c, "db.h")] == [
            (MIN, Int64(-p), order[0]), (Int64(-p), p, order[1]), (p, MAX, order[0])]


async def test_a_collection_with_documents_gets_one_chunk_on_its_primary(autojump_clock):
    async with open_cluster(shards=3, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await c.admin({"enableSharding": "db", "primaryShard": "shard02"})
        await c.insert("db", "h", [{"_id": 1, "h": 1}])
        await c.admin({"shardCollection": "db.h", "key": {"h": "hashed"}})
        assert [(d["min"]["h"], d["max"]["h"], d["shard"]) for d in await _chunks(c, "db.h")] == [
            (MIN, MAX, "shard02")]


def test_through_pymongo():
    """sh.shardCollection's command over the wire; config.chunks as a driver reads it back."""
    with mongosim.Cluster(shards=4, port=0, instant_hwm=True) as cluster:
        client = pymongo.MongoClient(cluster.uri)
        client.admin.command("balancerStop")
        client.admin.command("enableSharding", "ph", primaryShard="shard00")
        reply = client.admin.command("shardCollection", "ph.c", key={"user": "hashed"})
        assert (reply["collectionsharded"], reply["ok"]) == ("ph.c", 1.0)
        uuid = client.config.collections.find_one({"_id": "ph.c"})["uuid"]
        chunks = list(client.config.chunks.find({"uuid": uuid}).sort("lastmod", 1))
        points, shards = SERVER_LAYOUT[4]
        edges = [MIN, *points, MAX]
        assert [(d["min"]["user"], d["max"]["user"], d["shard"]) for d in chunks] == [
            (edges[i], edges[i + 1], shards[i]) for i in range(4)]
        client.close()


# -- any number of shards ------------------------------------------------------------------------
@st.composite
def clusters(draw):
    """(shard count, the shards draining (never all), the key)."""
    n = draw(st.integers(1, 7))
    draining = draw(st.lists(st.integers(0, n - 1), max_size=n - 1, unique=True))
    key = draw(st.sampled_from([{"h": "hashed"}, {"h": "hashed", "b": 1}, {"a": 1, "h": "hashed"}]))
    return n, draining, key


@settings(max_examples=25, deadline=None)
@given(case=clusters())
def test_the_chunks_tile_the_key_space_for_any_shard_count(case):
    n, draining, key = case

    async def run() -> None:
        async with open_cluster(shards=n, listen=False, epoch=EPOCH, instant_hwm=True) as core:
            c = AsyncClient(core.router)
            await c.admin({"balancerStop": 1})
            names = sorted(core.router.shards)
            primary = names[-1]
            await c.admin({"enableSharding": "db", "primaryShard": primary})
            for i in draining:
                assert (await c.admin({"removeShard": names[i]}))["state"] == "started"
            await c.admin({"shardCollection": "db.c", "key": key})
            chunks = await _chunks(c, "db.c")
            pattern = ShardKeyPattern(key)

            def point(b): return ShardKeyPattern.comparable(pattern.values_of_bound(b))
            assert point(chunks[0]["min"]) == point(pattern.min_bound())
            assert point(chunks[-1]["max"]) == point(pattern.max_bound())
            assert all(point(a["max"]) == point(b["min"]) for a, b in zip(chunks, chunks[1:]))
            assert all(point(d["min"]) < point(d["max"]) for d in chunks)
            assert [d["lastmod"] for d in chunks] == [Timestamp(1, i) for i in range(len(chunks))]
            if "a" in key:
                assert [d["shard"] for d in chunks] == [primary]
                return
            # one chunk per shard, draining or not; the inner ones (LLONG_MAX / n) * 2 wide, the two outer
            # ones alike, the points symmetric around 0
            assert len(chunks) == n
            inner = [int(d["min"]["h"]) for d in chunks[1:]]
            assert sorted(-p for p in inner) == inner
            width = (LLONG_MAX // n) * 2
            assert all(b - a == width for a, b in zip(inner, inner[1:]))
            assert (0 in inner) == (n % 2 == 0)
            assert all(d["min"].get("b", MIN) == MIN for d in chunks[1:])
            # round-robin over the shuffled non-draining shards
            order = default_engine_shuffle([s for i, s in enumerate(names) if i not in draining])
            assert [d["shard"] for d in chunks] == [order[i % len(order)] for i in range(n)]

    trio.run(run, clock=trio.testing.MockClock(autojump_threshold=0))
