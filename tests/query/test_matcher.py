"""Unit tests of Matcher: the server's query semantics (src/mongo/db/matcher/)."""

from __future__ import annotations

import re

import pytest
from bson import Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.matcher import Matcher


def m(flt, doc) -> bool:
    return Matcher(flt).matches(doc)


def test_equality_and_arrays():
    assert m({"a": 1}, {"a": 1.0}) and m({"a": 1}, {"a": Int64(1)}) and m({"a": 1}, {"a": Decimal128("1")})
    assert not m({"a": 1}, {"a": True}) and not m({"a": True}, {"a": 1})
    assert m({"a": 1}, {"a": [2, 1]})
    assert m({"a": [1, 2]}, {"a": [1, 2]}) and m({"a": [1, 2]}, {"a": [[1, 2], 3]})
    assert not m({"a": [1, 2]}, {"a": [2, 1]})
    assert not m({"a": 1}, {"a": [[1]]})
    assert m({"a": {"b": 1}}, {"a": {"b": 1}}) and not m({"a": {"b": 1}}, {"a": {"b": 1, "c": 2}})


def test_dotted_paths():
    assert m({"a.b": 1}, {"a": [{"b": 2}, {"b": 1}]})
    assert m({"a.1": 5}, {"a": [1, 5]}) and m({"a.1": 5}, {"a": {"1": 5}})
    assert m({"a.0.b": 1}, {"a": [{"b": 1}]})
    assert not m({"a.b": 1}, {"a": [[{"b": 1}]]})  # nested arrays are not entered


def test_null_and_missing():
    assert m({"a": None}, {}) and m({"a": None}, {"a": None}) and m({"a": None}, {"a": [1, None]})
    assert not m({"a": None}, {"a": []})
    assert m({"a.b": None}, {"a": 5})  # a path through a scalar is missing
    assert m({"a.b": None}, {"a": [{"c": 1}]})
    assert not m({"a.b": None}, {"a": [1, 2]})
    assert m({"a": {"$gte": None}}, {}) and m({"a": {"$lte": None}}, {"a": None})
    assert not m({"a": {"$gt": None}}, {"a": None}) and not m({"a": {"$lt": None}}, {})
    assert m({"a": {"$ne": None}}, {"a": 1}) and not m({"a": {"$ne": None}}, {})
    assert m({"a": {"$in": [None]}}, {})


def test_type_bracketing():
    assert not m({"a": {"$gt": 1}}, {"a": "x"})
    assert m({"a": {"$gt": "a"}}, {"a": "b"})
    assert m({"a": {"$gt": 1}}, {"a": [0, 5]})
    assert m({"a": {"$lt": [2]}}, {"a": [1]})  # whole-array comparison
    assert m({"a": {"$gt": MinKey()}}, {"a": "x"}) and m({"a": {"$lt": MaxKey()}}, {"a": {}})
    assert m({"a": {"$gt": MinKey()}}, {}) and not m({"a": {"$gt": MaxKey()}}, {"a": 1})


def test_nan():
    nan = float("nan")
    assert m({"a": nan}, {"a": nan}) and m({"a": {"$gte": nan}}, {"a": nan})
    assert not m({"a": {"$lt": 0}}, {"a": nan}) and not m({"a": {"$gt": 0}}, {"a": nan})
    assert not m({"a": {"$gt": nan}}, {"a": 1})


def test_negations_see_the_whole_path():
    assert not m({"a": {"$ne": 1}}, {"a": [1, 2]})
    assert not m({"a": {"$nin": [1]}}, {"a": [1, 2]})
    assert m({"a": {"$not": {"$gt": 5}}}, {"a": [1, 2]}) and not m({"a": {"$not": {"$gt": 1}}}, {"a": [1, 2]})
    assert m({"$nor": [{"a": 1}]}, {"a": 2})


def test_exists_type_size_all_mod():
    assert m({"a": {"$exists": True}}, {"a": None}) and m({"a": {"$exists": False}}, {})
    assert m({"a.b": {"$exists": True}}, {"a": [{}, {"b": 1}]})
    assert m({"a": {"$type": "number"}}, {"a": Int64(1)}) and m({"a": {"$type": "array"}}, {"a": []})
    assert m({"a": {"$type": "int"}}, {"a": [1.5, 2]}) and m({"a": {"$type": 2}}, {"a": "s"})
    assert m({"a": {"$type": ["string", "null"]}}, {"a": None})
    assert m({"a": {"$size": 2}}, {"a": [1, [2, 3]]}) and not m({"a": {"$size": 1}}, {"a": 2})
    assert m({"a": {"$all": [1, 2]}}, {"a": [2, 3, 1]}) and not m({"a": {"$all": []}}, {"a": [1]})
    assert m({"a": {"$all": [{"$elemMatch": {"b": 1}}]}}, {"a": [{"b": 1}]})
    assert m({"a": {"$mod": [3, -2]}}, {"a": -5})  # C++ remainder truncates toward zero
    assert m({"a": {"$mod": [2, 1]}}, {"a": 3.9})


