"""The multi-planner's choice, through pymongo, both topologies: the cases of the server's
dbtests/plan_ranking.cpp that mongosim's plans can express, and the sort + limit cases where a
ranking by keys examined picks a different plan than the server's trial run.

Each test checks the winning plan's shape and that the answer is the one a collection scan gives.
"""

from __future__ import annotations

import pymongo
import pytest

from tests.crud.test_indexes import ixscan, plan_of, stages


def _planner(explain: dict) -> dict:
    """The queryPlanner section (of the first shard through mongos)."""
    qp = explain["queryPlanner"]
    return qp["winningPlan"]["shards"][0] if "shards" in qp["winningPlan"] else qp


def _all_plans(explain: dict) -> list[dict]:
    es = explain["executionStats"]
    shards = es["executionStages"].get("shards")
    return shards[0]["allPlansExecution"] if shards else es["allPlansExecution"]


def same_answer(coll, flt, sort=None, limit=0, projection=None):
    """The answer of the planned query, checked against a collection scan's (`$natural` hint); without a
    sort both are compared in one order."""
    got = list(coll.find(flt, projection, sort=sort, limit=limit))
    want = list(coll.find(flt, projection, sort=sort, limit=limit, hint=[("$natural", 1)]))
    if sort is None:
        got.sort(key=repr)
        want.sort(key=repr)
    assert got == want
    return got


@pytest.fixture
def db(client, request):
    db = client[f"mp_{request.node.name.split('[')[0][-24:]}"]
    client.drop_database(db.name)
    return db


def test_avoid_blocking_sort(db):
    """PlanRankingAvoidBlockingSort: {a: 1} matches every document; the {d, e} index gives the sort
    and returns documents at once, while the {a, b} plan returns none before its SORT has read all."""
    db.c.insert_many([{"a": 1, "d": i} for i in range(3000)])
    db.c.create_index([("a", 1), ("b", 1)])
    db.c.create_index([("d", 1), ("e", 1)])
    plan = plan_of(db.c.find({"a": 1}).sort("d", 1).explain())
    assert stages(plan) == ["FETCH", "IXSCAN"]
    assert ixscan(plan)["indexName"] == "d_1_e_1" and plan["filter"] == {"a": {"$eq": 1}}
    assert [d["d"] for d in db.c.find({"a": 1}).sort("d", 1).limit(5)] == [0, 1, 2, 3, 4]


def test_prefer_immediate_eof(db):
    """PlanRankingPreferImmediateEOF: {a: N + 1} finds nothing at once, {b: 1} would scan everything."""
    n = 3000
    db.c.insert_many([{"a": i, "b": 1} for i in range(n)])
    db.c.create_index("a")
    db.c.create_index("b")
    for flt in ({"a": n + 1, "b": 1}, {"a": {"$gte": n + 1}, "b": 1}):
        plan = plan_of(db.c.find(flt).explain())
        assert ixscan(plan)["indexName"] == "a_1", flt
        assert same_answer(db.c, flt) == []


def test_no_collscan_beside_an_index(db):
    """PlanRankingNoCollscan: the only index plan wins even though its SORT returns nothing in the trial."""
    db.c.insert_many([{"_id": i} for i in range(1000)])
    plan = plan_of(db.c.find({"_id": {"$gte": 20, "$lte": 200}}).sort("c", 1).explain())
    assert stages(plan) == ["SORT", "FETCH", "IXSCAN"] and ixscan(plan)["indexName"] == "_id_"


