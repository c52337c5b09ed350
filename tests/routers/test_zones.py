"""Zones: `addShardToZone`, `removeShardFromZone`, `updateZoneKeyRange` (their config documents and the
server's errors), and the balancer splitting chunks at the zone ranges' bounds and moving each chunk
into its zone; a dropped collection's ranges go with it."""

from __future__ import annotations

import pytest
import trio
from bson import Int64, MaxKey, MinKey, ObjectId

from mongosim.core import open_cluster
from mongosim.testing import AsyncClient, CommandError

EPOCH = 1_700_000_000


async def _error(c: AsyncClient, cmd: dict) -> tuple[str, str]:
    with pytest.raises(CommandError) as info:
        await c.admin(cmd)
    return info.value.code_name, info.value.reply["errmsg"]


async def test_zone_commands_and_their_errors(autojump_clock):
    async with open_cluster(shards=3, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await c.admin({"balancerStop": 1})
        await c.admin({"shardCollection": "db.c", "key": {"a": 1, "b": 1}})
        assert await _error(c, {"addShardToZone": "shard09", "zone": "EU"}) == (
            "ShardNotFound", "shard shard09 does not exist")
        assert await _error(c, {"updateZoneKeyRange": "db.c", "min": {"a": 0}, "max": {"a": 10}, "zone": "EU"}) == (
            "ZoneNotFound", "zone EU does not exist")
        await c.admin({"addShardToZone": "shard01", "zone": "EU"})
        await c.admin({"addShardToZone": "shard01", "zone": "EU"})  # (a set: once)
        await c.admin({"addShardToZone": "shard02", "zone": "US"})
        shards = {d["_id"]: d.get("tags") for d in await c.find("config", "shards")}
        assert shards == {"shard00": None, "shard01": ["EU"], "shard02": ["US"]}

        # a prefix of the shard key, extended with MinKey; a bound that is not a prefix is refused
        await c.admin({"updateZoneKeyRange": "db.c", "min": {"a": 0}, "max": {"a": 10}, "zone": "EU"})
        await c.admin({"updateZoneKeyRange": "db.c", "min": {"a": 0}, "max": {"a": 10}, "zone": "EU"})  # the same again
        [tag] = await c.find("config", "tags")
        assert isinstance(tag["_id"], ObjectId)
        assert {k: v for k, v in tag.items() if k != "_id"} == {"ns": "db.c", "min": {"a": 0, "b": MinKey()}, "max": {"a": 10, "b": MinKey()}, "tag": "EU"}
        assert await _error(c, {"updateZoneKeyRange": "db.c", "min": {"b": 0}, "max": {"b": 10}, "zone": "EU"}) == (
            "ShardKeyNotFound", "min: { b: 0 } is not a prefix of the shard key { a: 1, b: 1 } of ns: db.c")
        assert await _error(c, {"updateZoneKeyRange": "db.c", "min": {"a": 5}, "max": {"a": 20}, "zone": "US"}) == (
            "RangeOverlapConflict", "Zone range: { a: 5, b: MinKey } -->> { a: 20, b: MinKey }  on  US is overlapping "
            "with existing: { a: 0, b: MinKey } -->> { a: 10, b: MinKey }  on  EU")
        assert (await _error(c, {"updateZoneKeyRange": "db.c", "min": {"a": 0}, "max": {"a": 10}, "zone": "US"}))[0] \
            == "RangeOverlapConflict"
        assert await _error(c, {"updateZoneKeyRange": "db.c", "min": {"a": 9}, "max": {"a": 1}, "zone": "US"}) == (
            "FailedToParse", "min: { a: 9 } should be less than max: { a: 1 }")
        assert (await _error(c, {"updateZoneKeyRange": "db.c", "min": {"a": 20}, "max": {"a": 30}, "zone": 1}))[0] == \
            "TypeMismatch"
        await c.admin({"updateZoneKeyRange": "db.c", "min": {"a": 10}, "max": {"a": 20}, "zone": "US"})  # adjacent

        # the zone's last shard cannot leave while it has a range; the range removed, it can
        assert await _error(c, {"removeShardFromZone": "shard01", "zone": "EU"}) == (
            "ZoneStillInUse", "cannot remove a shard from zone if a chunk range is associated with it")
        await c.admin({"updateZoneKeyRange": "db.c", "min": {"a": 0}, "max": {"a": 10}, "zone": None})
        await c.admin({"removeShardFromZone": "shard01", "zone": "EU"})
        assert [d["tag"] for d in await c.find("config", "tags")] == ["US"]
        assert {d["_id"]: d.get("tags") for d in await c.find("config", "shards")}["shard01"] == []

        # a dropped collection's ranges go with it
        await c.command("db", {"drop": "c"})
        assert await c.find("config", "tags") == []


async def _compliant(c: AsyncClient, ns: str) -> dict:
    return await c.admin({"balancerCollectionStatus": ns})


async def test_the_balancer_splits_at_zone_bounds_and_moves_chunks_into_their_zones(autojump_clock):
    async with open_cluster(shards=3, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await c.admin({"enableSharding": "db", "primaryShard": "shard00"})
        await c.admin({"shardCollection": "db.c", "key": {"k": 1}})
        await c.insert("db", "c", [{"_id": i, "k": i} for i in range(0, 300, 5)])
        await c.admin({"balancerStop": 1})
        await c.admin({"addShardToZone": "shard01", "zone": "mid"})
        await c.admin({"addShardToZone": "shard02", "zone": "mid"})
        await c.admin({"addShardToZone": "shard02", "zone": "top"})
        await c.admin({"updateZoneKeyRange": "db.c", "min": {"k": 100}, "max": {"k": 200}, "zone": "mid"})
        await c.admin({"updateZoneKeyRange": "db.c", "min": {"k": 250}, "max": {"k": MaxKey()}, "zone": "top"})
        status = await _compliant(c, "db.c")
        assert status["balancerCompliant"] is False and status["firstComplianceViolation"] == "zoneViolation"

        await c.admin({"balancerStart": 1})
        for _ in range(60):
            if (await _compliant(c, "db.c"))["balancerCompliant"]:
                break
            await trio.sleep(1)
        chunks = sorted(((d["min"]["k"], d["max"]["k"], d["shard"]) for d in await c.find("config", "chunks")),
                        key=lambda t: (not isinstance(t[0], MinKey), t[0] if isinstance(t[0], int) else 0))
        assert [(lo if isinstance(lo, int) else "min", hi if isinstance(hi, int) else "max", s)
                for lo, hi, s in chunks] == [
            ("min", 100, "shard00"), (100, 200, "shard01"), (200, 250, "shard00"), (250, "max", "shard02")]
        # every document where its chunk is, and still found through the router
        assert sorted(d["k"] for d in await c.find("db", "c")) == list(range(0, 300, 5))
        for shard, lo, hi in (("shard01", 100, 200), ("shard02", 250, 300)):
            node = core.nodes[shard]
            held = sorted(d["k"] for d in node.catalog.collection("db", "c").docs.values())
            assert held == list(range(lo, hi, 5))


async def test_hashed_zone_bounds_are_longs(autojump_clock):
    async with open_cluster(shards=2, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await c.admin({"shardCollection": "db.h", "key": {"h": "hashed"}})
        await c.admin({"addShardToZone": "shard01", "zone": "Z"})
        code, msg = await _error(c, {"updateZoneKeyRange": "db.h", "min": {"h": 0}, "max": {"h": 10}, "zone": "Z"})
        assert code == "InvalidOptions" and msg.startswith("there exists a field in the range { h: 0 } -->> { h: 10 } "
                                                           "not of type NumberLong, MinKey, or MaxKey")
        await c.admin({"updateZoneKeyRange": "db.h", "min": {"h": MinKey()}, "max": {"h": Int64(0)}, "zone": "Z"})


async def test_a_chunk_moves_only_into_its_zone(autojump_clock):
    """moveChunk / moveRange to a shard outside the chunk's zone, or draining: IllegalOperation (the
    balancer's isShardSuitableReceiver), and nothing split or moved."""
    async with open_cluster(shards=3, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await c.admin({"enableSharding": "db", "primaryShard": "shard00"})
        await c.admin({"shardCollection": "db.c", "key": {"k": 1}})
        await c.admin({"split": "db.c", "middle": {"k": 100}})
        await c.admin({"addShardToZone": "shard00", "zone": "low"})
        await c.admin({"updateZoneKeyRange": "db.c", "min": {"k": MinKey()}, "max": {"k": 100}, "zone": "low"})
        assert await _error(c, {"moveChunk": "db.c", "find": {"k": 5}, "to": "shard01"}) == (
            "IllegalOperation", "shard01 is not in the correct zone low")
        chunks = await c.find("config", "chunks")
        assert await _error(c, {"moveRange": "db.c", "min": {"k": 10}, "max": {"k": 20}, "toShard": "shard02"}) == (
            "IllegalOperation", "shard02 is not in the correct zone low")
        assert await c.find("config", "chunks") == chunks  # (not split either)
        await c.admin({"moveChunk": "db.c", "find": {"k": 150}, "to": "shard01"})  # outside the zone: anywhere
        await c.admin({"balancerStop": 1})
        await c.admin({"removeShard": "shard02"})
        assert await _error(c, {"moveChunk": "db.c", "find": {"k": 150}, "to": "shard02"}) == (
            "IllegalOperation", "shard02 is currently draining.")
