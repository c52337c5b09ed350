"""Chunk management on mongos: `mergeChunks` and `mergeAllChunksOnShard` (config.chunks, versions, history,
the changelog, the server's errors), routing through a router that cached the chunks from before a merge,
the balancer re-splitting a merged chunk at its zone's bounds, and `clearJumboFlag`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from itertools import groupby

import pytest
import trio
import trio.testing
from bson import MaxKey, MinKey, Timestamp
from hypothesis import given, settings
from hypothesis import strategies as st

from mongosim.core import open_cluster
from mongosim.testing import AsyncClient, CommandError

EPOCH = 1_700_000_000
WINDOW = 300  # the config server's history window: minSnapshotHistoryWindowInSeconds


async def _error(c: AsyncClient, cmd: dict, db: str = "admin") -> tuple:
    with pytest.raises(CommandError) as info:
        await c.command(db, cmd)
    return info.value.code_name, info.value.reply["errmsg"]


async def _admin(c: AsyncClient, cmd: dict) -> dict:
    """The reply without the cluster time gossip."""
    reply = await c.admin(cmd)
    return {k: v for k, v in reply.items() if k not in ("$clusterTime", "operationTime")}


async def _chunks(c: AsyncClient) -> list[dict]:
    docs = await c.find("config", "chunks")
    return sorted(docs, key=lambda d: (not isinstance(d["min"]["k"], MinKey), d["min"]["k"]))


def _bounds(chunks: list[dict]) -> list[tuple]:
    return [(d["min"]["k"], d["max"]["k"], d["shard"]) for d in chunks]


def _version(chunks: list[dict]) -> Timestamp:
    return max((d["lastmod"] for d in chunks), key=lambda t: (t.time, t.inc))


async def _setup(c: AsyncClient, splits=(10, 20, 30, 40), moved=(30,)) -> None:
    """db.c on shard00, split at `splits`, the chunks starting at `moved` moved to shard01; db.plain unsharded."""
    await c.admin({"balancerStop": 1})
    await c.admin({"enableSharding": "db", "primaryShard": "shard00"})
    await c.admin({"shardCollection": "db.c", "key": {"k": 1}})
    await c.insert("db", "c", [{"_id": i, "k": i} for i in range(50)])
    await c.insert("db", "plain", [{"_id": 1}])
    for m in splits:
        await c.admin({"split": "db.c", "middle": {"k": m}})
    for m in moved:
        await c.admin({"moveChunk": "db.c", "find": {"k": m}, "to": "shard01"})


@asynccontextmanager
async def _cluster(routers: int = 1, **setup) -> AsyncIterator[tuple]:
    """A two-shard cluster set up by `_setup`: the cluster and a client of each router."""
    async with open_cluster(shards=2, routers=routers, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        clients = [AsyncClient(r) for r in core.routers]
        await _setup(clients[0], **setup)
        yield core, clients


async def test_merge_chunks_commits_the_merged_chunk_as_the_config_server_does(autojump_clock):
    async with _cluster(routers=2) as (core, (c, stale)):
        await stale.command("db", {"count": "c"})  # (its cache: the chunks before the merge)
        stream = stale.watch("db", "c", max_await_time_ms=100)
        await stream.open()
        before = await _chunks(c)
        assert _bounds(before) == [(MinKey(), 10, "shard00"), (10, 20, "shard00"), (20, 30, "shard00"),
                                   (30, 40, "shard01"), (40, MaxKey(), "shard00")]
        prev = _version(before)
        coll = (await c.find("config", "collections", {"_id": "db.c"}))[0]

        assert await _admin(c, {"mergeChunks": "db.c", "bounds": [{"k": 10}, {"k": 30}]}) == {"ok": 1.0}

        after = await _chunks(c)
        assert _bounds(after) == [(MinKey(), 10, "shard00"), (10, 30, "shard00"), (30, 40, "shard01"),
                                  (40, MaxKey(), "shard00")]
        merged = after[1]
        first, second = before[1], before[2]
        valid_after = max(first["history"][0]["validAfter"], second["history"][0]["validAfter"])
        assert merged == {"_id": first["_id"], "uuid": coll["uuid"], "min": {"k": 10}, "max": {"k": 30},
                          "shard": "shard00", "lastmod": Timestamp(prev.time, prev.inc + 1),
                          "onCurrentShardSince": valid_after,
                          "history": [{"validAfter": valid_after, "shard": "shard00"}]}
        assert list(merged) == ["_id", "uuid", "min", "max", "shard", "lastmod", "onCurrentShardSince", "history"]
        assert [d for d in after if d is not merged] == [d for d in before if d not in (first, second)]

        [log] = await c.find("config", "changelog", {"what": "merge"})
        assert (log["shard"], log["ns"]) == ("config", "db.c")
        version = {"e": coll["lastmodEpoch"], "t": coll["timestamp"]}
        assert log["details"] == {"prevPlacementVersion": {**version, "v": prev},
                                  "mergedVersion": {**version, "v": Timestamp(prev.time, prev.inc + 1)},
                                  "owningShard": "shard00", "min": {"k": 10}, "max": {"k": 30}, "numChunks": 2}

        # the router that cached the old chunks still targets every read and write correctly (no shard's
        # major version moved, so the shards accept the version it routes by)
        assert (await stale.admin({"getShardVersion": "db.c"}))["version"] == prev
        await stale.insert("db", "c", [{"_id": 100 + k, "k": k} for k in (15, 25, 35)])
        await stale.command("db", {"update": "c", "updates": [{"q": {"k": 25}, "u": {"$set": {"x": 1}},
                                                               "multi": True}]})
        assert sorted(d["k"] for d in await stale.find("db", "c", {"k": {"$gte": 10, "$lt": 30}})) == \
            sorted([*range(10, 30), 15, 25])
        assert {d["_id"] for d in await stale.find("db", "c", {"x": 1})} == {25, 125}
        on = {name: {d["k"] for d in core.router.shard(name).node.catalog.collection("db", "c").docs.values()}
              for name in ("shard00", "shard01")}
        assert on["shard01"] == set(range(30, 40)) | {35} and 15 in on["shard00"] and 25 in on["shard00"]
        assert (await stale.admin({"getShardVersion": "db.c"}))["version"] == prev  # (never told it was stale)
        events = []
        for _ in range(50):  # the stream opened before the merge has every write after it, in order
            ev = await stream.try_next()
            if ev is not None:
                events.append((ev["operationType"], ev["documentKey"]["_id"]))
        assert events == [("insert", 115), ("insert", 125), ("insert", 135), ("update", 25), ("update", 125)]
        await stream.close()

        # getShardVersion answers from the cache: the new version once the router refreshes
        await stale.admin({"flushRouterConfig": 1})
        reply = await _admin(stale, {"getShardVersion": "db.c", "fullMetadata": True})
        assert reply == {"version": Timestamp(prev.time, prev.inc + 1), "versionEpoch": coll["lastmodEpoch"],
                         "versionTimestamp": coll["timestamp"],
                         "chunks": [[d["min"], d["max"]] for d in after], "ok": 1.0}

        # a range that is one chunk already: success, nothing changes (a retried merge)
        assert await _admin(c, {"mergeChunks": "db.c", "bounds": [{"k": 10}, {"k": 30}]}) == {"ok": 1.0}
        assert await _chunks(c) == after
        assert len(await c.find("config", "changelog", {"what": "merge"})) == 1


async def test_merge_chunks_errors(autojump_clock):
    async with _cluster() as (core, (c,)):
        before = await _chunks(c)

        async def errmsg(cmd: dict) -> str:
            """An errmsg command's failure: ok 0, an errmsg, no code."""
            with pytest.raises(CommandError) as info:
                await c.admin(cmd)
            assert info.value.code is None and info.value.reply["ok"] == 0
            return info.value.reply["errmsg"]

        def merge(*bounds) -> dict:
            return {"mergeChunks": "db.c", "bounds": list(bounds)}

        assert await _error(c, merge({"k": 10}, {"k": 30}), db="db") == (
            "Unauthorized", "mergeChunks may only be run against the admin database.")
        assert await _error(c, {"mergeChunks": 1, "bounds": []}) == ("BadValue", "collection name has invalid type int")
        assert await _error(c, {"mergeChunks": "db", "bounds": []}) == (
            "InvalidNamespace", "Invalid namespace specified 'db'")
        assert await errmsg({"mergeChunks": "db.c"}) == "no bounds were specified"
        assert await errmsg({"mergeChunks": "db.c", "bounds": 1}) == \
            "wrong type for 'bounds' field, expected vector array, found bounds: 1"
        assert await errmsg({"mergeChunks": "db.c", "bounds": None}) == \
            "wrong type for 'bounds' field, expected vector array, found bounds: null"
        assert await errmsg(merge({"k": 10}, 5)) == ("error parsing element 1 of field bounds :: caused by :: "
                                                     "wrong type for '' field, expected object, found 1: 5")
        assert await errmsg(merge({"k": 10})) == "only a min and max bound may be specified"
        assert await errmsg(merge({}, {"k": 30})) == "no min key specified"
        assert await errmsg(merge({"k": 10}, {})) == "no max key specified"
        assert await _error(c, {"mergeChunks": "db.plain", "bounds": [{"k": 1}, {"k": 2}]}) == (
            "NamespaceNotSharded", "Expected collection db.plain to be sharded")
        assert await errmsg(merge({"j": 10}, {"k": 30})) == \
            "shard key bounds [{ j: 10 },{ k: 30 }) are not valid for shard key pattern { k: 1 }"
        assert await errmsg(merge({"k": 10, "j": 1}, {"k": 30})) == \
            "shard key bounds [{ k: 10, j: 1 },{ k: 30 }) are not valid for shard key pattern { k: 1 }"

        # the owning shard's checks: a range that does not start or end on a chunk bound, or that crosses a
        # chunk of another shard, is StaleConfig naming the shard and its version
        with pytest.raises(CommandError) as info:
            await c.admin(merge({"k": 12}, {"k": 30}))
        reply = info.value.reply
        assert (reply["codeName"], reply["errmsg"]) == (
            "StaleConfig", "Range with bounds [{ k: 12 }, { k: 30 }) is not owned by this shard.")
        coll = (await c.find("config", "collections", {"_id": "db.c"}))[0]
        shard00 = max((d["lastmod"] for d in before if d["shard"] == "shard00"), key=lambda t: (t.time, t.inc))
        assert (reply["ns"], reply["shardId"], reply["vWanted"]) == (
            "db.c", "shard00", {"e": coll["lastmodEpoch"], "t": coll["timestamp"], "v": shard00})
        assert await _error(c, merge({"k": 10}, {"k": 25})) == (
            "StaleConfig", "Shard does not contain a sequence of chunks that exactly fills the range "
                           "[{ k: 10 }, { k: 25 })")
        assert await _error(c, merge({"k": 20}, {"k": MaxKey()})) == (
            "StaleConfig", "Range with bounds [{ k: 20 }, { k: MaxKey }) is not owned by this shard.")
        assert await _error(c, merge({"k": 30}, {"k": 10})) == (
            "StaleConfig", "Shard does not contain a sequence of chunks that exactly fills the range "
                           "[{ k: 30 }, { k: 10 })")
        assert await _chunks(c) == before  # nothing was merged
        assert await c.find("config", "changelog", {"what": "merge"}) == []


