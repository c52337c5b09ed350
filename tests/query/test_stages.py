"""Aggregation stages and expressions."""

from __future__ import annotations

import pytest
from bson import Int64

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.expressions import compile_expression
from mongosim.shardsim.query.stages import compile_stage, run_pipeline


def ev(expr, doc=None):
    return compile_expression(expr)(doc or {})


def test_change_stream_style_stages():
    event = {"_id": {"_data": "x"}, "operationType": "insert", "fullDocument": {"a": 1, "b": 2}, "ns": {"db": "d", "coll": "c"}}
    assert compile_stage({"$match": {"operationType": "insert"}})(event) is event
    assert compile_stage({"$match": {"operationType": "delete"}})(event) is None
    assert compile_stage({"$project": {"fullDocument.a": 1}})(event) == {"_id": {"_data": "x"}, "fullDocument": {"a": 1}}
    assert compile_stage({"$unset": ["ns", "fullDocument.b"]})(event) == {
        "_id": {"_data": "x"}, "operationType": "insert", "fullDocument": {"a": 1},
    }
    out = compile_stage({"$addFields": {"fullDocument.c": {"$add": ["$fullDocument.a", 10]}, "x": "$$REMOVE"}})(event)
    assert out["fullDocument"] == {"a": 1, "b": 2, "c": 11} and "x" not in out
    assert compile_stage({"$set": {"operationType": "$$REMOVE"}})(event).get("operationType") is None
    assert compile_stage({"$replaceRoot": {"newRoot": "$fullDocument"}})(event) == {"a": 1, "b": 2}
    assert compile_stage({"$replaceWith": {"$mergeObjects": ["$fullDocument", {"z": 1}]}})(event) == {"a": 1, "b": 2, "z": 1}


def test_replace_root_requires_an_object():
    with pytest.raises(MongoError) as e:
        compile_stage({"$replaceRoot": {"newRoot": "$missing"}})({"_id": 1})
    assert e.value.code == 40228


def test_redact():
    doc = {"_id": 1, "level": 1, "sub": {"level": 5, "x": 1}, "subs": [{"level": 1}, {"level": 9}]}
    stage = compile_stage({"$redact": {"$cond": [{"$lte": ["$level", 3]}, "$$DESCEND", "$$PRUNE"]}})
    assert stage(doc) == {"_id": 1, "level": 1, "subs": [{"level": 1}]}
    assert compile_stage({"$redact": "$$KEEP"})(doc) is doc
    with pytest.raises(MongoError) as e:
        compile_stage({"$redact": 1})(doc)
    assert e.value.code == 17053


def test_unknown_stage_and_bad_shape():
    with pytest.raises(MongoError) as e:
        compile_stage({"$foo": {}})
    assert e.value.code == 40324 and e.value.errmsg == "Unrecognized pipeline stage name: '$foo'"
    with pytest.raises(MongoError) as e:
        list(run_pipeline([], [{"$match": {}, "$project": {"a": 1}}]))
    assert e.value.code == 40323


def test_run_pipeline_blocking_stages():
    docs = [{"_id": i, "g": i % 2, "v": i} for i in range(6)]
    out = list(run_pipeline(docs, [
        {"$match": {"v": {"$gte": 1}}},
        {"$group": {"_id": "$g", "s": {"$sum": "$v"}, "avg": {"$avg": "$v"}, "mx": {"$max": "$v"},
                    "first": {"$first": "$v"}, "all": {"$push": "$v"}, "set": {"$addToSet": "$g"}, "n": {"$count": {}}}},
        {"$sort": {"_id": 1}},
    ]))
    assert out == [
        {"_id": 0, "s": 6, "avg": 3.0, "mx": 4, "first": 2, "all": [2, 4], "set": [0], "n": 2},
        {"_id": 1, "s": 9, "avg": 3.0, "mx": 5, "first": 1, "all": [1, 3, 5], "set": [1], "n": 3},
    ]
    assert list(run_pipeline(docs, [{"$sort": {"v": -1}}, {"$skip": 1}, {"$limit": 2}, {"$project": {"v": 1, "_id": 0}}])) == [{"v": 4}, {"v": 3}]
    assert list(run_pipeline(docs, [{"$count": "n"}])) == [{"n": 6}]
    assert list(run_pipeline([], [{"$count": "n"}])) == []
    assert list(run_pipeline([{"_id": 1, "a": [1, 2]}], [{"$unwind": {"path": "$a", "includeArrayIndex": "i"}}])) == [
        {"_id": 1, "a": 1, "i": Int64(0)}, {"_id": 1, "a": 2, "i": Int64(1)},
    ]
    assert list(run_pipeline(docs, [{"$sortByCount": "$g"}]))[0] == {"_id": 0, "count": 3}


