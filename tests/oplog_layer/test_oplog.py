"""The oplog layer: logical clock, entry field order, the bounded oplog."""

from __future__ import annotations

import trio
import trio.testing
from bson import Int64, Timestamp
from hypothesis import given, settings
from hypothesis import strategies as st

from mongosim.oplog import entry as E
from mongosim.oplog.clock import LogicalClock, NodeClock, TimeSource, key_ts, ts_key
from mongosim.oplog.oplog import Oplog


async def test_clock_ticks_within_a_second_and_jumps_with_the_wall(autojump_clock):
    src = TimeSource(epoch=1_700_000_000)
    clock = LogicalClock(NodeClock(src))
    a = clock.reserve()
    b = clock.reserve(3)
    assert key_ts(a) == Timestamp(1_700_000_000, 1)
    assert key_ts(b) == Timestamp(1_700_000_000, 2) and clock.now() == Timestamp(1_700_000_000, 4)
    await trio.sleep(2.5)
    assert key_ts(clock.reserve()) == Timestamp(1_700_000_002, 1)


async def test_gossip_orders_causally_later_writes(autojump_clock):
    src = TimeSource(epoch=1_700_000_000)
    fast = LogicalClock(NodeClock(src, skew=30))
    slow = LogicalClock(NodeClock(src, skew=-30))
    w1 = fast.reserve()
    slow.advance(fast.key)  # $clusterTime gossip
    w2 = slow.reserve()
    assert w2 > w1
    slow.advance(0)
    assert slow.key == w2  # never moves back


def test_entry_field_order_is_the_servers():
    op = E.insert_op("db.c", None, {"_id": 1}, {"_id": 1})
    e = E.finish(op, Timestamp(5, 1), None, lsid={"id": 1}, txn_number=3, stmt_id=0,
                 prev_op_time=E.NULL_OP_TIME)
    assert list(e) == ["lsid", "txnNumber", "op", "ns", "o", "o2", "stmtId", "ts", "t", "v", "wall", "prevOpTime"]
    assert e["t"] == Int64(1) and e["v"] == Int64(2) and isinstance(e["txnNumber"], Int64)
    e2 = E.finish(E.delete_op("db.c", "U", {"_id": 1}), Timestamp(5, 2), None, from_migrate=True)
    assert list(e2) == ["op", "ns", "ui", "o", "fromMigrate", "ts", "t", "v", "wall"]


def _entry(i: int, size: int = 10) -> dict:
    return E.finish(E.noop_op("x" * size), Timestamp(1000, i), None)


async def test_bounded_oplog_drops_the_oldest_chunk_and_keeps_positions():
    log = Oplog(max_bytes=2000)
    for i in range(1, 101):
        log.append(_entry(i))
    assert log.size_bytes <= 2000
    assert log.end == 100 and log.start > 0
    first = log.entry_at(log.start)
    assert first["ts"] == Timestamp(1000, log.start + 1)
    assert log.find_by_key(ts_key(Timestamp(1000, 1))) is None
    assert log.position_at_or_after(ts_key(Timestamp(1000, 100))) == 99


@given(n=st.integers(1, 60), cap=st.integers(300, 3000), probe=st.integers(1, 80))
@settings(max_examples=60, deadline=None)
def test_positions_and_bisection_agree(n, cap, probe):
    log = Oplog(max_bytes=cap)
    for i in range(1, n + 1):
        log.append(_entry(i))
    key = ts_key(Timestamp(1000, probe))
    pos = log.position_at_or_after(key)
    kept = [i for i in range(1, n + 1) if i - 1 >= log.start]
    expected = next((i - 1 for i in kept if i >= probe), log.end)
    assert pos == max(expected, log.start) if probe > kept[0] else pos == log.start


async def test_waiters_wake_on_append():
    log = Oplog()
    log.append(_entry(1))
    woke = []

    async def waiter():
        await log.wait_for_entries_after(1)
        woke.append(log.end)

    async with trio.open_nursery() as n:
        n.start_soon(waiter)
        await trio.testing.wait_all_tasks_blocked()
        assert not woke
        log.append(_entry(2))
    assert woke == [2]
