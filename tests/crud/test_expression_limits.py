"""Expressions whose results could be unbounded or overflow, through pymongo in both
topologies: the server's limits and errors, and the cluster keeps serving afterwards.

- `$range` refuses an array over internalQueryMaxRangeBytes (ExceededMemoryLimit, 146).
- overflow gives Infinity (`$pow`, `$exp`, `$add`, `$sum`, `$avg`), a negative base with a
  fractional exponent NaN, and domain errors their codes (28764, 28766, 28761, 28714).
- `$toDate` of a double beyond int64 milliseconds is ConversionFailure (241), which
  `$convert`'s onError replaces."""

from __future__ import annotations

import math

import pytest
from bson import Decimal128, Int64
from hypothesis import HealthCheck, given, settings
from pymongo.errors import OperationFailure

from tests.crud.conftest import shard_two_ways
from tests.query.strategies import numeric_expressions


@pytest.fixture
def coll(client):
    if client.topology_name == "sharded":
        shard_two_ways(client, "lim.c")
    c = client.lim.c
    c.insert_many([{"_id": 1, "k": 1, "x": 1e308}, {"_id": 2, "k": 150, "x": 1e308}])
    return c


def _one(coll, expr):
    return list(coll.aggregate([{"$match": {"_id": 1}}, {"$project": {"_id": 0, "r": expr}}]))[0]["r"]


def _code(coll, expr):
    with pytest.raises(OperationFailure) as e:
        _one(coll, expr)
    return e.value.code, e.value.details["errmsg"]


def test_range_over_the_memory_limit_is_refused_and_the_cluster_survives(coll):
    code, msg = _code(coll, {"$range": [0, 100000000]})
    assert code == 146
    assert msg == ("$range would use too much memory (1600000040 bytes) and cannot spill to disk. "
                   "Memory limit: 67108864 bytes")
    # the length counted is 1 + (end - start) / step: 4194304 elements of 16 bytes plus 24 is over
    code, msg = _code(coll, {"$range": [0, 2**31 - 1, 512]})
    assert (code, msg.split("(")[1]) == (146, "67108888 bytes) and cannot spill to disk. Memory limit: 67108864 bytes")
    assert _one(coll, {"$size": {"$range": [0, 2**31 - 1, 2**20]}}) == 2048
    assert _one(coll, {"$range": [5, 0, -2]}) == [5, 3, 1]
    assert coll.count_documents({}) == 2


def test_overflow_gives_infinity_and_nan(coll):
    assert _one(coll, {"$pow": [10, 400]}) == math.inf
    assert _one(coll, {"$pow": [10.0, 400]}) == math.inf
    assert math.isnan(_one(coll, {"$pow": [-8.0, 0.5]}))
    assert _one(coll, {"$pow": [3, 10**12]}) == math.inf
    assert _one(coll, {"$pow": [2, 62]}) == 2**62 and type(_one(coll, {"$pow": [2, 62]})) is Int64
    assert _one(coll, {"$pow": [2, 63]}) == 2.0**63
    assert _one(coll, {"$pow": [-1, 10**12 + 1]}) == -1
    assert _one(coll, {"$exp": 1000}) == math.inf
    assert _one(coll, {"$add": ["$x", "$x"]}) == math.inf
    assert _one(coll, {"$sum": [1e308, 1e308]}) == math.inf
    assert _one(coll, {"$avg": [1e308, 1e308]}) == math.inf
    assert _one(coll, {"$round": [1e300, 2]}) == 1e300
    assert _one(coll, {"$trunc": [1.298, 100]}) == 1.298
    assert _one(coll, {"$multiply": [Int64(2**62), Int64(2**62), Int64(2**62)]}) == 2.0**186
    got = list(coll.aggregate([{"$group": {"_id": None, "s": {"$sum": "$x"}, "a": {"$avg": "$x"}}}]))
    assert got == [{"_id": None, "s": math.inf, "a": math.inf}]


@pytest.mark.parametrize("expr, expected", [
    ({"$pow": [10, 2]}, 100), ({"$pow": [0.5, -1]}, 2.0), ({"$pow": [Int64(2), 2]}, Int64(4)),
    ({"$pow": [2, -1]}, 0.5), ({"$pow": [-1, -3]}, -1), ({"$pow": [46341, 2]}, Int64(2147488281)),
    ({"$pow": [Decimal128("10.0"), -2]}, Decimal128("0.01000000000000000000000000000000000")),
    ({"$pow": [0.5, Decimal128("-1")]}, Decimal128("2.000000000000000000000000000000000")),
    ({"$pow": [-2, Decimal128("2")]}, Decimal128("4.000000000000000000000000000000000")),
])
def test_pow_result_types(coll, expr, expected):
    """ExpressionPow (jstests/aggregation/expressions/pow.js): ints stay int when the power fits,
    a long when either is a long or it needs 64 bits, a double otherwise; decimals are normalized."""
    got = _one(coll, expr)
    assert (got, type(got)) == (expected, type(expected))


@pytest.mark.parametrize("expr, code", [
    ({"$pow": [0, -1]}, 28764), ({"$ln": 0}, 28766), ({"$ln": -1}, 28766), ({"$log10": 0}, 28761),
    ({"$sqrt": -4}, 28714), ({"$abs": Int64(-(2**63))}, 28680), ({"$round": [1, 101]}, 51083),
    ({"$toDate": 1e300}, 241), ({"$toInt": 1e300}, 241), ({"$toLong": math.nan}, 241),
    ({"$add": [{"$toDate": 0}, 1e300]}, 15), ({"$subtract": [{"$toDate": 0}, math.inf]}, 15),
])
def test_domain_errors_have_the_server_codes(coll, expr, code):
    assert _code(coll, expr)[0] == code


