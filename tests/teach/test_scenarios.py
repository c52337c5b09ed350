"""Each demo scenario runs, is deterministic, and its lesson is true of the run."""

from __future__ import annotations

import functools

import pytest

from mongosim import demo
from mongosim import trace as T
from mongosim.demo.fmt import key_info
from mongosim.demo.terminal import render_text


@functools.lru_cache(maxsize=None)
def run(name: str) -> demo.DemoResult:
    return demo.run(name)


def ran(name: str) -> demo.DemoResult:
    return run(name)


def received_keys(r: demo.DemoResult) -> list[str]:
    return [e["_id"]["_data"] for _t, e in r.received]


def released(r: demo.DemoResult) -> list[T.Released]:
    return r.trace.of("released")


@pytest.mark.parametrize("name", list(demo.SCENARIOS))
def test_scenario_runs_and_keeps_the_merge_invariants(name):
    r = ran(name)
    assert r.story.steps, "a story to tell"
    assert T.promise_violations(r.trace) == []
    # per stream, the client gets events in resume-token order, each once
    by_stream: dict = {}
    for rep in r.trace.of("reply"):
        by_stream.setdefault(rep.stream, []).extend(rep.events)
    for keys in by_stream.values():
        assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert not r.trace.of("?")


def test_every_scenario_has_a_one_line_lesson_and_modules():
    for sc in demo.SCENARIOS.values():
        assert sc.lesson and "\n" not in sc.lesson
        for m in sc.modules:
            assert (__import__("pathlib").Path(__file__).parents[2] / m).exists(), m


@pytest.mark.parametrize("name", ["cold-shard", "failover"])  # failover: replica sets, elections, rollback
def test_runs_are_deterministic(name):
    a = demo.run(name)
    b = demo.run(name)
    assert render_text(a) == render_text(b) and a.facts == b.facts
    assert [(r.t, r.step, r.where) for r in a.trace.records] == [(r.t, r.step, r.where) for r in b.trace.records]


def test_cold_shard_waits_for_the_noop():
    r = ran("cold-shard")
    (rel,) = [x for x in released(r) if x.shard == "shard00"]
    insert_t = r.trace.of("transformed", where="shard00")[0].t
    assert insert_t == 1.0
    noop = r.trace.of("noop", where="shard01")[0]
    assert rel.t > noop.t >= 10.0, "released only after the cold shard's noop"
    gates = [g for g in r.trace.of("gate") if g.key == rel.key]
    assert "shard01" in {w.shard for w in gates[0].waiting_on}
    # what lifted the gate: shard01 promising its noop's timestamp
    lifting = [b for b in r.trace.of("batch", shard="shard01") if b.t <= rel.t and b.pbrt >= rel.key]
    assert lifting and key_info(lifting[0].pbrt).ts == noop.ts and key_info(lifting[0].pbrt).hwm
    # afterwards, with nothing happening, the client's resume token still moves: a high-water mark
    later = [rep for rep in r.trace.of("reply") if rep.t > rel.t and not rep.events]
    hwms = [rep.pbrt for rep in later if key_info(rep.pbrt).hwm and rep.pbrt > rel.key]
    assert len(set(hwms)) >= 2, "the HWM moved (twice) while nothing happened"
    (w,) = r.story.waits
    assert w.blockers == ["shard01", "config"] and w.waited == pytest.approx(20.0)


def test_cold_shard_account_says_why_it_waited_and_what_released_it():
    text = render_text(ran("cold-shard"), width=400)
    for phrase in ("gate closed", "shard01 (promised 0s#", "periodic noop", "releases insert _id:1",
                   "waited 20.0 s", "its latest oplog entry: the periodic noop", "resume token moves to 30s#1"):
        assert phrase in text, phrase


def test_instant_hwm_releases_at_once():
    r = ran("instant-hwm")
    (rel,) = released(r)
    assert rel.t == 1.0
    assert r.received[0][0] == 1.0
    assert not r.story.waits
    assert any(p.why == "instant" for p in r.trace.of("promise"))
    assert not r.trace.of("noop"), "no noop was needed"


def test_interleaved_merges_by_cluster_time_across_shards():
    r = ran("interleaved")
    shards = [rel.shard for rel in released(r)]
    assert shards == ["shard00", "shard01", "shard02", "shard00", "shard01"]
    assert [e["documentKey"]["_id"] for _t, e in r.received] == [1, 2, 3, 4, 5]
    assert {t for t, _e in r.received} == {6.0}, "nothing before the client reads; everything in one batch"
    batches = {b.shard: b.events for b in r.trace.of("batch") if b.events}
    assert [len(batches[s]) for s in ("shard00", "shard01", "shard02")] == [2, 2, 1]


def test_slow_shard_gates_the_stream():
    r = ran("slow-shard")
    rels = released(r)
    assert [x.t for x in rels] == [2.5, 5.0]
    for rel in rels:
        gates = [g for g in r.trace.of("gate") if g.key == rel.key]
        assert [w.shard for w in gates[-1].waiting_on] == ["shard01"]
        lifting = [b for b in r.trace.of("batch", shard="shard01") if b.t == rel.t]
        assert lifting and not lifting[0].events and lifting[0].pbrt > rel.key, "shard01's empty reply released it"
        assert rel.t - gates[0].t >= 1.0


