"""Secondary indexes through pymongo, both topologies: what they answer, the plans they give, their rules.

Every answer is checked against what a collection scan gives (`hint({$natural: 1})`), and the
plan against the server's: the stage names, the index chosen, `indexBounds` as strings.
"""

from __future__ import annotations

import re

import pytest
from bson import Int64, MaxKey, MinKey
from pymongo.errors import DuplicateKeyError, OperationFailure, WriteError


def plan_of(explain: dict) -> dict:
    """The winning plan (of the first shard through mongos)."""
    wp = explain["queryPlanner"]["winningPlan"]
    return wp["shards"][0]["winningPlan"] if "shards" in wp else wp


def stats_of(explain: dict) -> dict:
    """The executionStats (of the first shard through mongos)."""
    es = explain["executionStats"]
    return es["executionStages"]["shards"][0] if "shards" in es["executionStages"] else es


def stages(plan: dict) -> list[str]:
    out = []
    while plan:
        out.append(plan["stage"])
        plan = plan.get("inputStage")
    return out


def ixscan(plan: dict) -> dict:
    while plan.get("stage") != "IXSCAN":
        plan = plan["inputStage"]
    return plan


@pytest.fixture
def coll(client, request):
    db = client[f"ix_{request.node.name.split('[')[0][-24:]}"]
    client.drop_database(db.name)
    c = db.c
    c.insert_many([{"_id": i, "a": i % 5, "b": i, "s": f"x{i:02d}", "tags": [i % 3, i % 3 + 10]} for i in range(30)])
    c.insert_many([{"_id": 100, "a": None}, {"_id": 101}, {"_id": 102, "a": [1, 4]}, {"_id": 103, "a": "str"}])
    return c


def natural(coll, flt, **kw):
    return list(coll.find(flt, **kw).hint([("$natural", 1)]))


@pytest.mark.parametrize("flt", [
    {"a": 3}, {"a": {"$gt": 2}}, {"a": {"$gte": 1, "$lt": 3}}, {"a": {"$in": [0, 4, "str"]}}, {"a": None},
    {"a": {"$ne": 1}}, {"a": {"$exists": False}}, {"a": {"$type": "string"}}, {"a": 1, "b": {"$gt": 10}},
    {"a": {"$nin": [1, 2]}}, {"s": {"$regex": "^x1"}}, {"tags": 11}, {"tags": {"$elemMatch": {"$gt": 1, "$lt": 12}}},
])
def test_answers_equal_a_collection_scan(coll, flt):
    coll.create_index("a")
    coll.create_index([("a", 1), ("b", -1)])
    coll.create_index("s")
    coll.create_index("tags")
    got = sorted(d["_id"] for d in coll.find(flt))
    assert got == sorted(d["_id"] for d in natural(coll, flt))


def test_equality_range_in_and_compound_prefix_plans(coll):
    coll.create_index("b")
    coll.create_index([("a", 1), ("b", -1)], name="a_b")
    p = plan_of(coll.find({"b": 7}).explain())
    assert stages(p) == ["FETCH", "IXSCAN"] and ixscan(p)["indexName"] == "b_1"
    assert ixscan(p)["indexBounds"] == {"b": ["[7, 7]"]}
    p = plan_of(coll.find({"b": {"$gt": 20}}).explain())
    assert ixscan(p)["indexBounds"] == {"b": ["(20, inf.0]"]} and ixscan(p)["direction"] == "forward"
    p = plan_of(coll.find({"b": {"$in": [3, 1]}}).explain())
    assert ixscan(p)["indexBounds"] == {"b": ["[1, 1]", "[3, 3]"]}
    p = plan_of(coll.find({"a": 2, "b": {"$lt": 10}}).explain())
    assert ixscan(p)["indexName"] == "a_b" and ixscan(p)["indexBounds"] == {"a": ["[2, 2]"], "b": ["(10, -inf.0]"]}
    p = plan_of(coll.find({"a": 2}).explain())
    assert ixscan(p)["indexBounds"] == {"a": ["[2, 2]"], "b": ["[MaxKey, MinKey]"]}
    assert [d["b"] for d in coll.find({"a": 2})] == [27, 22, 17, 12, 7, 2]  # index order: b descending
    p = plan_of(coll.find({"s": "x01"}).explain())
    assert stages(p) == ["COLLSCAN"] and p["filter"] == {"s": {"$eq": "x01"}}


