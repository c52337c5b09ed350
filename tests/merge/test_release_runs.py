"""Releasing runs (AsyncResultsMerger.next_run) gives the same events, in the same order, as releasing
them one at a time (next_ready), with the same batch limits — whatever the buffers, promises, ties
between remotes and special events."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mongosim.router.merge.async_results_merger import AsyncResultsMerger, RemoteCursor
from mongosim.shardsim.changestream.event_batch import OP_TYPES_FIELD, OVERHEAD, SORT_KEYS_FIELD, TYPE_BITS_FIELD

remote = st.tuples(
    st.lists(st.tuples(st.integers(0, 60), st.integers(1, 40), st.sampled_from(["insert"] * 6 + ["invalidate",
             "migrateChunkToNewShard"]), st.booleans()), max_size=30, unique_by=lambda e: e[0]),
    st.integers(0, 70),  # the promise: at least the last key
    st.booleans(),  # the config server's stream
)


def _merger(remotes, batches: int) -> AsyncResultsMerger:
    arm = AsyncResultsMerger()
    for r, (events, promise, is_config) in enumerate(remotes):
        events = sorted(events)
        rc = RemoteCursor(f"s{r}", None, r + 1, "db.c", is_config=is_config and r == 0)
        chunks = [events[len(events) * i // batches: len(events) * (i + 1) // batches] for i in range(batches)]  # sorted, in batches
        top = max([promise, *(e[0] for e in events)])
        for i, chunk in enumerate(chunks):
            fields = {SORT_KEYS_FIELD: [f"{k:04X}" for k, *_ in chunk], OP_TYPES_FIELD: [op for *_, op, _b in chunk],
                      TYPE_BITS_FIELD: {j: b"\x01" for j, e in enumerate(chunk) if e[3]}}
            raws = [bytes([k % 256]) * size for k, size, _op, _b in chunk]
            pbrt = {"_data": f"{top:04X}"} if i == batches - 1 else None
            if i == 0:
                arm.add_remote(rc, raws, fields, pbrt, False)
            else:
                arm.add_batch(r, raws, fields, pbrt, False)
    return arm


def _one_by_one(arm: AsyncResultsMerger, limit: int, budget: int) -> tuple[list, dict | None]:
    out, size, last = [], 0, None
    while len(out) < limit and arm.ready():
        key, raw = arm.front_event()
        if out and size + len(raw) + OVERHEAD > budget:
            break
        _k, tok, raw, _ok, _op, _rc = arm.next_ready()
        out.append(raw)
        size += len(raw) + OVERHEAD
        last = tok
    return out, last


def _by_runs(arm: AsyncResultsMerger, limit: int, budget: int) -> tuple[list, dict | None]:
    out, size, last = [], 0, None
    while len(out) < limit:
        run = arm.next_run(limit - len(out), budget - size, not out)
        if run is not None:
            raws, last = run
            out += raws
            size += sum(map(len, raws)) + OVERHEAD * len(raws)
            continue
        if not arm.ready():
            break
        key, raw = arm.front_event()
        if out and size + len(raw) + OVERHEAD > budget:
            break
        _k, last, raw, _ok, _op, _rc = arm.next_ready()  # (a special event: one by one)
        out.append(raw)
        size += len(raw) + OVERHEAD
    return out, last


@given(remotes=st.lists(remote, min_size=1, max_size=5), batches=st.integers(1, 3),
       limits=st.lists(st.tuples(st.integers(1, 40), st.integers(1, 600)), min_size=1, max_size=6))
@settings(max_examples=400)
def test_runs_release_what_single_events_release(remotes, batches, limits):
    a, b = _merger(remotes, batches), _merger(remotes, batches)
    for limit, budget in limits:
        assert _by_runs(a, limit, budget) == _one_by_one(b, limit, budget)
    assert [list(rc.buffer) for rc in a.remotes] == [list(rc.buffer) for rc in b.remotes]


@given(spans=st.lists(st.lists(st.integers(0, 300), max_size=60).map(sorted), min_size=2, max_size=70),
       limit=st.integers(1, 200))
@settings(max_examples=400)
def test_the_candidates_hold_the_first_limit_events_of_the_merge(spans, limit):
    """`_candidates` cuts each remote's span to what can be among the first `limit` events of the merge
    (ties included): the merge of the cut spans begins as the merge of the whole ones."""
    from mongosim.router.merge.async_results_merger import RemoteBuffer, _candidates

    whole = []
    for idx, keys in enumerate(spans):
        buf = RemoteBuffer()
        buf.append([f"{k:04X}" for k in keys], [b""] * len(keys), ["insert"] * len(keys), {}, [], False)
        whole.append((buf, idx, 0, len(keys)))

    def first(sp):  # the stable merge (ties: the lower remote index), as peek_run sorts
        return sorted(((buf.keys[j], idx) for buf, idx, h, end in sp for j in range(h, end)))[:limit]

    cut = _candidates([s for s in whole if s[3] > s[2]], limit)
    assert first(cut) == first(whole)
    assert all(h < end for _b, _i, h, end in cut)
