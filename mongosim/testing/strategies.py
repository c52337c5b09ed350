"""Hypothesis strategies for workloads and fault schedules (for testing *your* change-stream consumer).

    from hypothesis import given
    from mongosim.testing.strategies import workloads, fault_schedules

    @given(workload=workloads(), faults=fault_schedules(["shard00", "shard01"]))
    def test_my_sink(workload, faults): ...

A workload is a list of `WriteOp`s on one collection (inserts, updates,
replacements, deletes of a bounded set of `_id`s, sometimes in a
transaction); a fault schedule a list of `Fault`s, each applied just before
the write with the same index.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

try:
    from hypothesis import strategies as st
except ImportError as err:  # a core install: hypothesis comes with the `testing` extra
    raise ImportError(
        "mongosim.testing.strategies and mongosim.testing.harness need hypothesis, which the 'testing' extra "
        "installs: pip install 'mongosim[testing]'", name=err.name) from err

RESUMABLE_CODES = (6, 7, 89, 91, 189, 234, 10107, 11600, 11602, 13435, 13436)


@dataclass(frozen=True)
class WriteOp:
    kind: str  # insert | update | replace | delete | transaction
    id: int
    value: int = 0
    ops: tuple = ()  # for a transaction: the WriteOps inside it


@dataclass(frozen=True)
class Fault:
    at: int  # apply before the write with this index
    kind: str  # delay | fail_getmore | drop_connection | restart | pause_noop | skew | clear
    shard: str
    arg: Any = None


def _op(max_id: int) -> st.SearchStrategy[WriteOp]:
    ids = st.integers(0, max_id)
    vals = st.integers(-1000, 1000)
    return st.one_of(
        st.builds(WriteOp, st.just("insert"), ids, vals),
        st.builds(WriteOp, st.just("update"), ids, vals),
        st.builds(WriteOp, st.just("replace"), ids, vals),
        st.builds(WriteOp, st.just("delete"), ids),
    )


def workloads(max_ops: int = 40, max_id: int = 15, transactions: bool = True) -> st.SearchStrategy[list[WriteOp]]:
    single = _op(max_id)
    txn = st.lists(single, min_size=1, max_size=4).map(lambda ops: WriteOp("transaction", 0, ops=tuple(ops)))
    one = st.one_of(single, txn) if transactions else single
    return st.lists(one, min_size=1, max_size=max_ops)


def fault_schedules(shards: list[str], max_faults: int = 6, max_at: int = 40) -> st.SearchStrategy[list[Fault]]:
    shard = st.sampled_from(list(shards))
    at = st.integers(0, max_at)
    fault = st.one_of(
        st.builds(Fault, at, st.just("delay"), shard, st.sampled_from([0.0, 0.05, 0.3])),
        st.builds(Fault, at, st.just("fail_getmore"), shard, st.sampled_from(RESUMABLE_CODES)),
        st.builds(Fault, at, st.just("drop_connection"), shard),
        st.builds(Fault, at, st.just("restart"), shard),
        st.builds(Fault, at, st.just("skew"), shard, st.integers(-20, 20)),
        st.builds(Fault, at, st.just("clear"), shard),
    )
    return st.lists(fault, max_size=max_faults).map(lambda fs: sorted(fs, key=lambda f: f.at))