def test_id_ranges_and_sorts_use_the_id_index(coll):
    p = plan_of(coll.find({"_id": {"$gte": 25}}).explain())
    assert stages(p) == ["FETCH", "IXSCAN"] and ixscan(p)["indexName"] == "_id_" and ixscan(p)["isUnique"] is True
    assert ixscan(p)["indexBounds"] == {"_id": ["[25, inf.0]"]}
    coll.insert_one({"_id": 26.5})
    assert [d["_id"] for d in coll.find({"_id": {"$gte": 25, "$lt": 100}})] == [25, 26, 26.5, 27, 28, 29]
    p = plan_of(coll.find({}).sort("_id", -1).limit(2).explain())
    assert stages(p) == ["LIMIT", "FETCH", "IXSCAN"] and ixscan(p)["direction"] == "backward"
    assert [d["_id"] for d in coll.find({}).sort("_id", -1).limit(2)] == [103, 102]


def test_sort_from_an_index_and_blocking_sorts(coll):
    coll.create_index("b")
    coll.create_index("tags")
    p = plan_of(coll.find({}).sort("b", -1).limit(3).explain())
    assert stages(p) == ["LIMIT", "FETCH", "IXSCAN"] and ixscan(p)["direction"] == "backward"
    assert ixscan(p)["indexBounds"] == {"b": ["[MaxKey, MinKey]"]}
    assert [d["b"] for d in coll.find({"b": {"$exists": True}}).sort("b", -1).limit(3)] == [29, 28, 27]
    p = plan_of(coll.find({"b": {"$gt": 3}}).sort("s", 1).skip(2).limit(2).explain())
    assert stages(p) == ["SKIP", "SORT", "FETCH", "IXSCAN"]
    sort = next(s for s in _walk(p) if s["stage"] == "SORT")
    assert sort["sortPattern"] == {"s": 1} and sort["limitAmount"] == 4
    p = plan_of(coll.find({}).sort("tags", 1).explain())  # a multikey index cannot give the order
    assert "SORT" in stages(p)
    assert [d["_id"] for d in coll.find({"_id": {"$lt": 30}}).sort([("tags", 1), ("_id", 1)]).limit(4)] == [0, 3, 6, 9]


def _walk(plan):
    while plan:
        yield plan
        plan = plan.get("inputStage")


def test_multikey_index(coll):
    coll.create_index([("tags", 1)])
    p = plan_of(coll.find({"tags": 10}).explain())
    ix = ixscan(p)
    assert ix["isMultiKey"] is True and ix["multiKeyPaths"] == {"tags": ["tags"]}
    assert sorted(d["_id"] for d in coll.find({"tags": 10})) == list(range(0, 30, 3))
    # two predicates may hold for two elements: a multikey field's bounds do not intersect
    p = plan_of(coll.find({"tags": {"$gt": 1, "$lt": 10}}).explain())
    assert len(ixscan(p)["indexBounds"]["tags"]) == 1 and "filter" in p
    assert sorted(d["_id"] for d in coll.find({"tags": {"$gt": 1, "$lt": 10}})) == \
        sorted(d["_id"] for d in natural(coll, {"tags": {"$gt": 1, "$lt": 10}}))
    ex = coll.find({"tags": {"$in": [0, 10]}}).explain()
    stats = ex["executionStats"]
    assert stats["nReturned"] == 10 and stats["totalKeysExamined"] == 20  # each document twice, once returned


