"""A client's maxTimeMS through mongos: every command mongos sends a shard for the operation carries
the time left as `maxTimeMSOpOnly` (a long, appended last, as the server's network interface does for
a request made under an operation with a deadline), so the shards stop at the client's limit —
jstests/sharding/max_time_ms_sharded.js checks it with the maxTimeAlwaysTimeOut failpoint on the shards."""

from __future__ import annotations

import bson
import pytest
import trio
from bson import Int64

from mongosim.core import open_cluster
from mongosim.testing import AsyncClient, CommandError

EPOCH = 1_700_000_000
M = {"maxTimeMS": 60_000}
COMMANDS = {
    "find": {"find": "bar"},
    "targeted find": {"find": "bar", "filter": {"_id": 1}},
    "count": {"count": "bar"},
    "distinct": {"distinct": "bar", "key": "_id"},
    "aggregate": {"aggregate": "bar", "pipeline": [], "cursor": {}},
    "collStats": {"collStats": "bar"},
    "validate": {"validate": "bar"},
    "mapReduce": {"mapReduce": "bar", "map": "function() { emit(0, 0); }",
                  "reduce": "function(k, v) { return 0; }", "out": {"inline": 1}},
    "listIndexes": {"listIndexes": "bar", "cursor": {}},
    "findAndModify": {"findAndModify": "bar", "query": {"_id": 1}, "update": {"$set": {"y": 1}}},
    "createIndexes": {"createIndexes": "bar", "indexes": [{"key": {"a": 1}, "name": "a_1"}]},
}


async def _cluster(core) -> AsyncClient:
    """foo.bar split at _id 0 over two shards, 50 documents on each (as the jstest sets it up)."""
    c = AsyncClient(core.router)
    await c.admin({"enableSharding": "foo", "primaryShard": "shard00"})
    await c.admin({"shardCollection": "foo.bar", "key": {"_id": 1}})
    await c.admin({"split": "foo.bar", "middle": {"_id": 0}})
    await c.admin({"moveChunk": "foo.bar", "find": {"_id": 0}, "to": "shard01"})
    await c.insert("foo", "bar", [{"_id": i} for i in range(-50, 50)])
    return c


def _shard_client(core, name: str) -> AsyncClient:
    return AsyncClient(core.member_frontends[core.replica_sets[name].primary.host])


async def _max_time_always_times_out(core, mode: str) -> None:
    for name in ("shard00", "shard01"):
        await _shard_client(core, name).admin({"configureFailPoint": "maxTimeAlwaysTimeOut", "mode": mode})


@pytest.mark.parametrize("what", sorted(COMMANDS))
async def test_the_shards_get_the_clients_time_limit(what, autojump_clock):
    async with open_cluster(shards=2, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = await _cluster(core)
        await _max_time_always_times_out(core, "alwaysOn")
        reply = await c.command("foo", {**COMMANDS[what], **M}, check=False)
        assert (reply["ok"], reply["code"], reply["codeName"]) == (0.0, 50, "MaxTimeMSExpired"), reply
        reply = await c.command("foo", COMMANDS[what], check=False)  # without a limit: unaffected
        assert reply["ok"] == 1.0, reply
        await _max_time_always_times_out(core, "off")
        assert (await c.command("foo", {**COMMANDS[what], **M}, check=False))["ok"] == 1.0


async def test_a_write_batch_that_runs_out_of_time_is_a_write_error(autojump_clock):
    """mongos turns a shard's failed child batch into one write error per statement."""
    async with open_cluster(shards=2, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = await _cluster(core)
        await _max_time_always_times_out(core, "alwaysOn")
        reply = await c.command("foo", {"update": "bar", "updates": [{"q": {"_id": 1}, "u": {"$set": {"x": 1}}}], **M},
                                check=False)
        assert [(e["index"], e["code"]) for e in reply["writeErrors"]] == [(0, 50)]


async def test_the_shard_sees_the_time_left_as_maxTimeMSOpOnly(autojump_clock):
    async with open_cluster(shards=2, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = await _cluster(core)
        shard = _shard_client(core, "shard01")
        await shard.command("foo", {"profile": 2})
        await c.command("foo", {"find": "bar", "filter": {"_id": 7}, "comment": "timed", "maxTimeMS": 5000})
        await c.command("foo", {"find": "bar", "filter": {"_id": 8}, "comment": "untimed"})
        [timed] = await shard.find("foo", "system.profile", {"command.comment": "timed"})
        [untimed] = await shard.find("foo", "system.profile", {"command.comment": "untimed"})
        op_only = timed["command"]["maxTimeMSOpOnly"]
        assert isinstance(op_only, Int64) and 0 < op_only <= 5000
        assert list(timed["command"])[-1] == "maxTimeMSOpOnly"
        assert "maxTimeMSOpOnly" not in untimed["command"]
        await shard.command("foo", {"profile": 0})


async def test_a_client_may_not_send_maxTimeMSOpOnly_to_a_shard(autojump_clock):
    async with open_cluster(shards=1, listen=False, epoch=EPOCH) as core:
        shard = _shard_client(core, "shard00")
        with pytest.raises(CommandError) as e:
            await shard.command("foo", {"find": "bar", "maxTimeMSOpOnly": Int64(1000)})
        assert (e.value.code, str(e.value.reply["errmsg"])) == (
            72, "Can not specify maxTimeMSOpOnly for non internal clients")


async def test_the_limit_ends_with_the_command(autojump_clock):
    """What a command started and goes on after its reply (a change stream's reads of the shards)
    runs without the command's time limit."""
    async with open_cluster(shards=2, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = await _cluster(core)
        reply = await c.command("foo", {"aggregate": "bar", "pipeline": [{"$changeStream": {}}], "cursor": {},
                                        "maxTimeMS": 100})
        await trio.sleep(5)  # (virtual time) long past the aggregate's limit
        await c.insert("foo", "bar", [{"_id": 100}, {"_id": -100}])
        got = []
        while len(got) < 2:
            more = await c.command("foo", {"getMore": reply["cursor"]["id"], "collection": "bar", "maxTimeMS": 500})
            got += [bson.decode(bytes(e))["documentKey"]["_id"] for e in more["cursor"]["nextBatch"]]  # (raw events)
        assert sorted(got) == [-100, 100]