@pytest.mark.parametrize("expr, code, msg", [
    ({"$round": [7.5, "x"]}, 16004, "can't convert from BSON type string to long"),
    ({"$round": [7.5, math.nan]}, 31109, "Can't coerce out of range value nan to long"),
    ({"$round": [7.5, 1.5]}, 51082, "precision argument to  $round must be a integral value"),
    ({"$substrCP": ["abc", math.inf, 1]}, 34451,
     "$substrCP: starting index cannot be represented as a 32-bit integral value: inf"),
    ({"$substrBytes": ["abc", 1e300, 1]}, 31109, "Can't coerce out of range value 1e+300 to long"),
    ({"$slice": [[1, 2], math.nan]}, 28726, "Second argument to $slice can't be represented as a 32-bit integer: nan"),
    ({"$indexOfArray": [[1], 1, 1.5]}, 40096,
     "$indexOfArrayrequires an integral starting index, found a value of type: double, with value: 1.5"),
    ({"$indexOfCP": ["abc", "b", -1]}, 40097, "$indexOfCP requires a nonnegative starting index, found: -1"),
    ({"$filter": {"input": [1], "cond": True, "limit": math.inf}}, 327391,
     "$filter: limit must be represented as a 32-bit integral value: inf"),
    ({"$filter": {"input": [1], "cond": True, "limit": 0}}, 327392, "$filter: limit must be greater than 0: 0"),
    ({"$arrayElemAt": [[1], math.nan]}, 28691, "$arrayElemAt's second argument must be representable as a 32-bit integer: nan"),
])
def test_positions_and_counts_out_of_range(coll, expr, code, msg):
    assert _code(coll, expr) == (code, msg)


def test_strings_stop_at_the_buffer_ceiling(coll):
    """$concat and $replaceAll build in the server's StringBuilder: 64 MiB at most (13548)."""
    doubling = {"$reduce": {"input": {"$range": [0, 40]}, "initialValue": "ab",
                            "in": {"$concat": ["$$value", "$$value"]}}}
    assert _code(coll, {"$strLenBytes": doubling}) == (
        13548, "BufBuilder attempted to grow() to 134217728 bytes, past the 64MB limit.")
    growing = {"$reduce": {"input": {"$range": [0, 40]}, "initialValue": "ab",
                           "in": {"$replaceAll": {"input": "$$value", "find": "a", "replacement": "aaaa"}}}}
    assert _code(coll, {"$strLenBytes": growing})[0] == 13548
    assert _one(coll, {"$replaceAll": {"input": "abab", "find": "b", "replacement": "cc"}}) == "accacc"
    assert _one(coll, {"$mod": [math.inf, 2]}) != _one(coll, {"$mod": [math.inf, 2]})  # NaN, as C's fmod


@pytest.mark.parametrize("expr, msg", [
    ({"$toInt": 1e300}, "Conversion would overflow target type in $convert with no onError value: 1e+300"),
    ({"$toInt": 2147483647.5}, "Conversion would overflow target type in $convert with no onError value: 2.14748e+09"),
    ({"$toLong": math.nan}, "Attempt to convert NaN value to integer type in $convert with no onError value"),
    ({"$toInt": -math.inf}, "Attempt to convert infinity value to integer type in $convert with no onError value"),
    ({"$toInt": Int64(2**40)}, "Conversion would overflow target type in $convert with no onError value: "),
    ({"$toDate": 1e300}, "Conversion would overflow target type in $convert with no onError value: 1e+300"),
])
def test_conversion_failures_name_the_value_as_the_server(coll, expr, msg):
    assert _code(coll, expr) == (241, msg)


def test_convert_on_error_replaces_a_conversion_failure(coll):
    assert _one(coll, {"$convert": {"input": 1e300, "to": "date", "onError": "bad"}}) == "bad"
    assert _one(coll, {"$convert": {"input": "$x", "to": "long", "onError": None}}) is None


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(expr=numeric_expressions())
def test_no_expression_over_extreme_numbers_answers_internal_error(coll, expr):
    """Over the wire, in both topologies: an error reply is never InternalError (code 1), and the
    cluster still answers afterwards."""
    try:
        list(coll.aggregate([{"$project": {"_id": 0, "r": expr}}]))
    except OperationFailure as e:
        assert e.code != 1, (expr, e.details)
    assert coll.estimated_document_count() == 2


@pytest.mark.parametrize("op", ["$push", "$addToSet"])
def test_push_and_add_to_set_stop_at_100_mib(coll, op):
    """AccumulatorPush/AddToSet charge each value's approximate size against 100 MiB (146)."""
    big = "x" * 1000
    pipeline = [{"$match": {"_id": 1}}, {"$project": {"r": {"$range": [0, 150000]}}}, {"$unwind": "$r"},
                {"$group": {"_id": None, "a": {op: {"s": big, "r": "$r"}}}}]
    with pytest.raises(OperationFailure) as e:
        list(coll.aggregate(pipeline))
    assert e.value.code == 146
    assert e.value.details["errmsg"].startswith(f"{op} used too much memory and cannot spill to disk. ")
    assert e.value.details["errmsg"].endswith("Memory limit: 104857600 bytes")
    pipeline[1]["$project"]["r"]["$range"][1] = 1000  # (well below the limit)
    assert len(list(coll.aggregate(pipeline))[0]["a"]) == 1000
