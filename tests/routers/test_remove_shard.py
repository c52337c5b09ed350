"""removeShard: draining (the balancer moves the chunks), movePrimary, completion; running change
streams lose nothing; a stale router follows the moved database."""

from __future__ import annotations

import pytest
import trio
from bson import Int64

from mongosim.core import open_cluster
from mongosim.testing import AsyncClient, CommandError

EPOCH = 1_700_000_000


async def _setup(c: AsyncClient) -> None:
    """db.c sharded over the three shards; db2 (primary shard02) holds the unsharded db2.u."""
    await c.admin({"enableSharding": "db", "primaryShard": "shard00"})
    await c.admin({"shardCollection": "db.c", "key": {"k": 1}})
    for i, s in ((1, "shard01"), (2, "shard02"), (3, "shard02")):
        await c.admin({"split": "db.c", "middle": {"k": 100 * i}})
        await c.admin({"moveChunk": "db.c", "find": {"k": 100 * i}, "to": s})
    await c.admin({"enableSharding": "db2", "primaryShard": "shard02"})
    await c.insert("db", "c", [{"_id": i, "k": i * 10} for i in range(40)])
    await c.insert("db2", "u", [{"_id": i} for i in range(5)])


async def _first_event(c: AsyncClient, docs: list[dict]) -> dict:
    """The event of the first of `docs`, inserted into db.c under a stream opened just before."""
    cs = c.watch("db", "c", max_await_time_ms=100)
    await cs.open()
    await c.insert("db", "c", docs)
    first = None
    while first is None:
        first = await cs.try_next()
    await cs.close()
    return first


async def _until_completed(c: AsyncClient, shard: str) -> list[dict]:
    replies = []
    while True:
        r = await c.admin({"removeShard": shard})
        replies.append(r)
        if r["state"] == "completed":
            return replies
        if r["state"] == "ongoing" and r["remaining"]["chunks"] == 0 and r["dbsToMove"]:
            for db in r["dbsToMove"]:
                await c.admin({"movePrimary": db, "to": "shard00"})
        await trio.sleep(1)


