"""Accumulator expressions ($sum...$stdDevSamp outside $group) and set expressions,
with the server's results and error codes (ExpressionFromAccumulator, ExpressionSet*)."""

from __future__ import annotations

import math

import pytest
from bson import Decimal128, Int64
from hypothesis import given, settings
from hypothesis import strategies as st

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.expressions import evaluate


def ev(expr, doc=None):
    return evaluate(expr, doc or {})


def test_accumulators_over_one_array_or_over_the_arguments():
    doc = {"a": [1, 2, 3.5, "x", None], "n": 4}
    assert ev({"$sum": "$a"}, doc) == 6.5
    assert ev({"$sum": ["$n", 1]}, doc) == 5
    assert ev({"$sum": [[1, 2], 5]}) == 5  # an array among several arguments is not a number
    assert ev({"$sum": [[1, 2]]}) == 3  # one argument that is an array: its elements
    assert ev({"$sum": "$missing"}) == 0 and type(ev({"$sum": []})) is int
    assert ev({"$sum": "$n"}, doc) == 4
    big = ev({"$sum": [2147483647, 1]})
    assert big == 2147483648 and type(big) is Int64
    assert type(ev({"$sum": [Int64(2**63 - 1), 1]})) is float
    assert ev({"$sum": [1, Decimal128("0.1")]}) == Decimal128("1.1")
    assert ev({"$avg": "$a"}, doc) == pytest.approx(6.5 / 3) and ev({"$avg": [1, 2]}) == 1.5
    assert ev({"$avg": ["x", None]}) is None
    assert ev({"$avg": [Decimal128("1"), 2]}) == Decimal128("1.5")
    assert ev({"$max": "$a"}, doc) == "x" and ev({"$min": "$a"}, doc) == 1
    assert ev({"$max": [[1, 5], 3]}) == [1, 5]  # arrays sort after numbers
    assert ev({"$min": [None, "$missing"]}) is None and ev({"$min": []}) is None
    assert ev({"$stdDevPop": [1, 2, 3, 4]}) == pytest.approx(math.sqrt(1.25))
    assert ev({"$stdDevSamp": [[1, 2, 3, 4]]}) == pytest.approx(math.sqrt(5 / 3))
    assert ev({"$stdDevSamp": [1]}) is None and ev({"$stdDevPop": ["a"]}) is None
    assert ev({"$stdDevPop": [5]}) == 0.0


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-(2**40), 2**40), max_size=8))
def test_sum_of_integers_is_exact_and_widens(xs):
    got = ev({"$sum": [xs]})
    assert got == sum(xs)
    assert type(got) is (int if all(-(2**31) <= x < 2**31 for x in xs) and -(2**31) <= sum(xs) < 2**31 else Int64)


def test_set_operators():
    assert ev({"$setUnion": [[3, 1], [2, 1.0], []]}) == [1, 2, 3]  # BSON order, duplicates collapse
    assert ev({"$setUnion": [[1], None]}) is None and ev({"$setUnion": []}) == []
    assert ev({"$setIntersection": [[3, 1, 2, "a"], [2, 1.0, "a"]]}) == [1, 2, "a"]
    assert ev({"$setIntersection": [[1], "$missing"]}) is None
    assert ev({"$setDifference": [[3, 1, 3, 2], [2]]}) == [3, 1]  # first array's order
    assert ev({"$setDifference": [None, [1]]}) is None
    assert ev({"$setEquals": [[1, 2], [2, 1, 1], [1.0, 2]]}) is True
    assert ev({"$setEquals": [[1, 2], [1]]}) is False
    assert ev({"$setIsSubset": [[1, 1], [2, 1]]}) is True and ev({"$setIsSubset": [[3], [1]]}) is False
    assert ev({"$anyElementTrue": [[0, None, 1]]}) is True and ev({"$anyElementTrue": [[0, False]]}) is False
    assert ev({"$allElementsTrue": [[]]}) is True and ev({"$allElementsTrue": [[1, [], 0]]}) is False


@pytest.mark.parametrize(
    "expr, code, msg",
    [
        ({"$setUnion": [[1], 2]}, 17043, "All operands of $setUnion must be arrays. One argument is of type: int"),
        ({"$setIntersection": ["a"]}, 17047, "All operands of $setIntersection must be arrays. One argument is of type: string"),
        ({"$setDifference": [1, [1]]}, 17048, "both operands of $setDifference must be arrays. First argument is of type: int"),
        ({"$setDifference": [[1], 1]}, 17049, "both operands of $setDifference must be arrays. Second argument is of type: int"),
        ({"$setDifference": [[1]]}, 16020, None),
        ({"$setEquals": [[1]]}, 17045, "$setEquals needs at least two arguments had: 1"),
        ({"$setEquals": [[1], None]}, 17044, "All operands of $setEquals must be arrays. 2-th argument is of type: null"),
        ({"$setIsSubset": [None, [1]]}, 17046, "both operands of $setIsSubset must be arrays. First argument is of type: null"),
        ({"$setIsSubset": [[1], "$missing"]}, 17042, "both operands of $setIsSubset must be arrays. Second argument is of type: missing"),
        ({"$anyElementTrue": [1]}, 17041, "$anyElementTrue's argument must be an array, but is int"),
        ({"$allElementsTrue": [1]}, 17040, "$allElementsTrue's argument must be an array, but is int"),
        ({"$anyElementTrue": [[1], [2]]}, 16020, None),
    ],
)
def test_set_errors(expr, code, msg):
    with pytest.raises(MongoError) as e:
        ev(expr)
    assert e.value.code == code
    if msg:
        assert e.value.errmsg == msg


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=6), st.lists(st.integers(0, 5), max_size=6))
def test_sets_agree_with_python_sets(a, b):
    assert ev({"$setUnion": [a, b]}) == sorted(set(a) | set(b))
    assert ev({"$setIntersection": [a, b]}) == sorted(set(a) & set(b))
    assert set(ev({"$setDifference": [a, b]})) == set(a) - set(b)
    assert ev({"$setIsSubset": [a, b]}) is (set(a) <= set(b))
    assert ev({"$setEquals": [a, b]}) is (set(a) == set(b))