def test_not_equal_to_null(coll):
    """{$ne: null} on an index without arrays on the path: [MinKey, undefined), (null, MaxKey]; on a
    multikey one, no index (planner_ixselect.cpp notEqualsNullCanUseIndex: an empty array's key is
    undefined, and a document with one matches)."""
    coll.create_index([("b", 1)])
    p = plan_of(coll.find({"b": {"$ne": None}}).explain())
    assert ixscan(p)["indexBounds"] == {"b": ["[MinKey, undefined)", "(null, MaxKey]"]}
    coll.create_index([("tags", 1)])
    coll.insert_one({"_id": 200, "tags": []})
    p = plan_of(coll.find({"tags": {"$ne": None}}, {"_id": 1}).explain())
    assert "IXSCAN" not in stages(p)
    assert 200 in [d["_id"] for d in coll.find({"tags": {"$ne": None}})]
    assert 200 in [d["_id"] for d in coll.find({"tags": {"$nin": [None, 7]}})]


def test_unique_index_duplicate_key_errors(coll):
    coll.delete_many({"b": {"$exists": False}})
    coll.create_index("b", unique=True)
    with pytest.raises(DuplicateKeyError) as e:
        coll.insert_one({"b": 7.0})
    assert e.value.code == 11000 and e.value.details["keyPattern"] == {"b": 1}
    assert e.value.details["keyValue"] == {"b": 7.0}
    assert "index: b_1 dup key: { b: 7.0 }" in e.value.details["errmsg"]
    with pytest.raises(DuplicateKeyError):
        coll.update_one({"_id": 3}, {"$set": {"b": 4}})
    with pytest.raises(DuplicateKeyError):
        coll.replace_one({"_id": 3}, {"b": Int64(5)})
    coll.update_one({"_id": 3}, {"$set": {"b": 3, "z": 1}})  # its own key again: fine
    with pytest.raises(OperationFailure) as e:
        coll.create_index("a", unique=True)
    assert e.value.code == 11000
    assert [ix["name"] for ix in coll.list_indexes()] == ["_id_", "b_1"]


def test_sparse_and_partial_unique(coll):
    coll.create_index("u", unique=True, sparse=True)
    coll.insert_many([{"x": 1}, {"x": 2}])  # missing u twice: not indexed
    coll.insert_one({"u": 1})
    with pytest.raises(DuplicateKeyError):
        coll.insert_one({"u": 1})
    coll.create_index("v", unique=True, partialFilterExpression={"v": {"$gt": 10}})
    coll.insert_many([{"v": 5}, {"v": 5}, {"v": 11}])
    with pytest.raises(DuplicateKeyError):
        coll.insert_one({"v": 11})


def test_sparse_index_rules(coll):
    coll.create_index("a", sparse=True, name="a_sparse")
    p = plan_of(coll.find({"a": None}).explain())  # {a: null} matches missing fields: not in a sparse index
    assert stages(p) == ["COLLSCAN"]
    assert sorted(d["_id"] for d in coll.find({"a": None})) == [100, 101]
    p = plan_of(coll.find({"a": 2}).explain())
    assert ixscan(p)["indexName"] == "a_sparse" and ixscan(p)["isSparse"] is True
    # hinted, a sparse index answers from what it holds, as on the server
    assert sorted(d["_id"] for d in coll.find({"a": None}).hint("a_sparse")) == [100]


def test_partial_index_used_only_when_the_query_implies_its_filter(coll):
    coll.create_index("b", partialFilterExpression={"a": {"$gte": 3}}, name="b_partial")
    p = plan_of(coll.find({"b": 8, "a": 3}).explain())
    assert ixscan(p)["indexName"] == "b_partial" and ixscan(p)["isPartial"] is True
    assert [d["_id"] for d in coll.find({"b": 8, "a": 3})] == [8]
    assert stages(plan_of(coll.find({"b": 8}).explain())) == ["COLLSCAN"]
    assert [d["_id"] for d in coll.find({"b": 8})] == [8]


