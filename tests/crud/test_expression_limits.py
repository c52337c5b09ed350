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
from bson import Int64
from pymongo.errors import OperationFailure

from tests.crud.conftest import shard_two_ways


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


@pytest.mark.parametrize("expr, code", [
    ({"$pow": [0, -1]}, 28764), ({"$ln": 0}, 28766), ({"$ln": -1}, 28766), ({"$log10": 0}, 28761),
    ({"$sqrt": -4}, 28714), ({"$abs": Int64(-(2**63))}, 28680), ({"$round": [1, 101]}, 51083),
    ({"$toDate": 1e300}, 241), ({"$toInt": 1e300}, 241), ({"$toLong": math.nan}, 241),
])
def test_domain_errors_have_the_server_codes(coll, expr, code):
    assert _code(coll, expr)[0] == code


def test_convert_on_error_replaces_a_conversion_failure(coll):
    assert _one(coll, {"$convert": {"input": 1e300, "to": "date", "onError": "bad"}}) == "bad"
    assert _one(coll, {"$convert": {"input": "$x", "to": "long", "onError": None}}) is None