async def test_merge_all_chunks_on_shard_merges_what_left_the_history_window(autojump_clock):
    async with _cluster(splits=(10, 20, 30, 40, 50, 60), moved=(30,)) as (core, (c,)):
        # within the history window nothing is mergeable
        assert await _admin(c, {"mergeAllChunksOnShard": "db.c", "shard": "shard00"}) == {"ok": 1.0}
        assert len(await _chunks(c)) == 7
        await trio.sleep(WINDOW + 1)
        # [60, MaxKey) comes back to shard00 now: on the shard within the window, it is not merged
        await c.admin({"moveChunk": "db.c", "find": {"k": 60}, "to": "shard01"})
        await c.admin({"moveChunk": "db.c", "find": {"k": 60}, "to": "shard00"})
        # a jumbo chunk is not merged either
        await c.command("config", {"update": "chunks", "updates": [
            {"q": {"min.k": 50}, "u": {"$set": {"jumbo": True}}}]})
        before = await _chunks(c)
        prev = _version(before)
        assert await _admin(c, {"mergeAllChunksOnShard": "db.c", "shard": "shard00"}) == {"ok": 1.0}
        after = await _chunks(c)
        assert _bounds(after) == [(MinKey(), 30, "shard00"), (30, 40, "shard01"), (40, 50, "shard00"),
                                  (50, 60, "shard00"), (60, MaxKey(), "shard00")]
        merged = after[0]
        since = max(d["onCurrentShardSince"] for d in before[:3])
        assert merged["_id"] not in {d["_id"] for d in before}  # a new chunk
        assert {k: v for k, v in merged.items() if k != "_id"} == {
            "uuid": before[0]["uuid"], "min": {"k": MinKey()}, "max": {"k": 30}, "shard": "shard00",
            "lastmod": Timestamp(prev.time, prev.inc + 1), "onCurrentShardSince": since,
            "history": [{"validAfter": since, "shard": "shard00"}]}
        [log] = await c.find("config", "changelog", {"what": "merge"})
        assert (log["details"]["prevPlacementVersion"]["v"], log["details"]["mergedVersion"]["v"],
                log["details"]["numChunks"]) == (prev, Timestamp(prev.time, prev.inc + 1), 3)
        assert sorted(d["k"] for d in await c.find("db", "c")) == list(range(50))
        # nothing more to merge on either shard
        for shard in ("shard00", "shard01"):
            await c.admin({"mergeAllChunksOnShard": "db.c", "shard": shard})
        assert await _chunks(c) == after