def test_a_query_or_implies_a_partial_filter_when_every_branch_does(coll):
    """isSubsetOf's OR on the query side: {b: 8, $or: [{a: 3}, {a: {$gt: 5}, c: 1}]} is within
    {a: {$gte: 3}} (each branch is); with one branch outside it ({a: 1}) the index is not usable."""
    coll.create_index("b", partialFilterExpression={"a": {"$gte": 3}}, name="b_partial")
    inside = {"b": 8, "$or": [{"a": 3}, {"a": {"$gt": 5}, "c": 1}, {"$and": [{"a": {"$in": [4, 9]}}]}]}
    outside = {"b": 8, "$or": [{"a": 3}, {"a": 1}, {"a": {"$gt": 5}}]}
    assert ixscan(plan_of(coll.find(inside).explain()))["indexName"] == "b_partial"
    assert stages(plan_of(coll.find(outside).explain())) == ["COLLSCAN"]
    for q in (inside, outside):
        assert sorted(d["_id"] for d in coll.find(q)) == sorted(d["_id"] for d in coll.find(q).hint([("$natural", 1)]))


@pytest.mark.parametrize("q,bounds", [
    ({"b": {"$not": {"$gt": 5}}}, ["[MinKey, 5]", "(inf.0, MaxKey]"]),
    ({"b": {"$not": {"$lte": 20}}}, ["[MinKey, -inf.0)", "(20, MaxKey]"]),
    ({"b": {"$not": {"$in": [3, 1]}}}, ["[MinKey, 1)", "(1, 3)", "(3, MaxKey]"]),
    ({"b": {"$not": {"$eq": 7}}}, ["[MinKey, 7)", "(7, MaxKey]"]),
])
def test_a_negated_comparison_scans_its_complement(coll, q, bounds):
    """IndexBoundsBuilder::translate indexes a NOT by its child's bounds, complemented; the FETCH
    keeps the predicate (an array on the path may still match the child)."""
    coll.create_index("b")
    p = plan_of(coll.find(q).explain())
    assert stages(p) == ["FETCH", "IXSCAN"] and ixscan(p)["indexBounds"] == {"b": bounds}
    assert sorted(d["_id"] for d in coll.find(q)) == sorted(d["_id"] for d in coll.find(q).hint([("$natural", 1)]))


def test_negations_an_index_cannot_answer(coll):
    """A negated regex, $mod or $type, a negated comparison to an array, and a negated null on a
    multikey path (notEqualsNullCanUseIndex) scan the collection; so does a sparse index (the missing
    field matches a negation)."""
    coll.create_index("b")
    coll.create_index("tags")
    coll.create_index("s", sparse=True)
    for q in ({"b": {"$not": re.compile("^1")}}, {"b": {"$not": {"$mod": [2, 0]}}}, {"b": {"$not": {"$type": "int"}}},
              {"b": {"$not": {"$eq": [1, 2]}}}, {"tags": {"$not": {"$eq": None}}}, {"s": {"$not": {"$gt": "x1"}}}):
        assert stages(plan_of(coll.find(q).explain())) == ["COLLSCAN"], q
        assert sorted(d["_id"] for d in coll.find(q)) == sorted(d["_id"] for d in coll.find(q).hint([("$natural", 1)]))
    assert ixscan(plan_of(coll.find({"tags": {"$not": {"$gt": 5}}}).explain()))["indexName"] == "tags_1"


_IMPLIED, _NOT_IMPLIED = "IXSCAN", "COLLSCAN"


