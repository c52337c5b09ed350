"""Bounded history: each oplog is capped (`--oplog-size-mb`, like mongod's `--oplogSize`).

What a client sees when history it needs is gone -- never a silent gap:

- a *tailing* cursor whose position in the oplog was truncated away fails
  with CappedPositionLost (136), as a real server's tailable oplog scan does;
  the error is not resumable (no ResumableChangeStreamError label), so a driver
  surfaces it;
- resuming (resumeAfter / startAfter / startAtOperationTime) from a point
  older than the oldest oplog entry fails with ChangeStreamHistoryLost (286),
  labelled NonResumableChangeStreamError.
"""

from __future__ import annotations

import pymongo
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from mongosim.core import open_cluster
from mongosim.testing import AsyncClient
from mongosim.testing.client import CommandError
from tests.changestream.conftest import drain
from tests.reliability.proc import ServerProcess

EPOCH = 1_700_000_000
PAD = "p" * 150  # each insert's oplog entry is ~250 bytes


async def _open_and_pull(cs) -> None:
    """Open a stream and ask for a batch.  (Through a router the shards are asked for their
    first events on the first getMore, as mongos establishes shard cursors with batchSize 0,
    so a lost start point shows there; on a replica set it shows in the aggregate.)"""
    await cs.open()
    for _ in range(3):
        await cs.try_next()


@pytest.fixture
async def capped(autojump_clock):
    async with open_cluster(shards=2, listen=False, epoch=EPOCH, instant_hwm=True, oplog_size_mb=0.02) as core:
        yield core, AsyncClient(core.router)


async def _shard_the_collection(client: AsyncClient) -> None:
    await client.admin({"enableSharding": "h", "primaryShard": "shard00"})
    await client.admin({"shardCollection": "h.c", "key": {"_id": 1}})
    await client.admin({"split": "h.c", "middle": {"_id": 1000}})
    await client.admin({"moveChunk": "h.c", "find": {"_id": 1000}, "to": "shard01"})


async def test_tailing_past_the_cap_is_capped_position_lost_then_resume_is_history_lost(capped):
    core, client = capped
    await _shard_the_collection(client)
    cs = client.watch("h", "c", batch_size=5)
    await cs.open()
    await client.insert("h", "c", [{"_id": i, "pad": PAD} for i in range(3)])
    seen = await drain(cs, 3)
    token = seen[-1]["_id"]
    first_op_time = seen[0]["clusterTime"]
    # a slow consumer: 400 inserts (~100 KB) go by on both shards, far past the 20 KB caps
    for i in range(400):
        await client.insert("h", "c", [{"_id": 3 + i if i % 2 else 1000 + i, "pad": PAD}])
    for node in core.shards.values():
        assert node.oplog.size_bytes <= 0.02 * 1024 * 1024
    with pytest.raises(CommandError) as info:
        await drain(cs, 1)
    assert info.value.code == 136, info.value  # CappedPositionLost, as a real tailing cursor
    assert not info.value.has_label("ResumableChangeStreamError")
    assert cs.closed

    for opts in ({"resumeAfter": token}, {"startAfter": token}, {"startAtOperationTime": first_op_time}):
        with pytest.raises(CommandError) as info:
            await _open_and_pull(client.watch("h", "c", **opts))
        assert info.value.code == 286, (opts, info.value)  # ChangeStreamHistoryLost
        assert info.value.has_label("NonResumableChangeStreamError")
    # database and cluster streams too
    with pytest.raises(CommandError) as info:
        await _open_and_pull(client.watch("h", 1, resumeAfter=token))
    assert info.value.code == 286
    with pytest.raises(CommandError) as info:
        await _open_and_pull(client.watch("admin", resumeAfter=token))
    assert info.value.code == 286

    # a new stream works, and a resume within the retained history loses nothing
    cs2 = client.watch("h", "c")
    await cs2.open()
    await client.insert("h", "c", [{"_id": 5000 + i, "pad": PAD} for i in range(4)])
    got = await drain(cs2, 2)
    resumed = client.watch("h", "c", resumeAfter=got[1]["_id"])
    await resumed.open()
    rest = await drain(resumed, 2)
    assert [e["documentKey"]["_id"] for e in got + rest] == [5000, 5001, 5002, 5003]


