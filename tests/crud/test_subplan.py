"""A rooted $or planned branch by branch, through pymongo, both topologies: SUBPLAN over OR over each
branch's index scan, as jstests/core/query/or/or_use_clustered_collection.js counts the stages (OR once,
an IXSCAN per index, one FETCH, none under a COUNT; a branch without an index: a COLLSCAN and no OR), and
wildcard_index_basic_index_bounds.js's rooted $or (one $** expansion per branch).  Answers are compared
with a collection scan's.
"""

from __future__ import annotations

import pytest

from tests.crud.test_indexes import plan_of
from tests.crud.test_wildcard_indexes import ids, ixscans


def stage_counts(plan: dict, out: dict | None = None) -> dict:
    out = {} if out is None else out
    out[plan["stage"]] = out.get(plan["stage"], 0) + 1
    if "inputStage" in plan:
        stage_counts(plan["inputStage"], out)
    for p in plan.get("inputStages", []):
        stage_counts(p, out)
    return out


@pytest.fixture
def coll(client, request):
    db = client[f"or_{request.node.name.split('[')[0][-24:]}"]
    client.drop_database(db.name)
    db.c.insert_many([{"_id": i, "a": i, "c": i * 2, "d": [{"e": i * 2}, {"g": i / 2}], "noIndex": i}
                      for i in range(10)])
    db.c.create_index("a")
    db.c.create_index("c")
    return db.c


@pytest.mark.parametrize("q,counts,want", [
    ({"$or": [{"c": {"$gte": 10}}, {"a": 0}]}, {"SUBPLAN": 1, "FETCH": 1, "OR": 1, "IXSCAN": 2}, [0, 5, 6, 7, 8, 9]),
    ({"$or": [{"_id": {"$lt": 2}}, {"a": 5}]}, {"SUBPLAN": 1, "FETCH": 1, "OR": 1, "IXSCAN": 2}, [0, 1, 5]),
    # branches on one index are one scan (bounds unioned)
    ({"$or": [{"_id": {"$gt": 7}}, {"_id": 8}, {"a": 1}, {"a": {"$gte": 8}}, {"c": {"$lt": 10}}]},
     {"SUBPLAN": 1, "FETCH": 1, "OR": 1, "IXSCAN": 3}, [0, 1, 2, 3, 4, 8, 9]),
    ({"$or": [{"a": 1}, {"$and": [{"_id": {"$gt": 7}}, {"_id": {"$lt": 10}}]}]},
     {"SUBPLAN": 1, "FETCH": 1, "OR": 1, "IXSCAN": 2}, [1, 8, 9]),
    # a branch without an index: the whole query scans
    ({"$or": [{"noIndex": 3}, {"a": 1}]}, {"SUBPLAN": 1, "COLLSCAN": 1}, [1, 3]),
    # not a rooted $or: no SUBPLAN
    ({"$and": [{"a": {"$gte": 8}}, {"$or": [{"_id": 2}, {"c": {"$gt": 10}}]}]}, {"FETCH": 1, "IXSCAN": 1}, [8, 9]),
])
def test_stages_and_answers(coll, q, counts, want):
    counted = stage_counts(plan_of(coll.find(q).explain()))
    assert {k: v for k, v in counted.items() if k != "SHARDING_FILTER"} == counts
    assert ids(coll.find(q)) == want == ids(coll.find(q).hint([("$natural", 1)]))
    # with limit, skip, projection, sort
    assert len(list(coll.find(q).limit(2))) == min(2, len(want))
    assert len(list(coll.find(q, {"a": 1}).skip(1))) == len(want) - 1
    assert ids(coll.find(q, {"a": 1}).sort("_id", 1).skip(1)) == want[1:]
    assert [d["_id"] for d in coll.find(q).sort("c", -1)] == sorted(want, reverse=True)
    assert coll.count_documents(q) == len(want)


def test_count_has_no_fetch_over_exact_branches(coll):
    ex = coll.database.command("explain", {"count": "c", "query": {"$or": [{"c": {"$gte": 10}}, {"a": 0}]}})
    counted = stage_counts(plan_of(ex))
    assert counted.get("FETCH", 0) == 0 and counted["OR"] == 1 and counted["COUNT"] == 1
    assert coll.count_documents({"$or": [{"c": {"$gte": 10}}, {"a": 0}]}) == 6


