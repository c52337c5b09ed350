"""The balancer's AutoMerger and `configureCollectionBalancing`: runs of chunks split by hand merged back
once they are older than the history window, at the interval (autoMergerIntervalSecs) in virtual time,
not with the AutoMerger off (config.settings, the balancer stopped, a collection's enableAutoMerge),
throttled by autoMergerThrottlingMS; mongosh's helpers (what they send); the command's stored fields,
version bump, changelog and errors."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio
from bson import Int64, MaxKey, MinKey, Timestamp

from mongosim.core import open_cluster
from mongosim.testing import AsyncClient, CommandError

EPOCH = 1_700_000_000
WINDOW = 300  # the config server's history window
INTERVAL = 3600  # autoMergerIntervalSecs
ROUND = 10  # the balancer's round interval: when the AutoMerger notices its settings
THROTTLE = 15  # autoMergerThrottlingMS, in seconds


async def _error(c: AsyncClient, cmd: dict, db: str = "admin") -> tuple:
    with pytest.raises(CommandError) as info:
        await c.command(db, cmd)
    return info.value.code_name, info.value.reply["errmsg"]


async def _bounds(c: AsyncClient, ns: str = "db.c") -> list[tuple]:
    [coll] = await c.find("config", "collections", {"_id": ns})
    docs = await c.find("config", "chunks", {"uuid": coll["uuid"]})
    docs.sort(key=lambda d: (not isinstance(d["min"]["k"], MinKey), d["min"]["k"]))
    return [(d["min"]["k"], d["max"]["k"], d["shard"]) for d in docs]


async def _log(c: AsyncClient, *whats: str) -> list[dict]:
    docs = await c.find("config", "changelog", {"what": {"$in": list(whats)}})
    return sorted(docs, key=lambda d: d["time"])


def _config_primary(core) -> AsyncClient:
    return AsyncClient(core.member_frontends[core.replica_sets["config"].primary.host])


async def _shard(c: AsyncClient, ns: str, splits: tuple = (10, 20, 30), moved: tuple = ()) -> None:
    """`ns` sharded on k, split at `splits`, the chunks starting at `moved` moved to shard01."""
    db, coll = ns.split(".")
    await c.admin({"shardCollection": ns, "key": {"k": 1}})
    await c.insert(db, coll, [{"_id": i, "k": i} for i in range(50)])
    for m in splits:
        await c.admin({"split": ns, "middle": {"k": m}})
    for m in moved:
        await c.admin({"moveChunk": ns, "find": {"k": m}, "to": "shard01"})


@asynccontextmanager
async def _cluster(routers: int = 1) -> AsyncIterator[tuple]:
    async with open_cluster(shards=2, routers=routers, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await c.admin({"enableSharding": "db", "primaryShard": "shard00"})
        yield core, c


async def _sleep_until(t: float) -> None:
    await trio.sleep_until(t)


SPLIT = [(MinKey(), 10, "shard00"), (10, 20, "shard00"), (20, 30, "shard00"), (30, MaxKey(), "shard00")]
MERGED = [(MinKey(), MaxKey(), "shard00")]


async def test_a_split_run_is_merged_back_at_the_next_automerge_round(autojump_clock):
    async with _cluster() as (core, c):
        await _shard(c, "db.c")
        assert await _bounds(c) == SPLIT
        # the first round ran when the balancer started; the next is due after the interval
        await _sleep_until(INTERVAL - ROUND)
        assert await _bounds(c) == SPLIT
        await _sleep_until(INTERVAL + 2 * ROUND + THROTTLE)  # (db.c is asked again, a throttle later)
        assert await _bounds(c) == MERGED
        merges = await _log(c, "merge")
        assert [(m["ns"], m["details"]["owningShard"], m["details"]["numChunks"]) for m in merges] == [
            ("db.c", "shard00", 4)]
        rounds = await _log(c, "autoMerge.enable", "autoMerge.start", "autoMerge.end")
        assert [(d["what"], d["ns"], d["details"]) for d in rounds] == [
            ("autoMerge.enable", "", {}), ("autoMerge.start", "", {}), ("autoMerge.end", "", {}),
            ("autoMerge.start", "", {}), ("autoMerge.end", "", {})]
        assert rounds[3]["time"] <= merges[0]["time"] <= rounds[4]["time"]
        assert sorted(d["k"] for d in await c.find("db", "c")) == list(range(50))


async def test_chunks_within_the_history_window_wait_and_the_interval_is_a_parameter(autojump_clock):
    async with _cluster() as (core, c):
        cfg = _config_primary(core)
        # a mongos has no such parameter; the config server's is settable at runtime
        assert await _error(c, {"getParameter": 1, "autoMergerIntervalSecs": 1}) == (
            "InvalidOptions", "no option found to get")
        got = await cfg.admin({"getParameter": 1, "autoMergerIntervalSecs": 1, "autoMergerThrottlingMS": 1})
        assert (got["autoMergerIntervalSecs"], got["autoMergerThrottlingMS"]) == (INTERVAL, 15000)
        assert (await cfg.admin({"setParameter": 1, "autoMergerIntervalSecs": 1}))["was"] == INTERVAL
        await _shard(c, "db.c", moved=(30,))
        split_at = trio.current_time()
        await _sleep_until(split_at + WINDOW - 2 * ROUND)  # rounds every balancer round, but all too recent
        assert await _bounds(c) == SPLIT[:3] + [(30, MaxKey(), "shard01")]
        assert await _log(c, "merge") == []
        await _sleep_until(split_at + WINDOW + 2 * ROUND)
        assert await _bounds(c) == [(MinKey(), 30, "shard00"), (30, MaxKey(), "shard01")]
        [merge] = await _log(c, "merge")
        assert merge["details"]["numChunks"] == 3 and merge["details"]["min"] == {"k": MinKey()}


async def test_the_auto_merger_off_in_settings_or_with_the_balancer_stopped(autojump_clock):
    async with _cluster() as (core, c):
        await _config_primary(core).admin({"setParameter": 1, "autoMergerIntervalSecs": 1})
        await _shard(c, "db.c")
        # sh.stopAutoMerger(): an upsert into config.settings; sh.isAutoMergerEnabled() reads it back
        await c.update("config", "settings", {"_id": "automerge"}, {"$set": {"enabled": False}}, upsert=True)
        assert (await c.find("config", "settings", {"_id": "automerge"}))[0]["enabled"] is False
        await _sleep_until(WINDOW + 10 * ROUND)
        assert await _bounds(c) == SPLIT
        assert [d["what"] for d in await _log(c, "autoMerge.enable", "autoMerge.disable")] == [
            "autoMerge.enable", "autoMerge.disable"]
        # sh.startAutoMerger(): merged at the next balancer round
        await c.update("config", "settings", {"_id": "automerge"}, {"$set": {"enabled": True}}, upsert=True)
        await trio.sleep(ROUND + 1)
        assert await _bounds(c) == MERGED
        # the balancer stopped: no AutoMerger either (shouldBalanceForAutoMerge)
        await c.admin({"balancerStop": 1})
        for m in (10, 20):
            await c.admin({"split": "db.c", "middle": {"k": m}})
        await trio.sleep(WINDOW + 10 * ROUND)
        assert len(await _bounds(c)) == 3
        assert [d["what"] for d in await _log(c, "autoMerge.enable", "autoMerge.disable")] == [
            "autoMerge.enable", "autoMerge.disable", "autoMerge.enable", "autoMerge.disable"]
        await c.admin({"balancerStart": 1})  # woken at once: enabled, and a round right away
        await trio.sleep(1)
        assert await _bounds(c) == MERGED


async def test_a_collection_with_enable_auto_merge_false_is_skipped(autojump_clock):
    async with _cluster() as (core, c):
        await _config_primary(core).admin({"setParameter": 1, "autoMergerIntervalSecs": 1})
        await _shard(c, "db.c")
        await _shard(c, "db.d")
        await _shard(c, "db.e")
        # sh.disableAutoMerger("db.c") writes config.collections; configureCollectionBalancing does for db.d
        await c.update("config", "collections", {"_id": "db.c"}, {"$set": {"enableAutoMerge": False}})
        await c.admin({"configureCollectionBalancing": "db.d", "enableAutoMerger": False})
        await trio.sleep(WINDOW + 3 * ROUND)
        assert await _bounds(c, "db.c") == SPLIT and await _bounds(c, "db.d") == SPLIT
        assert await _bounds(c, "db.e") == MERGED
        # sh.enableAutoMerger("db.c") unsets the field; configureCollectionBalancing sets it true
        await c.update("config", "collections", {"_id": "db.c"}, {"$unset": {"enableAutoMerge": 1}})
        await c.admin({"configureCollectionBalancing": "db.d", "enableAutoMerger": True})
        await trio.sleep(3 * ROUND)
        assert await _bounds(c, "db.c") == MERGED and await _bounds(c, "db.d") == MERGED


@pytest.mark.parametrize("throttle_ms", [15000, 0, 4000])
async def test_merges_are_throttled_between_shards_and_passes(autojump_clock, throttle_ms):
    """A round with mergeable chunks on both shards: shard00's merge, shard01's after the throttle, then
    each asked again (merging nothing) a throttle apart; the round ends after four throttled merges."""
    async with _cluster() as (core, c):
        cfg = _config_primary(core)
        await cfg.admin({"setParameter": 1, "autoMergerThrottlingMS": throttle_ms})
        await _shard(c, "db.c", splits=(10, 20, 30, 40), moved=(30, 40))
        await _sleep_until(INTERVAL + 2 * ROUND + 4 * throttle_ms / 1000)
        assert await _bounds(c) == [(MinKey(), 30, "shard00"), (30, MaxKey(), "shard01")]
        start, end = (await _log(c, "autoMerge.start"))[-1], (await _log(c, "autoMerge.end"))[-1]
        merges = await _log(c, "merge")
        assert [m["details"]["owningShard"] for m in merges] == ["shard00", "shard01"]
        step = throttle_ms / 1000
        assert (merges[0]["time"] - start["time"]).total_seconds() == 0
        assert (merges[1]["time"] - merges[0]["time"]).total_seconds() == step
        assert (end["time"] - start["time"]).total_seconds() == 3 * step


async def test_configure_collection_balancing_stores_its_fields(autojump_clock):
    async with _cluster(routers=2) as (core, c):
        await c.admin({"balancerStop": 1})
        await _shard(c, "db.c", moved=(30,))
        other = AsyncClient(core.routers[1])
        assert len(await other.find("db", "c", {"k": {"$gte": 25}})) == 25  # (it caches the routing table)

        async def coll() -> dict:
            return (await c.find("config", "collections", {"_id": "db.c"}))[0]

        async def version() -> Timestamp:
            return max((d["lastmod"] for d in await c.find("config", "chunks", {"uuid": (await coll())["uuid"]})),
                       key=lambda t: (t.time, t.inc))

        before = await version()
        reply = await c.admin({"configureCollectionBalancing": "db.c", "chunkSize": 256})
        assert {k: v for k, v in reply.items() if k not in ("$clusterTime", "operationTime")} == {"ok": 1.0}
        assert (await coll())["maxChunkSizeBytes"] == Int64(256 * 1024 * 1024)
        assert type((await coll())["maxChunkSizeBytes"]) is Int64
        assert await version() == Timestamp(before.time, before.inc + 1)  # the minor version bumped
        assert (await c.admin({"balancerCollectionStatus": "db.c"}))["chunkSize"] == 256.0
        await c.admin({"configureCollectionBalancing": "db.c", "chunkSize": 64.0, "enableAutoMerger": False,
                       "unknownField": 1})
        assert ((await coll())["maxChunkSizeBytes"], (await coll())["enableAutoMerge"]) == (64 * 1024 * 1024, False)
        await c.admin({"configureCollectionBalancing": "db.c", "chunkSize": 0})
        assert "maxChunkSizeBytes" not in await coll() and (await coll())["enableAutoMerge"] is False
        assert (await c.admin({"balancerCollectionStatus": "db.c"}))["chunkSize"] == 128.0
        # defragmentCollection: false with no defragmentation running changes nothing but is logged
        await c.admin({"configureCollectionBalancing": "db.c", "defragmentCollection": False})
        logs = await _log(c, "configureCollectionBalancing")
        assert [(d["ns"], d["details"]) for d in logs] == [
            ("db.c", {"chunkSizeMB": 256}), ("db.c", {"chunkSizeMB": 64}), ("db.c", {"chunkSizeMB": 0}),
            ("db.c", {"defragmentCollection": False})]
        assert await version() == Timestamp(before.time, before.inc + 3)
        # the router with the routing table from before the bumps still writes and reads where the documents are
        await other.insert("db", "c", [{"_id": 100, "k": 35}, {"_id": 101, "k": 5}])
        assert sorted(d["_id"] for d in await other.find("db", "c", {"k": {"$in": [5, 35]}})) == [5, 35, 100, 101]
        # nothing asked: nothing done, nothing logged
        await c.admin({"configureCollectionBalancing": "db.c"})
        assert len(await _log(c, "configureCollectionBalancing")) == 4


async def test_configure_collection_balancing_errors(autojump_clock):
    async with _cluster() as (core, c):
        await _shard(c, "db.c")
        await c.insert("db", "plain", [{"_id": 1}])
        before = await c.find("config", "collections", {"_id": "db.c"})
        name = "configureCollectionBalancing"
        assert await _error(c, {name: "db.c", "chunkSize": 10}, db="db") == (
            "Unauthorized", "configureCollectionBalancing may only be run against the admin database.")
        assert await _error(c, {name: 5}) == (
            "TypeMismatch", f"BSON field '{name}.{name}' is the wrong type 'int', expected type 'string'")
        assert await _error(c, {name: "db.c", "chunkSize": "10"}) == (
            "TypeMismatch", f"BSON field '{name}.chunkSize' is the wrong type 'string', expected types "
                            "'[long, int, decimal, double]'")
        assert await _error(c, {name: "db.c", "enableAutoMerger": 1}) == (
            "TypeMismatch", f"BSON field '{name}.enableAutoMerger' is the wrong type 'int', expected type 'bool'")
        assert await _error(c, {name: "db.c", "defragmentCollection": "yes"}) == (
            "TypeMismatch", f"BSON field '{name}.defragmentCollection' is the wrong type 'string', expected type "
                            "'bool'")
        assert await _error(c, {name: "nodot", "chunkSize": 10}) == (
            "InvalidNamespace", "Invalid namespace specified 'nodot'")
        for size in (2048, -1):
            assert await _error(c, {name: "db.c", "chunkSize": size}) == (
                "InvalidOptions", f"Chunk size '{size}' out of range [1MB, 1GB]")
        for ns in ("db.plain", "db.none"):
            assert await _error(c, {name: ns, "chunkSize": 10}) == (
                "NamespaceNotSharded", f'Expected to match one doc for query {{ _id: "{ns}" }} but matched 0')
        assert await _error(c, {name: "db.none", "defragmentCollection": False}) == (
            "NamespaceNotFound", "collection db.none not found")
        assert await _error(c, {name: "db.c", "defragmentCollection": True}) == (
            "NotImplemented", "defragmentCollection is not supported by mongosim")
        assert await c.find("config", "collections", {"_id": "db.c"}) == before
        assert await _log(c, "configureCollectionBalancing") == []
