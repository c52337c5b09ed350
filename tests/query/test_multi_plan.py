"""The multi-planner's shortcut equals the server's round-robin (shardsim/multi_plan.py).

`multi_plan.ranked` runs the candidates one after another, each with the
smallest stopping point so far as its budget.  The reference here is the
round-robin itself: every candidate run to its end without a budget, the work
count at each document and at its EOF recorded, and the rounds replayed from
those traces — the trial ends in the first round in which a candidate has
returned `numResults` documents or reached EOF, or after `maxWorks` rounds;
each candidate is scored on what it did up to then.  The two must rank the
candidates alike, over random documents, indexes, queries, limits and work
limits (small ones, so that the `maxWorks` cut is reached too).
"""

from __future__ import annotations

from bisect import bisect_right

from hypothesis import assume, given
from hypothesis import strategies as st

from mongosim.oplog.errors import MongoError
from mongosim.shardsim import multi_plan, plan_ranker
from mongosim.shardsim import query_planner as QP
from mongosim.shardsim.canonical_query import CanonicalQuery
from mongosim.shardsim.plan_executor import ExecContext, Trial
from tests.query._settings import QUERY_SETTINGS
from tests.query.strategies import leaf_conditions
from tests.query.test_index_plans import _collection, _valid, docs_, index_specs, queries


def _trace(root, coll, limit) -> tuple[list[int], int]:
    """The work count at each document `root` returns, and at its EOF, run to its end (a plan that has
    returned the limit is at EOF with it)."""
    trial = Trial(budget=10**9)
    at = []
    for _ in root.run(ExecContext(coll, trial=trial)):
        at.append(trial.spent)
    return at, at[-1] if limit and len(at) == limit else trial.spent + 1


def _round_robin(traces, want: int, max_works: int) -> list[tuple[int, int, bool] | None]:
    """(advanced, works, EOF) of each candidate when the rounds end; None for a failed one."""
    stops = [at[want - 1] if len(at) >= want else eof for at, eof in filter(None, traces)]
    rounds = min(min(stops), max_works)
    return [None if t is None else (bisect_right(t[0], rounds), rounds, t[1] <= rounds) for t in traces]


def _trace_or_none(root, coll, limit):
    try:
        return _trace(root, coll, limit)
    except MongoError:
        return None


PLAIN = [{"v": 2, "key": {"a": 1}, "name": "a_plain"}, {"v": 2, "key": {"b": -1}, "name": "b_plain"}]


@QUERY_SETTINGS
@given(docs=docs_(), specs=index_specs(), q=queries(), a=leaf_conditions(), b=leaf_conditions(),
       works=st.integers(1, 12), extra=st.integers(0, 30))
def test_ranked_equals_the_round_robin(docs, specs, q, a, b, works, extra):
    flt, sort, skip, limit = q
    flt = {"a": a, "b": b, **flt}  # (two plain indexes and predicates on both: several candidates)
    specs = [*PLAIN, *specs]
    m = _valid(flt, sort)
    assume(m is not None)
    coll = _collection([*docs, *({"_id": 100 + i, "a": i % 3, "b": i % 4} for i in range(extra))], specs)
    assume(coll is not None)
    cq = CanonicalQuery("db.c", flt, m, sort=sort, skip=skip, limit=limit)
    try:
        candidates = QP._index_candidates(coll, cq, QP._sort_fields(cq), False)
    except MongoError:  # (a query the planner refuses: nothing to rank)
        assume(False)
    assume(len(candidates) > 1)
    ranked = QP._ranked(candidates, cq, QP._sort_fields(cq))
    build = lambda: [QP._build(p, cq, False) for p in ranked]  # noqa: E731
    if not any(_trace_or_none(r, coll, limit) for r in build()):
        assume(False)  # (every candidate fails: the query's error, nothing ranked)
    saved, multi_plan.EVALUATION_WORKS = multi_plan.EVALUATION_WORKS, works  # (a cut the small collections reach)
    try:
        got = multi_plan.ranked(build(), coll, limit)
        max_works = multi_plan.max_works(coll)
    finally:
        multi_plan.EVALUATION_WORKS = saved
    roots = build()
    traces = [_trace_or_none(r, coll, limit) for r in roots]
    stats = _round_robin(traces, multi_plan.num_to_return(limit), max_works)
    scores = [(i, 0.0 if st_ is None else plan_ranker.score(st_[0], st_[1], st_[2], {s.stage for s in roots[i].walk()}))
              for i, st_ in enumerate(stats)]
    assert got == sorted(scores, key=lambda s: -s[1])


def test_the_trial_budget_stops_a_plan():
    """A plan that has used its budget stops with TrialOver: its documents so far, no EOF."""
    from mongosim.shardsim.catalog import Collection

    coll = Collection("db", "c")
    coll.add_index({"v": 2, "key": {"a": 1}, "name": "a_1"})
    for i in range(50):
        coll.insert({"_id": i, "a": i % 5})
    cq = CanonicalQuery("db.c", {"a": {"$gte": 0}}, _valid({"a": {"$gte": 0}}, None))
    plan = QP._ranked(QP._index_candidates(coll, cq, [], False), cq, [])[0]
    at, eof, stop, ran_out = multi_plan._trial(QP._build(plan, cq, False), coll, budget=7, want=101)
    assert (at, eof, stop, ran_out) == ([1, 2, 3, 4, 5, 6, 7], None, 7, False)
    at, eof, stop, ran_out = multi_plan._trial(QP._build(plan, cq, False), coll, budget=100, want=101)
    assert (len(at), eof, stop, ran_out) == (50, 51, 51, True)  # (a work answered IS_EOF)
    at, eof, stop, ran_out = multi_plan._trial(QP._build(plan, cq, False), coll, budget=100, want=3)
    assert (at, eof, stop, ran_out) == ([1, 2, 3], None, 3, False)


def test_a_candidate_that_fails_in_its_trial_loses():
    """A candidate whose trial raises (here `$divide` by zero on the first document of the `a` index) is
    dropped, as the server drops a failed plan; the other wins and, with a limit, never reads that
    document.  Without a limit every plan reads it: the query fails with the error."""
    from mongosim.oplog.errors import MongoError
    from mongosim.shardsim.catalog import Collection
    from mongosim.shardsim.get_executor import execute
    from mongosim.shardsim.query.matcher import Matcher

    coll = Collection("db", "c")
    coll.add_index({"v": 2, "key": {"a": 1}, "name": "a_1"})
    coll.add_index({"v": 2, "key": {"b": 1}, "name": "b_1"})
    coll.insert({"_id": "bad", "a": -1, "b": 99, "z": 0})
    for i in range(30):
        coll.insert({"_id": i, "a": i % 3, "b": i % 5, "z": 1})
    flt = {"a": {"$gte": -1}, "b": {"$gte": 0}, "$expr": {"$gt": [{"$divide": [1, "$z"]}, 0]}}
    got, sol, _ctx = execute(coll, CanonicalQuery("db.c", flt, Matcher(flt), limit=2))
    assert len(got) == 2 and sol.index_plan.ix.name == "b_1"
    try:
        execute(coll, CanonicalQuery("db.c", flt, Matcher(flt)))
    except MongoError as e:
        assert e.code == 16608
    else:
        raise AssertionError("the query should fail: every plan reads the document")
