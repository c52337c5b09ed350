"""Arbiters (PSA), on virtual time: what each member answers, the two majorities, the commit point that
stops with the secondary down, elections the arbiter's vote decides, and the implicit default write
concern of a PSA set."""

from __future__ import annotations

import pytest
import trio

from mongosim.core import open_cluster
from mongosim.oplog.clock import ts_key
from mongosim.testing import AsyncClient
from mongosim.testing.client import CommandError
from tests.replset.conftest import EPOCH, member_client, settle


@pytest.fixture
async def psa(autojump_clock):
    """`--topology replset --members 2 --arbiters 1`: primary, secondary, arbiter; a client of the primary."""
    async with open_cluster(topology="replset", members=2, arbiters=1, listen=False, epoch=EPOCH) as core:
        yield core, AsyncClient(core.frontend)


def _arbiter(core):
    return core.replica_sets["shard00"].arbiters[0]


async def test_every_member_lists_the_arbiter_and_the_arbiter_answers_as_one(psa, autojump_clock):
    core, c = psa
    rs = core.replica_sets["shard00"]
    p, s, a = rs.members
    assert (a.arbiter, a.state, a.priority) == (True, "ARBITER", 0.0)
    for m in rs.members:
        hello = await member_client(core, m).command("admin", {"hello": 1})
        assert hello["hosts"] == [p.host, s.host] and hello["arbiters"] == [a.host]
    hello = await member_client(core, a).command("admin", {"hello": 1})
    keys = list(hello)
    assert keys[:keys.index("me") + 1] == ["topologyVersion", "hosts", "arbiters", "setName", "setVersion",
                                           "isWritablePrimary", "secondary", "primary", "arbiterOnly", "me"]
    assert hello["isWritablePrimary"] is False and hello["secondary"] is False and hello["arbiterOnly"] is True
    assert hello["primary"] == p.host
    assert "majorityOpTime" not in hello["lastWrite"]  # (no committed snapshot on an arbiter)
    assert "$clusterTime" not in hello and "operationTime" not in hello  # an arbiter gossips no time
    assert "arbiterOnly" not in await member_client(core, s).command("admin", {"hello": 1})


async def test_status_and_config_show_the_arbiter_as_the_server_does(psa, autojump_clock):
    core, c = psa
    a = _arbiter(core)
    await c.insert("db", "c", [{"_id": 1}], writeConcern={"w": 2})
    await settle(core)
    status = await c.command("admin", {"replSetGetStatus": 1})
    assert (status["majorityVoteCount"], status["writeMajorityCount"], status["votingMembersCount"],
            status["writableVotingMembersCount"]) == (2, 2, 3, 2)
    entry = status["members"][2]
    assert (entry["_id"], entry["state"], entry["stateStr"]) == (a.id, 7, "ARBITER")
    assert not {"optime", "optimeDurable", "optimeDate", "optimeDurableDate", "lastAppliedWallTime",
                "lastDurableWallTime"} & set(entry)
    assert "optime" in status["members"][1]
    mine = await member_client(core, a).command("admin", {"replSetGetStatus": 1})
    assert mine["myState"] == 7 and mine["members"][2]["self"] is True
    assert mine["optimes"]["appliedOpTime"] == mine["optimes"]["lastCommittedOpTime"] == \
        status["optimes"]["lastCommittedOpTime"]  # an arbiter's optime: the commit point it heard of
    assert "readConcernMajorityOpTime" not in mine["optimes"] and "lastStableRecoveryTimestamp" not in mine
    config = (await member_client(core, a).command("admin", {"replSetGetConfig": 1}))["config"]
    assert config["members"][2] == {"_id": a.id, "host": a.host, "arbiterOnly": True, "buildIndexes": True,
                                    "hidden": False, "priority": 0.0, "tags": {}, "secondaryDelaySecs": 0,
                                    "votes": 1}


async def test_data_commands_on_an_arbiter_fail_as_on_the_server(psa, autojump_clock):
    core, c = psa
    ac = member_client(core, _arbiter(core))
    for cmd, code in [({"find": "c"}, 13435),
                      ({"find": "c", "$readPreference": {"mode": "secondaryPreferred"}}, 13436),
                      ({"aggregate": "c", "pipeline": [{"$changeStream": {}}], "cursor": {},
                        "$readPreference": {"mode": "secondary"}}, 13436),
                      ({"insert": "c", "documents": [{"_id": 1}]}, 10107)]:
        reply = await ac.command("db", cmd, check=False)
        assert reply["code"] == code, (cmd, reply)
    assert (await ac.command("db", {"find": "c"}, check=False))["errmsg"] == "not primary and secondaryOk=false"