@pytest.mark.parametrize("path,pred,want", [
    ("a", {"$gt": 2}, _IMPLIED), ("a", {"$lte": 1}, _IMPLIED), ("a", 3, _IMPLIED), ("a", {"$in": [1, "str"]}, _IMPLIED),
    ("a", {"$ne": None}, _IMPLIED), ("a", {"$nin": [None, 1]}, _IMPLIED), ("a", {"$not": {"$eq": None}}, _IMPLIED),
    ("a", {"$not": {"$in": [2, None]}}, _IMPLIED), ("a", {"$exists": True}, _IMPLIED),
    ("a", {"$type": "null"}, _IMPLIED), ("a", {"$size": 2}, _IMPLIED), ("a", {"$mod": [2, 0]}, _IMPLIED),
    ("a", {"$regex": "^s"}, _IMPLIED), ("a", {"$elemMatch": {"$gt": 3}}, _IMPLIED), ("a", {"$all": [1, 4]}, _IMPLIED),
    ("n.a", {"$gte": 0}, _IMPLIED), ("n.a", {"$type": "number"}, _IMPLIED),
    ("n.a", {"$ne": None}, _NOT_IMPLIED), ("n.a", {"$nin": [None]}, _NOT_IMPLIED),  # (the server: implied; see below)
    ("a", None, _NOT_IMPLIED), ("a", {"$in": [1, None]}, _NOT_IMPLIED), ("a", {"$gte": None}, _NOT_IMPLIED),
    ("a", {"$ne": 1}, _NOT_IMPLIED), ("a", {"$nin": [1]}, _NOT_IMPLIED), ("a", {"$exists": False}, _NOT_IMPLIED),
    ("a", {"$not": {"$gt": 2}}, _NOT_IMPLIED), ("a", {"$bitsAllSet": 1}, _NOT_IMPLIED),
    ("a", {"$in": []}, _NOT_IMPLIED), ("n.a", None, _NOT_IMPLIED), ("n", {"$ne": None}, _NOT_IMPLIED),
])
def test_partial_index_with_an_exists_filter(coll, path, pred, want):
    """expression::isSubsetOf(query, {<path>: {$exists: true}}) (expression_algo.cpp, the overload for an
    ExistsMatchExpression): a comparison to anything but null, $in without null, $ne: null, $nin or
    $not: {$eq|$in} with null (not on a dotted path: see the next test), and $exists: true, $type, $size,
    $mod, $regex, $elemMatch on the same path. The index is on `b`, so only the implication decides the plan."""
    for i in (100, 101, 102, 103):
        coll.update_one({"_id": i}, {"$set": {"b": i}})
    coll.insert_many([{"_id": 200 + i, "b": 200 + i, "n": {"a": i}} for i in range(4)]
                     + [{"_id": 210, "b": 210, "n": {"c": 1}}, {"_id": 211, "b": 211, "n": {"a": None}}])
    coll.create_index("b", partialFilterExpression={"n.a" if path.startswith("n") else "a": {"$exists": True}},
                      name="b_partial")
    flt = {"b": {"$gte": 0}, path: pred}
    p = plan_of(coll.find(flt).explain())
    assert stages(p)[-1] == want
    if want == _IMPLIED:
        assert ixscan(p)["indexName"] == "b_partial"
    got = sorted(d["_id"] for d in coll.find(flt))
    assert got == sorted(d["_id"] for d in natural(coll, flt))
    assert got or pred == {"$in": []}


def test_partial_index_exists_filter_is_not_implied_by_a_dotted_null_negation(coll):
    """{"n.a": {$ne: null}} is a subset of {"n.a": {$exists: true}} for the server's isSubsetOf (paths
    compared as strings), yet {n: []} and {n: [5]} match the first only: the partial index never holds
    them, and the server's index scan misses them.  mongosim does not take the subset there (the results
    stay those of a collection scan); on a plain path it does."""
    coll.insert_many([{"_id": 200, "n": {"a": 1}}, {"_id": 201, "n": []}, {"_id": 202, "n": [5]}])
    coll.create_index("n.a", partialFilterExpression={"n.a": {"$exists": True}}, name="na_partial")
    for flt in ({"n.a": {"$ne": None}}, {"n.a": {"$nin": [None, 7]}}, {"n.a": {"$not": {"$eq": None}}}):
        assert stages(plan_of(coll.find(flt).explain())) == ["COLLSCAN"]
        assert sorted(d["_id"] for d in coll.find(flt)) == sorted(d["_id"] for d in natural(coll, flt)) == [200, 201, 202]
    assert ixscan(plan_of(coll.find({"n.a": {"$gt": 0}}).explain()))["indexName"] == "na_partial"


