"""Rollback: writes a cut-off primary took that no majority holds go when it rejoins."""

from __future__ import annotations

import trio

from mongosim.oplog.clock import ts_key
from tests.replset.conftest import member_client, member_state, settle


async def test_a_partitioned_primary_rolls_back_what_no_majority_has(rs3, autojump_clock):
    core, c = rs3
    rs = core.replica_sets["shard00"]
    await c.command("db", {"create": "c", "changeStreamPreAndPostImages": {"enabled": True}})
    await c.insert("db", "c", [{"_id": 1, "v": 0}, {"_id": 9}])
    cs = c.watch("db", "c", max_await_time_ms=100)
    await cs.open()
    old = rs.primary
    core.faults.partition("shard00", "primary")
    doomed = [await c.command("db", {"insert": "c", "documents": [{"_id": 2}], "writeConcern": {"w": 1}}),
              await c.command("db", {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"v": 1}}}],
                                     "writeConcern": {"w": 1}}),
              await c.command("db", {"delete": "c", "deletes": [{"q": {"_id": 9}, "limit": 1}],
                                     "writeConcern": {"w": 1}}),
              await c.command("db", {"createIndexes": "c", "indexes": [{"key": {"v": 1}, "name": "v_1"}],
                                     "writeConcern": {"w": 1}})]
    assert all(r["ok"] == 1.0 and "writeConcernError" not in r for r in doomed)  # acknowledged, w: 1
    events = []
    t0 = trio.current_time()
    while trio.current_time() - t0 < 12:  # the old primary's own stream shows none of them
        ev = await cs.try_next()
        if ev is not None:
            events.append(ev)
    assert events == []
    assert old.state == "SECONDARY"  # it noticed it lost the majority (election timeout)
    new = rs.primary
    assert new is not None and new is not old and rs.term == 2
    await member_client(core, new).insert("db", "c", [{"_id": 3}])
    before = {k: dict(v) for k, v in old.node.catalog.collection("db", "c").docs.items()}
    assert before[(10, 1, 2)] == {"_id": 2}
    core.faults.heal("shard00")
    await settle(rs)
    info = rs.rollbacks[-1]
    assert info["member"] == old.host and not info["resync"]
    removed = [(e["op"], e.get("o", {}).get("_id")) for e in info["removed"]]
    assert ("i", 2) in removed and ("d", 9) in removed
    assert ts_key(info["commonPoint"]) < ts_key(doomed[0]["operationTime"])
    assert member_state(old) == member_state(new)
    coll = old.node.catalog.collection("db", "c")
    assert coll.get(1) == {"_id": 1, "v": 0} and coll.get(2) is None and coll.get(9) == {"_id": 9}
    assert coll.index("v_1") is None  # the index build went too
    assert all(k[1] <= ts_key(info["commonPoint"]) for k in old.node.preimages)
    assert not any(old.has_entry(ts_key(r["operationTime"]), 1) for r in doomed)


async def test_killed_primary_rolls_back_on_restart(rs3, autojump_clock):
    core, c = rs3
    rs = core.replica_sets["shard00"]
    await c.insert("db", "c", [{"_id": 1}])
    old = rs.primary
    core.faults.stop_replication("shard00")
    await c.command("db", {"insert": "c", "documents": [{"_id": 2}], "writeConcern": {"w": 1}})
    core.faults.kill("shard00")
    core.faults.start_replication("shard00")
    while rs.primary is None:
        await rs.changed.park()
    await member_client(core, rs.primary).insert("db", "c", [{"_id": 3}])
    core.faults.restart_member("shard00", old.id)
    await settle(rs)
    assert rs.rollbacks and rs.rollbacks[-1]["member"] == old.host
    assert sorted(d["_id"] for d in old.node.catalog.collection("db", "c").docs.values()) == [1, 3]
    assert member_state(old) == member_state(rs.primary)
