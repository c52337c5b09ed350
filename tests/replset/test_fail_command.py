"""failCommand on a replica-set member's own port: it fails any command it names, hello, ping and the
authentication commands included (a driver's handshake retries depend on it); configureFailPoint is
never failed (commands.cpp shouldActivateFailCommandFailPoint)."""

from __future__ import annotations

import trio

from tests.replset.conftest import member_client


def fail_command(commands: list, **data) -> dict:
    return {"configureFailPoint": "failCommand", "mode": {"times": 1},
            "data": {"failCommands": commands, **data}}


async def test_fail_command_fails_admin_commands_once(rs3, autojump_clock):
    core, c = rs3
    await c.admin(fail_command(["ping", "hello"], errorCode=91))
    reply = await c.command("admin", {"ping": 1}, check=False)
    assert (reply["ok"], reply["code"], reply["codeName"]) == (0.0, 91, "ShutdownInProgress")
    assert reply["errmsg"] == "Failing command via 'failCommand' failpoint"
    assert (await c.command("admin", {"ping": 1}))["ok"] == 1.0  # times: 1
    assert (await c.admin({"hello": 1}))["isWritablePrimary"] is True


async def test_fail_command_closes_a_hello_connection(rs3, autojump_clock):
    core, c = rs3
    await c.admin(fail_command(["hello"], closeConnection=True))
    reply = await c.command("admin", {"hello": 1}, check=False)
    assert reply["codeName"] == "HostUnreachable"  # (the test client's network error)
    assert (await c.admin({"hello": 1}))["ok"] == 1.0


async def test_fail_command_on_a_secondary_is_its_own(rs3, autojump_clock):
    core, c = rs3
    sec = member_client(core, core.replica_sets["shard00"].members[1])
    await sec.admin(fail_command(["ping"], errorCode=11600))
    assert (await c.admin({"ping": 1}))["ok"] == 1.0  # the primary's failpoints are not the secondary's
    reply = await sec.command("admin", {"ping": 1}, check=False)
    assert reply["codeName"] == "InterruptedAtShutdown"


async def test_configure_fail_point_is_never_failed(rs3, autojump_clock):
    core, c = rs3
    await c.admin({"configureFailPoint": "failCommand", "mode": "alwaysOn",
                   "data": {"failCommands": ["configureFailPoint", "ping"], "errorCode": 2}})
    assert (await c.command("admin", {"ping": 1}, check=False))["code"] == 2
    await c.admin({"configureFailPoint": "failCommand", "mode": "off"})
    assert (await c.admin({"ping": 1}))["ok"] == 1.0


async def test_fail_command_fires_before_a_streaming_hello_waits(rs3, autojump_clock):
    """An awaitable hello waits inside the command, after failCommand is evaluated: the failure (here
    named by hello's alias isMaster) comes at once, not after maxAwaitTimeMS."""
    core, c = rs3
    tv = (await c.admin({"hello": 1}))["topologyVersion"]
    await c.admin(fail_command(["isMaster"], errorCode=91))
    t0 = trio.current_time()
    reply = await c.command("admin", {"hello": 1, "topologyVersion": tv, "maxAwaitTimeMS": 10_000}, check=False)
    assert reply["codeName"] == "ShutdownInProgress" and trio.current_time() - t0 < 0.01
    t0 = trio.current_time()  # without the failpoint it waits for a change, up to maxAwaitTimeMS
    reply = await c.command("admin", {"hello": 1, "topologyVersion": tv, "maxAwaitTimeMS": 2_000})
    assert reply["isWritablePrimary"] and 1.99 <= trio.current_time() - t0 <= 2.05
