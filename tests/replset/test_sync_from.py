"""replSetSyncFrom: a secondary replicates from the member it is told to, with the server's checks and reply
(topology_coordinator.cpp prepareSyncFromResponse)."""

from __future__ import annotations

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from mongosim.core import open_cluster
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.sync_from import parse_host_and_port
from tests.replset.conftest import EPOCH, member_client, settle


def _error(reply: dict) -> tuple[str, str]:
    assert reply["ok"] == 0.0, reply
    return reply["codeName"], reply["errmsg"]


async def _settled_set(rs3):
    """The set once replication settled: (core, primary client, set, its three members, a client of the last)."""
    core, c = rs3
    rs = core.replica_sets["shard00"]
    await settle(rs)
    primary, s1, s2 = rs.members
    return core, c, rs, primary, s1, s2, member_client(core, s2)


async def test_a_secondary_syncs_from_the_member_it_names(rs3, autojump_clock):
    core, c = rs3
    rs = core.replica_sets["shard00"]
    await c.insert("db", "c", [{"_id": 1}])
    await settle(rs)
    primary, s1, s2 = rs.members
    c2 = member_client(core, s2)
    reply = await c2.admin({"replSetSyncFrom": s1.host})
    assert list(reply)[:3] == ["syncFromRequested", "prevSyncTarget", "ok"]
    assert reply["syncFromRequested"] == s1.host and reply["prevSyncTarget"] == primary.host
    await c.insert("db", "c", [{"_id": 2}])
    await settle(rs)
    status = await c2.admin({"replSetGetStatus": 1})
    assert status["syncSourceHost"] == s1.host and status["syncSourceId"] == s1.id
    (me,) = [m for m in status["members"] if m.get("self")]
    assert me["syncSourceHost"] == s1.host
    # the write reached s2 through s1 (chained), and s1 still syncs from the primary
    assert s2.sync_source is s1 and s1.sync_source is primary
    assert s2.last_key == primary.last_key
    assert await c2.command("db", {"find": "c", "$readPreference": {"mode": "secondary"}}) \
        and s2.node.catalog.collection("db", "c").get(2) == {"_id": 2}
    # asked again: the previous target is now s1
    again = await c2.admin({"replSetSyncFrom": primary.host})
    assert again["prevSyncTarget"] == s1.host
    await settle(rs)
    assert s2.sync_source is primary


async def test_the_switch_needs_no_write_and_moves_no_topology_version(rs3, autojump_clock):
    core, c, rs, primary, s1, s2, c2 = await _settled_set(rs3)
    before = (await c2.admin({"hello": 1}))["topologyVersion"]
    last = primary.last_key
    await c2.admin({"replSetSyncFrom": s1.host})
    await trio.sleep(0.01)
    assert primary.last_key == last  # (nothing was written meanwhile)
    assert (await c2.admin({"replSetGetStatus": 1}))["syncSourceHost"] == s1.host
    assert (await c2.admin({"hello": 1}))["topologyVersion"] == before


async def test_the_request_ends_when_the_source_goes(rs3, autojump_clock):
    """The secondary falls back to the primary once the member it was told to sync from is unreachable."""
    core, c = rs3
    rs = core.replica_sets["shard00"]
    await settle(rs)
    primary, s1, s2 = rs.members
    await member_client(core, s2).admin({"replSetSyncFrom": s1.host})
    await settle(rs)
    assert s2.sync_source is s1
    core.faults.kill("shard00", 1)
    await c.insert("db", "c", [{"_id": 3}])
    await settle(rs)
    assert s2.sync_source is primary and s2.sync_from is None and s2.last_key == primary.last_key


async def test_warning_when_the_target_is_more_than_ten_seconds_behind(rs3, autojump_clock):
    core, c = rs3
    rs = core.replica_sets["shard00"]
    primary, s1, s2 = rs.members
    await settle(rs)
    core.faults.stop_replication("shard00", 1)
    await trio.sleep(11)
    await c.insert("db", "c", [{"_id": 1}], writeConcern={"w": 1})
    await settle(rs)
    reply = await member_client(core, s2).admin({"replSetSyncFrom": s1.host})
    assert list(reply)[:4] == ["syncFromRequested", "warning", "prevSyncTarget", "ok"]
    assert reply["warning"] == f'requested member "{s1.host}" is more than 10 seconds behind us'
    await settle(rs)
    assert s2.sync_source is primary  # (a source behind this member is not kept)


