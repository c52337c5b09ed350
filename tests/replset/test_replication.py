"""Replication: secondaries hold the primary's oplog byte for byte and the same data, after a lag."""

from __future__ import annotations

import os

import trio
import trio.testing
from bson import BSON, Binary, Int64
from hypothesis import given, settings
from hypothesis import strategies as st

from mongosim.core import open_cluster
from mongosim.testing import AsyncClient
from tests.replset.conftest import EPOCH, member_client, member_state, secondary_read, settle


async def test_secondaries_apply_every_kind_of_entry(rs3, autojump_clock):
    core, c = rs3
    rs = core.replica_sets["shard00"]
    await c.command("db", {"create": "pre", "changeStreamPreAndPostImages": {"enabled": True}})
    await c.insert("db", "c", [{"_id": i, "a": {"b": [1, 2, 3]}, "k": i} for i in range(5)])
    await c.update("db", "c", {"_id": 1}, {"$set": {"a.b.1": 9}, "$unset": {"a.x": 1}, "$inc": {"k": 10}})
    await c.update("db", "c", {"_id": 2}, {"_id": 2, "replaced": True, "k": 2})
    await c.delete("db", "c", {"_id": 3}, limit=1)
    await c.command("db", {"createIndexes": "c", "indexes": [{"key": {"k": 1}, "name": "k_1", "unique": True}]})
    await c.command("db", {"collMod": "c", "validationLevel": "off"})
    await c.command("admin", {"renameCollection": "db.c", "to": "db.d"})
    await c.insert("db", "pre", [{"_id": 1, "v": 1}])
    await c.update("db", "pre", {"_id": 1}, {"$inc": {"v": 1}})
    await c.command("db", {"insert": "t", "documents": [{"_id": 1}]})
    await c.command("db", {"drop": "t"})
    lsid = {"id": Binary(os.urandom(16), 4)}
    await c.command("db", {"insert": "txn", "documents": [{"_id": 1}], "lsid": lsid, "txnNumber": 1,
                           "autocommit": False, "startTransaction": True})
    await c.command("db", {"insert": "txn", "documents": [{"_id": 2}], "lsid": lsid, "txnNumber": 1, "autocommit": False})
    await c.command("admin", {"commitTransaction": 1, "lsid": lsid, "txnNumber": 1, "autocommit": False})
    await settle(rs)
    primary = member_state(rs.primary)
    for m in rs.members:
        assert member_state(m) == primary, m.host
        coll = m.node.catalog.collection("db", "d")
        assert coll.index("k_1")["unique"] is True and coll.options.get("validationLevel") == "off"
        assert m.node.catalog.collection("db", "c") is None and m.node.catalog.collection("db", "t") is None
    pre = {m.host: list(m.node.preimages.values()) for m in rs.members}
    assert all(v == [{"_id": 1, "v": 1}] for v in pre.values()), pre


async def test_a_retried_statement_is_answered_by_the_new_primary(rs3, autojump_clock):
    """The session table replicates: after a failover a retried insert is not run twice."""
    core, c = rs3
    rs = core.replica_sets["shard00"]
    lsid = {"id": Binary(os.urandom(16), 4)}
    cmd = {"insert": "c", "documents": [{"_id": 1}, {"_id": 2}], "lsid": lsid, "txnNumber": Int64(7)}
    await c.command("db", cmd)
    old = rs.primary
    await core.faults.step_down("shard00")
    await settle(rs)
    assert rs.primary is not old
    reply = await member_client(core, rs.primary).command("db", cmd)
    assert reply["n"] == 2 and "writeErrors" not in reply
    assert rs.primary.node.oplog.last_key == rs.primary.election_key  # nothing written again


async def test_lag_delays_a_secondary(rs3, autojump_clock):
    core, c = rs3
    rs = core.replica_sets["shard00"]
    lagging = rs.members[2]
    core.faults.lag("shard00", 5.0, lagging.id)
    await c.command("db", {"insert": "c", "documents": [{"_id": 1}], "writeConcern": {"w": 2}})
    assert lagging.node.catalog.collection("db", "c") is None
    t0 = trio.current_time()
    reply = await c.command("db", {"insert": "c", "documents": [{"_id": 2}], "writeConcern": {"w": 3}})
    assert "writeConcernError" not in reply
    assert 4.95 <= trio.current_time() - t0 <= 5.05  # (virtual time: the lag exactly)
    assert len(lagging.node.catalog.collection("db", "c")) == 2


async def test_reads_on_a_secondary(rs3, autojump_clock):
    core, c = rs3
    rs = core.replica_sets["shard00"]
    await c.insert("db", "c", [{"_id": 1}], writeConcern={"w": 3})
    sec = member_client(core, rs.members[1])
    reply = await sec.command("db", {"find": "c"}, check=False)
    assert reply["code"] == 13435 and reply["codeName"] == "NotPrimaryNoSecondaryOk"
    reply = await sec.command("db", secondary_read({"find": "c"}))
    assert reply["cursor"]["firstBatch"] == [{"_id": 1}]
    reply = await sec.command("db", {"insert": "c", "documents": [{"_id": 2}]}, check=False)
    assert (reply["code"], reply["codeName"], reply["errmsg"]) == (10107, "NotWritablePrimary", "not primary")