def test_expressions():
    doc = {"a": 2, "b": [1, 2, 3], "s": "Hello", "o": {"x": 1}}
    assert ev({"$add": ["$a", 1, 1.5]}, doc) == 4.5
    assert ev({"$add": [2147483647, 1]}) == 2147483648 and type(ev({"$add": [2147483647, 1]})) is Int64
    assert ev({"$subtract": ["$a", 5]}, doc) == -3 and ev({"$multiply": [2, "$a"]}, doc) == 4
    assert ev({"$divide": [1, 4]}) == 0.25 and ev({"$mod": [-5, 3]}) == -2
    assert ev({"$cond": [{"$gt": ["$a", 1]}, "big", "small"]}, doc) == "big"
    assert ev({"$ifNull": ["$missing", None, 7]}) == 7
    assert ev({"$switch": {"branches": [{"case": False, "then": 1}], "default": 2}}) == 2
    assert ev({"$concat": ["$s", " ", "w"]}, doc) == "Hello w" and ev({"$concat": ["$s", "$missing"]}, doc) is None
    assert ev({"$toUpper": "$s"}, doc) == "HELLO" and ev({"$substrCP": ["$s", 1, 3]}, doc) == "ell"
    assert ev({"$in": [2, "$b"]}, doc) is True and ev({"$size": "$b"}, doc) == 3
    assert ev({"$arrayElemAt": ["$b", -1]}, doc) == 3
    assert ev({"$map": {"input": "$b", "as": "x", "in": {"$multiply": ["$$x", 10]}}}, doc) == [10, 20, 30]
    assert ev({"$filter": {"input": "$b", "cond": {"$gt": ["$$this", 1]}}}, doc) == [2, 3]
    assert ev({"$reduce": {"input": "$b", "initialValue": 0, "in": {"$add": ["$$value", "$$this"]}}}, doc) == 6
    assert ev({"$type": "$missing"}) == "missing" and ev({"$type": "$a"}, doc) == "int"
    assert ev({"$toString": 5}) == "5" and ev({"$toInt": "12"}) == 12 and ev({"$toLong": 1}) == Int64(1)
    assert ev({"$mergeObjects": ["$o", {"y": 2}]}, doc) == {"x": 1, "y": 2}
    assert ev({"$getField": "s"}, doc) == "Hello"
    assert ev({"$setField": {"field": "a.b", "input": {}, "value": 1}}) == {"a.b": 1}
    assert ev({"$let": {"vars": {"z": 3}, "in": {"$add": ["$$z", "$a"]}}}, doc) == 5
    assert ev("$b.x", {"b": [{"x": 1}, {"y": 2}, {"x": 3}]}) == [1, 3]
    assert ev({"$literal": "$a"}) == "$a"
    assert ev({"$eq": ["$missing", None]}) is False and ev({"$lt": ["$missing", None]}) is True


@pytest.mark.parametrize(
    "expr, code",
    [
        ({"$foo": 1}, 168),
        ({"$add": ["a", 1]}, 16554),
        ({"$divide": [1, 0]}, 16608),
        ({"$size": 1}, 17124),
        ({"$concat": [1]}, 16702),
        ({"$eq": [1]}, 16020),
        ({"$arrayElemAt": [1, 0]}, 28689),
    ],
)
def test_expression_errors(expr, code):
    with pytest.raises(MongoError) as e:
        ev(expr)
    assert e.value.code == code
    if code == 168:
        assert e.value.code_name == "InvalidPipelineOperator" and e.value.errmsg == "Unrecognized expression '$foo'"