async def test_merge_all_chunks_on_shard_does_not_merge_across_a_zone_bound(autojump_clock):
    """The zone ranges and the gaps between them are each merged apart: [MinKey, 20) | [20, 40) | [40, MaxKey)."""
    async with _cluster(splits=(10, 20, 30, 40, 50), moved=()) as (core, (c,)):
        await c.admin({"addShardToZone": "shard00", "zone": "Z"})
        await c.admin({"updateZoneKeyRange": "db.c", "min": {"k": 20}, "max": {"k": 40}, "zone": "Z"})
        await trio.sleep(WINDOW + 1)
        await c.admin({"mergeAllChunksOnShard": "db.c", "shard": "shard00"})
        assert _bounds(await _chunks(c)) == [(MinKey(), 20, "shard00"), (20, 40, "shard00"), (40, MaxKey(), "shard00")]
        assert [d["details"]["numChunks"] for d in await c.find("config", "changelog", {"what": "merge"})] == [2, 2, 2]


async def test_merge_all_chunks_on_shard_errors(autojump_clock):
    async with _cluster() as (core, (c,)):
        before = await _chunks(c)
        ns = "db.c"
        assert await _error(c, {"mergeAllChunksOnShard": ns, "shard": "shard00"}, db="db") == (
            "Unauthorized", "mergeAllChunksOnShard may only be run against the admin database.")
        assert await _error(c, {"mergeAllChunksOnShard": 5, "shard": "shard00"}) == (
            "TypeMismatch", "BSON field 'mergeAllChunksOnShard.mergeAllChunksOnShard' is the wrong type 'int', "
                            "expected type 'string'")
        assert await _error(c, {"mergeAllChunksOnShard": ns}) == (
            "IDLFailedToParse", "BSON field 'mergeAllChunksOnShard.shard' is missing but a required field")
        assert await _error(c, {"mergeAllChunksOnShard": ns, "shard": 1}) == (
            "TypeMismatch", "BSON field 'mergeAllChunksOnShard.shard' is the wrong type 'int', expected type 'string'")
        assert await _error(c, {"mergeAllChunksOnShard": ns, "shard": ""}) == ("NoSuchKey", "Shard ID cannot be empty")
        assert await _error(c, {"mergeAllChunksOnShard": ns, "shard": "shard00", "maxNumberOfChunksToMerge": 2.5}) == (
            "TypeMismatch", "BSON field 'mergeAllChunksOnShard.maxNumberOfChunksToMerge' is the wrong type 'double', "
                            "expected type 'int'")
        assert await _error(c, {"mergeAllChunksOnShard": ns, "shard": "shard09"}) == (
            "ShardNotFound", "Shard shard09 not found")
        assert await _error(c, {"mergeAllChunksOnShard": "db.none", "shard": "shard00"}) == (
            "ConflictingOperationInProgress", "Sharded collection 'db.none' no longer exists")
        assert await _chunks(c) == before