async def test_resume_from_a_high_water_mark_token_past_the_cap(capped):
    core, client = capped
    cs = client.watch("h", "c")
    await cs.open()
    assert await cs.try_next() is None
    hwm = cs.resume_token  # a postBatchResumeToken, not an event's
    assert hwm is not None
    await client.insert("h", "c", [{"_id": i, "pad": PAD} for i in range(200)])
    with pytest.raises(CommandError) as info:
        await _open_and_pull(client.watch("h", "c", resumeAfter=hwm))
    assert info.value.code == 286


async def test_replica_set_topology_has_the_same_fidelity(autojump_clock):
    async with open_cluster(topology="replset", listen=False, epoch=EPOCH, oplog_size_mb=0.02) as core:
        client = AsyncClient(core.frontend)
        cs = client.watch("r", "c", batch_size=2)
        await cs.open()
        await client.insert("r", "c", [{"_id": -1}])
        token = (await drain(cs, 1))[0]["_id"]
        for i in range(200):
            await client.insert("r", "c", [{"_id": i, "pad": PAD}])
        with pytest.raises(CommandError) as info:
            await drain(cs, 1)
        assert info.value.code == 136
        with pytest.raises(CommandError) as info:
            await _open_and_pull(client.watch("r", "c", resumeAfter=token))
        assert info.value.code == 286


@settings(max_examples=15, deadline=None)
@given(writes=st.lists(st.integers(1, 40), min_size=1, max_size=8), cap_kb=st.sampled_from([8, 16, 40]),
       reads=st.lists(st.integers(0, 30), min_size=1, max_size=8))
def test_a_slow_reader_gets_every_event_or_an_error_never_a_gap(writes, cap_kb, reads):
    """Interleave bursts of writes with bursts of reading: what the reader got is always
    exactly the writes so far, in order, up to the point where it got 136/286."""

    async def main() -> None:
        async with open_cluster(shards=2, listen=False, epoch=EPOCH, instant_hwm=True,
                                oplog_size_mb=cap_kb / 1024) as core:
            client = AsyncClient(core.router)
            await _shard_the_collection(client)
            cs = client.watch("h", "c", batch_size=7)
            await cs.open()
            written: list[int] = []
            got: list[int] = []
            n = 0
            error = None
            for burst, pace in zip(writes, reads + [100] * len(writes)):
                for _ in range(burst):
                    key = n if n % 3 else 1000 + n
                    await client.insert("h", "c", [{"_id": key, "pad": PAD}])
                    written.append(key)
                    n += 1
                try:
                    for _ in range(pace):
                        ev = await cs.try_next()
                        if ev is not None:
                            got.append(ev["documentKey"]["_id"])
                except CommandError as err:
                    error = err
                    break
            if error is None:
                try:
                    while len(got) < len(written):
                        ev = await cs.try_next()
                        if ev is not None:
                            got.append(ev["documentKey"]["_id"])
                except CommandError as err:
                    error = err
            assert got == written[: len(got)], "a gap or a reordering"
            if error is None:
                assert got == written
            else:
                assert error.code in (136, 286), error

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_regression_instant_hwm_promise_after_a_timed_out_wait():
    """Found by the test above: with --instant-hwm a shard cursor whose awaitData wait timed out
    promised its clock without scanning the oplog again, so an entry appended at that moment was
    promised away and the router released another shard's later events before it.  Trio
    randomizes scheduling, so run the shrunk example many times."""
    inner = test_a_slow_reader_gets_every_event_or_an_error_never_a_gap.hypothesis.inner_test
    for _ in range(20):
        inner(writes=[20, 13, 30, 1], cap_kb=8, reads=[1])


def test_cli_oplog_size_mb_with_pymongo():
    with ServerProcess("--shards", "2", "--instant-hwm", "--oplog-size-mb", "0.05") as srv:
        client = pymongo.MongoClient(srv.uri, serverSelectionTimeoutMS=10000)
        coll = client.cli.c
        coll.insert_one({"_id": "first"})
        with coll.watch(batch_size=10) as stream:
            coll.insert_one({"_id": "a"})
            token = stream.next()["_id"]
            coll.insert_many([{"_id": i, "pad": "x" * 400} for i in range(400)])  # ~200 KB
            with pytest.raises(pymongo.errors.OperationFailure) as info:
                while True:
                    stream.next()
            assert info.value.code == 136
        with pytest.raises(pymongo.errors.OperationFailure) as info:
            with coll.watch(resume_after=token) as s2:
                s2.try_next()
        assert info.value.code == 286
        client.close()
