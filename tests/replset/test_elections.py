"""Elections, step-down, freeze, priority, and what a failover does to operations."""

from __future__ import annotations

import trio
from bson import Int64, Timestamp

from mongosim.shardsim.replica_set import election_id
from tests.replset.conftest import member_client, settle


async def test_step_down_elects_a_caught_up_secondary_in_a_new_term(rs3, autojump_clock):
    core, c = rs3
    rs = core.replica_sets["shard00"]
    await c.insert("db", "c", [{"_id": 1}])
    old = rs.primary
    hello = await c.admin({"hello": 1})
    assert hello["isWritablePrimary"] and hello["electionId"] == election_id(1)
    counter = hello["topologyVersion"]["counter"]
    t0 = trio.current_time()
    await c.admin({"replSetStepDown": 60})
    await settle(rs, 0.01)
    new = rs.primary
    assert new is not None and new is not old and trio.current_time() - t0 < 0.1  # election handoff: at once
    assert rs.term == 2 and rs.elections[-1]["reason"] == "stepUpRequestSkipDryRun"
    noop = new.node.oplog.entry_at(new.node.oplog.end - 1)
    assert noop["op"] == "n" and noop["o"] == {"msg": "new primary"} and noop["t"] == Int64(2)
    hello = await member_client(core, new).admin({"hello": 1})
    assert hello["isWritablePrimary"] and hello["electionId"] == election_id(2) and hello["me"] == new.host
    old_hello = await c.admin({"hello": 1})
    assert not old_hello["isWritablePrimary"] and old_hello["secondary"] and old_hello["primary"] == new.host
    assert "electionId" not in old_hello and old_hello["topologyVersion"]["counter"] > counter
    # the stepped-down member may not stand again for stepDownSecs
    await core.faults.step_down("shard00")
    await settle(rs, 0.01)
    assert rs.primary not in (old, new)


async def test_step_down_needs_a_caught_up_secondary(rs3, autojump_clock):
    core, c = rs3
    core.faults.stop_replication("shard00")
    await c.command("db", {"insert": "c", "documents": [{"_id": 1}], "writeConcern": {"w": 1}})
    t0 = trio.current_time()
    reply = await c.command("admin", {"replSetStepDown": 60, "secondaryCatchUpPeriodSecs": 5}, check=False)
    assert reply["codeName"] == "ExceededTimeLimit" and reply["code"] == 262
    assert 4.99 <= trio.current_time() - t0 <= 5.05
    assert core.replica_sets["shard00"].primary.host == core.frontend.member.host
    await c.admin({"replSetStepDown": 60, "secondaryCatchUpPeriodSecs": 1, "force": True})
    assert core.frontend.member.state == "SECONDARY"


async def test_killing_the_primary_elects_the_most_up_to_date_member_after_the_election_timeout(rs3, autojump_clock):
    core, c = rs3
    rs = core.replica_sets["shard00"]
    behind = rs.members[1]
    core.faults.stop_replication("shard00", behind.id)
    await c.insert("db", "c", [{"_id": 1}])  # majority: the primary and member 2
    t0 = trio.current_time()
    core.faults.kill("shard00")
    while rs.primary is None:
        await rs.changed.park()
    assert abs(trio.current_time() - t0 - 10.0) < 0.05  # electionTimeoutMillis
    assert rs.primary is rs.members[2]  # member 1 is behind: the other has the newest optime
    assert rs.members[2].node.catalog.collection("db", "c").get(1) == {"_id": 1}


async def test_priority_zero_never_stands_and_priority_takes_over(rs3, autojump_clock):
    core, c = rs3
    rs = core.replica_sets["shard00"]
    cfg = (await c.admin({"replSetGetConfig": 1}))["config"]
    cfg["version"] += 1
    cfg["members"][1]["priority"] = 0
    cfg["members"][2]["priority"] = 5
    await c.admin({"replSetReconfig": cfg})
    t0 = trio.current_time()
    while rs.primary is not rs.members[2]:
        await rs.changed.park()
    # priority takeover: once caught up, after a heartbeat interval
    assert rs.heartbeat_interval - 0.05 <= trio.current_time() - t0 <= 2 * rs.heartbeat_interval + 0.05
    assert rs.elections[-1]["reason"] == "priorityTakeover"
    core.faults.kill("shard00")  # member 2 dies; member 0 (priority 1) is elected, never member 1
    while rs.primary is None:
        await rs.changed.park()
    assert rs.primary is rs.members[0]