@settings(max_examples=25)
@given(owners=st.lists(st.sampled_from(["shard00", "shard01"]), min_size=1, max_size=8),
       recent=st.sets(st.integers(0, 7)), limit=st.integers(0, 6))
def test_merge_all_chunks_on_shard_merges_each_run_of_old_contiguous_chunks(owners, recent, limit):
    """Chunks [10i, 10i+10) owned as `owners` says, those in `recent` moved there within the history window:
    mergeAllChunksOnShard on shard00 with `maxNumberOfChunksToMerge: limit` merges what the server's scan
    does (runs of two or more old chunks of shard00, stopping once `limit` chunks are taken), and every
    document stays readable by its shard key."""

    def model() -> list[tuple]:
        """The chunks after the merge: each maximal stretch of old shard00 chunks, in order, is merged
        whole while the chunks taken stay under `limit`; the stretch that reaches it is cut there."""
        old = [i for i, s in enumerate(owners) if s == "shard00" and i not in recent]
        stretches = [[i for _, i in g] for _, g in groupby(enumerate(old), key=lambda p: p[1] - p[0])]
        merged, taken = [], 0
        for stretch in stretches:
            if taken < limit <= taken + len(stretch):  # the scan stops inside this stretch
                if limit - taken > 1:
                    merged.append((stretch[0], stretch[limit - taken - 1] + 1))
                break
            if len(stretch) > 1:
                merged.append((stretch[0], stretch[-1] + 1))
                taken += len(stretch)
        ends = dict(merged)
        out, i = [], 0
        while i < len(owners):
            out.append((i, ends.get(i, i + 1), owners[i]))
            i = ends.get(i, i + 1)
        return out

    async def run() -> None:
        async with _cluster(splits=[10 * i for i in range(1, len(owners))], moved=()) as (core, (c,)):
            await c.insert("db", "c", [{"_id": 1000 + i, "k": 10 * i + 5} for i in range(len(owners))])
            for i, s in enumerate(owners):
                if s != "shard00" and i not in recent:
                    await c.admin({"moveChunk": "db.c", "find": {"k": 10 * i}, "to": s})
            await trio.sleep(WINDOW + 1)
            for i in sorted(recent & set(range(len(owners)))):  # moved within the window (and back, if shard00)
                await c.admin({"moveChunk": "db.c", "find": {"k": 10 * i}, "to": "shard01"})
                if owners[i] == "shard00":
                    await c.admin({"moveChunk": "db.c", "find": {"k": 10 * i}, "to": "shard00"})
            await c.admin({"mergeAllChunksOnShard": "db.c", "shard": "shard00", "maxNumberOfChunksToMerge": limit})
            got = [(lo // 10 if isinstance(lo, int) else 0, hi // 10 if isinstance(hi, int) else len(owners), s)
                   for lo, hi, s in _bounds(await _chunks(c))]
            assert got == model()
            for i in range(len(owners)):
                docs = await c.find("db", "c", {"k": 10 * i + 5, "_id": {"$gte": 1000}})
                assert [d["_id"] for d in docs] == [1000 + i]

    trio.run(run, clock=trio.testing.MockClock(autojump_threshold=0))


async def test_the_balancer_splits_a_merged_chunk_at_its_zone_bounds(autojump_clock):
    async with _cluster(splits=(), moved=()) as (core, (c,)):
        await c.admin({"balancerStart": 1})
        await c.admin({"addShardToZone": "shard00", "zone": "Z"})
        await c.admin({"updateZoneKeyRange": "db.c", "min": {"k": 10}, "max": {"k": 20}, "zone": "Z"})
        for _ in range(60):
            if (await c.admin({"balancerCollectionStatus": "db.c"}))["balancerCompliant"]:
                break
            await trio.sleep(1)
        assert _bounds(await _chunks(c)) == [(MinKey(), 10, "shard00"), (10, 20, "shard00"), (20, MaxKey(), "shard00")]
        await c.admin({"mergeChunks": "db.c", "bounds": [{"k": MinKey()}, {"k": MaxKey()}]})
        assert _bounds(await _chunks(c)) == [(MinKey(), MaxKey(), "shard00")]
        for _ in range(60):
            if (await c.admin({"balancerCollectionStatus": "db.c"}))["balancerCompliant"]:
                break
            await trio.sleep(1)
        assert _bounds(await _chunks(c)) == [(MinKey(), 10, "shard00"), (10, 20, "shard00"), (20, MaxKey(), "shard00")]
        assert sorted(d["k"] for d in await c.find("db", "c")) == list(range(50))


async def test_clear_jumbo_flag(autojump_clock):
    async with _cluster(routers=2) as (core, (c, stale)):
        await stale.command("db", {"count": "c"})
        await c.command("config", {"update": "chunks", "updates": [
            {"q": {"min.k": {"$in": [10, 40]}}, "u": {"$set": {"jumbo": True}}, "multi": True}]})
        before = await _chunks(c)
        prev = _version(before)

        # by a shard key in the chunk: the flag goes, the chunk takes the next major version
        assert await _admin(c, {"clearJumboFlag": "db.c", "find": {"k": 15}}) == {"ok": 1.0}
        after = await _chunks(c)
        assert "jumbo" not in after[1] and after[1]["lastmod"] == Timestamp(prev.time + 1, 0)
        assert after[4]["jumbo"] is True
        # by its bounds
        await c.admin({"clearJumboFlag": "db.c", "bounds": [{"k": 40}, {"k": MaxKey()}]})
        after = await _chunks(c)
        assert not any("jumbo" in d for d in after) and after[4]["lastmod"] == Timestamp(prev.time + 2, 0)
        # a chunk that is not jumbo is left as it is
        await c.admin({"clearJumboFlag": "db.c", "find": {"k": 25}})
        assert await _chunks(c) == after
        # the router that cached the old versions is refused by shard00 (its major version moved), refreshes,
        # and reads on
        assert (await stale.admin({"getShardVersion": "db.c"}))["version"] == prev
        assert sorted(d["k"] for d in await stale.find("db", "c", {"k": {"$gte": 5, "$lt": 45}})) == list(range(5, 45))
        assert (await stale.admin({"getShardVersion": "db.c"}))["version"] == Timestamp(prev.time + 2, 0)

        errors = [
            ({"clearJumboFlag": "db.c", "find": {"k": 1}}, "db",
             ("Unauthorized", "clearJumboFlag may only be run against the admin database.")),
            ({"clearJumboFlag": 1, "find": {"k": 1}}, "admin",
             ("TypeMismatch",
              "BSON field 'clearJumboFlag.clearJumboFlag' is the wrong type 'int', expected type 'string'")),
            ({"clearJumboFlag": "db.c", "find": 1}, "admin",
             ("TypeMismatch", "BSON field 'clearJumboFlag.find' is the wrong type 'int', expected type 'object'")),
            ({"clearJumboFlag": "db.c", "bounds": {}}, "admin",
             ("TypeMismatch", "BSON field 'clearJumboFlag.bounds' is the wrong type 'object', expected type 'array'")),
            ({"clearJumboFlag": "db.c", "bounds": [{"k": 1}, 2]}, "admin",
             ("TypeMismatch", "BSON field 'clearJumboFlag.bounds.1' is the wrong type 'int', expected type 'object'")),
            ({"clearJumboFlag": "db.plain", "find": {"k": 1}}, "admin",
             ("NamespaceNotSharded", "Expected collection db.plain to be sharded")),
            ({"clearJumboFlag": "db.c", "bounds": [{"k": 10}]}, "admin",
             ("InvalidOptions", "bounds can only have exactly 2 elements")),
            ({"clearJumboFlag": "db.c", "find": {"k": 1}, "bounds": [{"k": 10}, {"k": 20}]}, "admin",
             ("InvalidOptions", "cannot specify bounds and find at the same time")),
            ({"clearJumboFlag": "db.c"}, "admin", ("InvalidOptions", "need to specify find or bounds")),
            ({"clearJumboFlag": "db.c", "find": {"k": {"$gt": 1}}}, "admin",
             ("Location51260", "no shard key found in chunk query { k: { $gt: 1 } }")),
            ({"clearJumboFlag": "db.c", "bounds": [{"k": 10}, {"k": 30}]}, "admin",
             ("Location51261", "no chunk found with the shard key bounds [{ k: 10 }, { k: 30 })")),
        ]
        for cmd, db, expected in errors:
            assert await _error(c, cmd, db=db) == expected, cmd
        assert await _chunks(c) == after


async def test_get_shard_version_and_get_shard_map(autojump_clock):
    async with _cluster() as (core, (c,)):
        chunks = await _chunks(c)
        coll = (await c.find("config", "collections", {"_id": "db.c"}))[0]
        assert await _admin(c, {"getShardVersion": "db.c"}) == {
            "version": _version(chunks), "versionEpoch": coll["lastmodEpoch"], "versionTimestamp": coll["timestamp"],
            "ok": 1.0}
        [database] = await c.find("config", "databases", {"_id": "db"})
        assert await _admin(c, {"getShardVersion": "db"}) == {"primaryShard": "shard00", "version": database["version"],
                                                            "ok": 1.0}
        assert await _error(c, {"getShardVersion": "db.plain"}) == (
            "NamespaceNotSharded", "Collection db.plain is not sharded.")
        assert await _error(c, {"getShardVersion": "nodb"}) == ("NamespaceNotFound", "database nodb not found")
        assert await _error(c, {"getShardVersion": 1}) == ("BadValue", "namespace has invalid type int")
        assert await _error(c, {"getShardVersion": "db.c"}, db="db") == (
            "Unauthorized", "getShardVersion may only be run against the admin database.")

        shards = {d["_id"]: d["host"] for d in await c.find("config", "shards")}
        config_conn = core.router.config.replica_set.connection_string()
        reply = await _admin(c, {"getShardMap": 1})
        assert list(reply["map"].items()) == [*sorted(shards.items()), ("config", config_conn)]
        owners = {**{conn: name for name, conn in shards.items()}, config_conn: "config"}
        assert reply["connStrings"] == owners
        assert reply["hosts"] == {h: name for conn, name in owners.items() for h in conn.split("/", 1)[1].split(",")}
        assert list(reply)[:3] == ["map", "hosts", "connStrings"]
        await c.admin({"addShard": "shard02"})
        assert "shard02" in (await c.admin({"getShardMap": 1}))["map"]
        assert await _error(c, {"getShardMap": 1}, db="db") == (
            "Unauthorized", "getShardMap may only be run against the admin database.")
