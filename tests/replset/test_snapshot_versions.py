"""Snapshot history: a batch of inserts recorded and pruned in one step (`record_inserts`, the batch
case of `_prune`) keeps exactly what recording each insert alone (`record`) keeps.

Random workloads of single writes (inserts, updates, deletes: `record`), batches of new documents,
and snapshots opened and closed run on two `Snapshots` of one collection each: one records each batch
with `record_inserts`, the other each document of it with `record`.  After every step both hold the
same versions and every open snapshot reads the same documents.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mongosim.shardsim.snapshots import Snapshots, scan


class Coll:
    def __init__(self) -> None:
        self.docs: dict = {}
        self.versions: dict = {}


IDS = st.integers(0, 12)
STEPS = st.lists(st.one_of(
    st.tuples(st.just("write"), IDS),
    st.tuples(st.just("batch"), st.lists(IDS, min_size=0, max_size=6, unique=True)),
    st.tuples(st.just("open"), st.none()),
    st.tuples(st.just("close"), st.integers(0, 5)),
), max_size=40)


@settings(max_examples=300, deadline=None)
@given(STEPS)
def test_a_batch_keeps_the_history_its_inserts_one_by_one_keep(steps):
    pairs = [(Snapshots(), Coll()), (Snapshots(), Coll())]
    opened: list[int] = []
    value = 0
    for kind, arg in steps:
        value += 1
        for i, (snaps, coll) in enumerate(pairs):
            if kind == "write":  # insert, replace or delete the document
                before = coll.docs.get(arg)
                snaps.record(coll, arg, before)
                if before is None or value % 3:
                    coll.docs[arg] = {"_id": arg, "v": value}
                else:
                    del coll.docs[arg]
            elif kind == "batch":
                new = [k for k in arg if k not in coll.docs]
                if i == 0:
                    snaps.record_inserts(coll, new)
                else:
                    for k in new:
                        snaps.record(coll, k, None)
                coll.docs.update((k, {"_id": k, "v": value}) for k in new)
            elif kind == "open":
                seq = snaps.open()
                if i == 0:
                    opened.append(seq)
            elif opened:
                snaps.close(opened[arg % len(opened)])
        if kind == "close" and opened:
            opened.pop(arg % len(opened))
        (a, ca), (b, cb) = pairs
        assert a.seq == b.seq and a.readers == b.readers
        assert ca.versions == cb.versions
        for seq in opened:
            assert sorted(scan(ca, seq), key=repr) == sorted(scan(cb, seq), key=repr)
