"""Change-stream options and refusals that existed untested: showRawUpdateDescription, showMigrationEvents
(on a shard; refused through the router), the internal namespaces (InvalidNamespace)."""

from __future__ import annotations

import pymongo
import pytest
import trio

from mongosim.core import open_cluster
from mongosim.oplog.bsonutil import plain
from mongosim.testing import AsyncClient
from tests.corners.conftest import BOTH, read
from tests.corners.test_update_lookup import raw_stream


@BOTH
def test_show_raw_update_description(mongosim_client, topology):
    coll = mongosim_client.raw.c
    coll.insert_one({"_id": 1, "a": 1, "arr": [1, 2, 3], "gone": True})
    with raw_stream(coll, {"showRawUpdateDescription": True}) as cursor:
        coll.update_one({"_id": 1}, {"$set": {"a": 2, "arr.1": 5}, "$unset": {"gone": 1}})
        coll.replace_one({"_id": 1}, {"b": 1})
        update, replace = read(cursor, 2)
    assert list(update)[-2:] == ["documentKey", "rawUpdateDescription"] and "updateDescription" not in update
    # the oplog entry's own `o`: a $v:2 diff
    assert update["rawUpdateDescription"] == {"$v": 2, "diff": {"d": {"gone": False}, "u": {"a": 2},
                                                                 "sarr": {"a": True, "u1": 5}}}
    assert replace["operationType"] == "replace" and "rawUpdateDescription" not in replace
    with coll.watch() as plain_stream:
        coll.update_one({"_id": 1}, {"$set": {"b": 2}})
        (event,) = read(plain_stream, 1)
    assert event["updateDescription"] == {"updatedFields": {"b": 2}, "removedFields": [], "truncatedArrays": []}


@BOTH
@pytest.mark.parametrize("db,coll,spec,message", [
    ("config", "c", {}, "$changeStream may not be opened on the internal config database"),
    ("config", 1, {}, "$changeStream may not be opened on the internal config database"),
    ("admin", "c", {}, "$changeStream may not be opened on the internal admin database"),
    ("admin", 1, {}, "$changeStream may not be opened on the internal admin database"),
    ("local", "c", {}, "$changeStream may not be opened on the internal local database"),
    ("app", "system.js", {}, "$changeStream may not be opened on the internal app.system.js collection"),
])
def test_internal_namespaces_are_refused(mongosim_client, topology, db, coll, spec, message):
    with pytest.raises(pymongo.errors.OperationFailure) as ei:
        mongosim_client[db].command("aggregate", coll, pipeline=[{"$changeStream": spec}], cursor={})
    if db == "local" and topology == "sharded":
        # mongos refuses every command on `local` before parsing it (ExecCommandClient::_prologue).
        assert (ei.value.code, ei.value.details["codeName"]) == (20, "IllegalOperation")
        assert ei.value.details["errmsg"] == "Can't use 'local' database through mongos"
        return
    assert ei.value.code == 73 and ei.value.details["codeName"] == "InvalidNamespace"
    assert ei.value.details["errmsg"] == message


@pytest.mark.mongosim(topology="sharded")
def test_system_namespace_through_the_router_even_when_allowed(mongosim_client):
    with pytest.raises(pymongo.errors.OperationFailure) as ei:
        mongosim_client.app.command("aggregate", "system.js", pipeline=[{"$changeStream": {
            "allowToRunOnSystemNS": True}}], cursor={})
    assert ei.value.code == 73
    assert ei.value.details["errmsg"].endswith("the internal app.system.js collection through router")


async def _shard_stream(node, show_migration_events: bool) -> int:
    spec = {"showMigrationEvents": True} if show_migration_events else {}
    reply = await node.run_command("mig", {"aggregate": "c", "pipeline": [{"$changeStream": spec}], "cursor": {}})
    return reply["cursor"]["id"]


async def _shard_events(node, cid: int) -> list[dict]:
    reply = await node.run_command("mig", {"getMore": cid, "collection": "c", "maxTimeMS": 10})
    return [plain(e) for e in reply["cursor"]["nextBatch"]]


def test_show_migration_events_on_a_shard(autojump_clock):
    """A stream opened on a shard itself (as a shard's own member serves it) sees a migration's clone
    inserts (recipient) and range deletes (donor) only with showMigrationEvents."""
    async def body():
        async with open_cluster(shards=2, listen=False, epoch=1_700_000_000, instant_hwm=True) as core:
            c = AsyncClient(core.router)
            await c.command("admin", {"enableSharding": "mig", "primaryShard": "shard00"})
            await c.command("admin", {"shardCollection": "mig.c", "key": {"k": 1}})
            await c.command("admin", {"split": "mig.c", "middle": {"k": 10}})
            await c.insert("mig", "c", [{"_id": i, "k": i} for i in (1, 20, 30)])
            donor, recipient = core.nodes["shard00"], core.nodes["shard01"]
            cursors = {(n.name, show): (n, await _shard_stream(n, show)) for n in (donor, recipient)
                       for show in (False, True)}
            await c.command("admin", {"moveChunk": "mig.c", "find": {"k": 20}, "to": "shard01"})
            await c.insert("mig", "c", [{"_id": 40, "k": 40}])  # an ordinary write on the recipient
            seen = {}
            for key, (node, cid) in cursors.items():
                seen[key] = [(e["operationType"], e["documentKey"]["_id"]) for e in await _shard_events(node, cid)]
            return seen
    seen = trio.run(body, clock=autojump_clock)
    assert seen[("shard00", True)] == [("delete", 20), ("delete", 30)]
    assert seen[("shard01", True)] == [("insert", 20), ("insert", 30), ("insert", 40)]
    assert seen[("shard00", False)] == []
    assert seen[("shard01", False)] == [("insert", 40)]
