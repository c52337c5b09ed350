"""readConcern levels and read preferences on a replica set and through the router."""

from __future__ import annotations

import trio

from tests.replset.conftest import member_client, secondary_read


async def test_majority_reads_see_only_committed_data(rs3, autojump_clock):
    core, c = rs3
    await c.insert("db", "c", [{"_id": 1, "v": 0}])
    core.faults.stop_replication("shard00")
    await c.command("db", {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"v": 1}}}],
                           "writeConcern": {"w": 1}})
    await c.command("db", {"insert": "c", "documents": [{"_id": 2}], "writeConcern": {"w": 1}})
    local = await c.find("db", "c", {}, readConcern={"level": "local"})
    majority = await c.find("db", "c", {}, readConcern={"level": "majority"})
    assert local == [{"_id": 1, "v": 1}, {"_id": 2}]
    assert majority == [{"_id": 1, "v": 0}]
    assert await c.find("db", "c", {}, readConcern={"level": "available"}) == local
    core.faults.start_replication("shard00")
    await trio.sleep(0.1)
    assert await c.find("db", "c", {}, readConcern={"level": "majority"}) == local


async def test_after_cluster_time_on_a_lagging_secondary_waits(rs3, autojump_clock):
    core, c = rs3
    rs = core.replica_sets["shard00"]
    core.faults.lag("shard00", 3.0, rs.members[1].id)
    reply = await c.command("db", {"insert": "c", "documents": [{"_id": 1}], "writeConcern": {"w": 1}})
    sec = member_client(core, rs.members[1])
    t0 = trio.current_time()
    found = await sec.command("db", secondary_read({"find": "c", "readConcern": {
        "afterClusterTime": reply["operationTime"]}}))
    assert found["cursor"]["firstBatch"] == [{"_id": 1}]
    assert 2.9 < trio.current_time() - t0 < 3.1
    plain = await sec.command("db", secondary_read({"find": "c"}))
    assert plain["cursor"]["firstBatch"] == [{"_id": 1}]


async def test_linearizable(rs3, autojump_clock):
    core, c = rs3
    rs = core.replica_sets["shard00"]
    await c.insert("db", "c", [{"_id": 1}])
    found = await c.find("db", "c", {}, readConcern={"level": "linearizable"})
    assert found == [{"_id": 1}]
    noop = rs.primary.node.oplog.entry_at(rs.primary.node.oplog.end - 1)
    assert noop["op"] == "n" and noop["o"] == {"msg": "linearizable read"}
    reply = await member_client(core, rs.members[1]).command(
        "db", secondary_read({"find": "c", "readConcern": {"level": "linearizable"}}), check=False)
    assert reply["codeName"] == "NotWritablePrimary"
    reply = await c.command("db", {"find": "c", "readConcern": {"level": "nope"}}, check=False)
    assert reply["codeName"] == "FailedToParse"


async def test_read_preference_through_the_router(sharded3, autojump_clock):
    core, c = sharded3
    await c.admin({"enableSharding": "db", "primaryShard": "shard00"})
    rs = core.replica_sets["shard00"]
    core.faults.stop_replication("shard00", rs.members[1].id)
    core.faults.stop_replication("shard00", rs.members[2].id)
    await c.command("db", {"insert": "c", "documents": [{"_id": 1}], "writeConcern": {"w": 1}})
    primary = await c.command("db", {"find": "c"})
    secondary = await c.command("db", {"find": "c", "$readPreference": {"mode": "secondary"}})
    assert primary["cursor"]["firstBatch"] == [{"_id": 1}]
    assert secondary["cursor"]["firstBatch"] == []  # the secondaries have not replicated it
    core.faults.start_replication("shard00")
    await trio.sleep(0.1)
    nearest = await c.command("db", {"find": "c", "$readPreference": {"mode": "nearest"}})
    assert nearest["cursor"]["firstBatch"] == [{"_id": 1}]
