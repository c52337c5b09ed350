"""Covered queries: the index answers without reading documents (PROJECTION_COVERED over IXSCAN, no FETCH,
totalDocsExamined 0), through pymongo, both topologies — the cases of the server's
jstests/core/index/covered/covered_index_*.js and dbtests/plan_ranking.cpp's PlanRankingPreferCovered.
Each answer is compared with the one a collection scan gives.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, event, given
from hypothesis import strategies as st

from mongosim.shardsim.canonical_query import CanonicalQuery
from mongosim.shardsim.get_executor import execute
from mongosim.shardsim.plan_executor import Projection
from mongosim.shardsim.query.matcher import Matcher
from mongosim.shardsim.query.projection import compile_projection
from tests.crud.test_indexes import ixscan, plan_of, stages, stats_of
from tests.crud.test_multi_plan import same_answer
from tests.query._settings import QUERY_SETTINGS
from tests.query.strategies import leaf_conditions
from tests.query.test_index_plans import _collection, _valid, docs_, index_specs, queries


@pytest.fixture
def db(client, request):
    db = client[f"cov_{request.node.name.split('[')[0][-24:]}"]
    client.drop_database(db.name)
    return db


def test_an_inclusion_of_index_fields_is_covered(db):
    db.c.insert_many([{"_id": i, "foo": i % 7, "bar": -i, "x": "y"} for i in range(70)])
    db.c.create_index([("foo", 1), ("bar", 1)])
    e = db.c.find({"foo": 3}, {"_id": 0, "foo": 1, "bar": 1}).explain()
    plan = plan_of(e)
    assert stages(plan) == ["PROJECTION_COVERED", "IXSCAN"]
    assert plan["transformBy"] == {"_id": 0, "foo": 1, "bar": 1}
    assert stats_of(e)["totalDocsExamined"] == 0 and stats_of(e)["totalKeysExamined"] == 10
    assert len(same_answer(db.c, {"foo": 3}, projection={"_id": 0, "foo": 1, "bar": 1})) == 10
    # sorted by the index, limited, skipped: still covered
    cur = db.c.find({"foo": {"$gte": 5}}, {"_id": 0, "bar": 1}).sort([("foo", -1), ("bar", -1)]).skip(2).limit(3)
    assert stages(plan_of(cur.explain())) == ["LIMIT", "PROJECTION_COVERED", "SKIP", "IXSCAN"]
    assert list(cur) == [{"bar": -20}, {"bar": -27}, {"bar": -34}]  # foo 6: _ids 6, 13, 20, ...; two skipped
    # a blocking sort on an index field: covered too, the SORT over the IXSCAN
    plan = plan_of(db.c.find({"foo": {"$in": [1, 2]}}, {"_id": 0, "foo": 1, "bar": 1}).sort("bar", 1).explain())
    assert stages(plan) == ["PROJECTION_COVERED", "SORT", "IXSCAN"]
    same_answer(db.c, {"foo": {"$in": [1, 2]}}, [("bar", 1), ("foo", 1)], projection={"_id": 0, "foo": 1, "bar": 1})


@pytest.mark.parametrize("flt,proj,why", [
    ({"foo": 3}, {"foo": 1}, "_id is returned and not in the index"),
    ({"foo": 3}, {"_id": 0, "foo": 1, "x": 1}, "x is not in the index"),
    ({"foo": 3}, {"x": 0}, "an exclusion projection"),
    ({"foo": 3, "x": "y"}, {"_id": 0, "foo": 1}, "x needs the documents"),
    ({"foo": 3, "bar": {"$exists": True}}, {"_id": 0, "foo": 1}, "$exists needs the documents (INEXACT_FETCH)"),
    ({"foo": 3}, {"_id": 0, "foo": {"$add": [1, 1]}}, "a computed field"),
])
def test_not_covered(db, flt, proj, why):
    db.c.insert_many([{"_id": i, "foo": i % 7, "bar": -i, "x": "y"} for i in range(70)])
    db.c.create_index([("foo", 1), ("bar", 1)])
    e = db.c.find(flt, proj).explain()
    assert "FETCH" in stages(plan_of(e)), why
    same_answer(db.c, flt, projection=proj)


def test_a_filter_on_the_keys_keeps_a_plan_covered(db):
    """A regex or `$mod` on an index field is checked on the keys (the IXSCAN's `filter`, INEXACT_COVERED):
    no FETCH is needed for it, so the plan is still covered; the documents a FETCH reads are those whose
    keys passed."""
    db.c.insert_many([{"_id": i, "foo": f"f{i % 7}", "bar": i} for i in range(70)])
    db.c.create_index([("foo", 1), ("bar", 1)])
    e = db.c.find({"foo": {"$regex": "3|5"}, "bar": {"$mod": [2, 0]}}, {"_id": 0, "foo": 1, "bar": 1}).explain()
    plan = plan_of(e)
    assert stages(plan) == ["PROJECTION_COVERED", "IXSCAN"]
    assert plan["inputStage"]["filter"] == {"$and": [{"foo": {"$regex": "3|5"}}, {"bar": {"$mod": [2, 0]}}]}
    assert stats_of(e)["totalDocsExamined"] == 0 and stats_of(e)["nReturned"] == 10
    got = same_answer(db.c, {"foo": {"$regex": "3|5"}, "bar": {"$mod": [2, 0]}},
                      projection={"_id": 0, "foo": 1, "bar": 1})
    assert len(got) == 10
    # without the projection: FETCH (no filter) over the filtered IXSCAN, one document per passing key
    e = db.c.find({"foo": {"$regex": "3|5"}}).explain()
    plan = plan_of(e)
    assert stages(plan) == ["FETCH", "IXSCAN"] and "filter" not in plan
    assert plan["inputStage"]["filter"] == {"foo": {"$regex": "3|5"}}
    assert stats_of(e)["totalDocsExamined"] == 20 and stats_of(e)["totalKeysExamined"] == 70


def test_a_multikey_field_is_not_covered(db):
    db.c.insert_many([{"_id": 1, "a": [1, 2], "b": 1}, {"_id": 2, "a": 3, "b": 2}])
    db.c.create_index([("a", 1), ("b", 1)])
    assert "FETCH" in stages(plan_of(db.c.find({"a": 1}, {"_id": 0, "a": 1}).explain()))
    # the multikey path is `a`: `b` alone is covered (path-level multikey information)
    plan = plan_of(db.c.find({"a": 1}, {"_id": 0, "b": 1}).explain())
    assert stages(plan) == ["PROJECTION_COVERED", "IXSCAN"]
    assert same_answer(db.c, {"a": 1}, projection={"_id": 0, "b": 1}) == [{"b": 1}]


def test_id_index_covers_id(db):
    db.c.insert_many([{"_id": i, "v": i} for i in range(20)])
    plan = plan_of(db.c.find({"_id": {"$gt": 15}}, {"_id": 1}).explain())
    assert stages(plan) == ["PROJECTION_COVERED", "IXSCAN"] and ixscan(plan)["indexName"] == "_id_"
    assert same_answer(db.c, {"_id": {"$gt": 15}}, projection={"_id": 1}) == [{"_id": i} for i in range(16, 20)]


def test_prefer_covered(db):
    """PlanRankingPreferCovered: two plans reach EOF together; the covered one has the no-FETCH bonus."""
    db.c.insert_many([{"a": i, "b": i} for i in range(500)])
    db.c.create_index("a")
    db.c.create_index([("a", 1), ("b", 1)])
    e = db.c.find({"a": 27}, {"_id": 0, "a": 1, "b": 1}).explain()
    plan = plan_of(e)
    assert stages(plan) == ["PROJECTION_COVERED", "IXSCAN"] and ixscan(plan)["indexName"] == "a_1_b_1"
    assert list(db.c.find({"a": 27}, {"_id": 0, "a": 1, "b": 1})) == [{"a": 27, "b": 27}]


@QUERY_SETTINGS
@given(docs=docs_(), specs=index_specs(), q=queries(),
       fields=st.one_of(st.lists(st.sampled_from(["a", "b"]), min_size=1, max_size=2, unique=True),
                        st.lists(st.sampled_from(["a", "b", "c", "a.b", "_id"]), max_size=3, unique=True)),
       simple=st.one_of(st.none(), leaf_conditions()))
def test_covered_answers_equal_the_documents(docs, specs, q, fields, simple):
    """Whichever plan runs (covered or not), the projected answer is the projection of the matching
    documents.  (An index on {a, b} and, half the time, a filter on `a` alone: covered plans come up.)"""
    flt, sort, skip, limit = q
    if simple is not None:
        flt = {"a": simple}
    specs = [{"v": 2, "key": {"a": 1, "b": 1}, "name": "a_b"}, *specs]
    m = _valid(flt, sort)
    assume(m is not None)
    coll = _collection(docs, specs)
    assume(coll is not None)
    proj = {f: 1 for f in fields}
    if "_id" not in fields:
        proj["_id"] = 0
    try:
        project = compile_projection(proj)
    except Exception:  # noqa: BLE001 - (a path collision such as a and a.b: refused, nothing to compare)
        assume(False)
    cq = CanonicalQuery("db.c", flt, m, sort=sort, skip=skip, limit=limit, projection=proj)
    got, sol, _ctx = execute(coll, cq)
    plain, _sol, _ctx = execute(coll, CanonicalQuery("db.c", flt, m, sort=sort, skip=skip, limit=limit))
    assert len(got) == len(plain)
    if not skip and not limit:
        assert sorted(map(repr, got)) == sorted(repr(project(d)) for d in plain)
    covered = any(isinstance(s, Projection) and s.stage == "PROJECTION_COVERED" for s in sol.root.walk())
    event("covered" if covered else "documents read")
    if covered:  # no document read: every field returned is one the index holds
        assert not any(s.stage == "FETCH" for s in sol.root.walk())
        paths = next(s.ix.paths for s in sol.root.walk() if s.stage == "IXSCAN")
        assert all(any(p.split(".")[0] == k for p in paths) for d in got for k in d), (paths, got[:2])


scalar = st.one_of(st.integers(-2, 3), st.sampled_from([None, "x", 1.5, True]))


@QUERY_SETTINGS
@given(rows=st.lists(st.fixed_dictionaries({}, optional={"a": scalar, "b": scalar, "c": scalar}), max_size=12),
       op=st.sampled_from(["$eq", "$gt", "$gte", "$lt", "$in", "$ne"]), v=scalar,
       fields=st.lists(st.sampled_from(["a", "b"]), max_size=2, unique=True),
       sort=st.sampled_from([None, {"a": 1}, {"b": -1}, {"a": -1, "b": -1}]), limit=st.sampled_from([0, 2]))
def test_covered_plans_over_scalars(rows, op, v, fields, sort, limit):
    """Documents of scalars (no multikey): most plans are covered; the answers are the projections of the
    documents a collection scan matches (missing fields stay missing)."""
    from mongosim.shardsim.catalog import Collection

    coll = Collection("db", "c")
    coll.add_index({"v": 2, "key": {"a": 1, "b": 1}, "name": "a_b"})
    for i, r in enumerate(rows):
        coll.insert({"_id": i, **r})
    flt = {"a": {op: [v, 1] if op == "$in" else v}}
    proj = {"_id": 0, **{f: 1 for f in fields}}
    m = Matcher(flt)
    cq = CanonicalQuery("db.c", flt, m, sort=sort, limit=limit or None, projection=proj)
    got, sol, _ctx = execute(coll, cq)
    plain, _sol, _ctx = execute(coll, CanonicalQuery("db.c", flt, m, sort=sort, limit=limit or None))
    project = compile_projection(proj)
    if sort is not None or not limit:
        assert got == [project(d) for d in plain]
    covered = any(s.stage == "PROJECTION_COVERED" for s in sol.root.walk())
    event("covered" if covered else "documents read")
    if covered:
        assert fields and all(set(d) <= {"a", "b"} for d in got)  # (`{_id: 0}` alone returns `c` too)
    elif fields and op in ("$eq", "$gt", "$gte", "$lt", "$in") and v is not None:
        raise AssertionError("exact bounds and index fields only: covered (a null equality also matches a "
                             "missing field: FETCH)")


def test_a_count_reads_no_document(db):
    """A count needs no document when the bounds (and the keys' filter) answer its query: COUNT over the
    IXSCAN, no FETCH (COUNT_SCAN for a single interval of a non-multikey index, as before)."""
    db.c.insert_many([{"_id": i, "a": i % 5, "t": [i, i + 1], "s": f"s{i}"} for i in range(30)])
    db.c.create_index("a")
    db.c.create_index("t")
    db.c.create_index("s")

    def count_plan(q):
        e = db.command("explain", {"count": "c", "query": q}, verbosity="executionStats")
        return stages(plan_of(e)), stats_of(e)

    for q, n in [({"a": {"$in": [1, 2]}}, 12), ({"t": 5}, 2), ({"s": {"$regex": "1$"}}, 3)]:
        shape, stats = count_plan(q)
        assert shape == ["COUNT", "IXSCAN"] and stats["totalDocsExamined"] == 0, q
        assert db.c.count_documents(q) == n
    assert count_plan({"a": 1})[0] == ["COUNT", "COUNT_SCAN"]
    assert count_plan({"a": 1, "x": None})[0] == ["COUNT", "FETCH", "IXSCAN"]


@pytest.mark.parametrize("types,where", [
    ("int", "IXSCAN"),  # some number types: the keys decide (INEXACT_COVERED)
    (["int", "long"], "IXSCAN"),
    ("number", None),  # all numbers: the bracket is the answer (EXACT)
    (["int", "long", "double", "decimal"], None),
    (["string", "bool"], None),
    ("null", "FETCH"),  # null and missing share the null key: the documents decide
    (["int", "array"], "FETCH"),
])
def test_type_tightness(db, types, where):
    """computeTightnessForTypeSet: where a `$type` on an index field is checked."""
    db.c.insert_many([{"_id": i, "a": 2, "b": v} for i, v in enumerate([1, 2.5, "s", True, None, 7, "t"])]
                     + [{"_id": 99, "a": 2}])
    db.c.create_index([("a", 1), ("b", 1)])
    flt = {"a": 2, "b": {"$type": types}}
    plan = plan_of(db.c.find(flt).explain())
    shown = {"IXSCAN": "filter" in plan["inputStage"], "FETCH": "filter" in plan}
    assert shown == {"IXSCAN": where == "IXSCAN", "FETCH": where == "FETCH"}, plan
    same_answer(db.c, flt)


def test_exists_on_a_sparse_index(db):
    """{$exists: true} is exact on a single-field sparse index (it holds exactly the documents with the
    field, null included), so a count reads no document; on a compound sparse index or a plain one the
    documents decide."""
    db.c.insert_many([{"_id": 1, "a": 1}, {"_id": 2, "a": None}, {"_id": 3}, {"_id": 4, "a": [1, 2]}, {"_id": 5, "a": []}])
    db.c.create_index("a", sparse=True)
    e = db.command("explain", {"count": "c", "query": {"a": {"$exists": True}}}, verbosity="executionStats")
    assert stages(plan_of(e)) == ["COUNT", "IXSCAN"] and stats_of(e)["totalDocsExamined"] == 0
    assert db.command("count", "c", query={"a": {"$exists": True}})["n"] == 4
    assert sorted(d["_id"] for d in db.c.find({"a": {"$exists": True}})) == [1, 2, 4, 5]
    db.c.drop_indexes()
    db.c.create_index([("a", 1), ("b", 1)], sparse=True)
    plan = plan_of(db.c.find({"a": {"$exists": True}}).explain())
    assert stages(plan) == ["FETCH", "IXSCAN"] and plan["filter"] == {"a": {"$exists": True}}
    assert sorted(d["_id"] for d in db.c.find({"a": {"$exists": True}})) == [1, 2, 4, 5]


def test_sharded_collections(sharded_client):
    """On a sharded collection the SHARDING_FILTER reads the shard key: from the index's keys when the index
    holds it (still covered, no FETCH), else from the documents (FETCH below it).  The same for a count and
    for a DISTINCT_SCAN."""
    c = sharded_client
    c.admin.command("enableSharding", "covsh")
    c.admin.command("shardCollection", "covsh.c", key={"cust": 1})
    coll = c.covsh.c
    coll.insert_many([{"_id": i, "cust": i % 10, "total": i} for i in range(100)])
    coll.create_index([("cust", 1), ("total", 1)])
    coll.create_index([("total", 1)])
    proj = {"_id": 0, "cust": 1, "total": 1}
    assert stages(plan_of(coll.find({"cust": 5}, proj).explain())) == ["PROJECTION_COVERED", "SHARDING_FILTER", "IXSCAN"]
    got = same_answer(coll, {"cust": 5}, projection=proj)
    assert sorted(d["total"] for d in got) == list(range(5, 100, 10)) and all(d["cust"] == 5 for d in got)
    plan = plan_of(coll.find({"total": {"$gt": 5}}, {"_id": 0, "total": 1}).explain())
    assert stages(plan) == ["PROJECTION_SIMPLE", "SHARDING_FILTER", "FETCH", "IXSCAN"]
    count = c.covsh.command("explain", {"count": "c", "query": {"cust": {"$in": [1, 2]}}})
    assert stages(plan_of(count)) == ["COUNT", "SHARDING_FILTER", "IXSCAN"]
    assert stages(plan_of(c.covsh.command("explain", {"distinct": "c", "key": "cust"}))) == [
        "PROJECTION_COVERED", "SHARDING_FILTER", "DISTINCT_SCAN"]
    assert stages(plan_of(c.covsh.command("explain", {"distinct": "c", "key": "total"}))) == [
        "PROJECTION_SIMPLE", "SHARDING_FILTER", "FETCH", "DISTINCT_SCAN"]
    assert coll.distinct("total") == list(range(100)) and coll.distinct("cust") == list(range(10))
    c.drop_database("covsh")


def test_an_id_exclusion_alone_is_not_covered(db):
    """`{_id: 0}` alone is an exclusion: every other field is returned, which no index holds."""
    db.c.insert_many([{"_id": i, "a": i % 3, "z": "keep"} for i in range(10)])
    db.c.create_index("a")
    assert "FETCH" in stages(plan_of(db.c.find({"a": 1}, {"_id": 0}).explain()))
    assert same_answer(db.c, {"a": 1}, projection={"_id": 0}) == [{"a": 1, "z": "keep"}] * 3