async def test_secondary_down_stops_the_commit_point_not_the_primary(psa, autojump_clock):
    """The PSA trap: the arbiter keeps the primary in office, w: 1 writes succeed, but nothing commits:
    w: "majority" times out and change streams show nothing newer, until the secondary is back."""
    core, c = psa
    rs = core.replica_sets["shard00"]
    cs = c.watch("db", "c", max_await_time_ms=100)
    await cs.open()
    await c.insert("db", "c", [{"_id": 0}], writeConcern={"w": "majority"})
    assert (await cs.try_next())["documentKey"] == {"_id": 0}
    primary = rs.primary
    core.faults.kill("shard00", "secondary")
    commit = rs.commit_key
    reply = await c.insert("db", "c", [{"_id": 1}])  # the implicit default of a PSA set: w: 1
    assert reply["n"] == 1 and "writeConcernError" not in reply
    t0 = trio.current_time()
    reply = await c.insert("db", "c", [{"_id": 2}], writeConcern={"w": "majority", "wtimeout": 500})
    assert 0.49 <= trio.current_time() - t0 <= 0.55
    assert reply["n"] == 1 and reply["writeConcernError"] == {
        "code": 64, "codeName": "WriteConcernTimeout", "errmsg": "waiting for replication timed out",
        "errInfo": {"wtimeout": True, "writeConcern": {"w": "majority", "wtimeout": 500,
                                                       "provenance": "clientSupplied"}}}
    await trio.sleep(3 * rs.election_timeout)  # the arbiter's vote keeps it primary
    assert rs.primary is primary and rs.commit_key == commit
    for _ in range(5):
        assert await cs.try_next() is None
    assert ts_key((await c.command("admin", {"replSetGetStatus": 1}))["optimes"]["lastCommittedOpTime"]["ts"]) \
        == commit
    core.faults.restart_member("shard00", 1)
    got = []
    while len(got) < 2:
        ev = await cs.try_next()
        if ev is not None:
            got.append(ev["documentKey"]["_id"])
    assert got == [1, 2] and rs.commit_key == rs.primary.last_key


async def test_the_arbiters_vote_elects_the_secondary(psa, autojump_clock):
    core, c = psa
    rs = core.replica_sets["shard00"]
    await c.insert("db", "c", [{"_id": 1}], writeConcern={"w": "majority"})
    old = core.faults.kill("shard00", "primary")
    t0 = trio.current_time()
    while rs.primary is None:
        await trio.sleep(0.1)
    assert rs.election_timeout <= trio.current_time() - t0 <= rs.election_timeout + 0.5
    assert rs.primary.id == 1 and rs.elections[-1]["reason"] == "electionTimeout"
    # two of three votes (the new primary's, the arbiter's); nothing commits until the old primary is back
    sc = member_client(core, rs.primary)
    reply = await sc.insert("db", "c", [{"_id": 2}], writeConcern={"w": "majority", "wtimeout": 300})
    assert reply["writeConcernError"]["code"] == 64
    core.faults.restart_member("shard00", old)
    await settle(core, 2)
    assert rs.commit_key == rs.primary.last_key
    assert [d["_id"] for d in (await sc.command("db", {"find": "c"}))["cursor"]["firstBatch"]] == [1, 2]


async def test_an_arbiter_is_never_elected_and_restarts_as_an_arbiter(psa, autojump_clock):
    core, c = psa
    rs = core.replica_sets["shard00"]
    a = _arbiter(core)
    reply = await member_client(core, a).command("admin", {"replSetStepUp": 1}, check=False)
    assert reply["code"] == 125 and reply["errmsg"] == "Election failed."
    reply = await member_client(core, a).command("admin", {"replSetStepDown": 10}, check=False)
    assert reply["codeName"] == "NotWritablePrimary"
    core.faults.kill("shard00", "arbiter")
    assert a.state == "DOWN"
    status = await c.command("admin", {"replSetGetStatus": 1})
    assert status["members"][2]["health"] == 0.0 and status["members"][2]["stateStr"] == "(not reachable/healthy)"
    reply = await c.insert("db", "c", [{"_id": 1}], writeConcern={"w": "majority", "wtimeout": 1000})
    assert "writeConcernError" not in reply  # primary and secondary: the commit point moves without it
    core.faults.kill("shard00", "primary")  # one vote of three left standing with the arbiter down: no election
    await trio.sleep(3 * rs.election_timeout)
    assert rs.primary is None
    core.faults.restart_member("shard00", "arbiter")
    assert a.state == "ARBITER"
    while rs.primary is None:
        await trio.sleep(0.1)
    assert rs.primary.id == 1


