"""mongos completes a CollectionUUIDMismatch whose shard knew no collection of the UUID: the database's
primary shard names it (populateCollectionUUIDMismatch), for a command error and for write errors."""

from __future__ import annotations

import pytest

from mongosim.core import open_cluster
from mongosim.testing import AsyncClient, CommandError

EPOCH = 1_700_000_000


async def _setup(c: AsyncClient) -> object:
    """db.a's chunks all on shard00 (the primary), db.b's all on shard01; db.a's UUID."""
    await c.admin({"enableSharding": "db", "primaryShard": "shard00"})
    for coll, shard in (("a", "shard00"), ("b", "shard01")):
        await c.admin({"shardCollection": f"db.{coll}", "key": {"k": 1}})
        await c.admin({"moveChunk": f"db.{coll}", "find": {"k": 0}, "to": shard})
    await c.insert("db", "b", [{"_id": 1, "k": 1}])
    [info] = (await c.command("db", {"listCollections": 1, "filter": {"name": "a"}}))["cursor"]["firstBatch"]
    return info["info"]["uuid"]


async def test_a_command_error_names_the_collection_the_primary_shard_knows(autojump_clock):
    async with open_cluster(shards=2, listen=False, epoch=EPOCH) as core:
        c = AsyncClient(core.router)
        uuid = await _setup(c)
        with pytest.raises(CommandError) as e:
            await c.command("db", {"find": "b", "filter": {"k": 1}, "collectionUUID": uuid})
        reply = e.value.reply
        assert (reply["code"], reply["db"], reply["expectedCollection"], reply["actualCollection"]) == (
            361, "db", "b", "a")
        assert reply["collectionUUID"] == uuid


async def test_write_errors_name_it_too(autojump_clock):
    async with open_cluster(shards=2, listen=False, epoch=EPOCH) as core:
        c = AsyncClient(core.router)
        uuid = await _setup(c)
        reply = await c.command("db", {"update": "b", "updates": [{"q": {"k": 1}, "u": {"$set": {"x": 1}}},
                                                                  {"q": {"k": 2}, "u": {"$set": {"x": 1}}}],
                                       "ordered": False, "collectionUUID": uuid}, check=False)
        assert [(e["index"], e["code"], e["actualCollection"]) for e in reply["writeErrors"]] == [
            (0, 361, "a"), (1, 361, "a")]


async def test_a_uuid_no_collection_has_stays_null(autojump_clock):
    from bson import Binary
    import uuid as uuidlib

    async with open_cluster(shards=2, listen=False, epoch=EPOCH) as core:
        c = AsyncClient(core.router)
        await _setup(c)
        with pytest.raises(CommandError) as e:
            await c.command("db", {"find": "b", "collectionUUID": Binary.from_uuid(uuidlib.uuid4())})
        assert e.value.reply["actualCollection"] is None
