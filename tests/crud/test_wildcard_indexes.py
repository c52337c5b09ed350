"""Wildcard indexes through pymongo, both topologies: their keys kept by every write, the plans they give
and the server's rules, checked against the expectations of the server's own tests
(jstests/core/index/wildcard/: wildcard_index_basic_index_bounds.js, wildcard_index_hint.js,
wildcard_index_validindex.js, wildcard_index_multikey.js, wildcard_index_nonblocking_sort.js).
Every answer is compared with a collection scan's.
"""

from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure

from tests.crud.test_indexes import plan_of, stages


def ixscans(plan: dict) -> list[dict]:
    out = []
    if plan.get("stage") == "IXSCAN":
        out.append(plan)
    if "inputStage" in plan:
        out += ixscans(plan["inputStage"])
    for p in plan.get("inputStages", []):
        out += ixscans(p)
    return out


def rejected_of(explain: dict) -> list[dict]:
    qp = explain["queryPlanner"]
    if "shards" in qp["winningPlan"]:
        return qp["winningPlan"]["shards"][0]["rejectedPlans"]
    return qp["rejectedPlans"]


def ids(cursor) -> list:
    return sorted(d["_id"] for d in cursor)


@pytest.fixture
def coll(client, request):
    """wildcard_index_basic_index_bounds.js's collection: 100 documents after its template."""
    db = client[f"wc_{request.node.name.split('[')[0][-24:]}"]
    client.drop_database(db.name)
    docs = []
    for i in range(100):
        docs.append({"_id": i, "a": float(i), "b": {"c": float(i + 1), "d": {"e": float(i + 2), "g": 1.0}, "f": {},
                                                    "arr": [float(i)]}})
    db.c.insert_many(docs)
    return db.c


PATHS = ["a", "b.c", "b.d.e", "b.f"]
# (expression, its bounds on the queried field or None when a wildcard index cannot answer it, subpath bounds)
OPERATIONS = [
    ({"$gte": 3.0}, ["[3.0, inf.0]"], False),
    ({"$gt": 3.0}, ["(3.0, inf.0]"], False),
    ({"$lt": 7.0}, ["[-inf.0, 7.0)"], False),
    ({"$lte": 7.0}, ["[-inf.0, 7.0]"], False),
    ({"$eq": 5.0}, ["[5.0, 5.0]"], False),
    ({"$in": [3.0, 5.0, 7.0, 9.0]}, ["[3.0, 3.0]", "[5.0, 5.0]", "[7.0, 7.0]", "[9.0, 9.0]"], False),
    ({"$exists": True}, ["[MinKey, MaxKey]"], True),
    ({"$exists": False}, None, False),
    ({"$eq": None}, None, False),
    ({"$eq": {"abc": 1}}, None, False),
    ({"$lt": {"abc": 1}}, None, False),
    ({"$ne": {"abc": 1}}, None, False),
    ({"$in": [{"abc": 1}, 1, 2, 3]}, None, False),
    ({"$in": [None, 1, 2, 3]}, None, False),
    ({"$ne": None}, ["[MinKey, MaxKey]"], True),
    ({"$ne": None, "$exists": True}, ["[MinKey, MaxKey]"], True),
    ({"$eq": None, "$exists": True}, ["[MinKey, MaxKey]"], True),
    ({"$eq": []}, ["[undefined, undefined]", "[[], []]"], False),
]


def expected_bounds(path: str, bounds: list[str], subpaths: bool) -> dict:
    pb = [f'["{path}", "{path}"]'] + ([f'["{path}.", "{path}/")'] if subpaths else [])
    return {"$_path": pb, path: bounds}


