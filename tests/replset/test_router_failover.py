"""Through the router: retargeting to a shard's new primary, and a merged stream across failovers."""

from __future__ import annotations

import os

import trio
import trio.testing
from bson import Binary
from hypothesis import given, settings
from hypothesis import strategies as st

from mongosim.core import open_cluster
from mongosim.testing import AsyncClient, CommandError
from tests.replset.conftest import EPOCH


async def _shard(c: AsyncClient) -> None:
    await c.admin({"enableSharding": "db", "primaryShard": "shard00"})
    await c.admin({"shardCollection": "db.c", "key": {"k": 1}})
    await c.admin({"split": "db.c", "middle": {"k": 100}})
    await c.admin({"moveChunk": "db.c", "find": {"k": 100}, "to": "shard01"})


async def test_writes_follow_the_new_primary(sharded3, autojump_clock):
    core, c = sharded3
    await _shard(c)
    lsid = {"id": Binary(os.urandom(16), 4)}
    await c.command("db", {"insert": "c", "documents": [{"_id": 1, "k": 1}], "lsid": lsid, "txnNumber": 1})
    before = core.replica_sets["shard00"].primary
    await core.faults.step_down("shard00")
    # no primary for an instant: the router waits for the election, then writes there
    await c.command("db", {"insert": "c", "documents": [{"_id": 2, "k": 2}], "lsid": lsid, "txnNumber": 2})
    after = core.replica_sets["shard00"].primary
    assert after is not before and after.node.catalog.collection("db", "c").get(2) == {"_id": 2, "k": 2}
    core.faults.kill("shard00")
    t0 = trio.current_time()
    await c.command("db", {"insert": "c", "documents": [{"_id": 3, "k": 3}], "lsid": lsid, "txnNumber": 3})
    assert 9.9 < trio.current_time() - t0 < 10.5  # it waited for the election (electionTimeoutMillis)
    docs = await c.find("db", "c", {})
    assert sorted(d["_id"] for d in docs) == [1, 2, 3]


async def test_config_server_failover(sharded3, autojump_clock):
    core, c = sharded3
    await core.faults.step_down("config")
    await c.admin({"enableSharding": "db2"})
    assert core.router.catalog.primary_of("db2") in ("shard00", "shard01")
    assert core.replica_sets["config"].primary.node.catalog.collection("config", "databases").get("db2")


async def test_prepared_transaction_survives_a_failover(sharded3, autojump_clock):
    """A participant prepared, its primary steps down: the new primary commits it."""
    core, c = sharded3
    await _shard(c)
    remote = core.router.shard("shard00")
    lsid = {"id": Binary(os.urandom(16), 4)}
    base = {"lsid": lsid, "txnNumber": 1, "autocommit": False}
    await remote.command("db", {"insert": "c", "documents": [{"_id": 1, "k": 1}], "startTransaction": True, **base})
    prepared = await remote.command("admin", {"prepareTransaction": 1, **base})
    await core.faults.step_down("shard00", catch_up=1)
    while core.replica_sets["shard00"].primary is None:
        await trio.sleep(0.01)
    await remote.command("admin", {"commitTransaction": 1, "commitTimestamp": prepared["prepareTimestamp"], **base})
    await trio.sleep(0.5)
    for m in core.replica_sets["shard00"].members:
        assert m.node.catalog.collection("db", "c").get(1) == {"_id": 1, "k": 1}, m.host


SCHEDULE = st.lists(st.tuples(st.sampled_from(["write", "write", "write", "stepdown", "kill", "restart"]),
                              st.integers(0, 1), st.integers(0, 199)), min_size=5, max_size=40)


@settings(max_examples=20)
@given(schedule=SCHEDULE)
def test_merged_stream_survives_failovers(schedule):
    """Every acknowledged write exactly once, in order, whatever steps down or dies."""

    async def run() -> None:
        async with open_cluster(shards=2, members=3, listen=False, epoch=EPOCH, instant_hwm=True,
                                noop_interval=1.0) as core:
            c = AsyncClient(core.router)
            await _shard(c)
            cs = c.watch("db", "c", max_await_time_ms=200)
            await cs.open()
            lsid = {"id": Binary(os.urandom(16), 4)}
            acked: list[int] = []
            n = 0
            for kind, shard, k in schedule:
                name = f"shard0{shard}"
                rs = core.replica_sets[name]
                if kind == "write":
                    n += 1
                    try:
                        await c.command("db", {"insert": "c", "documents": [{"_id": n, "k": k}], "lsid": lsid,
                                               "txnNumber": n})
                        acked.append(n)
                    except CommandError as err:
                        assert False, f"a retryable write failed: {err}"
                elif kind == "stepdown" and rs.primary is not None:
                    try:
                        # (a stepped-down member may not stand for stepDownSecs: 5 s, not the default 60,
                        # so that two step-downs and a kill leave an electable member within the 20 s
                        # the router waits for a primary, as they would on a real cluster)
                        await core.faults.step_down(name, 5, catch_up=2)
                    except Exception:
                        pass  # (no caught-up secondary: a member is down)
                elif kind == "kill" and rs.primary is not None and sum(m.alive for m in rs.members) == 3:
                    core.faults.kill(name)
                elif kind == "restart":
                    for m in rs.members:
                        if not m.alive:
                            core.faults.restart_member(name, m.id)
            got: list[int] = []
            t0 = trio.current_time()
            while len(got) < len(acked):
                ev = await cs.try_next()
                if ev is not None:
                    got.append(ev["documentKey"]["_id"])
                assert trio.current_time() - t0 < 300, f"stalled at {len(got)}/{len(acked)}"
            assert got == acked  # each write acknowledged before the next: the stream's order is theirs

    trio.run(run, clock=trio.testing.MockClock(autojump_threshold=0))
