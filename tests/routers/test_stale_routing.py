"""A router that missed a metadata change routes by a stale table: the shard refuses (StaleConfig,
StaleDbVersion), the router refreshes and retries, and the client never notices."""

from __future__ import annotations

import pytest
from bson import Timestamp

from mongosim.core import open_cluster
from mongosim.oplog.errors import MongoError
from mongosim.testing import AsyncClient, CommandError

EPOCH = 1_700_000_000


async def _two_routers(**kw):
    return open_cluster(shards=3, routers=2, listen=False, epoch=EPOCH, instant_hwm=True, **kw)


async def _sharded(c: AsyncClient) -> None:
    """db.c sharded on k: shard00 k < 100, shard01 k >= 100."""
    await c.admin({"enableSharding": "db", "primaryShard": "shard00"})
    await c.admin({"shardCollection": "db.c", "key": {"k": 1}})
    await c.admin({"split": "db.c", "middle": {"k": 100}})
    await c.admin({"moveChunk": "db.c", "find": {"k": 100}, "to": "shard01"})


def _placement(router, ns="db.c"):
    r = router.catalog.routing(ns)
    return None if r is None else dict(r.placement)


async def test_a_router_that_missed_a_migration_is_refused_then_refreshes_and_writes_to_the_new_owner(autojump_clock):
    async with await _two_routers() as core:
        a, b = core.router, None
        ca = AsyncClient(a)
        await _sharded(ca)
        b = core.routers[1]
        cb = AsyncClient(b)
        before = _placement(b)
        await ca.admin({"moveChunk": "db.c", "find": {"k": 100}, "to": "shard02"})  # b does not know
        assert _placement(b) == before
        await cb.insert("db", "c", [{"_id": 1, "k": 150}])
        assert core.shards["shard02"].catalog.collection("db", "c").get(1) == {"_id": 1, "k": 150}
        assert core.shards["shard01"].catalog.collection("db", "c").get(1) is None
        assert _placement(b) == _placement(a)  # it refreshed


async def test_a_document_moved_by_a_stale_router_lands_on_its_owner(autojump_clock):
    """An update or upsert whose new shard key belongs to another shard (WouldChangeOwningShard): the
    router inserts the post-image where its routing says, with that routing's shard version, so a
    shard that no longer owns the range (another router moved it) refuses it, and the internal
    transaction runs again on the refreshed routing: no orphan, and the next update finds the
    document.  (Found by the stateful machine's nightly profile: the insert went unversioned.)"""
    async with await _two_routers() as core:
        ca = AsyncClient(core.router)
        await _sharded(ca)
        cb = AsyncClient(core.routers[1])
        await cb.admin({"moveChunk": "db.c", "find": {"k": 100}, "to": "shard02"})  # the first router does not know
        lsid = {"id": __import__("bson").Binary(b"\x01" * 16, 4)}
        await ca.command("db", {"update": "c", "updates": [{"q": {"_id": 7, "k": 50}, "u": {"$set": {"k": 150}},
                                                            "upsert": True}], "lsid": lsid, "txnNumber": 1})
        held = {s: n.catalog.collection("db", "c").get(7) for s, n in core.shards.items()}
        assert held == {"shard00": None, "shard01": None, "shard02": {"_id": 7, "k": 150}}
        reply = await ca.command("db", {"update": "c", "updates": [{"q": {"_id": 7, "k": 150}, "u": {"$set": {"k": 5}}}],
                                        "lsid": lsid, "txnNumber": 2})
        assert (reply["n"], reply["nModified"]) == (1, 1)
        held = {s: n.catalog.collection("db", "c").get(7) for s, n in core.shards.items()}
        assert held == {"shard00": {"_id": 7, "k": 5}, "shard01": None, "shard02": None}


