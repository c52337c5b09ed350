"""replSetGetStatus, replSetGetConfig, replSetReconfig: the server's shapes, members added and removed."""

from __future__ import annotations

from bson import Int64, ObjectId, Timestamp

from tests.replset.conftest import member_client, member_state, settle


async def test_status_shape(rs3, autojump_clock):
    core, c = rs3
    rs = core.replica_sets["shard00"]
    await c.insert("db", "c", [{"_id": 1}])
    await settle(rs, 0.01)  # (the majority acknowledged it: one secondary may not have applied it yet)
    core.faults.kill("shard00", 2)
    st = await c.admin({"replSetGetStatus": 1})
    assert list(st)[:11] == ["set", "date", "myState", "term", "syncSourceHost", "syncSourceId",
                             "heartbeatIntervalMillis", "majorityVoteCount", "writeMajorityCount",
                             "votingMembersCount", "writableVotingMembersCount"]
    assert st["set"] == "rs0" and st["myState"] == 1 and st["term"] == Int64(1)
    assert st["optimes"]["lastCommittedOpTime"] == {"ts": st["optimes"]["appliedOpTime"]["ts"], "t": Int64(1)}
    me, sec, dead = st["members"]
    assert me["self"] is True and me["stateStr"] == "PRIMARY" and me["name"] == rs.members[0].host
    assert isinstance(me["electionTime"], Timestamp) and "optimeDurable" not in me
    assert sec["stateStr"] == "SECONDARY" and sec["health"] == 1.0 and sec["syncSourceHost"] == me["name"]
    assert sec["optime"] == me["optime"]
    assert dead["health"] == 0.0 and dead["state"] == 8 and dead["stateStr"] == "(not reachable/healthy)"
    assert dead["optime"] == {"ts": Timestamp(0, 0), "t": Int64(-1)}
    st2 = await member_client(core, rs.members[1]).admin({"replSetGetStatus": 1})
    assert st2["myState"] == 2 and st2["syncSourceHost"] == rs.members[0].host


async def test_config_shape_and_reconfig(rs3, autojump_clock):
    core, c = rs3
    rs = core.replica_sets["shard00"]
    cfg = (await c.admin({"replSetGetConfig": 1}))["config"]
    assert list(cfg) == ["_id", "version", "term", "members", "protocolVersion", "writeConcernMajorityJournalDefault",
                         "settings"]
    assert list(cfg["members"][0]) == ["_id", "host", "arbiterOnly", "buildIndexes", "hidden", "priority", "tags",
                                       "secondaryDelaySecs", "votes"]
    assert cfg["settings"]["electionTimeoutMillis"] == 10000 and isinstance(cfg["settings"]["replicaSetId"], ObjectId)
    await c.insert("db", "c", [{"_id": i} for i in range(5)])
    # add a fourth member: it starts by initial sync
    cfg["version"] += 1
    cfg["members"].append({"_id": 3, "host": "localhost:29999"})
    await c.admin({"replSetReconfig": cfg})
    await c.insert("db", "c", [{"_id": 5}])
    await settle(rs)
    new = rs.member(3)
    assert new.host == "localhost:29999" and new.state == "SECONDARY"
    assert member_state(new)["data"] == member_state(rs.primary)["data"]
    hello = await c.admin({"hello": 1})
    assert "localhost:29999" in hello["hosts"] and hello["setVersion"] == cfg["version"]
    assert rs.primary.node.oplog.entry_at(rs.primary.node.oplog.end - 2)["o"] == {"msg": "Reconfig set",
                                                                                  "version": cfg["version"]}
    # two voting members at once: refused
    cfg2 = (await c.admin({"replSetGetConfig": 1}))["config"]
    cfg2["version"] += 1
    cfg2["members"] = cfg2["members"][:2]
    reply = await c.command("admin", {"replSetReconfig": cfg2}, check=False)
    assert reply["codeName"] == "NewReplicaSetConfigurationIncompatible"
    cfg2["members"] = [m for m in cfg2["members"]] + [(await c.admin({"replSetGetConfig": 1}))["config"]["members"][3]]
    await c.admin({"replSetReconfig": cfg2})  # remove member 2
    assert rs.member(2).state == "REMOVED"
    hello = await member_client(core, rs.member(2)).admin({"hello": 1})
    assert hello["isWritablePrimary"] is False and hello["isreplicaset"] is True
    reply = await c.command("admin", {"replSetReconfig": {**cfg2, "version": 1}}, check=False)
    assert reply["codeName"] == "NewReplicaSetConfigurationIncompatible"


async def test_config_commitment_status(rs3, autojump_clock):
    """`commitmentStatus: true`: whether the config is committed, on the primary only."""
    core, c = rs3
    rs = core.replica_sets["shard00"]
    reply = await c.admin({"replSetGetConfig": 1, "commitmentStatus": True})
    assert reply["commitmentStatus"] is True and list(reply)[:2] == ["config", "commitmentStatus"]
    assert "commitmentStatus" not in await c.admin({"replSetGetConfig": 1, "commitmentStatus": False})
    secondary = next(m for m in rs.members if m is not rs.primary)
    reply = await member_client(core, secondary).command("admin", {"replSetGetConfig": 1, "commitmentStatus": True},
                                                          check=False)
    assert (reply["codeName"], reply["errmsg"]) == ("NotWritablePrimary", "commitmentStatus is only supported on primary.")
    reply = await c.command("admin", {"replSetGetConfig": 1, "commitmentStatus": "yes"}, check=False)
    assert reply["codeName"] == "TypeMismatch"