def test_elem_match_and_positions():
    flt = {"a": {"$elemMatch": {"b": 1, "c": 2}}}
    assert m(flt, {"a": [{"b": 1, "c": 2}]}) and not m(flt, {"a": [{"b": 1}, {"c": 2}]})
    assert Matcher({"a": {"$elemMatch": {"$gt": 1, "$lt": 3}}}).match_position({"a": [0, 2]}) == (True, 1)
    assert Matcher({"a.b": 5}).match_position({"a": [{"b": 1}, {"b": 5}]}) == (True, 1)
    assert Matcher({"a": 5}).match_position({"a": [1, 5]}) == (True, 1)
    assert Matcher({"x": 1, "a": {"$gt": 1}}).match_position({"x": 1, "a": [0, 3]}) == (True, 1)
    assert Matcher({"a": 1}).match_position({"a": 1}) == (True, None)


def test_regex():
    assert m({"a": re.compile("^x")}, {"a": "xyz"}) and m({"a": {"$regex": "^X", "$options": "i"}}, {"a": "xy"})
    assert m({"a": {"$in": [Regex("b$"), 7]}}, {"a": "ab"})
    assert m({"a": Regex("^a")}, {"a": ["b", "ab"]})
    assert m({"a": {"$eq": Regex("x")}}, {"a": Regex("x")}) and not m({"a": {"$eq": Regex("x")}}, {"a": "x"})
    assert m({"a": {"$not": re.compile("^x")}}, {"a": "y"})


def test_expr():
    assert m({"$expr": {"$gt": ["$a", "$b"]}}, {"a": 2, "b": 1})
    assert not m({"$expr": {"$eq": ["$missing", None]}}, {})
    assert m({"$expr": "$a"}, {"a": 1}) and not m({"$expr": "$a"}, {"a": 0})


def test_other_types():
    oid = ObjectId()
    assert m({"_id": oid}, {"_id": oid}) and not m({"_id": str(oid)}, {"_id": oid})
    assert m({"a": {"b": [1, {"c": 2}]}}, {"a": {"b": [1, {"c": 2}]}})


@pytest.mark.parametrize(
    "flt, code, msg",
    [
        ({"a": {"$foo": 1}}, 2, "unknown operator: $foo"),
        ({"$foo": 1}, 2, "unknown top level operator: $foo. If you have a field name that starts with a '$' symbol, consider using $getField or $setField."),
        ({"a": {"$in": 1}}, 2, "$in needs an array"),
        ({"$or": []}, 2, "$or must be a nonempty array"),
        ({"$and": [1]}, 2, "$or/$and/$nor entries need to be full objects"),
        ({"a": {"$elemMatch": 1}}, 2, "$elemMatch needs an Object"),
        ({"a": {"$type": "foo"}}, 2, "Unknown type name alias: foo"),
        ({"a": {"$mod": [0, 1]}}, 2, "divisor cannot be 0"),
        ({"a": {"$options": "i"}}, 2, "$options needs a $regex"),
        ({"a": {"$not": 1}}, 2, "$not needs a regex or a document"),
    ],
)
def test_parse_errors(flt, code, msg):
    with pytest.raises(MongoError) as e:
        Matcher(flt)
    assert e.value.code == code and e.value.errmsg == msg


def test_array_offsets_follow_path_cpp():
    # an offset into a nested array continues traversing that array (path.cpp, IN_ARRAY)
    assert m({"a.0.b": 1}, {"a": [[{"b": 1}]]})
    # documents inside an array are searched for the numeric field first, then by offset
    assert m({"a.0": 7}, {"a": [{"0": 7}]}) and m({"a.0": {"x": 1}}, {"a": [{"x": 1}]})
    assert not m({"a.01": 5}, {"a": [5]})
    # the offset of the outermost implicit traversal is the match position
    assert Matcher({"a.b": 2}).match_position({"a": [{"b": [1]}, {"b": [3, 2]}]}) == (True, 1)
    assert Matcher({"a.1": 5}).match_position({"a": [1, 5]}) == (True, None)


@pytest.mark.parametrize(
    "arg, msg",
    [("x", "$size needs a number"), (1.5, "$size must be a whole number"), (-1, "$size may not be negative")],
)
def test_size_errors(arg, msg):
    with pytest.raises(MongoError) as e:
        Matcher({"a": {"$size": arg}})
    assert e.value.code == 2 and e.value.errmsg == msg
