"""The user and role management commands on a replica set's members: the writes (createUser,
createRole, grantRolesToUser, ...) run on the primary only (NotWritablePrimary on a secondary, as
their AllowedOnSecondary::kNever says); usersInfo and rolesInfo are reads a secondary answers with
secondaryOk (kOptIn), NotPrimaryNoSecondaryOk without."""

from __future__ import annotations

import pytest

from mongosim.testing import CommandError
from tests.replset.conftest import member_client, secondary_read


@pytest.mark.parametrize("cmd", [
    {"createUser": "u", "pwd": "pw", "roles": []},
    {"createRole": "r", "privileges": [], "roles": []},
    {"dropAllRolesFromDatabase": 1},
    {"grantRolesToUser": "x", "roles": ["read"]},
])
async def test_writes_need_the_primary(rs3, cmd, autojump_clock):
    core, _c = rs3
    rs = core.replica_sets["shard00"]
    secondary = next(m for m in rs.members if m is not rs.primary)
    with pytest.raises(CommandError) as e:
        await member_client(core, secondary).command("db", secondary_read(cmd))
    assert (e.value.code, e.value.reply["errmsg"]) == (10107, "not primary")
    assert "topologyVersion" in e.value.reply


async def test_reads_on_a_secondary_want_secondary_ok(rs3, autojump_clock):
    core, c = rs3
    rs = core.replica_sets["shard00"]
    await c.command("db", {"createRole": "r", "privileges": [], "roles": ["read"]})
    secondary = member_client(core, next(m for m in rs.members if m is not rs.primary))
    with pytest.raises(CommandError) as e:
        await secondary.command("db", {"rolesInfo": "r"})
    assert e.value.code == 13435  # NotPrimaryNoSecondaryOk
    reply = await secondary.command("db", secondary_read({"rolesInfo": "r"}))
    assert [r["role"] for r in reply["roles"]] == ["r"]
    assert (await secondary.command("db", secondary_read({"usersInfo": 1})))["users"] == []
