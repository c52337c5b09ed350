"""The cluster-wide default read concern (`setDefaultRWConcern`'s `defaultReadConcern`) applied as 8.0
applies it (shardsim/read_concern_support.py): on a replica set's members to their clients' commands, on
mongos to its clients' (sent on to the shards); to find, count, distinct and aggregate naming no read
concern, not to getMore nor to a pipeline that accepts a single level, and to a transaction's first
statement when that statement permits it."""

from __future__ import annotations

import pytest
import trio
from bson import Binary

from mongosim.core import open_cluster
from mongosim.testing import AsyncClient
from tests.replset.conftest import EPOCH, member_client

_MAJORITY = {"setDefaultRWConcern": 1, "defaultReadConcern": {"level": "majority"}}
_UNSET = {"setDefaultRWConcern": 1, "defaultReadConcern": {}}


async def _reads(c) -> dict:
    """What each read command naming no read concern sees of db.c."""
    found = await c.find("db", "c", {})
    count = (await c.command("db", {"count": "c"}))["n"]
    distinct = (await c.command("db", {"distinct": "c", "key": "_id"}))["values"]
    agg = (await c.command("db", {"aggregate": "c", "pipeline": [{"$sort": {"_id": 1}}], "cursor": {}}))
    return {"find": [d["_id"] for d in found], "count": count, "distinct": sorted(distinct),
            "aggregate": [d["_id"] for d in agg["cursor"]["firstBatch"]]}


def _all(ids: list) -> dict:
    return {"find": ids, "count": len(ids), "distinct": ids, "aggregate": ids}


async def _unset_and_check(c) -> None:
    """Back to the implicit default (each test's cluster is its own, but say so)."""
    reply = await c.command("admin", _UNSET)
    assert reply["defaultReadConcern"] == {"level": "local"} and reply["defaultReadConcernSource"] == "implicit"


async def _uncommitted_write(core, c, shard: str = "shard00") -> None:
    """{_id: 1} majority-committed, then {_id: 2} written w: 1 with the secondaries stopped."""
    await c.insert("db", "c", [{"_id": 1}], writeConcern={"w": "majority"})
    core.faults.stop_replication(shard)
    await c.command("db", {"insert": "c", "documents": [{"_id": 2}], "writeConcern": {"w": 1}})


@pytest.fixture(params=["replset", "sharded"])
async def deployment(request, autojump_clock):
    """Either topology: a three-member replica set's primary, or mongos in front of two such shards
    (db's primary shard: shard00)."""
    if request.param == "replset":
        async with open_cluster(topology="replset", members=3, listen=False, epoch=EPOCH) as core:
            yield core, AsyncClient(core.frontend)
        return
    async with open_cluster(shards=2, members=3, listen=False, epoch=EPOCH, instant_hwm=True,
                            noop_interval=1.0) as core:
        c = AsyncClient(core.router)
        await c.admin({"enableSharding": "db", "primaryShard": "shard00"})
        yield core, c


async def test_a_majority_default_hides_what_is_not_majority_committed(deployment, autojump_clock):
    core, c = deployment
    await _uncommitted_write(core, c)
    assert await _reads(c) == _all([1, 2])  # the implicit default: local
    reply = await c.command("admin", _MAJORITY)
    assert (reply["defaultReadConcern"], reply["defaultReadConcernSource"]) == ({"level": "majority"}, "global")
    assert await _reads(c) == _all([1])
    # an explicit read concern overrides the default ...
    assert [d["_id"] for d in await c.find("db", "c", {}, readConcern={"level": "local"})] == [1, 2]
    reply = await c.command("db", {"count": "c", "readConcern": {"level": "available"}})
    assert reply["n"] == 2
    # ... and so does one naming only afterClusterTime (8.0 applies the default to an empty one only)
    reply = await c.command("db", {"find": "c", "readConcern": {"afterClusterTime": reply["operationTime"]}})
    assert [d["_id"] for d in reply["cursor"]["firstBatch"]] == [1, 2]
    # `readConcern: {}` is empty: the default applies
    reply = await c.command("db", {"find": "c", "readConcern": {}})
    assert [d["_id"] for d in reply["cursor"]["firstBatch"]] == [1]
    core.faults.start_replication("shard00")
    await _settle(c, [1, 2])
    await _unset_and_check(c)


async def _settle(c, ids: list) -> None:
    for _ in range(100):
        if [d["_id"] for d in await c.find("db", "c", {})] == ids:
            return
        await trio.sleep(0.1)
    raise AssertionError("not replicated")


