"""$regexFind/$regexFindAll/$regexMatch, $replaceOne/$replaceAll, $sortArray, $zip,
trigonometry, $log, bitwise and timestamp expressions: results and the server's codes."""

from __future__ import annotations

import math

import pytest
from bson import Decimal128, Int64, Regex, Timestamp
from hypothesis import given, settings
from hypothesis import strategies as st

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.expressions import evaluate


def ev(expr, doc=None):
    return evaluate(expr, doc or {})


def test_regex_family():
    assert ev({"$regexFind": {"input": "a1b22", "regex": r"(\d)(x)?"}}) == {"match": "1", "idx": 1, "captures": ["1", None]}
    assert ev({"$regexFindAll": {"input": "a1b22", "regex": Regex(r"\d+")}}) == [
        {"match": "1", "idx": 1, "captures": []}, {"match": "22", "idx": 3, "captures": []}]
    assert ev({"$regexFindAll": {"input": "ab", "regex": ""}}) == [
        {"match": "", "idx": i, "captures": []} for i in range(3)]
    assert ev({"$regexFind": {"input": "héllo", "regex": "l+"}})["idx"] == 2  # code points
    assert ev({"$regexMatch": {"input": "ABC", "regex": "b", "options": "i"}}) is True
    assert ev({"$regexMatch": {"input": "ABC", "regex": Regex("b", "i")}}) is True
    assert ev({"$regexFind": {"input": None, "regex": "b"}}) is None
    assert ev({"$regexFindAll": {"input": "$missing", "regex": "b"}}) == []
    assert ev({"$regexMatch": {"input": "$missing", "regex": "b"}}) is False
    assert ev({"$regexFind": {"input": "abc", "regex": "z"}}) is None


def test_replace():
    assert ev({"$replaceOne": {"input": "aaa", "find": "a", "replacement": "b"}}) == "baa"
    assert ev({"$replaceAll": {"input": "aaa", "find": "a", "replacement": "b"}}) == "bbb"
    assert ev({"$replaceAll": {"input": "a.b", "find": ".", "replacement": "-"}}) == "a-b"  # not a regex
    assert ev({"$replaceOne": {"input": None, "find": "a", "replacement": "b"}}) is None
    assert ev({"$replaceAll": {"input": "x", "find": "$missing", "replacement": "b"}}) is None


def test_sort_array_and_zip():
    assert ev({"$sortArray": {"input": [3, 1, "a", None], "sortBy": 1}}) == [None, 1, 3, "a"]
    assert ev({"$sortArray": {"input": [3, 1, "a", None], "sortBy": -1}}) == ["a", 3, 1, None]
    assert ev({"$sortArray": {"input": [{"a": 2, "i": 0}, {"a": 1}, {"a": 2, "i": 1}], "sortBy": {"a": -1}}}) == [
        {"a": 2, "i": 0}, {"a": 2, "i": 1}, {"a": 1}]  # stable
    assert ev({"$sortArray": {"input": None, "sortBy": 1}}) is None
    assert ev({"$zip": {"inputs": [[1, 2, 3], ["a"]]}}) == [[1, "a"]]
    assert ev({"$zip": {"inputs": [[1, 2], ["a"]], "useLongestLength": True}}) == [[1, "a"], [2, None]]
    assert ev({"$zip": {"inputs": [[1, 2], ["a"]], "useLongestLength": True, "defaults": [0, "z"]}}) == [[1, "a"], [2, "z"]]
    assert ev({"$zip": {"inputs": [[1], "$missing"]}}) is None


def test_math():
    assert ev({"$sin": 0}) == 0.0 and ev({"$cos": 0}) == 1.0 and type(ev({"$tan": 0})) is float
    assert ev({"$atan2": [1, 1]}) == pytest.approx(math.pi / 4)
    assert ev({"$degreesToRadians": 180}) == pytest.approx(math.pi)
    assert ev({"$radiansToDegrees": math.pi}) == pytest.approx(180)
    assert isinstance(ev({"$sin": Decimal128("1")}), Decimal128)
    assert ev({"$acosh": 1}) == 0.0 and ev({"$sin": None}) is None
    assert ev({"$log": [100, 10]}) == pytest.approx(2.0) and ev({"$log": [8, None]}) is None
    assert ev({"$bitAnd": [12, 10]}) == 8 and ev({"$bitOr": [12, 10]}) == 14 and ev({"$bitXor": [12, 10]}) == 6
    assert type(ev({"$bitOr": [Int64(1), 2]})) is Int64 and ev({"$bitNot": 5}) == -6
    assert ev({"$bitAnd": [1, None]}) is None
    assert ev({"$tsSecond": Timestamp(5, 6)}) == Int64(5) and ev({"$tsIncrement": Timestamp(5, 6)}) == Int64(6)