def test_or_explain_shape_and_counters(coll):
    ex = coll.find({"$or": [{"a": {"$lte": 3}}, {"c": {"$lte": 4}, "noIndex": {"$ne": 1}}]}).explain()
    plan = plan_of(ex)
    assert plan["stage"] == "SUBPLAN"
    fetch = plan["inputStage"] if plan["inputStage"]["stage"] == "FETCH" else plan["inputStage"]["inputStage"]
    assert fetch["stage"] == "FETCH" and "filter" not in fetch
    orst = fetch["inputStage"]
    assert orst["stage"] == "OR"
    first, second = orst["inputStages"]
    assert first["stage"] == "IXSCAN" and first["indexBounds"] == {"a": ["[-inf.0, 3]"]}
    assert second["stage"] == "FETCH" and second["filter"] == {"noIndex": {"$not": {"$eq": 1}}} or \
        second["filter"] == {"noIndex": {"$ne": 1}}
    assert second["inputStage"]["indexBounds"] == {"c": ["[-inf.0, 4]"]}
    shards = ex["executionStats"]["executionStages"]
    stats = shards["shards"][0]["executionStages"] if "shards" in shards else shards
    while stats["stage"] != "OR":
        stats = stats["inputStage"]
    # documents 0..2 match both branches: tested and dropped once each
    assert stats["dupsTested"] == 4 + 2 and stats["dupsDropped"] == 2 and stats["nReturned"] == 4
    assert ids(coll.find({"$or": [{"a": {"$lte": 3}}, {"c": {"$lte": 4}, "noIndex": {"$ne": 1}}]})) == [0, 1, 2, 3]


def test_wildcard_branches(coll):
    coll.create_index([("d.$**", 1)])
    q = {"$or": [{"d.e": {"$gte": 14}}, {"d.g": 1.0}, {"a": 0}]}
    scans = ixscans(plan_of(coll.find(q).explain()))
    assert sorted(str(s["keyPattern"]) for s in scans) == sorted(
        [str({"$_path": 1, "d.e": 1}), str({"$_path": 1, "d.g": 1}), str({"a": 1})])
    assert ids(coll.find(q)) == [0, 2, 7, 8, 9] == ids(coll.find(q).hint([("$natural", 1)]))


def test_writes_with_an_or_filter_use_the_branches(coll):
    coll.update_many({"$or": [{"a": 1}, {"c": 18}]}, {"$set": {"hit": True}})
    assert ids(coll.find({"hit": True})) == [1, 9]
    coll.delete_many({"$or": [{"a": {"$lt": 2}}, {"c": {"$gt": 14}}]})
    assert ids(coll.find()) == [2, 3, 4, 5, 6, 7]
    ex = coll.database.command("explain", {"delete": "c", "deletes": [{"q": {"$or": [{"a": 3}, {"c": 8}]}, "limit": 0}]})
    assert "OR" in stage_counts(plan_of(ex))


@pytest.mark.parametrize("q,counts,want", [
    # the other clause has no index: the OR of the branches' scans, the clause filtered above it
    ({"noIndex": {"$gte": 3}, "$or": [{"a": 1}, {"a": 4}, {"c": {"$gt": 14}}]},
     {"FETCH": 1, "OR": 1, "IXSCAN": 2}, [4, 8, 9]),
    # cheaper through the OR than through the other clause's index
    ({"_id": {"$gte": 1}, "$or": [{"a": 2}, {"c": 18}]}, {"FETCH": 1, "OR": 1, "IXSCAN": 2}, [2, 9]),
    # a branch without an index: no OR plan
    ({"noIndex": {"$gte": 3}, "$or": [{"a": 1}, {"noIndex": 4}]}, {"COLLSCAN": 1}, [4]),
])
def test_an_or_beside_other_clauses_scans_its_branches(coll, q, counts, want):
    """An indexed OR under an AND: no SUBPLAN (the $or is not the whole filter), a FETCH applying the
    AND's other clauses over the OR."""
    p = plan_of(coll.find(q).explain())
    assert {k: v for k, v in stage_counts(p).items() if k != "SHARDING_FILTER"} == counts
    if "OR" in counts:
        fetch = p if p["stage"] == "FETCH" else p["inputStage"]
        assert "$or" not in str(fetch.get("filter"))
    assert ids(coll.find(q)) == want == ids(coll.find(q).hint([("$natural", 1)]))
    assert coll.count_documents(q) == len(want)
    assert ids(coll.find(q).sort("c", -1)) == want