async def test_numeric_w_counts_data_bearing_members(psa, autojump_clock):
    core, c = psa
    reply = await c.insert("db", "c", [{"_id": 1}], writeConcern={"w": 3})
    assert reply["writeConcernError"] == {"code": 100, "codeName": "UnsatisfiableWriteConcern",
                                          "errmsg": "Not enough data-bearing nodes",
                                          "errInfo": {"writeConcern": {"w": 3, "wtimeout": 0,
                                                                       "provenance": "clientSupplied"}}}
    assert "writeConcernError" not in await c.insert("db", "c", [{"_id": 2}], writeConcern={"w": 2})


async def test_default_write_concern_of_a_psa_set_and_the_cluster_wide_one(psa, autojump_clock):
    core, c = psa
    got = await c.command("admin", {"getDefaultRWConcern": 1})
    assert "defaultWriteConcern" not in got  # the implicit default is w: 1: the server reports none
    assert list(got)[:4] == ["defaultReadConcern", "defaultWriteConcernSource", "defaultReadConcernSource",
                             "localUpdateWallClockTime"]
    assert (got["defaultReadConcern"], got["defaultWriteConcernSource"]) == ({"level": "local"}, "implicit")
    for bad, code in [({"defaultWriteConcern": {"w": 0}}, 2), ({}, 2),
                      ({"defaultReadConcern": {"level": "snapshot"}}, 2),
                      ({"defaultWriteConcern": {"w": "nosuchmode"}}, 79)]:
        reply = await c.command("admin", {"setDefaultRWConcern": 1, **bad}, check=False)
        assert reply["code"] == code, (bad, reply)
    reply = await member_client(core, core.replica_sets["shard00"].members[1]).command(
        "admin", {"setDefaultRWConcern": 1, "defaultWriteConcern": {"w": 1}}, check=False)
    assert reply["codeName"] == "NotWritablePrimary"
    reply = await c.command("admin", {"setDefaultRWConcern": 1,
                                      "defaultWriteConcern": {"w": "majority", "wtimeout": 300}})
    assert list(reply)[:6] == ["defaultReadConcern", "defaultWriteConcern", "updateOpTime", "updateWallClockTime",
                               "defaultWriteConcernSource", "defaultReadConcernSource"]
    assert reply["defaultWriteConcern"] == {"w": "majority", "wtimeout": 300}
    assert reply["defaultWriteConcernSource"] == "global"
    core.faults.kill("shard00", "secondary")
    reply = await c.insert("db", "c", [{"_id": 1}])
    assert reply["writeConcernError"]["errInfo"]["writeConcern"] == {"w": "majority", "wtimeout": 300,
                                                                     "provenance": "customDefault"}
    reply = await c.command("admin", {"setDefaultRWConcern": 1, "defaultWriteConcern": {}}, check=False)
    assert reply["codeName"] == "IllegalOperation"
    assert reply["errmsg"] == "The global default write concern cannot be unset once it is set."


async def test_a_three_data_member_set_defaults_to_majority(rs3, autojump_clock):
    core, c = rs3
    got = await c.command("admin", {"getDefaultRWConcern": 1})
    assert got["defaultWriteConcern"] == {"w": "majority", "wtimeout": 0}