async def test_the_shard_answers_stale_config_with_the_versions(autojump_clock):
    async with await _two_routers() as core:
        ca = AsyncClient(core.router)
        await _sharded(ca)
        r = core.router.catalog.routing("db.c")
        old = {"e": r.epoch, "t": r.timestamp, "v": r.placement["shard01"]}
        await ca.admin({"moveChunk": "db.c", "find": {"k": 100}, "to": "shard02"})
        with pytest.raises(MongoError) as info:
            await core.shards["shard01"].run_command("db", {"find": "c", "shardVersion": old}, from_router=True)
        err = info.value
        assert err.code == 13388 and err.code_name == "StaleConfig"
        assert err.errmsg == "this shard no longer contains chunks for db.c, the collection may have been dropped"
        assert err.extra == {"ns": "db.c", "vReceived": old,
                             "vWanted": {"e": r.epoch, "t": r.timestamp, "v": Timestamp(0, 0)}, "shardId": "shard01"}
        # the recipient: the router expected it to own nothing
        with pytest.raises(MongoError) as info:
            await core.shards["shard02"].run_command(
                "db", {"find": "c", "shardVersion": {**old, "v": Timestamp(0, 0)}}, from_router=True)
        assert info.value.errmsg == "this shard contains chunks for db.c, but the client expects unsharded collection"


async def test_the_donor_keeping_chunks_changes_version_too(autojump_clock):
    """The control chunk: a donor that keeps chunks gets the new major version, so a stale router
    sending it a write for the moved range is refused rather than writing an orphan."""
    async with await _two_routers() as core:
        ca = AsyncClient(core.router)
        await _sharded(ca)
        await ca.admin({"split": "db.c", "middle": {"k": 50}})
        b = core.routers[1]
        cb = AsyncClient(b)
        await ca.admin({"moveChunk": "db.c", "find": {"k": 50}, "to": "shard02"})
        a_placement = _placement(core.router)
        assert a_placement["shard00"].time == a_placement["shard02"].time  # both took the new major version
        await cb.insert("db", "c", [{"_id": 7, "k": 70}])
        assert core.shards["shard02"].catalog.collection("db", "c").get(7) is not None
        assert core.shards["shard00"].catalog.collection("db", "c").get(7) is None


async def test_reads_updates_and_deletes_through_a_stale_router(autojump_clock):
    async with await _two_routers() as core:
        ca = AsyncClient(core.router)
        await _sharded(ca)
        await ca.insert("db", "c", [{"_id": i, "k": i * 20} for i in range(10)])
        b = core.routers[1]
        cb = AsyncClient(b)
        await ca.admin({"moveChunk": "db.c", "find": {"k": 100}, "to": "shard02"})
        docs = await cb.find("db", "c", {"k": {"$gte": 100}})
        assert sorted(d["_id"] for d in docs) == [5, 6, 7, 8, 9]
        await ca.admin({"moveChunk": "db.c", "find": {"k": 100}, "to": "shard01"})
        await cb.update("db", "c", {"k": 120}, {"$set": {"x": 1}})
        assert core.shards["shard01"].catalog.collection("db", "c").get(6)["x"] == 1
        await ca.admin({"moveChunk": "db.c", "find": {"k": 100}, "to": "shard02"})
        reply = await cb.command("db", {"delete": "c", "deletes": [{"q": {"k": {"$gte": 100}}, "limit": 0}]})
        assert reply["n"] == 5
        assert await cb.command("db", {"count": "c"}) == {**await cb.command("db", {"count": "c"}), "n": 5}