@pytest.mark.parametrize("key,projection,covered", [
    ({"$**": 1}, None, ["a", "b.c", "b.d.e", "b.f"]),
    ({"a.$**": 1}, None, ["a"]),
    ({"b.$**": 1}, None, ["b.c", "b.d.e", "b.f"]),
    ({"$**": 1}, {"b.d": 1}, ["b.d.e"]),
    ({"$**": 1}, {"a": 1, "b.d": 1}, ["a", "b.d.e"]),
    ({"$**": 1}, {"a": 0, "b.d": 0}, ["b.c", "b.f"]),
])
def test_bounds_of_each_operation_on_each_path(coll, key, projection, covered):
    coll.create_index(list(key.items()), **({"wildcardProjection": projection} if projection else {}))
    for expr, bounds, subpaths in OPERATIONS:
        for path in PATHS:
            q = {path: expr}
            ex = coll.find(q).explain()
            scans = ixscans(plan_of(ex))
            want = ids(coll.find(q).hint([("$natural", 1)]))
            assert ids(coll.find(q)) == want, q
            if path not in covered or bounds is None:
                assert scans == [], (q, scans)
                continue
            assert len(scans) == 1, q
            assert scans[0]["keyPattern"] == {"$_path": 1, path: 1}
            assert list(scans[0]["keyPattern"]) == ["$_path", path]
            assert scans[0]["indexBounds"] == expected_bounds(path, bounds, subpaths), q
            assert ids(coll.find(q).hint(list(key.items()))) == want
        # a rooted $or over every covered path: one IXSCAN on each path's expansion
        preds = [{p: expr} for p in covered]
        if bounds is not None:
            q = {"$or": preds}
            scans = ixscans(plan_of(coll.find(q).explain()))
            assert sorted(s["indexBounds"]["$_path"][0] for s in scans) == sorted(f'["{p}", "{p}"]' for p in covered)
            assert ids(coll.find(q)) == ids(coll.find(q).hint([("$natural", 1)]))
            # and $and: one path's expansion wins, the others are rejected plans, none is an AND_SORTED
            if len(preds) > 1:
                ex = coll.find({"$and": preds}).explain()
                assert len(ixscans(plan_of(ex))) == 1
                rejected = [s for r in rejected_of(ex) for s in ixscans(r)]
                assert len(rejected) == len(covered) - 1
                assert ids(coll.find({"$and": preds})) == ids(coll.find({"$and": preds}).hint([("$natural", 1)]))


def test_explain_fields_of_a_wildcard_scan(coll):
    coll.create_index([("$**", 1)])
    scan = ixscans(plan_of(coll.find({"b.arr": 5.0}).explain()))[0]
    assert list(scan) == ["stage", "keyPattern", "indexName", "isMultiKey", "multiKeyPaths", "isUnique", "isSparse",
                          "isPartial", "indexVersion", "direction", "indexBounds"]
    assert scan["indexName"] == "$**_1" and scan["isMultiKey"] is True
    assert scan["multiKeyPaths"] == {"$_path": [], "b.arr": ["b.arr"]}
    assert scan["isSparse"] is False and scan["isUnique"] is False
    plain = ixscans(plan_of(coll.find({"b.c": 5.0}).explain()))[0]
    assert plain["isMultiKey"] is False and plain["multiKeyPaths"] == {"$_path": [], "b.c": []}


def test_compound_wildcard_index(coll):
    """runCompoundWildcardIndexTest of wildcard_index_basic_index_bounds.js."""
    coll.create_index([("a", 1), ("b.$**", 1), ("c", 1)])
    cases = [
        ({"a": 3.0, "b.c": {"$gte": 3.0}}, {"a": ["[3.0, 3.0]"], "$_path": ['["b.c", "b.c"]'], "b.c": ["[3.0, inf.0]"],
                                            "c": ["[MinKey, MaxKey]"]}),
        ({"a": 3.0, "b.c": {"$in": [1.0]}}, {"a": ["[3.0, 3.0]"], "$_path": ['["b.c", "b.c"]'], "b.c": ["[1.0, 1.0]"],
                                             "c": ["[MinKey, MaxKey]"]}),
    ]
    for q, bounds in cases:
        scans = ixscans(plan_of(coll.find(q).explain()))
        assert len(scans) == 1 and list(scans[0]["keyPattern"]) == ["a", "$_path", "b.c", "c"]
        assert scans[0]["indexBounds"] == bounds
        assert ids(coll.find(q)) == ids(coll.find(q).hint([("$natural", 1)]))
    for q in [{"b.c": {"$gt": 3.0}}, {"abc": {"$gt": 3.0}}, {"c": 5.0}]:
        assert ixscans(plan_of(coll.find(q).explain())) == []
    # the regular prefix alone: the generic expansion, every path and MinKey (documents without wildcard fields)
    coll.insert_one({"_id": 1000, "a": 3.0})
    q = {"a": 3.0}
    scan = ixscans(plan_of(coll.find(q).explain()))[0]
    assert list(scan["keyPattern"]) == ["a", "$_path", "c"]
    assert scan["indexBounds"]["$_path"] == ["[MinKey, MinKey]", '["", {})']
    assert ids(coll.find(q)) == [3, 1000]