async def test_adding_an_arbiter_needs_a_cluster_wide_write_concern(autojump_clock):
    """rs.addArb on a primary-secondary set: w: "majority" would become w: 1, so the reconfig is refused
    (forced too) until setDefaultRWConcern; then the arbiter joins, and votes."""
    async with open_cluster(topology="replset", members=2, listen=False, epoch=EPOCH) as core:
        c = AsyncClient(core.frontend)
        rs = core.replica_sets["shard00"]
        config = (await c.command("admin", {"replSetGetConfig": 1}))["config"]
        config["version"] += 1
        config["members"].append({"_id": 2, "host": "localhost:29999", "arbiterOnly": True})
        for force in (False, True):
            reply = await c.command("admin", {"replSetReconfig": config, "force": force}, check=False)
            assert reply["codeName"] == "NewReplicaSetConfigurationIncompatible"
            assert reply["errmsg"] == ("Reconfig attempted to install a config that would change the implicit "
                                       "default write concern. Use the setDefaultRWConcern command to set a "
                                       "cluster-wide write concern and try the reconfig again.")
        await c.command("admin", {"setDefaultRWConcern": 1, "defaultWriteConcern": {"w": 1}})
        await c.command("admin", {"replSetReconfig": config})
        a = rs.member(2)
        assert a.arbiter and a.state == "ARBITER" and rs.majority == 2 and rs.write_majority == 2
        hello = await c.command("admin", {"hello": 1})
        assert hello["arbiters"] == ["localhost:29999"] and hello["setVersion"] == config["version"]
        assert (await member_client(core, a).command("admin", {"hello": 1}))["arbiterOnly"] is True


@pytest.mark.parametrize("member, reason", [
    ({"_id": 3, "host": "localhost:29998", "arbiterOnly": True, "votes": 0}, "Arbiter must vote (cannot have 0 votes)"),
    ({"_id": 3, "host": "localhost:29998", "arbiterOnly": True, "tags": {"dc": "east"}}, "Cannot set tags on arbiters."),
    ({"_id": 3, "host": "localhost:29998", "tags": {"dc": 1}}, "tags.dc field has non-string value of type int"),
    ({"_id": 3, "host": "localhost:29998", "votes": 0}, "priority must be 0 when non-voting (votes:0)"),
])
async def test_member_configs_the_server_refuses(rs3, autojump_clock, member, reason):
    core, c = rs3
    await c.command("admin", {"setDefaultRWConcern": 1, "defaultWriteConcern": {"w": "majority"}})
    config = (await c.command("admin", {"replSetGetConfig": 1}))["config"]
    config["version"] += 1
    config["members"].append(member)
    reply = await c.command("admin", {"replSetReconfig": config}, check=False)
    assert reply["codeName"] == "InvalidReplicaSetConfig"
    assert reply["errmsg"].startswith("member: { _id: 3, host: \"localhost:29998\"")
    assert reply["errmsg"].endswith(f" :: caused by :: {reason}")


async def test_a_member_cannot_become_an_arbiter(rs3, autojump_clock):
    core, c = rs3
    await c.command("admin", {"setDefaultRWConcern": 1, "defaultWriteConcern": {"w": "majority"}})
    config = (await c.command("admin", {"replSetGetConfig": 1}))["config"]
    config["version"] += 1
    config["members"][2]["arbiterOnly"] = True
    reply = await c.command("admin", {"replSetReconfig": config}, check=False)
    assert reply["codeName"] == "NewReplicaSetConfigurationIncompatible"
    assert reply["errmsg"] == ("New and old configurations differ in the setting of the arbiterOnly field for "
                               f"member {config['members'][2]['host']}; to make this change, remove then re-add "
                               "the member")


async def test_config_servers_have_no_arbiters(autojump_clock):
    async with open_cluster(shards=1, members=2, arbiters=1, listen=False, epoch=EPOCH) as core:
        assert not core.replica_sets["config"].arbiters and core.replica_sets["shard00"].arbiters
        c = member_client(core, core.replica_sets["config"].primary)
        config = (await c.command("admin", {"replSetGetConfig": 1}))["config"]
        config["version"] += 1
        config["members"].append({"_id": 2, "host": "localhost:29997", "arbiterOnly": True})
        reply = await c.command("admin", {"replSetReconfig": config}, check=False)
        assert reply["errmsg"] == ("Arbiters are not allowed in replica set configurations being used for config "
                                   "servers")