async def test_errors(rs3, autojump_clock):
    core, c, rs, primary, s1, s2, c2 = await _settled_set(rs3)

    async def err(client, cmd, db="admin"):
        return _error(await client.command(db, cmd, check=False))

    assert await err(c, {"replSetSyncFrom": s1.host}) == ("NotSecondary", "primaries don't sync")
    assert await err(c2, {"replSetSyncFrom": s2.host}) == ("InvalidOptions", "I cannot sync from myself")
    assert await err(c2, {"replSetSyncFrom": "nowhere:1"}) == (
        "NodeNotFound", 'Could not find member "nowhere:1" in replica set')
    assert await err(c2, {"replSetSyncFrom": "nowhere"}) == (
        "NodeNotFound", 'Could not find member "nowhere:27017" in replica set')
    assert await err(c2, {"replSetSyncFrom": 1}) == (
        "FailedToParse", 'Empty host component parsing HostAndPort from ""')
    assert await err(c2, {"replSetSyncFrom": "h:x"}) == ("FailedToParse", "Did not consume whole string.")
    assert await err(c2, {"replSetSyncFrom": "h:0"}) == (
        "FailedToParse", 'Port number 0 out of range parsing HostAndPort from "h:0"')
    assert await err(c2, {"replSetSyncFrom": s1.host}, db="db") == (
        "Unauthorized", "replSetSyncFrom may only be run against the admin database.")
    core.faults.partition("shard00", 1)
    assert await err(c2, {"replSetSyncFrom": s1.host}) == (
        "HostUnreachable", f"I cannot reach the requested member: {s1.host}")
    assert s2.sync_from is None  # (nothing was changed by a refused request)


async def test_non_voter_hidden_and_removed(rs3, autojump_clock):
    core, c = rs3
    rs = core.replica_sets["shard00"]
    await settle(rs)
    primary, s1, s2 = rs.members
    cfg = (await c.admin({"replSetGetConfig": 1}))["config"]
    cfg["version"] += 1
    cfg["members"][1].update(votes=0, priority=0)  # s1: a non-voter
    cfg["members"][2].update(hidden=True, priority=0)  # s2: hidden
    await c.admin({"replSetReconfig": cfg})
    await settle(rs)
    # a voter may not sync from a non-voter; a hidden member may be synced from, and may sync
    reply = await c.command("admin", {"replSetSyncFrom": s1.host}, check=False)
    assert _error(reply) == ("NotSecondary", "primaries don't sync")
    c1 = member_client(core, s1)
    assert (await c1.admin({"replSetSyncFrom": s2.host}))["syncFromRequested"] == s2.host
    c2 = member_client(core, s2)
    assert _error(await c2.command("admin", {"replSetSyncFrom": s1.host}, check=False)) == (
        "InvalidOptions", f'Cannot sync from "{s1.host}" because it is not a voter')
    # a removed member does not sync
    cfg = (await c.admin({"replSetGetConfig": 1}))["config"]
    cfg["version"] += 1
    cfg["members"] = cfg["members"][:2]
    await c.admin({"replSetReconfig": cfg})
    assert _error(await c2.command("admin", {"replSetSyncFrom": s1.host}, check=False)) == (
        "NotSecondary", "Removed and uninitialized nodes do not sync")


async def test_arbiters(autojump_clock):
    async with open_cluster(topology="replset", members=2, arbiters=1, listen=False, epoch=EPOCH) as core:
        rs = core.replica_sets["shard00"]
        await settle(rs)
        primary, secondary, arbiter = rs.members
        assert arbiter.arbiter
        reply = await member_client(core, secondary).command("admin", {"replSetSyncFrom": arbiter.host}, check=False)
        assert _error(reply) == ("InvalidOptions", f'Cannot sync from "{arbiter.host}" because it is an arbiter')
        reply = await member_client(core, arbiter).command("admin", {"replSetSyncFrom": primary.host}, check=False)
        assert _error(reply) == ("NotSecondary", "arbiters don't sync")


async def test_mongos_has_no_repl_set_sync_from(sharded3, autojump_clock):
    core, c = sharded3
    reply = await c.command("admin", {"replSetSyncFrom": "localhost:1"}, check=False)
    assert (reply["ok"], reply["codeName"]) == (0.0, "CommandNotFound")


@given(host=st.from_regex(r"[a-z][a-z0-9.-]{0,12}", fullmatch=True), port=st.integers(1, 65535))
def test_host_and_port_round_trip(host, port):
    """HostAndPort::initialize: "h:p" is (h, p), "h" is (h, 27017), an ipv6 host in brackets."""
    assert parse_host_and_port(f"{host}:{port}") == (host, port)
    assert parse_host_and_port(host) == (host, 27017)
    assert parse_host_and_port(f"[::{port:x}]:{port}") == (f"::{port:x}", port)
    with pytest.raises(MongoError) as info:
        parse_host_and_port(f"{host}:{port}:{port}")
    assert info.value.code_name == "FailedToParse"
