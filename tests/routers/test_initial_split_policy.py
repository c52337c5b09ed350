"""shardCollection's initial chunks (router/initial_split_policy.py, the server's InitialSplitPolicy as 8.0's
create collection coordinator picks it).  With zone ranges: one chunk per range on its zone's shards
round-robin and the gaps round-robin over the shuffled shards (SingleChunkPerTagSplitPolicy),
`presplitHashedZones` (PresplitHashedZonesSplitPolicy) and its checks, the ranges checked against the
proposed key (InvalidOptions).  Without: an empty collection with a key whose first field is hashed gets
one chunk per shard of the cluster at calculateHashedSplitPoints' points (symmetric around 0,
(LLONG_MAX / n) * 2 apart), the i-th chunk in key order on the (i mod k)-th of the k non-draining shards
in getAllNonDrainingShardIdsShuffled's order (SplitPointsBasedSplitPolicy).  Anything else (documents, a
hashed field after the first, no hashed field) gets one chunk on the primary."""

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
from mongosim.testing import AsyncClient, CommandError

EPOCH = 1_700_000_000
MIN, MAX = MinKey(), MaxKey()
LLONG_MAX = 2**63 - 1


async def _error(c: AsyncClient, cmd: dict) -> tuple[str | int, str]:
    with pytest.raises(CommandError) as info:
        await c.admin(cmd)
    return info.value.code_name, info.value.reply["errmsg"]


async def _zones(c: AsyncClient, ns: str, shard_zones: dict[str, list[str]], ranges: list[tuple]) -> None:
    await c.admin({"balancerStop": 1})  # (whatever the initial chunks are, nothing moves them afterwards)
    for shard, zones in shard_zones.items():
        for zone in zones:
            await c.admin({"addShardToZone": shard, "zone": zone})
    for lo, hi, zone in ranges:
        await c.admin({"updateZoneKeyRange": ns, "min": lo, "max": hi, "zone": zone})


async def _chunks(c: AsyncClient, ns: str) -> list[dict]:
    """`ns`'s config.chunks documents in key order."""
    [coll] = await c.find("config", "collections", {"_id": ns})
    docs = await c.find("config", "chunks", {"uuid": coll["uuid"]})
    pattern = ShardKeyPattern(coll["key"])
    return sorted(docs, key=lambda d: ShardKeyPattern.comparable(pattern.values_of_bound(d["min"])))


def _layout(chunks: list[dict], field: str) -> list[tuple]:
    return [(d["min"][field], d["max"][field], d["shard"]) for d in chunks]


def _held(core, shard: str, db: str, name: str) -> list:
    coll = core.nodes[shard].catalog.collection(db, name)
    return [] if coll is None else list(coll.docs.values())


def _assert_tiles(chunks: list[dict], pattern: ShardKeyPattern) -> None:
    """The chunks tile [MinKey, MaxKey), numbered 1|0, 1|1, ... in key order."""
    def point(b): return ShardKeyPattern.comparable(pattern.values_of_bound(b))
    assert point(chunks[0]["min"]) == point(pattern.min_bound())
    assert point(chunks[-1]["max"]) == point(pattern.max_bound())
    assert all(point(a["max"]) == point(b["min"]) for a, b in zip(chunks, chunks[1:]))
    assert all(point(d["min"]) < point(d["max"]) for d in chunks)
    assert [d["lastmod"] for d in chunks] == [Timestamp(1, i) for i in range(len(chunks))]


def test_the_gap_order_is_libstdcxx_default_seeded_shuffle():
    """getAllNonDrainingShardIdsShuffled: `std::shuffle` with `std::default_random_engine{}`; the orders
    below are what g++'s libstdc++ gives for 1 to 9 elements."""
    expected = {1: [0], 2: [1, 0], 3: [2, 0, 1], 4: [2, 3, 1, 0], 5: [3, 0, 4, 2, 1], 6: [2, 3, 1, 4, 5, 0],
                7: [3, 0, 4, 6, 5, 1, 2], 8: [2, 7, 1, 6, 5, 0, 4, 3], 9: [3, 0, 4, 7, 5, 1, 8, 6, 2]}
    assert {n: default_engine_shuffle(list(range(n))) for n in expected} == expected


