"""A shard member's profiler seen through mongos: what mongos passes on of a client's command."""

from __future__ import annotations

from tests.replset.conftest import member_client


async def test_mongos_passes_a_finds_comment_to_the_shards(sharded3, autojump_clock):
    """A find through mongos is found in the shard's profiler by its comment, single-shard or not."""
    core, c = sharded3
    await c.admin({"enableSharding": "db", "primaryShard": "shard00"})
    await c.insert("db", "c", [{"_id": 1}, {"_id": 2}], writeConcern={"w": "majority"})
    shard = member_client(core, core.replica_sets["shard00"].primary)
    await shard.command("db", {"profile": 2})
    reply = await c.command("db", {"find": "c", "filter": {"_id": {"$gte": 2}}, "comment": {"app": "the read"}})
    assert reply["cursor"]["firstBatch"] == [{"_id": 2}]
    [entry] = await shard.find("db", "system.profile", {"command.comment": {"app": "the read"}})
    assert entry["command"]["filter"] == {"_id": {"$gte": 2}} and entry["nreturned"] == 1
    await shard.command("db", {"profile": 0})