async def test_remove_shard_replies_and_the_shard_leaves(autojump_clock):
    async with open_cluster(shards=3, routers=2, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await _setup(c)
        await c.admin({"balancerStop": 1})  # first look at the replies with nothing moving
        started = await c.admin({"removeShard": "shard02"})
        assert {k: v for k, v in started.items() if k not in ("$clusterTime", "operationTime")} == {
            "msg": "draining started successfully", "state": "started", "shard": "shard02",
            "note": "you need to drop or movePrimary these databases", "dbsToMove": ["db2"], "ok": 1.0}
        shards = {d["_id"]: d for d in (await c.admin({"listShards": 1}))["shards"]}
        assert shards["shard02"]["draining"] is True
        ongoing = await c.admin({"removeShard": "shard02"})
        assert ongoing["msg"] == "draining ongoing" and ongoing["state"] == "ongoing"
        assert ongoing["remaining"] == {"chunks": Int64(2), "dbs": Int64(1), "jumboChunks": Int64(0)}
        assert ongoing["dbsToMove"] == ["db2"]
        await c.admin({"balancerStart": 1})
        replies = await _until_completed(c, "shard02")
        done = replies[-1]
        assert (done["msg"], done["state"], done["shard"]) == ("removeshard completed successfully", "completed", "shard02")
        assert [d["_id"] for d in (await c.admin({"listShards": 1}))["shards"]] == ["shard00", "shard01"]
        chunks = await c.find("config", "chunks", {})
        assert chunks and all(ch["shard"] != "shard02" for ch in chunks)
        assert {d["_id"]: d["primary"] for d in await c.find("config", "databases", {})}["db2"] == "shard00"
        assert sorted(d["_id"] for d in await c.find("db", "c", {})) == list(range(40))
        assert sorted(d["_id"] for d in await c.find("db2", "u", {})) == list(range(5))
        assert "shard02" not in core.router.shards
        with pytest.raises(CommandError) as info:
            await c.admin({"removeShard": "shard02"})
        assert info.value.code_name == "ShardNotFound" and info.value.reply["errmsg"] == "Shard shard02 does not exist"


async def test_the_last_shard_cannot_leave(autojump_clock):
    async with open_cluster(shards=2, routers=2, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await c.admin({"removeShard": "shard01"})
        with pytest.raises(CommandError) as info:
            await c.admin({"removeShard": "shard00"})
        assert info.value.code_name == "IllegalOperation"
        assert info.value.reply["errmsg"] == "Operation not allowed because it would remove the last shard"


async def test_move_primary_moves_unsharded_collections_silently(autojump_clock):
    async with open_cluster(shards=2, routers=2, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await c.admin({"enableSharding": "m", "primaryShard": "shard01"})
        await c.insert("m", "u", [{"_id": 1}, {"_id": 2}])
        uuid = core.shards["shard01"].catalog.collection("m", "u").uuid
        stale = AsyncClient(core.routers[1])
        await stale.find("m", "u", {})  # it learned the old primary
        cs = c.watch("m", 1, max_await_time_ms=100)
        await cs.open()
        await c.admin({"movePrimary": "m", "to": "shard00"})
        moved = core.shards["shard00"].catalog.collection("m", "u")
        assert moved is not None and moved.uuid == uuid and len(moved) == 2
        assert core.shards["shard01"].catalog.collection("m", "u") is None
        await stale.insert("m", "u", [{"_id": 3}])  # StaleDbVersion at shard01, then shard00
        assert core.shards["shard00"].catalog.collection("m", "u").get(3) == {"_id": 3}
        ev = await cs.try_next()
        while ev is None:
            ev = await cs.try_next()
        assert (ev["operationType"], ev["documentKey"]) == ("insert", {"_id": 3})  # nothing of the move itself
        version = (await c.find("config", "databases", {"_id": "m"}))[0]["version"]
        assert version["lastMod"] == 2
        with pytest.raises(CommandError) as info:
            await c.admin({"movePrimary": "nope", "to": "shard00"})
        assert info.value.code_name == "NamespaceNotFound"
        with pytest.raises(CommandError) as info:
            await c.admin({"movePrimary": "m", "to": "shard09"})
        assert info.value.code_name == "ShardNotFound"


async def test_a_router_that_missed_the_removal_follows_the_database_to_its_new_primary(autojump_clock):
    """A router whose cache still names a removed shard as db2's primary: its read, write and view
    read are retargeted after a refresh (8.0's ShardRegistry drops the cache entries that name a
    removed shard), every time, not only once."""
    async with open_cluster(shards=3, routers=2, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await _setup(c)
        stale = AsyncClient(core.routers[1])
        assert len(await stale.find("db2", "u", {})) == 5  # it learned shard02 as db2's primary
        await _until_completed(c, "shard02")  # db2 moves to shard00, shard02 leaves
        await c.command("db2", {"create": "v", "viewOn": "u", "pipeline": [{"$match": {"_id": {"$gte": 3}}}]})
        assert sorted(d["_id"] for d in await stale.find("db2", "u", {})) == [0, 1, 2, 3, 4]
        await stale.insert("db2", "u", [{"_id": 5}])
        assert core.shards["shard00"].catalog.collection("db2", "u").get(5) == {"_id": 5}
        assert sorted(d["_id"] for d in await stale.find("db2", "v", {})) == [3, 4, 5]


async def test_a_stream_across_a_shards_departure_loses_nothing(autojump_clock):
    async with open_cluster(shards=3, routers=2, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await _setup(c)
        cs = c.watch("admin", 1, max_await_time_ms=200)
        await cs.open()
        written: list = []
        removed = trio.Event()

        async def writer():
            i = 1000
            while not removed.is_set():
                await c.insert("db", "c", [{"_id": i, "k": (i * 37) % 400}])
                written.append(i)
                i += 1
                await trio.sleep(0.05)
            for j in range(i, i + 5):
                await c.insert("db", "c", [{"_id": j, "k": (j * 37) % 400}])
                written.append(j)

        async def remover():
            await trio.sleep(0.3)
            await _until_completed(c, "shard02")
            removed.set()

        async with trio.open_nursery() as n:
            n.start_soon(writer)
            n.start_soon(remover)
        got = []
        with trio.move_on_after(120):  # (virtual time)
            while len(got) < len(written):
                ev = await cs.try_next()
                if ev is not None and ev["operationType"] == "insert" and ev["ns"] == {"db": "db", "coll": "c"}:
                    got.append(ev)
        ids = [e["documentKey"]["_id"] for e in got]
        assert ids == written
        tokens = [e["_id"]["_data"] for e in got]
        assert tokens == sorted(tokens)


async def test_resuming_from_before_the_removal_reads_only_the_current_shards(autojump_clock):
    """A stream opened after a shard's removal targets the shards of the registry then, whatever its
    start, as 8.0's mongos does (src/mongo/db/pipeline/sharded_agg_helpers.cpp: a `$changeStream`
    pipeline must run on all shards, `shardRegistry()->getAllShardIds()`; handle-topology-change only
    opens new shards): resumed from before the removal it misses what the removed shard wrote, and
    sees what the chunks' new owners wrote since (the migrations themselves are invisible)."""
    async with open_cluster(shards=3, routers=2, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await _setup(c)
        token = (await _first_event(c, [{"_id": 500, "k": 5}]))["_id"]  # on shard00
        await c.insert("db", "c", [{"_id": 501, "k": 250}, {"_id": 502, "k": 350}])  # on shard02
        await c.insert("db", "c", [{"_id": 504, "k": 150}])  # on shard01
        await _until_completed(c, "shard02")
        await c.insert("db", "c", [{"_id": 503, "k": 250}])  # now elsewhere
        resumed = c.watch("db", "c", resumeAfter=token, max_await_time_ms=100)
        await resumed.open()
        got = []
        with trio.move_on_after(60):  # (virtual time)
            while True:
                ev = await resumed.try_next()
                if ev is not None:
                    got.append(ev["documentKey"]["_id"])
        assert got == [504, 503]


async def test_resuming_from_an_event_of_the_removed_shard_is_fatal(autojump_clock):
    """Resumed after the removal from the token of an event the removed shard wrote, the stream
    finds that token on no current shard: ChangeStreamFatalError 280, as mongos's
    ensure-resume-token-present stage answers (the event's documentKey is not where the token says)."""
    async with open_cluster(shards=3, routers=2, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await _setup(c)
        first = await _first_event(c, [{"_id": 501, "k": 250}])  # on shard02
        await _until_completed(c, "shard02")
        await c.insert("db", "c", [{"_id": 503, "k": 250}])  # now elsewhere
        reply = await c.command("db", {"aggregate": "c", "pipeline": [{"$changeStream": {"resumeAfter": first["_id"]}}],
                                       "cursor": {}}, check=False)
        if reply.get("ok"):  # (the check runs as events arrive: the first getMore meets it)
            reply = await c.command("db", {"getMore": reply["cursor"]["id"], "collection": "c", "maxTimeMS": 1000},
                                    check=False)
        assert (reply["ok"], reply["code"], reply["codeName"]) == (0.0, 280, "ChangeStreamFatalError")
        assert "resume token was not found" in reply["errmsg"]