async def test_through_mongos_a_psa_shard_with_its_secondary_down(autojump_clock):
    """A sharded cluster of PSA shards: it starts with a cluster-wide write concern (w: 1, as the
    server wants one set before a shard with arbiters joins); with shard00's secondary down a
    w: "majority" write through mongos times out, a default one succeeds, and the cluster's stream
    shows neither until the secondary is back.  A transaction across shards cannot prepare."""
    async with open_cluster(shards=2, members=2, arbiters=1, listen=False, epoch=EPOCH, instant_hwm=True,
                            noop_interval=1.0) as core:
        c = AsyncClient(core.router)
        got = await c.command("admin", {"getDefaultRWConcern": 1})
        assert (got["defaultWriteConcern"], got["defaultWriteConcernSource"]) == ({"w": 1, "wtimeout": 0}, "global")
        shard00 = core.replica_sets["shard00"]
        reply = await member_client(core, shard00.primary).command("admin", {"getDefaultRWConcern": 1}, check=False)
        assert (reply["code"], reply["errmsg"]) == (51301, "'getDefaultRWConcern' is not supported on shard nodes.")
        await c.admin({"enableSharding": "db", "primaryShard": "shard00"})
        cs = c.watch("db", "c", max_await_time_ms=100)
        await cs.open()
        core.faults.kill("shard00", "secondary")
        reply = await c.insert("db", "c", [{"_id": 1}], writeConcern={"w": "majority", "wtimeout": 200})
        wce = reply["writeConcernError"]
        assert reply["n"] == 1 and wce["code"] == 64 and "shard00" in wce["errmsg"]
        reply = await c.insert("db", "c", [{"_id": 2}])
        assert "writeConcernError" not in reply
        for _ in range(10):
            assert await cs.try_next() is None
        core.faults.restart_member("shard00", 1)
        got = []
        t0 = trio.current_time()
        while len(got) < 2:
            ev = await cs.try_next()
            if ev is not None:
                got.append(ev["documentKey"]["_id"])
            assert trio.current_time() - t0 < 30
        assert got == [1, 2]
        await c.admin({"shardCollection": "db.s", "key": {"_id": 1}})
        await c.admin({"split": "db.s", "middle": {"_id": 0}})
        await c.admin({"moveChunk": "db.s", "find": {"_id": 0}, "to": "shard01"})
        lsid = {"id": __import__("bson").Binary(b"\x01" * 16, 4)}
        for i, start in ((-1, True), (1, False)):
            await c.command("db", {"insert": "s", "documents": [{"_id": i}], "lsid": lsid, "txnNumber": 1,
                                   "autocommit": False, **({"startTransaction": True} if start else {})})
        with pytest.raises(CommandError) as info:
            await c.command("admin", {"commitTransaction": 1, "lsid": lsid, "txnNumber": 1, "autocommit": False})
        assert info.value.reply["codeName"] == "ReadConcernMajorityNotEnabled"
        assert info.value.reply["errmsg"] == "'prepareTransaction' is not supported for replica sets with arbiters"
        assert (await c.command("db", {"count": "s"}))["n"] == 0


async def test_a_shard_takes_an_arbiter_once_mongos_has_a_cluster_wide_write_concern(autojump_clock):
    async with open_cluster(shards=1, members=2, listen=False, epoch=EPOCH) as core:
        router = AsyncClient(core.router)
        shard = member_client(core, core.replica_sets["shard00"].primary)
        config = (await shard.command("admin", {"replSetGetConfig": 1}))["config"]
        config["version"] += 1
        config["members"].append({"_id": 2, "host": "localhost:29996", "arbiterOnly": True})
        reply = await shard.command("admin", {"replSetReconfig": config}, check=False)
        assert reply["codeName"] == "NewReplicaSetConfigurationIncompatible"
        assert "config that would change the implicit default write concern on the shard to {w: 1}." in reply["errmsg"]
        reply = await shard.command("admin", {"setDefaultRWConcern": 1, "defaultWriteConcern": {"w": 1}}, check=False)
        assert reply["code"] == 51301  # (on a shard member: mongos keeps the defaults)
        await router.admin({"setDefaultRWConcern": 1, "defaultWriteConcern": {"w": "majority"}})
        await shard.command("admin", {"replSetReconfig": config})
        assert core.replica_sets["shard00"].arbiters[0].host == "localhost:29996"
        got = await router.command("admin", {"getDefaultRWConcern": 1})
        assert (got["defaultWriteConcern"], got["defaultWriteConcernSource"]) == ({"w": "majority", "wtimeout": 0},
                                                                                 "global")