def test_sort_and_limit_use_the_index_in_the_sort_order(db):
    """`{tags: 3}` has a seventh of the keys of a whole `_id` scan, but with `.sort({_id: 1}).limit(3)` the
    `_id` plan has its three documents after a few keys (then EOF: LIMIT), while the `tags` plan must read
    all its keys into a SORT first; the server's trial picks the `_id` plan."""
    db.c.insert_many([{"_id": i, "tags": i % 7} for i in range(7000)])
    db.c.create_index("tags")
    cur = db.c.find({"tags": 3}).sort("_id", 1).limit(3)
    e = cur.explain()
    plan = plan_of(e)
    assert stages(plan) == ["LIMIT", "FETCH", "IXSCAN"] and ixscan(plan)["indexName"] == "_id_"
    rejected = _planner(e)["rejectedPlans"]
    assert [stages(r) for r in rejected] == [["SORT", "FETCH", "IXSCAN"]]
    assert ixscan(rejected[0])["indexName"] == "tags_1"
    assert e["executionStats"]["totalKeysExamined"] < 30
    assert [d["_id"] for d in same_answer(db.c, {"tags": 3}, [("_id", 1)], 3)] == [3, 10, 17]
    # the candidates' scores (allPlansExecution, explain's default verbosity): the winner's first
    scores = [p["score"] for p in _all_plans(e)]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[1]


def test_an_unselective_range_sorted_by_another_index(db):
    """`{a: {$lt: 50}}` sorted by `b`: the `a` plan examines half the keys, but returns nothing until its
    SORT is full; the `b` plan returns documents from its first keys and wins the trial."""
    db.c.insert_many([{"_id": i, "a": (i * 37) % 100, "b": (i * 11) % 1000} for i in range(4000)])
    db.c.create_index("a")
    db.c.create_index("b")
    flt = {"a": {"$lt": 50}}
    plan = plan_of(db.c.find(flt).sort("b", 1).explain())
    assert stages(plan) == ["FETCH", "IXSCAN"] and ixscan(plan)["indexName"] == "b_1"
    got = same_answer(db.c, flt, [("b", 1), ("_id", 1)])
    assert len(got) == 2000
    # selective enough to finish within the trial: the `a` plan reaches EOF first and wins
    flt = {"a": {"$lt": 2}}
    plan = plan_of(db.c.find(flt).sort("b", 1).explain())
    assert stages(plan) == ["SORT", "FETCH", "IXSCAN"] and ixscan(plan)["indexName"] == "a_1"
    assert len(same_answer(db.c, flt, [("b", 1), ("_id", 1)])) == 80


def test_a_limit_ends_the_trial_early(db):
    """The trial stops at the first `limit` documents a plan returns (numResults: 101, or the limit).
    The `b` plan examines fewer keys in all (1100 against 2100), but its first 1000 keys fail `a: 1`, while
    the `a` plan's first key matches: with a limit of 1 the `a` plan wins; without one the `b` plan reaches
    EOF first (the `a` plan returns its 100 documents, then reads 2000 more keys) and wins."""
    docs = ([{"_id": i, "a": 1, "b": 1000} for i in range(100)]
            + [{"_id": i, "a": 0, "b": i - 99} for i in range(100, 1100)]
            + [{"_id": i, "a": 1, "b": 0} for i in range(1100, 3100)])
    db.c.insert_many(docs)
    db.c.create_index("a")
    db.c.create_index("b")
    flt = {"a": 1, "b": {"$gte": 1}}
    assert ixscan(plan_of(db.c.find(flt).limit(1).explain()))["indexName"] == "a_1"
    assert ixscan(plan_of(db.c.find(flt).explain()))["indexName"] == "b_1"
    assert len(same_answer(db.c, flt)) == 100
    assert len(same_answer(db.c, flt, limit=1)) == 1


def test_rejected_plans_come_in_score_order(db):
    db.c.insert_many([{"_id": i, "x": i % 10, "y": i % 3, "z": i} for i in range(600)])
    for f in ("x", "y", "z"):
        db.c.create_index(f)
    e = db.c.find({"x": 4, "y": 1, "z": {"$gte": 0}}).sort("z", pymongo.DESCENDING).limit(2).explain()
    plans = _all_plans(e)
    assert len(plans) == 3
    assert ixscan(plan_of(e))["indexName"] == "z_1"
    scores = [p["score"] for p in plans]
    assert scores == sorted(scores, reverse=True)