def test_new_shard_joins_the_merge_from_where_it_was_added():
    r = ran("new-shard")
    (ns,) = r.trace.of("new_shard")
    config_event = [b for b in r.trace.of("batch", shard="config") if b.events][0]
    assert ns.shard == "shard02" and ns.start == key_info(config_event.events[0]).ts + 1
    assert [x.shard for x in r.trace.of("remote_added")][-1] == "shard02"
    swallowed = {(s.shard, s.op) for s in r.trace.of("swallowed", where="router")}
    assert {("config", "insert"), ("shard01", "migrateChunkToNewShard")} <= swallowed
    assert [e["documentKey"]["_id"] for _t, e in r.received] == [1, 2, 3]
    assert [rel.shard for rel in released(r) if rel.op == "insert" and rel.shard != "config"] == \
        ["shard00", "shard02", "shard01"]
    assert "shard02" in r.story.lanes


def test_transaction_comes_out_whole():
    r = ran("transaction")
    txn = [e for _t, e in r.received if "txnNumber" in e]
    assert len(txn) == 4 and len({e["clusterTime"] for e in txn}) == 1
    ids = [e["_id"]["_data"] for _t, e in r.received]
    first = ids.index(txn[0]["_id"]["_data"])
    assert ids[first:first + 4] == [e["_id"]["_data"] for e in txn], "no other event in between"
    assert r.trace.of("unwound")


def test_invalidate_closes_the_stream_and_start_after_reopens():
    r = ran("invalidate")
    ops = [e["operationType"] for _t, e in r.received]
    assert ops == ["insert", "insert", "drop", "invalidate", "insert"]
    assert r.facts["resume_after_error"] == "InvalidResumeToken"
    assert r.facts["stream_closed"]
    assert r.trace.of("invalidate")
    assert any(rep.closed for rep in r.trace.of("reply"))
    inv = r.facts["invalidate_token"]["_data"]
    assert key_info(inv).from_invalidate
    # the new stream (startAfter) swallows the invalidate itself and delivers only the new insert
    assert any(s.key == inv for s in r.trace.of("swallowed", where="router"))


def test_resume_from_event_token_and_from_pbrt():
    r = ran("resume")
    keys = received_keys(r)
    first = keys[:3]
    event_token = r.facts["event_token"]["_data"]
    pbrt = r.facts["pbrt_token"]["_data"]
    assert event_token == first[1]
    assert key_info(pbrt).hwm and pbrt > first[2]
    after_event = r.facts["after_event_token"]
    assert after_event[0] == first[2] and len(after_event) == 2, "exactly the events after the token"
    assert r.facts["after_pbrt"] == after_event[1:], "from the PBRT: only what came after it"
    (sw,) = [s for s in r.trace.of("swallowed", where="router") if s.key == event_token]
    assert sw.reason == "the resume token itself"
    assert len(r.story.streams) == 3


def test_removed_shard_leaves_without_taking_an_event():
    r = ran("removed-shard")
    assert (r.facts["started"], r.facts["completed"]) == ("started", "completed")
    assert r.facts["shards"] == ["shard00", "shard01"]
    assert [e["documentKey"]["_id"] for _t, e in r.received] == [1, 2, 3, 4]
    swallowed = {(s.shard, s.op) for s in r.trace.of("swallowed", where="router")}
    assert {("config", "update"), ("config", "delete")} <= swallowed  # draining, then the removal
    # the migration off shard02 never reached the client: only fromMigrate entries, filtered on the shards
    assert all(e["operationType"] == "insert" for _t, e in r.received)
    assert "shard02" in r.story.lanes


def test_runs_are_deterministic_beside_another_trio_loop():
    """A cluster running in a background thread (as a session-scoped test fixture does) shares
    trio's scheduler random source: the scenario's story must not depend on it."""
    import threading

    import pymongo

    import mongosim

    with mongosim.Cluster(shards=2, port=0, instant_hwm=True) as cluster:
        client = pymongo.MongoClient(cluster.uri)
        stop = threading.Event()

        def busy():  # a change stream over two shards: the router's loop runs several tasks at once
            coll = client.busy.c
            with coll.watch(max_await_time_ms=1) as stream:
                i = 0
                while not stop.is_set():
                    coll.insert_many([{"_id": i}, {"_id": i + 1}])
                    i += 2
                    stream.try_next()

        worker = threading.Thread(target=busy)
        worker.start()
        try:
            runs = [render_text(demo.run("cold-shard")) for _ in range(3)]
        finally:
            stop.set()
            worker.join()
            client.close()
    assert runs[0] == runs[1] == runs[2]


def test_failover_never_shows_the_rolled_back_write():
    r = ran("failover")
    f = r.facts
    assert f["w1_acknowledged"], "the cut-off primary acknowledged the w: 1 insert"
    assert f["seen_before_election"] == [1, 2], "nothing past the commit point while it was cut off"
    assert f["new_primary"] != f["old_primary"]
    assert f["elected_at"] >= 3.0 + 10.0, "elected after the election timeout (virtual time)"
    assert f["rolled_back"] == [3]
    # every majority-acknowledged write exactly once, in order; the rolled-back one never
    assert f["received"] == [1, 2, 4, 5]
    assert [e["documentKey"]["_id"] for _t, e in r.received] == [1, 2, 4, 5]
    assert 3 not in {e["documentKey"]["_id"] for _t, e in r.received}
    assert f["documents"] == [1, 2, 4, 5]
    assert f["resumes"] >= 1, "the client resumed when the old primary's connections closed"
    keys = received_keys(r)
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    # no shard ever turned the rolled-back insert into a change event
    assert f["w1_ts"] >> 32 == int(r.trace.cluster_zero) + 4
    on_shard00 = r.trace.of("transformed", where="shard00")
    assert len(on_shard00) == 2 and f["w1_ts"] not in {x.ts for x in on_shard00}  # _id 1 and 4 only

    # while its cursor sat on the cut-off member, shard00's promise held shard01's insert at the gate
    held = [g for g in r.trace.of("gate") if f["elected_at"] <= g.t < 18.0]
    assert held and all([w.shard for w in g.waiting_on] == ["shard00"] for g in held)