async def test_freeze(rs3, autojump_clock):
    core, c = rs3
    rs = core.replica_sets["shard00"]
    for m in rs.members[1:]:
        await member_client(core, m).admin({"replSetFreeze": 30})
    reply = await c.command("admin", {"replSetFreeze": 30}, check=False)
    assert reply["codeName"] == "NotSecondary"
    t0 = trio.current_time()
    core.faults.kill("shard00")
    while rs.primary is None:
        await rs.changed.park()
    assert abs(trio.current_time() - t0 - 30.0) < 0.05  # nobody stands until the freeze ends


async def test_step_down_fails_writes_waiting_for_majority(rs3, autojump_clock):
    core, c = rs3
    core.faults.stop_replication("shard00")
    results = []

    async def writer():
        results.append(await c.command("db", {"insert": "c", "documents": [{"_id": 1}], "lsid": {"id": _uuid()},
                                              "txnNumber": 1}))

    async with trio.open_nursery() as n:
        n.start_soon(writer)
        await trio.sleep(1)
        await core.faults.step_down("shard00", force=True, catch_up=0)
    reply = results[0]
    assert reply["ok"] == 1.0 and reply["writeConcernError"]["code"] == 189
    assert reply["writeConcernError"]["codeName"] == "PrimarySteppedDown"
    assert reply["errorLabels"] == ["RetryableWriteError"]


async def test_streaming_hello_wakes_on_a_state_change(rs3, autojump_clock):
    core, c = rs3
    hello = await c.admin({"hello": 1})
    tv = hello["topologyVersion"]
    got = []

    async def waiter():
        await core.frontend.await_hello({"hello": 1, "topologyVersion": tv, "maxAwaitTimeMS": 10_000}, c.conn)
        got.append(trio.current_time())

    async with trio.open_nursery() as n:
        n.start_soon(waiter)
        await trio.sleep(1)
        t0 = trio.current_time()
        await core.faults.step_down("shard00")
    assert got and got[0] - t0 < 0.01


def _uuid():
    import os

    from bson import Binary

    return Binary(os.urandom(16), 4)


async def test_prev_op_time_carries_the_term_of_the_entry_it_names(rs3, autojump_clock):
    """A retryable write's statements chain by prevOpTime {ts, t}: after an election, t is the new term."""
    core, c = rs3
    rs = core.replica_sets["shard00"]
    await c.admin({"replSetStepDown": 60})
    await settle(rs, 0.01)
    assert rs.term == 2
    c2 = member_client(core, rs.primary)
    lsid = {"id": _uuid()}
    await c2.command("db", {"insert": "c", "documents": [{"_id": 1}, {"_id": 2}], "lsid": lsid, "txnNumber": Int64(1)})
    await c2.command("db", {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"a": 1}}},
                                                       {"q": {"_id": 2}, "u": {"$set": {"a": 2}}}],
                            "lsid": lsid, "txnNumber": Int64(2)})
    oplog = rs.primary.node.oplog
    entries = [oplog.entry_at(k) for k in range(oplog.end - 4, oplog.end)]
    assert [e["op"] for e in entries] == ["i", "i", "u", "u"]
    for first, second in (entries[:2], entries[2:]):  # (the insert batch's byte path, then the update path)
        assert first["prevOpTime"] == {"ts": Timestamp(0, 0), "t": Int64(-1)}
        assert second["prevOpTime"] == {"ts": first["ts"], "t": Int64(2)} and second["t"] == Int64(2)