async def test_not_primary_errors_carry_the_members_topology_version(rs3, autojump_clock):
    """A member appends its topologyVersion to a NotPrimaryError reply, after the labels
    (appendErrorLabelsAndTopologyVersion), so a driver ignores an older hello that still called
    it primary; other errors carry none."""
    core, c = rs3
    rs = core.replica_sets["shard00"]
    sec = member_client(core, rs.members[1])
    hello = await sec.command("admin", {"hello": 1})
    reply = await sec.command("db", {"insert": "c", "documents": [{"_id": 1}]}, check=False)
    assert reply["topologyVersion"] == hello["topologyVersion"]
    assert list(reply)[:5] == ["ok", "errmsg", "code", "codeName", "topologyVersion"]
    reply = await sec.command("admin", {"replSetStepDown": 1}, check=False)
    assert reply["codeName"] == "NotWritablePrimary" and reply["topologyVersion"] == hello["topologyVersion"]
    await c.command("admin", {"replSetStepDown": 10})
    await settle(rs, 0.01)
    later = await sec.command("admin", {"hello": 1})
    assert later["topologyVersion"]["counter"] > hello["topologyVersion"]["counter"]
    old = member_client(core, rs.members[0])
    reply = await old.command("db", {"insert": "c", "documents": [{"_id": 1}], "lsid": {"id": Binary(os.urandom(16), 4)},
                                     "txnNumber": Int64(1)}, check=False)
    assert reply["codeName"] == "NotWritablePrimary" and list(reply).index("errorLabels") < list(reply).index(
        "topologyVersion")
    bad = await old.command("db", secondary_read({"find": "c", "filter": {"$bad": 1}}), check=False)
    assert bad["codeName"] == "BadValue" and "topologyVersion" not in bad


@settings(max_examples=25)
@given(ops=st.lists(st.tuples(st.sampled_from(["insert", "update", "replace", "delete", "index", "txn"]),
                              st.integers(0, 9), st.integers(-5, 5)), min_size=1, max_size=30),
       lag=st.sampled_from([0.0, 0.3]))
def test_members_converge(ops, lag):
    """Whatever the writes, every member ends with the primary's oplog (same bytes) and data."""

    async def run() -> None:
        async with open_cluster(topology="replset", members=3, listen=False, epoch=EPOCH) as core:
            rs = core.replica_sets["shard00"]
            c = AsyncClient(core.frontend)
            core.faults.lag("shard00", lag)
            txn = 0
            for kind, i, v in ops:
                if kind == "insert":
                    await c.command("db", {"insert": "c", "documents": [{"_id": i, "v": v}], "writeConcern": {"w": 1}},
                                    check=False)
                elif kind == "update":
                    await c.update("db", "c", {"_id": i}, {"$inc": {"v": v}, "$push": {"h": v}})
                elif kind == "replace":
                    await c.update("db", "c", {"_id": i}, {"_id": i, "r": v})
                elif kind == "delete":
                    await c.delete("db", "c", {"_id": i}, limit=1)
                elif kind == "index":
                    await c.command("db", {"createIndexes": "c", "indexes": [{"key": {f"f{i}": 1}, "name": f"f{i}"}]})
                else:
                    txn += 1
                    lsid = {"id": Binary(bytes([txn]) * 16, 4)}
                    await c.command("db", {"update": "c", "updates": [{"q": {"_id": i}, "u": {"$set": {"t": v}},
                                                                      "upsert": True}], "lsid": lsid,
                                           "txnNumber": 1, "autocommit": False, "startTransaction": True})
                    await c.command("admin", {"commitTransaction": 1, "lsid": lsid, "txnNumber": 1,
                                              "autocommit": False})
            await trio.sleep(1.0)
            want = member_state(rs.primary)
            for m in rs.members:
                assert member_state(m) == want

    trio.run(run, clock=trio.testing.MockClock(autojump_threshold=0))


async def test_a_batch_insert_after_an_election_carries_the_new_term(rs3, autojump_clock):
    """The insert byte path stamps the set's current term (`t`) as the general path does, the
    secondaries copy those bytes, and a change stream renders the entries of the new term."""
    core, _ = rs3
    rs = core.replica_sets["shard00"]
    await core.faults.step_down("shard00")
    await settle(rs)
    term = rs.primary.node.term
    assert term > 1
    c = member_client(core, rs.primary)
    cs = c.watch("db", "c", max_await_time_ms=100)
    await cs.open()
    await c.insert("db", "c", [{"_id": i} for i in range(20)])
    await settle(rs)
    oplog = rs.primary.node.oplog
    entries = [e for e in (BSON(oplog.raw_at(p)).decode() for p in range(oplog.start, oplog.end))
               if e.get("ns") == "db.c" and e["op"] == "i"]
    assert len(entries) == 20 and {e["t"] for e in entries} == {term}
    assert all(member_state(m) == member_state(rs.primary) for m in rs.members)
    seen = []
    while len(seen) < 20:
        ev = await cs.try_next()
        if ev is not None:
            seen.append(ev["documentKey"]["_id"])
    assert seen == list(range(20))