def test_compound_wildcard_on_all_fields_needs_a_projection(coll):
    with pytest.raises(OperationFailure) as e:
        coll.create_index([("a", 1), ("$**", 1)])
    assert e.value.code == 67 and "wildcardProjection" in e.value.details["errmsg"]
    coll.create_index([("a", 1), ("$**", 1)], wildcardProjection={"a": 0})
    q = {"a": 4.0, "b.d.e": {"$lt": 10.0}}
    assert stages(plan_of(coll.find(q).explain()))[-1] == "IXSCAN"
    assert ids(coll.find(q)) == [4]


def test_sort_from_a_wildcard_index_only_off_multikey_paths(coll):
    """wildcard_index_nonblocking_sort.js: a $** index provides the sort on the path it scans, unless the path
    is multikey (then a blocking SORT)."""
    coll.create_index([("$**", 1)])
    q = {"b.c": {"$gt": 10.0}}
    got = list(coll.find(q).sort("b.c", -1).limit(3))
    assert [d["_id"] for d in got] == [99, 98, 97]
    assert "SORT" not in stages(plan_of(coll.find(q).sort("b.c", -1).limit(3).explain()))
    q = {"b.arr": {"$gt": 10.0}}
    assert "SORT" in stages(plan_of(coll.find(q).sort("b.arr", 1).explain()))
    assert [d["_id"] for d in coll.find(q).sort("b.arr", 1).limit(2)] == [11, 12]
    # a subpath scan ($exists) gives no order either
    assert "SORT" in stages(plan_of(coll.find({"b.d": {"$exists": True}}).sort("b.d", 1).explain()))


def test_hints(coll):
    """wildcard_index_hint.js."""
    c = coll.database.create_collection("h")
    with pytest.raises(OperationFailure) as e:
        c.database.command("find", "h", filter={"a": 1}, hint={"$**": 1})
    assert e.value.code == 2
    c.create_index([("$**", 1)])
    c.insert_many([{"_id": 10, "a": 1, "b": 1, "c": {"d": 1, "e": 1}}, {"_id": 11, "a": 1, "b": 2, "c": {"d": 2, "e": 2}},
                   {"_id": 12, "a": 2, "b": 2, "c": {"d": 1, "e": 2}}, {"_id": 13, "a": 2, "b": 1, "c": {"d": 2, "e": 2}},
                   {"_id": 14, "a": 2, "b": 2, "c": {"e": 2}}])
    c.create_index("a")
    for q, hint, name, want in [({"a": 1}, [("$**", 1)], "$**_1", [10, 11]), ({"a": 1}, "$**_1", "$**_1", [10, 11]),
                                ({"a": 1, "_id": 10}, [("$**", 1)], "$**_1", [10]), ({"a": 1}, [("a", 1)], "a_1", [10, 11]),
                                ({"c.d": 1}, [("$**", 1)], "$**_1", [10, 12]), ({"a": 1, "c.e": 1}, [("$**", 1)], "$**_1", [10])]:
        scans = ixscans(plan_of(c.find(q).hint(hint).explain()))
        assert scans and all(s["indexName"] == name for s in scans)
        assert ids(c.find(q).hint(hint)) == want
    c.create_index([("c.$**", 1)])
    with pytest.raises(OperationFailure) as e:
        c.database.command("find", "h", filter={"a": 1}, hint={"c.$**": 1})
    assert e.value.code == 291  # NoQueryExecutionPlans
    assert ids(c.find({"c.d": 1}).hint([("c.$**", 1)])) == [10, 12]
    with pytest.raises(OperationFailure) as e:
        c.database.command("find", "h", filter={"b": 1}, min={"a": 1}, hint={"$**": 1})
    assert e.value.code == 51174