def test_hints(coll):
    coll.create_index("b")
    coll.create_index([("a", 1), ("b", 1)])
    assert ixscan(plan_of(coll.find({"a": 1}).hint("b_1").explain()))["indexBounds"] == {"b": ["[MinKey, MaxKey]"]}
    assert ixscan(plan_of(coll.find({"b": 1}).hint([("a", 1), ("b", 1)]).explain()))["indexName"] == "a_1_b_1"
    assert stages(plan_of(coll.find({"b": 1}).hint([("$natural", -1)]).explain())) == ["COLLSCAN"]
    assert plan_of(coll.find({"b": 1}).hint([("$natural", -1)]).explain())["direction"] == "backward"
    with pytest.raises(OperationFailure) as e:
        list(coll.find({"b": 1}).hint("nope"))
    assert e.value.code == 2 and e.value.details["codeName"] == "BadValue"
    assert "planner returned error :: caused by :: hint provided does not correspond to an existing index" \
        in e.value.details["errmsg"]
    with pytest.raises(OperationFailure) as e:
        coll.database.command({"find": coll.name, "hint": 5})
    assert e.value.code == 9  # FailedToParse: Hint must be a string or an object
    assert coll.count_documents({"b": {"$gt": 3}}, hint="b_1") == 26
    assert coll.database.command({"distinct": coll.name, "key": "a", "query": {"b": 4}, "hint": "b_1"})["values"] == [4]
    res = coll.update_many({"b": {"$lt": 3}}, {"$set": {"z": 1}}, hint=[("b", 1)])
    assert res.matched_count == 3
    assert coll.delete_one({"b": 2}, hint="b_1").deleted_count == 1
    assert coll.find_one_and_update({"b": 1}, {"$set": {"z": 2}}, hint="b_1")["_id"] == 1
    with pytest.raises(WriteError) as e:
        coll.update_one({"b": 1}, {"$set": {"z": 3}}, hint="nope")
    assert e.value.code == 2
    assert list(coll.aggregate([{"$match": {"b": 9}}], hint="b_1")) == [coll.find_one({"_id": 9})]


def test_min_max(coll):
    coll.create_index("b")
    got = [d["b"] for d in coll.find({}).hint("b_1").min([("b", 5)]).max([("b", 9)])]
    assert got == [5, 6, 7, 8]
    with pytest.raises(OperationFailure) as e:  # (pymongo refuses it itself: the command shows the server's error)
        coll.database.command({"find": coll.name, "min": {"b": 5}})
    assert e.value.code == 51173
    with pytest.raises(OperationFailure) as e:
        list(coll.find({}).hint("b_1").min([("a", 5)]))
    assert e.value.code == 51174
    with pytest.raises(OperationFailure) as e:
        list(coll.find({}).hint("b_1").min([("b", 9)]).max([("b", 5)]))
    assert e.value.code == 51175
    p = plan_of(coll.find({}).hint("b_1").min([("b", 5)]).max([("b", 9)]).explain())
    assert ixscan(p)["indexBounds"] == {} and ixscan(p)["startKey"] == {"b": 5} and ixscan(p)["endKey"] == {"b": 9}
    # (documents without b have the key null: inside [MinKey, 2))
    assert [d.get("b") for d in coll.find({}).hint("b_1").min([("b", MinKey())]).max([("b", 2)])] == \
        [None, None, None, None, 0, 1]
    assert [d["b"] for d in coll.find({"b": {"$ne": 28}}).hint("b_1").min([("b", 27)]).max([("b", MaxKey())])] \
        == [27, 29]


def test_return_key_and_show_record_id(coll):
    coll.create_index([("a", 1), ("b", -1)])
    keys = list(coll.find({"a": 2}, {"s": 1}, return_key=True).limit(2))
    assert keys == [{"a": 2, "b": 27}, {"a": 2, "b": 22}]
    assert list(coll.find({"b": 3}, return_key=True)) == [{}]  # a collection scan has no key
    docs = list(coll.find({"b": {"$lt": 2}}, {"b": 1, "_id": 0}, show_record_id=True))
    assert [d["b"] for d in docs] == [0, 1] and all(isinstance(d["$recordId"], int) for d in docs)
    assert docs[0]["$recordId"] < docs[1]["$recordId"]
    assert list(coll.find({"a": 2}, return_key=True, show_record_id=True).limit(1))[0].keys() == \
        {"a", "b", "$recordId"}


