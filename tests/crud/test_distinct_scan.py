"""`distinct` through an index (DISTINCT_SCAN), through pymongo, both topologies.

The plans and rules are those of the server's get_executor.cpp (getExecutorForSimpleDistinct,
getDistinctNodeIndex, turnIxscanIntoDistinctIxscan).  The answer is the index's: a document missing the
field has a null key in a non-sparse index, so `distinct` includes null once the index exists — as a
real server does (the same command answers differently depending on the indexes).
"""

from __future__ import annotations

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from mongosim.shardsim.catalog import Collection
from mongosim.shardsim.distinct_scan import field_values
from mongosim.shardsim.get_executor import distinct_plan_of, matching
from mongosim.shardsim.plan_executor import ExecContext
from mongosim.shardsim.reads import _distinct_of, distinct_values
from tests.crud.test_indexes import plan_of, stages, stats_of
from tests.query._settings import QUERY_SETTINGS


def _explain(db, key, query=None, hint=None, collation=None):
    cmd = {"distinct": "c", "key": key}
    if query is not None:
        cmd["query"] = query
    if hint is not None:
        cmd["hint"] = hint
    if collation is not None:
        cmd["collation"] = collation
    return db.command("explain", cmd, verbosity="executionStats")


@pytest.fixture
def db(client, request):
    db = client[f"ds_{request.node.name.split('[')[0][-24:]}"]
    client.drop_database(db.name)
    return db


def test_an_empty_query_reads_one_key_per_value(db):
    db.c.insert_many([{"_id": i, "b": i % 50} for i in range(2000)])
    assert db.c.distinct("b") == list(range(50))
    assert stages(plan_of(_explain(db, "b"))) == ["COLLSCAN"]
    db.c.create_index("b")
    e = _explain(db, "b")
    plan = plan_of(e)
    assert stages(plan) == ["PROJECTION_COVERED", "DISTINCT_SCAN"]
    assert plan["transformBy"] == {"_id": 0, "b": 1}
    scan = plan["inputStage"]
    assert scan["indexName"] == "b_1" and scan["indexBounds"] == {"b": ["[MinKey, MaxKey]"]}
    assert scan["direction"] == "forward" and scan["isMultiKey"] is False
    stats = stats_of(e)
    assert stats["nReturned"] == 50 and stats["totalKeysExamined"] == 50 and stats["totalDocsExamined"] == 0
    assert db.c.distinct("b") == list(range(50))
    # `_id`: its own index, projection {_id: 1}
    plan = plan_of(_explain(db, "_id"))
    assert plan["transformBy"] == {"_id": 1} and plan["inputStage"]["indexName"] == "_id_"
    assert db.c.distinct("_id") == list(range(2000))


def test_a_missing_field_is_null_once_an_index_holds_it(db):
    db.c.insert_many([{"_id": 1, "g": "x"}, {"_id": 2, "g": "y"}, {"_id": 3}, {"_id": 4, "g": None}, {"_id": 5}])
    db.c.delete_one({"_id": 4})
    assert db.c.distinct("g") == ["x", "y"]  # a collection scan skips the documents without `g`
    db.c.create_index("g")
    assert db.c.distinct("g") == [None, "x", "y"]  # their null keys are distinct values of the index
    db.c.drop_index("g_1")
    db.c.create_index("g", sparse=True)  # a sparse index holds no key for them
    assert db.c.distinct("g") == ["x", "y"]
    assert stages(plan_of(_explain(db, "g"))) == ["PROJECTION_COVERED", "DISTINCT_SCAN"]


def test_multikey_fields(db):
    db.c.insert_many([{"_id": 1, "t": [3, 1, 3]}, {"_id": 2, "t": 2}, {"_id": 3, "t": []}, {"_id": 4, "t": [[5]]},
                      {"_id": 5, "a": [{"b": 1}, {"b": 2}]}, {"_id": 6, "a": {"b": 3}}])
    want_t, want_ab = db.c.distinct("t"), db.c.distinct("a.b")
    db.c.create_index("t")
    db.c.create_index("a.b")
    assert stages(plan_of(_explain(db, "t"))) == ["PROJECTION_COVERED", "DISTINCT_SCAN"]
    assert plan_of(_explain(db, "t"))["inputStage"]["isMultiKey"] is True
    # the elements are the index's keys; the documents without `t` add null, the empty array nothing
    assert db.c.distinct("t") == [None, *want_t]
    assert want_t == [1, 2, 3, [5]]
    # a dotted field the index is multikey on: not a DISTINCT_SCAN (its projection could not be covered)
    assert "DISTINCT_SCAN" not in stages(plan_of(_explain(db, "a.b")))
    assert db.c.distinct("a.b") == want_ab == [1, 2, 3]


def test_the_index_with_the_fewest_fields_wins_and_a_hint_restricts_it(db):
    db.c.insert_many([{"_id": i, "a": i % 4, "b": i % 3} for i in range(60)])
    db.c.create_index([("a", 1), ("b", 1)])
    db.c.create_index([("a", -1)])
    db.c.create_index([("b", 1), ("a", 1)])
    assert plan_of(_explain(db, "a"))["inputStage"]["indexName"] == "a_-1"
    assert plan_of(_explain(db, "a", hint="a_1_b_1"))["inputStage"]["indexName"] == "a_1_b_1"
    assert stages(plan_of(_explain(db, "a", hint={"$natural": 1}))) == ["COLLSCAN"]
    assert "DISTINCT_SCAN" not in stages(plan_of(_explain(db, "a", hint="b_1_a_1")))
    for hint in (None, "a_1_b_1", "b_1_a_1", {"$natural": 1}):
        assert db.c.distinct("a") == [0, 1, 2, 3]
        assert db.command("distinct", "c", key="a", **({"hint": hint} if hint else {}))["values"] == [0, 1, 2, 3]