def test_all_plans_execution_shows_the_trial(db):
    """allPlansExecution lists every candidate as the trial left it: the `_id` plan stopped at its third
    document (the limit), after as many works as the `tags` plan had by then (none of its documents yet),
    with their scores; executionStats is the winner run to its end."""
    db.c.insert_many([{"_id": i, "tags": i % 7} for i in range(700)])
    db.c.create_index("tags")
    e = db.c.find({"tags": 3}).sort("_id", 1).limit(3).explain()
    winner, loser = _all_plans(e)
    assert winner["nReturned"] == 3 and winner["totalKeysExamined"] == 18  # _ids 0..17: 3, 10, 17 match
    assert ixscan(winner["executionStages"])["indexName"] == "_id_"
    assert loser["nReturned"] == 0 and loser["totalKeysExamined"] == 18
    assert ixscan(loser["executionStages"])["indexName"] == "tags_1"
    # 1 + productivity 3/18 + EOF (the LIMIT ended it) + no SORT bonus; the loser: 1 + no FETCH-less bonus
    assert winner["score"] == round(1 + 3 / 18 + 1 + 2e-4, 4) and loser["score"] == round(1 + 1e-4, 4)


def test_each_or_branch_is_multi_planned(db):
    """SubplanStage multi-plans each `$or` branch as a query of its own: the branch `{a: 1, b: {$gte: 1}}`
    has 2200 keys on `a` and 1200 on `b`, but the `a` plan returns 101 documents from its first 101 keys
    while the `b` plan's first 1000 keys fail `a: 1`, so the trial picks `a`."""
    docs = ([{"_id": i, "a": 1, "b": 1000} for i in range(200)]
            + [{"_id": i, "a": 0, "b": i - 199} for i in range(200, 1200)]
            + [{"_id": i, "a": 1, "b": 0} for i in range(1200, 3200)])
    db.c.insert_many(docs)
    for f in ("a", "b", "c"):
        db.c.create_index(f)
    flt = {"$or": [{"a": 1, "b": {"$gte": 1}}, {"c": 5}]}
    plan = plan_of(db.c.find(flt).explain())
    assert stages(plan)[:3] == ["SUBPLAN", "FETCH", "OR"]
    branches = sorted(ixscan(p)["indexName"] for p in plan["inputStage"]["inputStage"]["inputStages"])
    assert branches == ["a_1", "c_1"]
    assert len(same_answer(db.c, flt)) == 200


def test_a_contained_or_races_the_single_index_plans(db):
    """`{x: {$gte: 0}, $or: [{b: 1}, {c: 2}]}`: the OR of the `b` and `c` scans examines 5/6 of the keys a
    whole `x` range does; without a sort it wins, but sorted by `x` with a limit the `x` plan has its
    document at the second key (then EOF: LIMIT) while the OR plan must fill a SORT first."""
    db.c.insert_many([{"_id": i, "x": i, "b": i % 2, "c": i % 3} for i in range(600)])
    for f in ("x", "b", "c"):
        db.c.create_index(f)
    flt = {"x": {"$gte": 0}, "$or": [{"b": 1}, {"c": 2}]}
    assert stages(plan_of(db.c.find(flt).explain()))[:2] == ["FETCH", "OR"]
    e = db.c.find(flt).sort("x", 1).limit(1).explain()
    plan = plan_of(e)
    assert stages(plan) == ["LIMIT", "FETCH", "IXSCAN"] and ixscan(plan)["indexName"] == "x_1"
    assert any(stages(r)[:3] == ["SORT", "FETCH", "OR"] for r in _planner(e)["rejectedPlans"])
    assert [d["_id"] for d in same_answer(db.c, flt, [("x", 1)], 1)] == [1]
    assert len(same_answer(db.c, flt)) == 400
