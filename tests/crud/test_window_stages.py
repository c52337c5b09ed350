"""$setWindowFields, $densify and $fill through pymongo, on a replica set and through mongos (sharded
collections too): values from the server's jstests (setWindowFields/range.js, rank.js,
densify/doc_on_bound.js), the server's errors over the wire, explain's desugared stages and the
mongos split, change streams' refusal, and a property: sharded results equal unsharded ones."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

from tests.crud.conftest import shard_two_ways

RANGE_DOCS = [{"_id": i, "k": i * 30, "x": v} for i, v in enumerate((0, 1, 1.5, 2, 3, 100, 100, 101))]


@pytest.fixture(params=["unsharded", "sharded"])
def coll(client, request):
    db = client[f"win_{request.node.name.split('[')[0][-24:]}"]
    if request.param == "sharded":
        if client.topology_name != "sharded":
            pytest.skip("sharding applies to the sharded topology")
        shard_two_ways(client, f"{db.name}.c", split=100)
    db.c.insert_many(RANGE_DOCS)
    return db.c


def test_range_and_rank_values_follow_the_jstests(coll):
    out = list(coll.aggregate([{"$setWindowFields": {"sortBy": {"x": 1}, "output": {
        "y": {"$push": "$x", "window": {"range": [-1, 0]}},
        "r": {"$rank": {}}, "dr": {"$denseRank": {}},
        "s": {"$sum": "$x", "window": {"documents": ["unbounded", "current"]}}}}}, {"$unset": "_id"}]))
    assert [(d["x"], d["y"]) for d in out] == [(0, [0]), (1, [0, 1]), (1.5, [1, 1.5]), (2, [1, 1.5, 2]), (3, [2, 3]),
                                               (100, [100, 100]), (100, [100, 100]), (101, [100, 100, 101])]
    assert [d["r"] for d in out] == [1, 2, 3, 4, 5, 6, 6, 8]
    assert [d["dr"] for d in out] == [1, 2, 3, 4, 5, 6, 6, 7]
    assert [d["s"] for d in out] == [0, 1, 2.5, 4.5, 7.5, 107.5, 207.5, 308.5]


def test_densify_and_fill_through_the_driver(coll):
    coll.insert_many([{"_id": 100 + i, "k": 500 + i, "t": datetime.datetime(2023, 9, 12 + i), "orig": True}
                      for i in range(4)])
    out = list(coll.aggregate([
        {"$match": {"t": {"$exists": True}}},
        {"$densify": {"field": "t", "range": {"step": 6, "unit": "hour",
                                              "bounds": [datetime.datetime(2023, 9, 13), datetime.datetime(2023, 9, 16)]}}},
        {"$project": {"_id": 0, "t": 1, "orig": 1}}]))
    assert len(out) == 4 + 9 and [d["t"] for d in out] == sorted(d["t"] for d in out)
    assert sum(1 for d in out if d.get("orig")) == 4
    coll.insert_many([{"_id": 200 + i, "k": 600 + i, "f": i, "v": v} for i, v in enumerate([1, None, None, 7])])
    filled = list(coll.aggregate([{"$match": {"f": {"$exists": True}}},
                                  {"$fill": {"sortBy": {"f": 1}, "output": {"v": {"method": "linear"}}}},
                                  {"$project": {"_id": 0, "v": 1}}]))
    assert filled == [{"v": 1}, {"v": 3.0}, {"v": 5.0}, {"v": 7}]


def test_the_servers_errors_over_the_wire(coll):
    with pytest.raises(OperationFailure) as e:
        coll.aggregate([{"$setWindowFields": {"output": {"s": {"$sum": "$x", "window": {"range": [-1, 1]}}}}}])
    assert e.value.code == 5339902
    with pytest.raises(OperationFailure) as e:
        coll.aggregate([{"$setWindowFields": {"sortBy": {"x": 1}, "output": {"s": {"$summ": "$x"}}}}])
    assert e.value.code == 9 and "Unrecognized window function, $summ" in str(e.value)
    coll.insert_one({"_id": 99, "k": 99, "x": "text"})
    with pytest.raises(OperationFailure) as e:
        coll.aggregate([{"$setWindowFields": {"sortBy": {"x": 1}, "output": {
            "s": {"$sum": "$x", "window": {"range": [-1, 1]}}}}}])
    assert e.value.code == 5429414


def test_change_streams_refuse_them(client):
    coll = client.win_cs.c
    for stage in ({"$setWindowFields": {"output": {"n": {"$count": {}}}}},
                  {"$densify": {"field": "a", "range": {"step": 1, "bounds": "full"}}},
                  {"$fill": {"output": {"a": {"value": 1}}}}):
        with pytest.raises(OperationFailure) as e:
            coll.watch([stage])
        assert e.value.code == 20 and "is not permitted in a $changeStream pipeline" in str(e.value)


def test_explain_shows_the_desugared_stages(coll):
    pipeline = [{"$match": {"x": {"$gte": 0}}},
                {"$setWindowFields": {"partitionBy": "$p", "sortBy": {"x": 1}, "output": {"c": {"$count": {}}}}}]
    ex = coll.database.command("explain", {"aggregate": coll.name, "pipeline": pipeline, "cursor": {}},
                               verbosity="queryPlanner")
    internal = {"$_internalSetWindowFields": {"partitionBy": "$p", "sortBy": {"x": 1}, "output": {
        "c": {"$sum": {"$const": 1}, "window": {"documents": ["unbounded", "unbounded"]}}}}}
    sharded = coll.database.client.config.collections.find_one({"_id": coll.full_name}) is not None
    assert (ex.get("splitPipeline") is not None) == sharded
    if sharded:  # a sharded collection through mongos
        split = ex["splitPipeline"]
        assert split["shardsPart"] == [{"$match": {"x": {"$gte": 0}}}, {"$sort": {"sortKey": {"p": 1, "x": 1}}}]
        assert split["mergerPart"][0]["$mergeCursors"]["sort"] == {"p": 1, "x": 1}
        assert split["mergerPart"][1:] == [internal]
        body = next(iter(ex["shards"].values()))
    elif "shards" in ex:
        body = next(iter(ex["shards"].values()))
    else:
        body = ex
    # the desugared $sort goes into the query layer (a SORT stage of the $cursor), as the server's optimizer puts it
    assert [next(iter(s)) for s in body["stages"]] == ["$cursor", "$_internalSetWindowFields"]
    assert body["stages"][1] == internal
    assert _find_key(body["stages"][0], "sortPattern") == {"p": 1, "x": 1}
    for pipe, names in [([{"$densify": {"field": "x", "range": {"step": 1, "bounds": "full"}}}],
                         ["$cursor", "$_internalDensify"]),
                        ([{"$project": {"x": 1}}, {"$fill": {"sortBy": {"x": 1}, "output": {"y": {"value": 0}}}}],
                         ["$cursor", "$project", "$addFields"]),
                        ([{"$project": {"x": 1}}, {"$fill": {"sortBy": {"x": 1}, "output": {"y": {"method": "locf"}}}}],
                         ["$cursor", "$project", "$sort", "$_internalSetWindowFields"])]:
        ex = coll.database.command("explain", {"aggregate": coll.name, "cursor": {}, "pipeline": pipe},
                                   verbosity="queryPlanner")
        body = next(iter(ex["shards"].values())) if "shards" in ex else ex
        assert [next(iter(s)) for s in body["stages"]] == names


def _find_key(obj, key):
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        obj = list(obj.values())
    if isinstance(obj, list):
        for v in obj:
            found = _find_key(v, key)
            if found is not None:
                return found
    return None


_bound = st.one_of(st.just("unbounded"), st.just("current"), st.integers(-3, 3))


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # (each example empties the collections)
@given(rows=st.lists(st.tuples(st.integers(0, 2), st.integers(-20, 20)), min_size=1, max_size=12),
       lo=_bound, hi=_bound, op=st.sampled_from(["$sum", "$min", "$max", "$push", "$avg"]))
def test_sharded_results_equal_unsharded(sharded_client, rows, lo, hi, op):
    norm = lambda b: 0 if b == "current" else b  # noqa: E731
    if lo != "unbounded" and hi != "unbounded" and norm(lo) > norm(hi):
        lo, hi = hi, lo
    db = sharded_client.win_prop
    if "win_prop.sh" not in [c["_id"] for c in sharded_client.config.collections.find()]:
        shard_two_ways(sharded_client, "win_prop.sh", key="_id", split=6)
    db.sh.delete_many({})
    db.un.delete_many({})
    docs = [{"_id": i, "p": p, "v": v} for i, (p, v) in enumerate(rows)]
    db.sh.insert_many(docs)
    db.un.insert_many(docs)
    pipeline = [{"$setWindowFields": {"partitionBy": "$p", "sortBy": {"_id": 1}, "output": {
        "w": {op: "$v", "window": {"documents": [lo, hi]}}}}}]
    assert list(db.sh.aggregate(pipeline)) == list(db.un.aggregate(pipeline))