def test_a_query_answered_by_the_bounds(db):
    """turnIxscanIntoDistinctIxscan: the query's IXSCAN becomes a DISTINCT_SCAN when the FETCH above it has
    no filter; the index may hold the field after the bounded ones."""
    regions = ["eu", "us", "ap"]
    db.c.insert_many([{"_id": i, "region": regions[i % 3], "status": f"s{i % 5}", "n": i} for i in range(300)])
    db.c.create_index([("region", 1), ("status", 1)])
    e = _explain(db, "status", {"region": "eu"})
    plan = plan_of(e)
    assert stages(plan) == ["PROJECTION_COVERED", "DISTINCT_SCAN"]
    assert plan["inputStage"]["indexBounds"] == {"region": ['["eu", "eu"]'], "status": ["[MinKey, MaxKey]"]}
    assert stats_of(e)["totalKeysExamined"] == 5
    assert db.c.distinct("status", {"region": "eu"}) == ["s0", "s1", "s2", "s3", "s4"]
    assert db.c.distinct("status", {"region": {"$in": ["eu", "us"]}, "status": {"$gte": "s3"}}) == ["s3", "s4"]
    # a filter the bounds do not answer: the documents are read
    assert "DISTINCT_SCAN" not in stages(plan_of(_explain(db, "status", {"region": "eu", "n": {"$lt": 10}})))
    assert db.c.distinct("status", {"region": "eu", "n": {"$lt": 10}}) == ["s0", "s1", "s3", "s4"]  # _ids 0, 3, 6, 9


def test_collated_index(db):
    db.create_collection("c")
    db.c.insert_many([{"_id": 1, "w": "b"}, {"_id": 2, "w": "A"}, {"_id": 3, "w": "a"}, {"_id": 4, "w": "B"}])
    db.c.create_index("w", collation={"locale": "en", "strength": 2})
    coll = {"locale": "en", "strength": 2}
    plan = plan_of(_explain(db, "w", collation=coll))
    assert stages(plan) == ["PROJECTION_SIMPLE", "FETCH", "DISTINCT_SCAN"]
    assert db.c.distinct("w", collation=coll) == ["A", "b"]  # the first of each group, as a scan keeps
    # another collation: the index's keys do not compare as the query does
    assert "DISTINCT_SCAN" not in stages(plan_of(_explain(db, "w")))
    assert db.c.distinct("w") == ["A", "B", "a", "b"]


# -- property: the index's answer is the collection scan's, plus null for the documents without the field --
scalars = st.one_of(st.integers(-2, 3), st.sampled_from(["x", "y", "X", None, 1.0, 2.5]))
field = st.one_of(st.none(), scalars, st.lists(st.one_of(scalars, st.lists(scalars, max_size=2)), max_size=3))


@st.composite
def documents(draw):
    out = []
    for i in range(draw(st.integers(0, 12))):
        d = {"_id": i}
        v = draw(field)
        if v is not None or draw(st.booleans()):
            d["b"] = v
        shape = draw(st.integers(0, 3))
        if shape == 1:
            d["a"] = {"b": draw(scalars)}
        elif shape == 2:
            d["a"] = draw(scalars)
        elif shape == 3:
            d["a"] = [{"b": draw(scalars)}]
        d["c"] = draw(st.integers(0, 2))
        out.append(d)
    return out


@QUERY_SETTINGS
@given(docs=documents(), key=st.sampled_from(["b", "a.b"]), compound=st.booleans(), sparse=st.booleans(),
       query=st.sampled_from([{}, {"c": 1}, {"c": {"$gte": 1}}, {"c": 1, "b": {"$gt": 0}}]))
def test_a_distinct_scan_answers_as_the_index_holds(docs, key, compound, sparse, query):
    coll = Collection("db", "c")
    spec = {"v": 2, "key": {"c": 1, key: 1} if compound else {key: 1}, "name": "ix"}
    if sparse:
        spec["sparse"] = True
    coll.add_index(spec)
    for d in docs:
        coll.insert(d)
    parts = key.split(".")
    matched = matching(coll, query, None)
    plain = distinct_values(matched, key)
    sol, fast = distinct_plan_of(coll, key, query, None, None, None)
    event("DISTINCT_SCAN" if fast else "documents read")
    if not fast:
        return
    got = _distinct_of(sol.root.run(ExecContext(coll)), None)
    missing = [d for d in matched if not list(field_values(d, parts)) and not _empty_array_at(d, parts)]
    if missing and not (sparse and not compound):
        want = _distinct_of([*plain, None], None)
    else:
        want = plain
    assert got == want


def _empty_array_at(doc, parts) -> bool:
    v = doc
    for p in parts:
        if not isinstance(v, dict) or p not in v:
            return False
        v = v[p]
    return v == []


def test_index_stats_count_a_distinct_scan(db):
    """`$indexStats`: a DISTINCT_SCAN is an access of its index, as any plan's index is."""
    db.c.insert_many([{"_id": i, "b": i % 3} for i in range(30)])
    db.c.create_index("b")

    def ops():
        return {s["name"]: s["accesses"]["ops"] for s in db.c.aggregate([{"$indexStats": {}}])}

    before = ops()
    db.c.distinct("b")
    db.c.distinct("b", {"b": {"$gte": 1}})
    assert ops()["b_1"] == before["b_1"] + 2