def test_hashed_index_equality(coll):
    coll.create_index([("s", "hashed")])
    p = plan_of(coll.find({"s": "x07"}).explain())
    assert ixscan(p)["indexName"] == "s_hashed" and "filter" in p
    assert [d["_id"] for d in coll.find({"s": {"$in": ["x07", "x08"]}}).sort("_id", 1)] == [7, 8]
    with pytest.raises(WriteError) as e:
        coll.insert_one({"s": ["x", "y"]})
    assert e.value.code == 16766


def test_text_index_spec(coll):
    with pytest.raises(OperationFailure) as e:  # (a text index's other fields hold no arrays: `a` has one)
        coll.create_index([("s", "text"), ("a", 1)], default_language="french")
    assert e.value.code == 201 and "Field 'a' of text index contains an array in document" in e.value.details["errmsg"]
    coll.create_index([("s", "text"), ("b", 1)], default_language="french")
    spec = [ix for ix in coll.list_indexes() if ix["name"] == "s_text_b_1"][0]
    assert dict(spec) == {"v": 2, "key": {"_fts": "text", "_ftsx": 1, "b": 1}, "name": "s_text_b_1",
                          "default_language": "french", "weights": {"s": 1}, "language_override": "language",
                          "textIndexVersion": 3}
    with pytest.raises(OperationFailure) as e:
        coll.create_index([("t", "text")])
    assert e.value.code == 67 and "only one text index per collection allowed" in e.value.details["errmsg"]


@pytest.mark.parametrize("pfe,code,reason", [
    ({"a": {"$ne": 1}}, 67, "Expression not supported in partial index: $not\n    a $eq 1\n"),
    ({"a": {"$exists": False}}, 67, "Expression not supported in partial index: $not\n    a exists\n"),
    ({"a": {"$regex": "^x"}}, 67, "Expression not supported in partial index: a regex /^x/\n"),
    ({"$expr": {"$gt": ["$a", 1]}}, 224, "$expr is not allowed in this context"),
])
def test_partial_filter_expression_validation(coll, pfe, code, reason):
    with pytest.raises(OperationFailure) as e:
        coll.create_index("b", partialFilterExpression=pfe)
    assert e.value.code == code
    assert e.value.details["errmsg"].startswith("Error in specification {")
    assert e.value.details["errmsg"].endswith(" :: caused by :: " + reason)


def test_partial_filter_expression_accepts_the_8_0_operators(coll):
    name = coll.create_index("b", partialFilterExpression={"a": {"$in": [1, 2]}, "$or": [{"b": {"$gt": 2}},
                                                                                          {"s": {"$type": "string"}}]})
    assert name == "b_1"
    with pytest.raises(OperationFailure) as e:
        coll.create_index("s", sparse=True, partialFilterExpression={"a": 1})
    assert 'cannot mix "partialFilterExpression" and "sparse" options' in e.value.details["errmsg"]


def test_transactions_read_and_write_through_indexes(client, coll):
    coll.delete_many({"b": {"$exists": False}})
    coll.create_index("b", unique=True)
    with client.start_session() as s:
        with s.start_transaction():
            coll.insert_one({"_id": 200, "b": 200}, session=s)
            coll.update_one({"_id": 5}, {"$set": {"b": 500}}, session=s)
            assert [d["_id"] for d in coll.find({"b": {"$gte": 200}}, session=s).sort("b", 1)] == [200, 5]
            assert coll.find_one({"b": 5}, session=s) is None
            assert [d["_id"] for d in coll.find({"b": {"$gte": 200}})] == []  # outside: not yet
            s.abort_transaction()
    assert coll.find_one({"b": 5})["_id"] == 5 and coll.find_one({"b": 200}) is None
    with client.start_session() as s:
        s.start_transaction()
        coll.insert_one({"_id": 201, "b": 201}, session=s)
        with pytest.raises(DuplicateKeyError):
            coll.insert_one({"_id": 202, "b": 201}, session=s)
        with pytest.raises(OperationFailure):  # the error ended the transaction
            s.commit_transaction()
    assert coll.find_one({"b": 201}) is None