async def test_commands_that_permit_no_default(rs3, autojump_clock):
    """A default of "available" would be refused by each of these if it were applied to them."""
    core, c = rs3
    await c.insert("db", "c", [{"_id": i} for i in range(5)], writeConcern={"w": "majority"})
    await c.command("admin", {"setDefaultRWConcern": 1, "defaultReadConcern": {"level": "available"}})
    # a change stream (majority only) and $listLocalSessions (local only) take no default
    reply = await c.command("db", {"aggregate": "c", "pipeline": [{"$changeStream": {}}], "cursor": {}})
    assert reply["ok"] == 1.0
    reply = await c.command("admin", {"aggregate": 1, "pipeline": [{"$listLocalSessions": {}}], "cursor": {}})
    assert reply["ok"] == 1.0
    # nor do the commands that accept local only
    assert (await c.command("db", {"listCollections": 1}))["ok"] == 1.0
    assert (await c.command("db", {"listIndexes": "c"}))["ok"] == 1.0
    # getMore continues the cursor
    reply = await c.command("db", {"find": "c", "batchSize": 2})
    more = await c.command("db", {"getMore": reply["cursor"]["id"], "collection": "c"})
    assert [d["_id"] for d in more["cursor"]["nextBatch"]] == [2, 3, 4]
    await _unset_and_check(c)


async def test_a_transaction_takes_the_default_at_its_start(deployment, autojump_clock):
    """A default level no transaction accepts (available) shows where it applies: to the statement
    that starts a transaction when it is a read that permits it, not to a transaction started by a
    write (write commands permit no default), not to its later statements."""
    core, c = deployment
    await c.insert("db", "c", [{"_id": 1}], writeConcern={"w": "majority"})
    await c.command("admin", {"setDefaultRWConcern": 1, "defaultReadConcern": {"level": "available"}})
    lsid = {"id": Binary(b"\x07" * 16, 4)}
    txn = {"lsid": lsid, "autocommit": False}
    reply = await c.command("db", {"find": "c", "txnNumber": 1, "startTransaction": True, **txn}, check=False)
    assert (reply["codeName"], reply["errmsg"]) == (
        "InvalidOptions", "The readConcern level must be either 'local' (default), 'majority' or 'snapshot' in order "
                          "to run in a transaction")
    # an explicit level at the start overrides the default
    reply = await c.command("db", {"find": "c", "txnNumber": 2, "startTransaction": True,
                                   "readConcern": {"level": "local"}, **txn})
    assert reply["cursor"]["firstBatch"] == [{"_id": 1}]
    await c.command("admin", {"commitTransaction": 1, "txnNumber": 2, **txn})
    # started by a write: no default; its later reads take none either
    await c.command("db", {"insert": "c", "documents": [{"_id": 2}], "txnNumber": 3, "startTransaction": True, **txn})
    reply = await c.command("db", {"find": "c", "txnNumber": 3, **txn})
    assert reply["cursor"]["firstBatch"] == [{"_id": 1}, {"_id": 2}]
    await c.command("admin", {"commitTransaction": 1, "txnNumber": 3, **txn})
    # with a majority default, a transaction started by a read runs at majority (which reads the
    # transaction's snapshot of the present, as local does, on the server too)
    await c.command("admin", _MAJORITY)
    reply = await c.command("db", {"find": "c", "txnNumber": 4, "startTransaction": True, **txn})
    assert reply["cursor"]["firstBatch"] == [{"_id": 1}, {"_id": 2}]
    await c.command("admin", {"commitTransaction": 1, "txnNumber": 4, **txn})
    await _unset_and_check(c)


async def test_mongos_sends_the_default_with_its_provenance_to_the_shards(sharded3, autojump_clock):
    core, c = sharded3
    await c.admin({"enableSharding": "db", "primaryShard": "shard00"})
    await c.insert("db", "c", [{"_id": 1}], writeConcern={"w": "majority"})
    shard = member_client(core, core.replica_sets["shard00"].primary)
    await shard.command("db", {"profile": 2})
    await c.command("admin", _MAJORITY)
    await c.find("db", "c", {"x": "default"})
    profile = {d["command"]["filter"]["x"]: d["command"]
               for d in await shard.find("db", "system.profile", {"command.filter.x": {"$exists": True}})}
    assert profile["default"]["readConcern"] == {"level": "majority", "provenance": "customDefault"}
    # a client may name no provenance but clientSupplied
    reply = await c.command("db", {"find": "c", "readConcern": {"level": "local", "provenance": "customDefault"}},
                            check=False)
    assert (reply["codeName"], reply["errmsg"]) == ("InvalidOptions",
                                                   'readConcern provenance must be unset or "clientSupplied"')
    reply = await c.command("db", {"find": "c", "readConcern": {"level": "local", "provenance": "clientSupplied"}})
    assert reply["ok"] == 1.0
    await shard.command("db", {"profile": 0})
    await _unset_and_check(c)


async def test_a_member_profiles_the_command_as_its_client_sent_it(rs3, autojump_clock):
    core, c = rs3
    await c.insert("db", "c", [{"_id": 1}], writeConcern={"w": "majority"})
    await c.command("db", {"profile": 2})
    await c.command("admin", _MAJORITY)
    await c.find("db", "c", {}, comment="default")
    [entry] = await c.find("db", "system.profile", {"command.comment": "default"})
    assert "readConcern" not in entry["command"]
    await c.command("db", {"profile": 0})
    await _unset_and_check(c)