@pytest.mark.parametrize(
    "expr, code",
    [
        ({"$regexFind": "x"}, 51103),
        ({"$regexFind": {"input": "a", "regex": "a", "x": 1}}, 31024),
        ({"$regexFind": {"regex": "a"}}, 31022),
        ({"$regexFindAll": {"input": "a"}}, 31023),
        ({"$regexMatch": {"input": 1, "regex": "a"}}, 51104),
        ({"$regexFind": {"input": "a", "regex": 1}}, 51105),
        ({"$regexFind": {"input": "a", "regex": "a", "options": 1}}, 51106),
        ({"$regexFind": {"input": "a", "regex": Regex("a", "i"), "options": "m"}}, 51107),
        ({"$regexFind": {"input": "a", "regex": "a", "options": "q"}}, 51108),
        ({"$regexFind": {"input": "a", "regex": "("}}, 51111),
        ({"$replaceOne": "x"}, 51751),
        ({"$replaceOne": {"input": "a", "find": "a", "replacement": "b", "x": 1}}, 51750),
        ({"$replaceAll": {"find": "a", "replacement": "b"}}, 51749),
        ({"$replaceAll": {"input": "a", "replacement": "b"}}, 51748),
        ({"$replaceAll": {"input": "a", "find": "a"}}, 51747),
        ({"$replaceAll": {"input": 1, "find": "a", "replacement": "b"}}, 51746),
        ({"$replaceAll": {"input": "a", "find": 1, "replacement": "b"}}, 51745),
        ({"$replaceAll": {"input": "a", "find": "a", "replacement": 1}}, 51744),
        ({"$sortArray": 1}, 2942500),
        ({"$sortArray": {"input": [], "sortBy": 1, "x": 1}}, 2942501),
        ({"$sortArray": {"sortBy": 1}}, 2942502),
        ({"$sortArray": {"input": []}}, 2942503),
        ({"$sortArray": {"input": 1, "sortBy": 1}}, 2942504),
        ({"$sortArray": {"input": [], "sortBy": 2}}, 2942505),
        ({"$zip": 1}, 34460),
        ({"$zip": {"inputs": [], "x": 1}}, 34464),
        ({"$zip": {}}, 34465),
        ({"$zip": {"inputs": 1}}, 34461),
        ({"$zip": {"inputs": [[1]], "useLongestLength": 1}}, 34463),
        ({"$zip": {"inputs": [[1]], "defaults": [1]}}, 34466),
        ({"$zip": {"inputs": [[1]], "useLongestLength": True, "defaults": 1}}, 34462),
        ({"$zip": {"inputs": [[1]], "useLongestLength": True, "defaults": [1, 2]}}, 34467),
        ({"$zip": {"inputs": [1]}}, 34468),
        ({"$sin": "a"}, 28765),
        ({"$sin": float("inf")}, 50989),
        ({"$asin": 2}, 50989),
        ({"$atanh": -1.5}, 50989),
        ({"$atan2": [1, "a"]}, 51044),
        ({"$log": ["a", 2]}, 28756),
        ({"$log": [2, "a"]}, 28757),
        ({"$log": [0, 2]}, 28758),
        ({"$log": [2, 1]}, 28759),
        ({"$bitAnd": [1, 1.5]}, 14),
        ({"$bitNot": "a"}, 14),
        ({"$tsSecond": 1}, 5687301),
        ({"$tsIncrement": 1}, 5687302),
    ],
)
def test_errors(expr, code):
    with pytest.raises(MongoError) as e:
        ev(expr)
    assert e.value.code == code


def test_bounded_trig_message_is_the_servers():
    with pytest.raises(MongoError) as e:
        ev({"$asin": 2})
    assert e.value.errmsg == "cannot apply $asin to 2, value must be in [-1,1]"


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-1000, 1000), max_size=8))
def test_sort_array_agrees_with_sorted(xs):
    assert ev({"$sortArray": {"input": xs, "sortBy": 1}}) == sorted(xs)
    assert ev({"$sortArray": {"input": xs, "sortBy": -1}}) == sorted(xs, reverse=True)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-(2**31), 2**31 - 1), min_size=1, max_size=5))
def test_bitwise_agrees_with_python(xs):
    and_, or_, xor = -1, 0, 0
    for x in xs:
        and_, or_, xor = and_ & x, or_ | x, xor ^ x
    assert (ev({"$bitAnd": xs}), ev({"$bitOr": xs}), ev({"$bitXor": xs})) == (and_, or_, xor)


def test_binary_and_bson_size():
    from bson import Binary

    assert ev({"$binarySize": "héllo"}) == 6 and ev({"$binarySize": Binary(b"abc", 0)}) == 3
    assert ev({"$bsonSize": {"$literal": {"a": 1}}}) == 12 and ev({"$bsonSize": None}) is None
    for expr, code in (({"$binarySize": 1}, 51276), ({"$bsonSize": 1}, 31393)):
        with pytest.raises(MongoError) as e:
            ev(expr)
        assert e.value.code == code