def test_snapshot_reads_use_indexes_and_see_their_time(client, coll):
    coll.create_index("b")
    with client.start_session(snapshot=True) as s:
        assert [d["_id"] for d in coll.find({"b": {"$lt": 3}}, session=s)] == [0, 1, 2]
        coll.update_one({"_id": 1}, {"$set": {"b": 50}})
        coll.insert_one({"_id": 300, "b": -1})
        assert [d["_id"] for d in coll.find({"b": {"$lt": 3}}, session=s)] == [0, 1, 2]
    assert sorted(d["_id"] for d in coll.find({"b": {"$lt": 3}})) == [0, 2, 300]


def test_coll_mod_converts_an_index_to_unique(coll):
    db = coll.database
    coll.create_index("a")
    with pytest.raises(OperationFailure) as e:
        db.command("collMod", "c", index={"keyPattern": {"a": 1}, "unique": True})
    assert e.value.code == 72  # InvalidOptions: prepareUnique first
    reply = db.command("collMod", "c", index={"keyPattern": {"a": 1}, "prepareUnique": True})
    assert reply["prepareUnique_new"] is True
    with pytest.raises(DuplicateKeyError):  # new duplicates are refused ...
        coll.insert_one({"a": 3})
    coll.insert_one({"a": 77})  # ... new keys are fine
    with pytest.raises(OperationFailure) as e:  # ... existing duplicates stay, so no conversion yet
        db.command("collMod", "c", index={"keyPattern": {"a": 1}, "unique": True})
    assert e.value.code == 359 and e.value.details["codeName"] == "CannotConvertIndexToUnique"
    violations = e.value.details["violations"]
    assert sorted(v["ids"] for v in violations)[0] == [0, 5, 10, 15, 20, 25]
    coll.delete_many({"_id": {"$lt": 30}})
    coll.delete_many({"a": {"$exists": False}})
    db.command("collMod", "c", index={"keyPattern": {"a": 1}, "unique": True}, dryRun=True)
    assert not any(ix.get("unique") for ix in coll.list_indexes() if ix["name"] == "a_1")
    assert db.command("collMod", "c", index={"name": "a_1", "unique": True})["unique_new"] is True
    assert [ix.get("unique") for ix in coll.list_indexes() if ix["name"] == "a_1"] == [True]
    with pytest.raises(DuplicateKeyError):
        coll.insert_one({"a": 77})
    assert db.command("collMod", "c", index={"name": "a_1", "forceNonUnique": True})["forceNonUnique_new"] is True
    coll.insert_one({"a": 77})
    assert db.command("collMod", "c", index={"name": "a_1", "hidden": True})["hidden_new"] is True
    assert stages(plan_of(coll.find({"a": 77}).explain())) == ["COLLSCAN"]  # a hidden index is not used


def test_an_in_of_many_values_seeks_each_one(client):
    """An $in of 300 values is 300 seeks (more than the 200 scans the server explodes for a sort): the scan
    examines the keys in its intervals, not the whole index."""
    coll = client.ix_in_many.c
    coll.drop()
    coll.insert_many([{"_id": i, "a": i} for i in range(3000)])
    coll.create_index("a")
    q = {"a": {"$in": list(range(0, 3000, 10))}}
    stats = client.ix_in_many.command("explain", {"find": "c", "filter": q}, verbosity="executionStats")
    stats = stats["executionStats"]
    assert stats["nReturned"] == 300 and stats["totalKeysExamined"] <= 2 * 300
    assert sorted(d["_id"] for d in coll.find(q)) == list(range(0, 3000, 10))
