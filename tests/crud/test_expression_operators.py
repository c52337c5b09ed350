"""The newer aggregation expressions through pymongo, in both topologies: on the sharded
cluster the collection spans both shards, so each shard evaluates them in its `$project`
and mongos merges."""

from __future__ import annotations

import datetime as dt

import pytest
from bson import Int64
from pymongo.errors import OperationFailure

from tests.crud.conftest import shard_two_ways


@pytest.fixture
def coll(client):
    if client.topology_name == "sharded":
        shard_two_ways(client, "ex.c")
    c = client.ex.c
    c.insert_many([
        {"_id": 1, "k": 1, "xs": [3, 1, 2], "ys": [2, 5], "s": "a1b22",
         "d": dt.datetime(2020, 11, 1, 18, 23, 36, 123000)},
        {"_id": 2, "k": 150, "xs": [10, 20], "ys": [20], "s": "zz",
         "d": dt.datetime(2021, 1, 31, 0, 0, 0)},
    ])
    return c


def _project(coll, spec):
    return [d for d in coll.aggregate([{"$sort": {"_id": 1}}, {"$project": {"_id": 0, **spec}}])]


def test_accumulators_and_sets(coll):
    got = _project(coll, {"sum": {"$sum": "$xs"}, "max": {"$max": "$xs"}, "avg": {"$avg": ["$k", 1]},
                          "u": {"$setUnion": ["$xs", "$ys"]}, "i": {"$setIntersection": ["$xs", "$ys"]},
                          "sub": {"$setIsSubset": ["$ys", "$xs"]}})
    assert got == [
        {"sum": 6, "max": 3, "avg": 1.0, "u": [1, 2, 3, 5], "i": [2], "sub": False},
        {"sum": 30, "max": 20, "avg": 75.5, "u": [10, 20], "i": [20], "sub": True},
    ]


def test_dates(coll):
    got = _project(coll, {
        "s": {"$dateToString": {"date": "$d", "format": "%Y-%m-%d %H:%M", "timezone": "America/New_York"}},
        "plus": {"$dateAdd": {"startDate": "$d", "unit": "month", "amount": 1}},
        "trunc": {"$dateTrunc": {"date": "$d", "unit": "week", "startOfWeek": "monday"}},
        "diff": {"$dateDiff": {"startDate": dt.datetime(2020, 1, 1), "endDate": "$d", "unit": "month"}},
        "wk": {"$isoWeek": "$d"},
    })
    assert got == [
        {"s": "2020-11-01 13:23", "plus": dt.datetime(2020, 12, 1, 18, 23, 36, 123000),
         "trunc": dt.datetime(2020, 10, 26), "diff": Int64(10), "wk": 44},
        {"s": "2021-01-30 19:00", "plus": dt.datetime(2021, 2, 28), "trunc": dt.datetime(2021, 1, 25),
         "diff": Int64(12), "wk": 4},
    ]
    parts = _project(coll, {"p": {"$dateFromParts": {"year": {"$year": "$d"}, "month": 1, "day": 1}}})
    assert parts == [{"p": dt.datetime(2020, 1, 1)}, {"p": dt.datetime(2021, 1, 1)}]


def test_strings_and_arrays(coll):
    got = _project(coll, {
        "all": {"$regexFindAll": {"input": "$s", "regex": "[0-9]+"}},
        "rep": {"$replaceAll": {"input": "$s", "find": "z", "replacement": "y"}},
        "sorted": {"$sortArray": {"input": "$xs", "sortBy": -1}},
        "zip": {"$zip": {"inputs": ["$xs", "$ys"]}},
        "bits": {"$bitOr": ["$k", 2]},
    })
    assert got[0] == {"all": [{"match": "1", "idx": 1, "captures": []}, {"match": "22", "idx": 3, "captures": []}],
                      "rep": "a1b22", "sorted": [3, 2, 1], "zip": [[3, 2], [1, 5]], "bits": 3}
    assert got[1] == {"all": [], "rep": "yy", "sorted": [20, 10], "zip": [[10, 20]], "bits": 150}


def test_errors_reach_the_client(coll):
    with pytest.raises(OperationFailure) as e:
        _project(coll, {"x": {"$dateTrunc": {"date": "$d", "unit": "fortnight"}}})
    assert e.value.code == 5439014
    with pytest.raises(OperationFailure) as e:
        _project(coll, {"x": {"$setUnion": ["$xs", "$s"]}})
    assert e.value.code == 17043
    with pytest.raises(OperationFailure) as e:
        _project(coll, {"x": {"$noSuchOp": 1}})
    assert e.value.code == 168