async def test_a_collection_sharded_or_recreated_behind_a_routers_back(autojump_clock):
    async with await _two_routers() as core:
        ca = AsyncClient(core.router)
        await ca.admin({"enableSharding": "db", "primaryShard": "shard00"})
        await ca.insert("db", "u", [{"_id": 0, "k": 5}])
        b = core.routers[1]
        cb = AsyncClient(b)
        assert [d["_id"] for d in await cb.find("db", "u", {})] == [0]
        # sharded by a, moved to shard01: b still thinks it is unsharded on shard00
        await ca.admin({"shardCollection": "db.u", "key": {"k": 1}})
        await ca.admin({"moveChunk": "db.u", "find": {"k": 0}, "to": "shard01"})
        await cb.insert("db", "u", [{"_id": 1, "k": 6}])
        assert core.shards["shard01"].catalog.collection("db", "u").get(1) is not None
        # dropped and re-created unsharded by a: b routes by the old incarnation
        await ca.command("db", {"drop": "u"})
        await ca.insert("db", "u", [{"_id": 2, "k": 7}])
        assert [d["_id"] for d in await cb.find("db", "u", {})] == [2]


async def test_a_database_created_by_another_router(autojump_clock):
    async with await _two_routers() as core:
        ca = AsyncClient(core.router)
        b = core.routers[1]
        cb = AsyncClient(b)
        await ca.admin({"enableSharding": "fresh", "primaryShard": "shard02"})
        await cb.insert("fresh", "c", [{"_id": 1}])
        assert core.shards["shard02"].catalog.collection("fresh", "c").get(1) == {"_id": 1}
        names = [c["name"] for c in (await cb.command("fresh", {"listCollections": 1}))["cursor"]["firstBatch"]]
        assert names == ["c"]


async def test_stale_in_a_transaction(autojump_clock):
    """The first statement, on one shard, is retried; a later one fails as a transient transaction error."""
    import bson, os

    async with await _two_routers() as core:
        ca = AsyncClient(core.router)
        await _sharded(ca)
        b = core.routers[1]
        cb = AsyncClient(b)
        await ca.admin({"moveChunk": "db.c", "find": {"k": 100}, "to": "shard02"})
        lsid = {"id": bson.Binary(os.urandom(16), 4)}
        t = {"lsid": lsid, "txnNumber": 1, "autocommit": False}
        await cb.command("db", {"insert": "c", "documents": [{"_id": 1, "k": 150}], "startTransaction": True, **t})
        await cb.command("admin", {"commitTransaction": 1, **t})
        assert core.shards["shard02"].catalog.collection("db", "c").get(1) is not None
        # second statement meets the stale table
        await ca.admin({"moveChunk": "db.c", "find": {"k": 100}, "to": "shard01"})
        t = {"lsid": lsid, "txnNumber": 2, "autocommit": False}
        await cb.command("db", {"insert": "c", "documents": [{"_id": 2, "k": 5}], "startTransaction": True, **t})
        with pytest.raises(CommandError) as info:
            await cb.command("db", {"insert": "c", "documents": [{"_id": 3, "k": 160}], **t})
        assert info.value.code == 13388 and "TransientTransactionError" in info.value.labels


async def test_bulk_write_through_a_stale_router(autojump_clock):
    """A bulkWrite's nsInfo carries each namespace's version; a stale child ran nothing and its ops are
    targeted again (a multi op only where it did not run)."""
    async with await _two_routers() as core:
        ca = AsyncClient(core.router)
        await _sharded(ca)
        await ca.insert("db", "c", [{"_id": i, "k": i * 20, "v": 0} for i in range(10)])
        b = core.routers[1]
        cb = AsyncClient(b)
        await cb.find("db", "c", {})
        for ordered in (True, False):
            await ca.admin({"moveChunk": "db.c", "find": {"k": 100}, "to": "shard02" if ordered else "shard01"})
            reply = await cb.command("admin", {"bulkWrite": 1, "ordered": ordered, "nsInfo": [{"ns": "db.c"}], "ops": [
                {"insert": 0, "document": {"_id": 100 + ordered, "k": 150}},
                {"update": 0, "filter": {}, "updateMods": {"$inc": {"v": 1}}, "multi": True},
                {"delete": 0, "filter": {"k": 180}, "multi": False}]})
            assert [(i["ok"], i["n"]) for i in reply["cursor"]["firstBatch"]] == \
                [(1.0, 1), (1.0, 11), (1.0, 1 if ordered else 0)]  # (the update sees the insert before it)
            owner = "shard02" if ordered else "shard01"
            assert core.shards[owner].catalog.collection("db", "c").get(100 + ordered) is not None
        docs = {d["_id"]: d.get("v") for d in await ca.find("db", "c", {})}
        assert docs == {**{i: 2 for i in range(9)}, 101: 2, 100: 1}  # each update once per bulkWrite; _id 9 deleted