def test_every_write_keeps_the_keys(coll):
    coll.create_index([("$**", 1)])
    assert ids(coll.find({"b.c": 5.0})) == [4]
    coll.update_one({"_id": 4}, {"$set": {"b.c": 500.0}})
    coll.update_one({"_id": 5}, {"$set": {"b.c": [5.0, 6.0]}})
    coll.replace_one({"_id": 6}, {"x": {"y": 5.0}})
    coll.delete_one({"_id": 7})
    coll.insert_one({"_id": 1000, "b": {"c": {"z": 1}}})
    for q in [{"b.c": 5.0}, {"b.c": 500.0}, {"b.c": 6.0}, {"x.y": 5.0}, {"b.d.e": {"$gte": 8.0, "$lt": 11.0}},
              {"b.c": {"$exists": True}}, {"b.c.z": 1}]:
        assert ids(coll.find(q)) == ids(coll.find(q).hint([("$natural", 1)])), q
        assert ixscans(plan_of(coll.find(q).explain())), q
    assert ids(coll.find({"b.c": 6.0})) == [5]
    scan = ixscans(plan_of(coll.find({"b.c": 6.0}).explain()))[0]
    assert scan["isMultiKey"] is True and scan["multiKeyPaths"]["b.c"] == ["b.c"]
    with coll.database.client.start_session() as s:  # inside a transaction: the index plus what it changed
        with s.start_transaction():
            coll.update_one({"_id": 8}, {"$set": {"b.c": 6.0}}, session=s)
            assert ids(coll.find({"b.c": 6.0}, session=s)) == [5, 8]
            assert ids(coll.find({"$or": [{"b.c": 6.0}, {"a": 9.0}]}, session=s)) == [5, 8, 9]
    assert ids(coll.find({"b.c": 6.0})) == [5, 8]


@pytest.mark.parametrize("key,opts,code", [
    ({"$**": 0}, {}, 67), ({"$**": 1}, {"sparse": True}, 67), ({"$**": 1}, {"unique": True}, 67),
    ({"$**": "hashed"}, {}, 67), ({"$**": 1}, {"expireAfterSeconds": 3600}, 67), ({"a.$**.$**": 1}, {}, 67),
    ({"$**": 1}, {"wildcardProjection": {"a": 1, "b": 0}}, 31254),
    ({"$**": 1}, {"wildcardProjection": {"a": 1, "b": "string"}}, 51271),
    ({"$**": 1}, {"wildcardProjection": {}}, 9), ({"a": 1}, {"wildcardProjection": {"a": 1, "b": 1}}, 2),
    ({"a.$**": 1}, {"wildcardProjection": "string"}, 14), ({"a.$**": 1}, {"wildcardProjection": {"a": 1}}, 9),
])
def test_spec_validation(coll, key, opts, code):
    """wildcard_index_validindex.js."""
    with pytest.raises(OperationFailure) as e:
        coll.create_index(list(key.items()), **opts)
    assert e.value.code == code


def test_valid_specs_are_listed(coll):
    for key, opts in [({"$**": 1}, {"wildcardProjection": {"_id": 1, "a": 0}}), ({"$**": -1}, {}),
                      ({"$**": 1}, {"partialFilterExpression": {"a": {"$gt": 0}}, "name": "p"})]:
        name = coll.create_index(list(key.items()), **opts)
        spec = next(s for s in coll.list_indexes() if s["name"] == name)
        assert spec["key"] == key and all(spec[k] == v for k, v in opts.items())
        coll.drop_index(name)
