"""BSON value order, equality and type names (values.py)."""

from __future__ import annotations

import datetime
import functools
import re

from bson import Binary, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from hypothesis import given

from mongosim.shardsim.query.values import compare, hashable, sort_key, type_name
from tests.query.strategies import values
from tests.query._settings import QUERY_SETTINGS

CANONICAL = [
    MinKey(),
    None,
    -1,
    "a",
    {"a": 1},
    [1],
    Binary(b"x", 0),
    ObjectId("000000000000000000000001"),
    False,
    datetime.datetime(2020, 1, 1),
    Timestamp(1, 1),
    Regex("a"),
    MaxKey(),
]


def test_canonical_type_order():
    for i, a in enumerate(CANONICAL):
        for j, b in enumerate(CANONICAL):
            assert compare(a, b) == (i > j) - (i < j), (a, b)


def test_numbers_compare_numerically_across_types():
    assert compare(1, 1.0) == 0 and compare(Int64(1), Decimal128("1.0")) == 0
    assert compare(1, 1.5) < 0 and compare(Decimal128("2.5"), 2) > 0
    assert compare(float("nan"), -float("inf")) < 0 and compare(float("nan"), float("nan")) == 0
    assert compare(Decimal128("NaN"), float("nan")) == 0
    assert compare(2**62, float(2**62) + 2048.0) < 0


def test_strings_objects_arrays_bindata():
    assert compare("a", "b") < 0 and compare("B", "a") < 0 and compare("a", "ab") < 0
    assert compare({"a": 1}, {"a": 1, "b": 1}) < 0
    assert compare({"a": 1}, {"b": 0}) < 0  # field names before values
    assert compare({"a": "x"}, {"a": 1}) > 0  # value types before field names
    assert compare([1, 2], [1, 3]) < 0 and compare([], [0]) < 0
    assert compare(Binary(b"zz", 0), Binary(b"aaa", 0)) < 0  # length first
    assert compare(Binary(b"a", 0), Binary(b"a", 4)) < 0  # then subtype
    assert compare(False, True) < 0


def test_hashable_equality():
    assert hashable(1) == hashable(1.0) == hashable(Int64(1)) == hashable(Decimal128("1"))
    assert hashable(True) != hashable(1)
    assert hashable({"a": 1}) == hashable({"a": 1.0}) and hashable({"a": 1, "b": 2}) != hashable({"b": 2, "a": 1})
    assert len({hashable(x) for x in [1, 1.0, Int64(1), "1", True]}) == 3


def test_type_names():
    assert [type_name(v) for v in (1, 2**40, Int64(1), 1.5, Decimal128("1"), "s", {}, [], None, True)] == [
        "int", "long", "long", "double", "decimal", "string", "object", "array", "null", "bool",
    ]
    assert type_name(ObjectId()) == "objectId" and type_name(re.compile("x")) == "regex"
    assert type_name(datetime.datetime.now()) == "date" and type_name(Timestamp(0, 0)) == "timestamp"
    assert type_name(Binary(b"", 4)) == "binData" and type_name(MinKey()) == "minKey"


@QUERY_SETTINGS
@given(values(), values(), values())
def test_compare_is_a_total_order(a, b, c):
    assert compare(a, b) == -compare(b, a)
    if compare(a, b) <= 0 and compare(b, c) <= 0:
        assert compare(a, c) <= 0
    assert (compare(a, b) == 0) == (hashable(a) == hashable(b))


@QUERY_SETTINGS
@given(values(), values())
def test_sort_key_agrees_with_compare(a, b):
    ka, kb = sort_key(a), sort_key(b)
    assert ((ka > kb) - (ka < kb)) == compare(a, b)
    assert sorted([a, b], key=sort_key) == sorted([a, b], key=functools.cmp_to_key(compare))