async def test_bulk_write_on_a_sharded_time_series_collection_through_a_stale_router(autojump_clock):
    """The buckets' version rides in the nsInfo entry that names them: a stale child ran nothing, and its
    measurements go where their buckets' chunk moved."""
    import datetime

    buckets = "db.system.buckets.ts"
    async with await _two_routers() as core:
        ca = AsyncClient(core.router)
        await ca.admin({"enableSharding": "db", "primaryShard": "shard00"})
        await ca.admin({"shardCollection": "db.ts", "key": {"tag": 1},
                        "timeseries": {"timeField": "t", "metaField": "tag"}})
        await ca.admin({"split": buckets, "middle": {"meta": 10}})
        await ca.admin({"moveChunk": buckets, "find": {"meta": 10}, "to": "shard01"})
        b = core.routers[1]
        cb = AsyncClient(b)
        await cb.find("db", "ts", {})
        before = _placement(b, buckets)
        await ca.admin({"moveChunk": buckets, "find": {"meta": 10}, "to": "shard02"})  # b does not know
        assert before is not None and _placement(b, buckets) == before
        at = datetime.datetime(2024, 1, 1)
        reply = await cb.command("admin", {"bulkWrite": 1, "nsInfo": [{"ns": "db.ts"}, {"ns": "db.plain"}], "ops": [
            {"insert": 0, "document": {"_id": 1, "t": at, "tag": 15}},
            {"insert": 1, "document": {"_id": 1}},
            {"insert": 0, "document": {"_id": 2, "t": at, "tag": 5}},
            {"update": 0, "filter": {"tag": {"$gte": 10}}, "updateMods": {"$set": {"v": 1}}, "multi": True}]})
        assert [(i["ok"], i["n"]) for i in reply["cursor"]["firstBatch"]] == [(1.0, 1)] * 4
        assert _placement(b, buckets) == _placement(core.router, buckets)  # it refreshed
        held = {name: [bk["meta"] for bk in core.shards[name].catalog.collection("db", "system.buckets.ts").scan()]
                for name in ("shard00", "shard01", "shard02")}
        assert held == {"shard00": [5], "shard01": [], "shard02": [15]}
        assert [(d["_id"], d.get("v")) for d in await ca.find("db", "ts", {}, sort={"_id": 1})] == [(1, 1), (2, None)]


async def test_a_write_into_a_database_dropped_behind_the_routers_back_creates_it_again(autojump_clock):
    """No orphan: the stale router learns the database is gone and creates it afresh (config.databases)."""
    async with await _two_routers() as core:
        ca, cb = AsyncClient(core.router), AsyncClient(core.routers[1])
        await ca.admin({"enableSharding": "gone", "primaryShard": "shard01"})
        await ca.insert("gone", "c", [{"_id": 1}])
        await cb.find("gone", "c", {})  # b caches the database
        await ca.command("gone", {"dropDatabase": 1})
        for ops in ([{"_id": 2}], [{"_id": 3}]):
            await cb.insert("gone", "c", ops)
            primary = (await ca.find("config", "databases", {"_id": "gone"}))[0]["primary"]
            holders = [n for n, node in core.shards.items() if node.catalog.collection("gone", "c") is not None]
            assert holders == [primary]
        assert sorted(d["_id"] for d in await ca.find("gone", "c", {})) == [2, 3]
        await ca.command("gone", {"dropDatabase": 1})
        assert [n for n, node in core.shards.items() if node.catalog.db("gone") is not None] == []