# -- SingleChunkPerTagSplitPolicy ---------------------------------------------------------------
async def test_an_empty_collection_gets_a_chunk_per_zone_range_and_per_gap(autojump_clock):
    async with open_cluster(shards=3, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await c.admin({"enableSharding": "db", "primaryShard": "shard00"})
        await _zones(c, "db.c", {"shard01": ["A"], "shard02": ["A", "B"]}, [
            ({"k": 10}, {"k": 20}, "A"), ({"k": 30}, {"k": 40}, "A"), ({"k": 40}, {"k": 50}, "B"),
            ({"k": 60}, {"k": MAX}, "A")])
        stream = c.watch("db", "c")
        await stream.open()
        await c.admin({"shardCollection": "db.c", "key": {"k": 1}})

        chunks = await _chunks(c, "db.c")
        # the gaps: round-robin over the non-draining shards as the server's default-seeded shuffle orders them
        gaps = default_engine_shuffle(["shard00", "shard01", "shard02"])
        assert gaps == ["shard02", "shard00", "shard01"]
        # a zone's ranges: round-robin over its shards (config.shards order) from one range to the next
        assert _layout(chunks, "k") == [
            (MIN, 10, gaps[0]), (10, 20, "shard01"), (20, 30, gaps[1]), (30, 40, "shard02"), (40, 50, "shard02"),
            (50, 60, gaps[2]), (60, MAX, "shard01")]
        assert [d["lastmod"] for d in chunks] == [Timestamp(1, i) for i in range(7)]
        [coll] = await c.find("config", "collections", {"_id": "db.c"})
        assert all(d["onCurrentShardSince"] == coll["timestamp"] and
                   d["history"] == [{"validAfter": coll["timestamp"], "shard": d["shard"]}] for d in chunks)
        assert (await c.admin({"balancerCollectionStatus": "db.c"}))["balancerCompliant"] is True
        [end] = await c.find("config", "changelog", {"what": "shardCollection.end", "ns": "db.c"})
        assert end["details"]["numChunks"] == 7 and end["details"]["empty"] is True
        assert end["details"]["placementVersion"].startswith("1|6||")

        # documents go where their chunk is, a change stream sees them, and the router finds them all
        ks = list(range(0, 80, 3))
        await c.insert("db", "c", [{"_id": k, "k": k} for k in ks])
        for d in chunks:
            lo = -1 if isinstance(d["min"]["k"], MinKey) else d["min"]["k"]
            hi = 10**9 if isinstance(d["max"]["k"], MaxKey) else d["max"]["k"]
            assert sorted(x["k"] for x in _held(core, d["shard"], "db", "c") if lo <= x["k"] < hi) == \
                [k for k in ks if lo <= k < hi]
        assert sum(len(_held(core, s, "db", "c")) for s in core.router.shards) == len(ks)
        assert sorted(d["k"] for d in await c.find("db", "c")) == ks
        seen: list = []
        while len(seen) < len(ks):
            event = await stream.next()
            if event["operationType"] == "insert":
                seen.append(event["documentKey"]["_id"])
        assert sorted(seen) == ks
        await stream.close()


async def test_a_draining_shard_gets_no_gap_but_keeps_its_zone_turn(autojump_clock):
    """The gaps go round the non-draining shards (getAllNonDrainingShardIdsShuffled); a zone's ranges round
    all the zone's shards, draining or not (buildTagsToShardIdsMap reads every config.shards document)."""
    async with open_cluster(shards=3, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await c.admin({"enableSharding": "db", "primaryShard": "shard01"})
        await _zones(c, "db.c", {"shard00": ["A"], "shard01": ["A"]}, [
            ({"k": 10}, {"k": 20}, "A"), ({"k": 30}, {"k": 40}, "A")])
        assert (await c.admin({"removeShard": "shard00"}))["state"] == "started"  # (the balancer is stopped)
        await c.admin({"shardCollection": "db.c", "key": {"k": 1}})
        gaps = default_engine_shuffle(["shard01", "shard02"])
        assert gaps == ["shard02", "shard01"]
        assert _layout(await _chunks(c, "db.c"), "k") == [
            (MIN, 10, gaps[0]), (10, 20, "shard00"), (20, 30, gaps[1]), (30, 40, "shard01"), (40, MAX, gaps[0])]


async def test_a_collection_with_documents_gets_one_chunk_on_its_primary(autojump_clock):
    async with open_cluster(shards=3, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await c.admin({"enableSharding": "db", "primaryShard": "shard00"})
        await _zones(c, "db.c", {"shard01": ["A"]}, [({"k": 10}, {"k": 20}, "A")])
        await c.insert("db", "c", [{"_id": 1, "k": 15}])
        await c.admin({"shardCollection": "db.c", "key": {"k": 1}})
        assert _layout(await _chunks(c, "db.c"), "k") == [(MIN, MAX, "shard00")]
        [end] = await c.find("config", "changelog", {"what": "shardCollection.end", "ns": "db.c"})
        assert end["details"]["numChunks"] == 1 and end["details"]["empty"] is False
        status = await c.admin({"balancerCollectionStatus": "db.c"})  # (the balancer's work, once started)
        assert status["balancerCompliant"] is False and status["firstComplianceViolation"] == "zoneViolation"


async def test_without_zones_nothing_changes(autojump_clock):
    async with open_cluster(shards=3, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await c.admin({"enableSharding": "db", "primaryShard": "shard01"})
        await c.admin({"shardCollection": "db.r", "key": {"k": 1}})
        assert _layout(await _chunks(c, "db.r"), "k") == [(MIN, MAX, "shard01")]
        await c.admin({"shardCollection": "db.h", "key": {"h": "hashed"}})
        assert [d["shard"] for d in await _chunks(c, "db.h")] == ["shard02", "shard00", "shard01"]  # (the shuffled order)


def test_through_pymongo_zones_then_shard_collection():
    """The shell's order of things (sh.addShardToZone, sh.updateZoneKeyRange, then sh.shardCollection) over the
    wire: the chunks keep the zones at once, documents and a change stream follow them."""
    with mongosim.Cluster(shards=3, port=0, instant_hwm=True) as cluster:
        client = pymongo.MongoClient(cluster.uri)
        admin = client.admin
        admin.command("balancerStop")
        admin.command("enableSharding", "pz", primaryShard="shard00")
        admin.command("addShardToZone", "shard01", zone="EU")
        admin.command("addShardToZone", "shard02", zone="US")
        admin.command("updateZoneKeyRange", "pz.c", min={"region": "EU"}, max={"region": "EV"}, zone="EU")
        admin.command("updateZoneKeyRange", "pz.c", min={"region": "US"}, max={"region": "UT"}, zone="US")
        with pytest.raises(pymongo.errors.OperationFailure) as info:
            admin.command("shardCollection", "pz.c", key={"region": 1, "_id": 1})
        assert info.value.code == 72 and info.value.details["codeName"] == "InvalidOptions"
        with client.pz.c.watch() as stream:
            reply = admin.command("shardCollection", "pz.c", key={"region": 1})
            assert (reply["collectionsharded"], reply["ok"]) == ("pz.c", 1.0)
            uuid = client.config.collections.find_one({"_id": "pz.c"})["uuid"]
            chunks = list(client.config.chunks.find({"uuid": uuid}).sort("lastmod", 1))
            gaps = default_engine_shuffle(["shard00", "shard01", "shard02"])
            assert [(d["min"]["region"], d["max"]["region"], d["shard"]) for d in chunks] == [
                (MIN, "EU", gaps[0]), ("EU", "EV", "shard01"), ("EV", "US", gaps[1]), ("US", "UT", "shard02"),
                ("UT", MAX, gaps[2])]
            docs = [{"_id": i, "region": r} for i, r in enumerate(["EU", "EU", "US", "AF", "US", "ZZ"])]
            client.pz.c.insert_many(docs)
            assert sorted(next(stream)["documentKey"]["_id"] for _ in docs) == [d["_id"] for d in docs]
        for d in docs:
            holders = [name for name, node in cluster.core.shards.items()
                       if (coll := node.catalog.collection("pz", "c")) is not None and coll.get(d["_id"]) is not None]
            want = {"EU": "shard01", "US": "shard02", "AF": gaps[0], "ZZ": gaps[2]}[d["region"]]
            assert holders == [want]
        client.close()


# -- the ranges against the proposed key -----------------------------------------------------------
async def test_zone_ranges_must_match_the_proposed_key(autojump_clock):
    async with open_cluster(shards=2, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await c.admin({"enableSharding": "db", "primaryShard": "shard00"})
        await _zones(c, "db.p", {"shard01": ["A"]}, [({"a": 0}, {"a": 10}, "A")])
        # a range over a prefix of the key (stored as given: the namespace was not sharded)
        assert await _error(c, {"shardCollection": "db.p", "key": {"a": 1, "b": 1}}) == (
            "InvalidOptions", "the proposed shard key { a: 1, b: 1 } does not match with the shard key of the existing "
                              "zone { a: 0 } -->> { a: 10 }")
        assert await _error(c, {"shardCollection": "db.p", "key": {"b": 1}}) == (
            "InvalidOptions", "the proposed shard key { b: 1 } does not match with the shard key of the existing "
                              "zone { a: 0 } -->> { a: 10 }")
        # a hashed field's bounds must be NumberLong, MinKey or MaxKey
        assert await _error(c, {"shardCollection": "db.p", "key": {"a": "hashed"}}) == (
            "InvalidOptions", 'cannot do hash sharding with the proposed key { a: "hashed" } because there exists a '
                              "zone { a: 0 } -->> { a: 10 } whose boundaries are not of type NumberLong, MinKey or "
                              "MaxKey")
        await c.admin({"updateZoneKeyRange": "db.q", "min": {"a": 0}, "max": {"b": 10}, "zone": "A"})
        assert await _error(c, {"shardCollection": "db.q", "key": {"a": 1}}) == (
            "InvalidOptions", "the min and max of the existing zone { a: 0 } -->> { b: 10 } have non-matching keys")
        # nothing was made: no collection, no metadata, no index
        assert await c.find("config", "collections", {"_id": {"$in": ["db.p", "db.q"]}}) == []
        assert await c.find("config", "chunks") == []
        assert core.nodes["shard00"].catalog.collection("db", "p") is None
        # the key the ranges are over: sharded, the range one chunk
        await c.admin({"shardCollection": "db.p", "key": {"a": 1}})
        assert _layout(await _chunks(c, "db.p"), "a") == [(MIN, 0, "shard01"), (0, 10, "shard01"), (10, MAX, "shard00")]


async def test_a_zone_without_shards_cannot_place_its_chunk(autojump_clock):
    async with open_cluster(shards=2, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await _zones(c, "db.c", {"shard01": ["A"]}, [({"k": 0}, {"k": 10}, "A")])
        # (removeShardFromZone refuses while the zone has a range: only a config.shards edit gets here)
        await c.command("config", {"update": "shards", "updates": [{"q": {"_id": "shard01"},
                                                                     "u": {"$pull": {"tags": "A"}}}]})
        assert await _error(c, {"shardCollection": "db.c", "key": {"k": 1}}) == (
            "CannotCreateChunkDistribution", "The initial split policy is not able to find a chunk distribution "
                                             "that satisfies the given set of zones with the current shards")


# -- PresplitHashedZonesSplitPolicy -----------------------------------------------------------------
async def test_presplit_hashed_zones_splits_each_range_over_its_zones_shards(autojump_clock):
    async with open_cluster(shards=3, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await c.admin({"enableSharding": "db", "primaryShard": "shard00"})
        await _zones(c, "db.c", {"shard00": ["EU"], "shard01": ["EU"], "shard02": ["US"]}, [
            ({"country": "DE", "h": MIN}, {"country": "FR", "h": MIN}, "EU"),
            ({"country": "US", "h": MIN}, {"country": MAX, "h": MAX}, "US")])
        await c.admin({"shardCollection": "db.c", "key": {"country": 1, "h": "hashed"}, "presplitHashedZones": True})
        chunks = await _chunks(c, "db.c")
        gaps = default_engine_shuffle(["shard00", "shard01", "shard02"])
        assert [(d["min"], d["max"], d["shard"]) for d in chunks] == [
            ({"country": MIN, "h": MIN}, {"country": "DE", "h": MIN}, gaps[0]),
            ({"country": "DE", "h": MIN}, {"country": "DE", "h": Int64(0)}, "shard00"),
            ({"country": "DE", "h": Int64(0)}, {"country": "FR", "h": MIN}, "shard01"),
            ({"country": "FR", "h": MIN}, {"country": "US", "h": MIN}, gaps[1]),
            ({"country": "US", "h": MIN}, {"country": MAX, "h": MAX}, "shard02")]
        assert [d["lastmod"] for d in chunks] == [Timestamp(1, i) for i in range(5)]
        assert (await c.admin({"balancerCollectionStatus": "db.c"}))["balancerCompliant"] is True
        docs = [{"_id": i, "country": "DE", "h": i} for i in range(40)]
        await c.insert("db", "c", docs)
        for shard, below_zero in (("shard00", True), ("shard01", False)):
            held = _held(core, shard, "db", "c")
            assert held and all((hash64(d["h"]) < 0) == below_zero for d in held)
        assert len(_held(core, "shard00", "db", "c")) + len(_held(core, "shard01", "db", "c")) == 40


async def test_presplit_hashed_zones_on_a_hashed_prefix_key(autojump_clock):
    async with open_cluster(shards=4, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await c.admin({"enableSharding": "db", "primaryShard": "shard00"})
        await _zones(c, "db.c", {s: ["Z"] for s in ("shard01", "shard02", "shard03")},
                     [({"h": MIN}, {"h": MAX}, "Z")])
        await c.admin({"shardCollection": "db.c", "key": {"h": "hashed"}, "presplitHashedZones": True})
        third = (2**63 - 1) // 3 * 2 // 2  # calculateHashedSplitPoints for 3: +-(LLONG_MAX / 3) * 2 / 2
        assert _layout(await _chunks(c, "db.c"), "h") == [
            (MIN, Int64(-third), "shard01"), (Int64(-third), Int64(third), "shard02"), (Int64(third), MAX, "shard03")]


async def test_presplit_hashed_zones_errors(autojump_clock):
    async with open_cluster(shards=2, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await c.admin({"enableSharding": "db", "primaryShard": "shard00"})
        await _zones(c, "db.c", {"shard01": ["A"]}, [({"p": 0, "h": MIN}, {"p": 10, "h": MIN}, "A")])
        only = ("Location31387", "'presplitHashedZones' is only supported when the collection is empty, zones are set "
                                 "up and shard key pattern has a hashed field")
        # no zones; a key without a hashed field; documents
        assert await _error(c, {"shardCollection": "db.none", "key": {"h": "hashed"}, "presplitHashedZones": True}) \
            == only
        await c.admin({"updateZoneKeyRange": "db.r", "min": {"p": 0}, "max": {"p": 10}, "zone": "A"})
        assert await _error(c, {"shardCollection": "db.r", "key": {"p": 1}, "presplitHashedZones": True}) == only
        await c.insert("db", "c", [{"_id": 1, "p": 5, "h": 1}])
        assert await _error(c, {"shardCollection": "db.c", "key": {"p": 1, "h": "hashed"},
                                "presplitHashedZones": True}) == only
        assert await _error(c, {"shardCollection": "db.c", "key": {"p": 1, "h": "hashed"},
                                "presplitHashedZones": 1}) == (
            "TypeMismatch", "BSON field 'ShardCollection.presplitHashedZones' is the wrong type 'int', expected type "
                            "'bool'")

        async def refused(ns: str, key: dict, lo: dict, hi: dict) -> tuple:
            await c.admin({"updateZoneKeyRange": ns, "min": lo, "max": hi, "zone": "A"})
            return await _error(c, {"shardCollection": ns, "key": key, "presplitHashedZones": True})

        code, msg = await refused("db.hp", {"h": "hashed", "x": 1}, {"h": MIN, "x": MIN}, {"h": Int64(0), "x": MIN})
        assert (code, msg) == ("Location31412", "For hashed prefix shard keys, 'presplitHashedZones' is only "
                                                "supported when there is a single zone defined which covers entire "
                                                "shard key range")
        key = {"p": 1, "h": "hashed", "s": 1}
        prefix = "One or more zones are not defined in a manner that supports hashed pre-splitting."
        assert await refused("db.e1", key, {"p": MIN, "h": MIN, "s": MIN}, {"p": 5, "h": MIN, "s": MIN}) == (
            "Location31388", f"{prefix} Cannot have MinKey or MaxKey in the lower bound for fields preceding the "
                             "hashed field but found one, for zone A")
        assert await refused("db.e2", key, {"p": 5, "h": MIN, "s": MIN}, {"p": 5, "h": MAX, "s": MAX}) == (
            "Location31390", f"{prefix} The value preceding hashed field of the upper bound should be greater than "
                             "that of lower bound, for zone A")
        assert await refused("db.e3", key, {"p": 5, "h": Int64(1), "s": MIN}, {"p": 6, "h": MIN, "s": MIN}) == (
            "Location31389", f"{prefix} The hashed field value for lower bound must be MinKey, for zone A")
        assert await refused("db.e4", key, {"p": 5, "h": MIN, "s": 1}, {"p": 6, "h": MIN, "s": MIN}) == (
            "Location31391", f"{prefix} The fields after the hashed field must have MinKey value, for zone A")
        assert await c.find("config", "collections", {"_id": {"$regex": "^db\\."}}) == []


# -- SplitPointsBasedSplitPolicy: no zones, an empty collection, a hashed key -------------------------
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


def _holders(core, db: str, name: str, _id) -> list[str]:
    return [s for s in sorted(core.router.shards) if any(d["_id"] == _id for d in _held(core, s, db, name))]


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


async def test_a_hashed_key_on_a_collection_with_documents_gets_one_chunk_on_its_primary(autojump_clock):
    async with open_cluster(shards=3, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await c.admin({"enableSharding": "db", "primaryShard": "shard02"})
        await c.insert("db", "h", [{"_id": 1, "h": 1}])
        await c.admin({"shardCollection": "db.h", "key": {"h": "hashed"}})
        assert [(d["min"]["h"], d["max"]["h"], d["shard"]) for d in await _chunks(c, "db.h")] == [
            (MIN, MAX, "shard02")]


def test_through_pymongo_a_hashed_key_on_an_empty_collection():
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


# -- property: any zone layout defined before sharding ---------------------------------------------------
ZONES = ("A", "B", "C")


@st.composite
def layouts(draw):
    """(shard count, {shard: zones}, [(lo, hi, zone)] disjoint in key order over 0..99, the first from
    "min" or the last to "max" at times, presplit)."""
    presplit = draw(st.booleans())
    n = draw(st.integers(2, 4))
    members = {z: draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True)) for z in ZONES}
    cuts = sorted(draw(st.lists(st.integers(0, 99), min_size=2, max_size=10, unique=True)))
    ranges = []
    for i in range(0, len(cuts) - 1, 2):
        if draw(st.booleans()):
            ranges.append((cuts[i], cuts[i + 1], draw(st.sampled_from(ZONES))))
    if not ranges:
        ranges.append((cuts[0], cuts[1], "A"))
    if draw(st.booleans()):
        ranges[-1] = (ranges[-1][0], "max", ranges[-1][2])
    if not presplit and draw(st.booleans()):  # (presplitting needs a value before the hashed field)
        ranges[0] = ("min", ranges[0][1], ranges[0][2])
    shard_zones: dict[int, list[str]] = {}
    for z, shards in members.items():
        for s in shards:
            shard_zones.setdefault(s, []).append(z)
    return n, shard_zones, ranges, presplit


@settings(max_examples=50)
@given(layout=layouts())
def test_initial_chunks_tile_the_key_space_and_keep_every_zone(layout):
    n, shard_zones, ranges, presplit = layout

    async def run() -> None:
        async with open_cluster(shards=n, listen=False, epoch=EPOCH, instant_hwm=True) as core:
            c = AsyncClient(core.router)
            names = sorted(core.router.shards)
            if presplit:  # a compound key {p, h: hashed}, each range over p values, presplit on h
                key = {"p": 1, "h": "hashed"}
                def bound(v): return {"p": MAX, "h": MAX} if v == "max" else {"p": v, "h": MIN}
            else:
                key = {"k": 1}
                def bound(v): return {"k": {"min": MIN, "max": MAX}.get(v, v)}
            await _zones(c, "db.c", {names[s]: zs for s, zs in shard_zones.items()},
                         [(bound(lo), bound(hi), z) for lo, hi, z in ranges])
            await c.admin({"shardCollection": "db.c", "key": key, "presplitHashedZones": presplit})
            chunks = await _chunks(c, "db.c")
            pattern = ShardKeyPattern(key)

            def point(b): return ShardKeyPattern.comparable(pattern.values_of_bound(b))
            _assert_tiles(chunks, pattern)
            # every chunk inside a range on a shard of its zone; every range's bounds are chunk bounds
            edges = {point(d["min"]) for d in chunks} | {point(chunks[-1]["max"])}
            for lo, hi, z in ranges:
                rlo, rhi = point(bound(lo)), point(bound(hi))
                assert rlo in edges and rhi in edges
                inside = [d for d in chunks if rlo <= point(d["min"]) and point(d["max"]) <= rhi]
                assert inside and all(z in shard_zones.get(names.index(d["shard"]), []) for d in inside)
                if presplit:  # one chunk per shard of the zone, each on a different one
                    zone_shards = sorted(names[s] for s, zs in shard_zones.items() if z in zs)
                    assert sorted(d["shard"] for d in inside) == zone_shards
                else:
                    assert len(inside) == 1
            assert (await c.admin({"balancerCollectionStatus": "db.c"}))["balancerCompliant"] is True

    trio.run(run, clock=trio.testing.MockClock(autojump_threshold=0))


# -- property: any shard count, some draining, a hashed key -----------------------------------------------
@st.composite
def hashed_clusters(draw):
    """(shard count, the shards draining (never all), the key)."""
    n = draw(st.integers(1, 7))
    draining = draw(st.lists(st.integers(0, n - 1), max_size=n - 1, unique=True))
    key = draw(st.sampled_from([{"h": "hashed"}, {"h": "hashed", "b": 1}, {"a": 1, "h": "hashed"}]))
    return n, draining, key


@settings(max_examples=25, deadline=None)
@given(case=hashed_clusters())
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
            _assert_tiles(chunks, ShardKeyPattern(key))
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
