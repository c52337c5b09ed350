"""Member tags and custom write concern modes (`settings.getLastErrorModes`), on virtual time."""

from __future__ import annotations

import trio

from mongosim.core import open_cluster
from mongosim.testing import AsyncClient
from tests.replset.conftest import EPOCH, member_client, settle

DCS = ["east", "east", "west"]


async def _tag(c: AsyncClient, modes: dict | None = None, dcs: list[str] = DCS) -> dict:
    """Tag the members dc: east, east, west (and set the modes) by replSetReconfig; the new config."""
    config = (await c.command("admin", {"replSetGetConfig": 1}))["config"]
    config["version"] += 1
    for member, dc in zip(config["members"], dcs):
        member["tags"] = {"dc": dc, "rack": f"r{member['_id']}"}
    if modes is not None:
        config["settings"]["getLastErrorModes"] = modes
    reply = await c.command("admin", {"replSetReconfig": config}, check=False)
    return reply if not reply.get("ok") else config


async def test_hello_and_the_config_carry_the_tags(rs3, autojump_clock):
    core, c = rs3
    await _tag(c, {"multiDC": {"dc": 2}})
    rs = core.replica_sets["shard00"]
    for m, dc in zip(rs.members, DCS):
        hello = await member_client(core, m).command("admin", {"hello": 1})
        assert hello["tags"] == {"dc": dc, "rack": f"r{m.id}"}
        keys = list(hello)
        assert keys.index("tags") == keys.index("me") - 1
    config = (await c.command("admin", {"replSetGetConfig": 1}))["config"]
    assert [m["tags"]["dc"] for m in config["members"]] == DCS
    assert config["settings"]["getLastErrorModes"] == {"multiDC": {"dc": 2}}


async def test_a_custom_mode_waits_for_the_tagged_members(rs3, autojump_clock):
    """w: "multiDC" ({dc: 2}) is satisfied once a member of the other data centre holds the write: the
    east secondary alone is not enough."""
    core, c = rs3
    await _tag(c, {"multiDC": {"dc": 2}, "twoRacks": {"rack": 2}})
    await settle(core)
    core.faults.stop_replication("shard00", 2)  # the west member
    reply = await c.insert("db", "c", [{"_id": 1}], writeConcern={"w": "multiDC", "wtimeout": 400})
    assert reply["n"] == 1 and reply["writeConcernError"] == {
        "code": 64, "codeName": "WriteConcernTimeout", "errmsg": "waiting for replication timed out",
        "errInfo": {"wtimeout": True, "writeConcern": {"w": "multiDC", "wtimeout": 400, "provenance": "clientSupplied"}}}
    reply = await c.insert("db", "c", [{"_id": 2}], writeConcern={"w": "twoRacks", "wtimeout": 400})
    assert "writeConcernError" not in reply  # the primary's rack and the east secondary's
    t0 = trio.current_time()

    async def resume() -> None:
        await trio.sleep(1.0)
        core.faults.start_replication("shard00", 2)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(resume)
        reply = await c.insert("db", "c", [{"_id": 3}], writeConcern={"w": "multiDC"})
    assert "writeConcernError" not in reply and 0.99 <= trio.current_time() - t0 <= 1.1


async def test_unknown_and_unsatisfiable_modes(rs3, autojump_clock):
    core, c = rs3
    await _tag(c, {"multiDC": {"dc": 2}, "threeDCs": {"dc": 3}})
    reply = await c.insert("db", "c", [{"_id": 1}], writeConcern={"w": "dc9"})
    assert reply["n"] == 1 and reply["writeConcernError"] == {
        "code": 79, "codeName": "UnknownReplWriteConcern",
        "errmsg": "No write concern mode named 'dc9' found in replica set configuration",
        "errInfo": {"writeConcern": {"w": "dc9", "wtimeout": 0, "provenance": "clientSupplied"}}}
    reply = await c.insert("db", "c", [{"_id": 2}], writeConcern={"w": "threeDCs"})
    assert reply["writeConcernError"]["code"] == 100
    assert reply["writeConcernError"]["errmsg"] == 'Not enough nodes match write concern mode "threeDCs"'


async def test_modes_the_server_refuses(rs3, autojump_clock):
    core, c = rs3
    for modes, msg in [
        ({"m": {"zone": 1}}, "No replica set tag key zone in config"),
        ({"m": {"dc": 0}}, "Value of getLastErrorModes.m.dc must be positive, but found 0"),
        ({"m": {"dc": "two"}}, "Expected getLastErrorModes.m.dc to be a number, not string"),
        ({"m": 2}, "Expected getLastErrorModes.m to be an Object, not int"),
    ]:
        reply = await _tag(c, modes)
        assert (reply["codeName"], reply["errmsg"]) == ("InvalidReplicaSetConfig", msg)


async def test_tagged_read_preference_through_mongos(autojump_clock):
    """mongos picks the secondary whose tags match the read preference's first matching tag set."""
    async with open_cluster(shards=1, members=3, listen=False, epoch=EPOCH) as core:
        rs = core.replica_sets["shard00"]
        pc = member_client(core, rs.primary)
        await _tag(pc, None, ["east", "east", "west"])
        router = AsyncClient(core.router)
        await router.insert("db", "c", [{"_id": 1}])
        await settle(core)
        core.faults.stop_replication("shard00", 1)  # the east secondary misses the next write
        await router.insert("db", "c", [{"_id": 2}], writeConcern={"w": 2})

        async def ids(tags: list) -> list:
            reply = await router.command("db", {"find": "c", "$readPreference": {"mode": "secondary", "tags": tags}})
            return [d["_id"] for d in reply["cursor"]["firstBatch"]]

        assert await ids([{"dc": "east"}]) == [1]
        assert await ids([{"dc": "west"}]) == [1, 2]
        assert await ids([{"dc": "north"}, {"dc": "west"}]) == [1, 2]
        reply = await router.command("db", {"find": "c", "$readPreference": {"mode": "secondary",
                                                                             "tags": [{"dc": "north"}]}},
                                     check=False)
        assert reply["codeName"] == "FailedToSatisfyReadPreference"