async def test_a_new_primary_answers_retried_inserts_and_upserts_from_its_session_table(rs3, autojump_clock):
    """The statements a secondary applied (a batch of inserts as one group, an upsert, a findAndModify
    upsert) are in its session table: once it is primary, a retry answers as the first run did and
    writes nothing."""
    core, c = rs3
    rs = core.replica_sets["shard00"]
    cmds = [
        {"insert": "c", "documents": [{"_id": i} for i in range(5)]},
        {"update": "c", "updates": [{"q": {"_id": 10}, "u": {"$set": {"a": 1}}, "upsert": True}]},
        {"findAndModify": "c", "query": {"_id": 20}, "update": {"$set": {"a": 2}}, "upsert": True},
    ]
    for cmd in cmds:  # (a session each)
        cmd.update(lsid={"id": _uuid()}, txnNumber=Int64(1))
    keep = ("n", "nModified", "upserted", "lastErrorObject", "value", "ok", "writeErrors")
    first = [{k: v for k, v in (await c.command("db", dict(cmd))).items() if k in keep} for cmd in cmds]
    await settle(rs)
    await c.admin({"replSetStepDown": 60})
    await settle(rs, 0.01)
    c2 = member_client(core, rs.primary)
    end = rs.primary.node.oplog.end
    retried = [{k: v for k, v in (await c2.command("db", dict(cmd))).items() if k in keep} for cmd in cmds]
    assert retried == first
    assert retried[0] == {"n": 5, "ok": 1.0}
    assert retried[1] == {"n": 1, "nModified": 0, "upserted": [{"index": 0, "_id": 10}], "ok": 1.0}
    assert retried[2]["lastErrorObject"] == {"n": 1, "updatedExisting": False, "upserted": 20}
    assert rs.primary.node.oplog.end == end  # nothing written again


async def test_an_exhaust_hello_answers_once_per_change(rs3, autojump_clock):
    """An exhaust streaming hello (pymongo's monitor) gets one reply per topology change, each
    awaiting a change from the one before: not a stream of replies to the first request's
    topologyVersion (which, once passed, would be answered at once, again and again)."""
    import trio.testing

    from mongosim.oplog import bsonutil
    from mongosim.router import wire
    from mongosim.router.server import serve_connection
    from mongosim.router.wire.messages import EXHAUST_ALLOWED, MORE_TO_COME

    core, c = rs3
    tv = (await c.admin({"hello": 1}))["topologyVersion"]
    client, server = trio.testing.memory_stream_pair()
    replies: list[tuple[float, int, dict]] = []

    async def read() -> None:  # OP_MSG replies: header, flagBits, one kind-0 section
        buf = b""
        while True:
            data = await client.receive_some(1 << 16)
            if not data:
                return
            buf += data
            while len(buf) >= 4 and len(buf) >= int.from_bytes(buf[:4], "little"):
                n = int.from_bytes(buf[:4], "little")
                flags = int.from_bytes(buf[16:20], "little")
                assert buf[20] == 0
                replies.append((trio.current_time(), flags, bsonutil.decode(buf[21:n])))
                assert len(replies) < 50, "a flood of hello replies"
                buf = buf[n:]

    async with trio.open_nursery() as n:
        n.start_soon(serve_connection, server, core.frontend)
        n.start_soon(read)
        hello = {"hello": 1, "topologyVersion": tv, "maxAwaitTimeMS": 10_000, "$db": "admin"}
        await client.send_all(wire.encode_op_msg(hello, 7, 0, EXHAUST_ALLOWED))
        await trio.sleep(5)
        assert replies == []  # nothing changed: the first reply waits
        await core.faults.step_down("shard00")
        await trio.sleep(1)  # the election settles well within this
        counters = [body["topologyVersion"]["counter"] for _t, _f, body in replies]
        assert 1 <= len(counters) <= 4 and counters == sorted(set(counters))
        assert all(flags & MORE_TO_COME for _t, flags, _b in replies)
        assert counters[-1] == core.replica_sets["shard00"].members[0].topology_counter
        quiet = len(replies)
        await trio.sleep(replies[-1][0] + 9.9 - trio.current_time())
        assert len(replies) == quiet  # no change: no reply before maxAwaitTimeMS
        await trio.sleep(0.2)
        assert len(replies) == quiet + 1  # maxAwaitTimeMS passed: the same topologyVersion again
        assert replies[-1][2]["topologyVersion"] == replies[-2][2]["topologyVersion"]
        n.cancel_scope.cancel()
