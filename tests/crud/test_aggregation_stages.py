"""The joining, grouping and statistics stages through pymongo, on a replica set and through mongos
(sharded collections on both sides of a join)."""

from __future__ import annotations

import datetime

import pytest
from bson import BSON, Int64
from pymongo.errors import OperationFailure

from tests.crud.conftest import shard_two_ways

ORDERS = [{"_id": i, "k": i * 25, "item": ["almonds", "pecans", "bread"][i % 3], "qty": i % 4} for i in range(8)]
INVENTORY = [{"_id": n, "k": n * 40, "sku": sku, "instock": 10 * n} for n, sku in
             enumerate(["almonds", "pecans", "cashews"])] + [{"_id": 9, "k": 150}]


@pytest.fixture(params=["unsharded", "sharded"])
def db(client, request):
    """`orders` and `inventory` in a fresh database; on the sharded cluster, with param "sharded", both are
    sharded on {k: 1} with chunks on both shards."""
    db = client[f"aggst_{request.node.name.split('[')[0][-24:]}"]
    if request.param == "sharded":
        if client.topology_name != "sharded":
            pytest.skip("sharding applies to the sharded topology")
        shard_two_ways(client, f"{db.name}.orders", split=100)
        shard_two_ways(client, f"{db.name}.inventory", split=100)
    db.orders.insert_many(ORDERS)
    db.inventory.insert_many(INVENTORY)
    return db


def test_lookup_forms(db):
    eq = list(db.orders.aggregate([{"$lookup": {"from": "inventory", "localField": "item", "foreignField": "sku",
                                                "as": "inv"}}, {"$sort": {"_id": 1}}]))
    assert [[i["_id"] for i in o["inv"]] for o in eq] == [[0], [1], []] * 2 + [[0], [1]]
    pipe = list(db.orders.aggregate([
        {"$match": {"qty": {"$gte": 2}}},
        {"$lookup": {"from": "inventory", "let": {"it": "$item", "q": "$qty"},
                     "pipeline": [{"$match": {"$expr": {"$eq": ["$sku", "$$it"]}}},
                                  {"$project": {"_id": 0, "left": {"$subtract": ["$instock", "$$q"]}}}],
                     "as": "stock"}},
        {"$sort": {"_id": 1}}, {"$project": {"stock": 1}}]))
    assert pipe == [{"_id": 2, "stock": []}, {"_id": 3, "stock": [{"left": -3}]}, {"_id": 6, "stock": [{"left": -2}]},
                    {"_id": 7, "stock": [{"left": 7}]}]
    both = list(db.orders.aggregate([
        {"$lookup": {"from": "inventory", "localField": "item", "foreignField": "sku", "let": {"q": "$qty"},
                     "pipeline": [{"$project": {"_id": 0, "q": "$$q"}}], "as": "x"}},
        {"$group": {"_id": None, "n": {"$sum": {"$size": "$x"}}}}]))
    assert both == [{"_id": None, "n": 6}]


def test_union_with_graph_lookup_facet_bucket_auto(db):
    union = list(db.orders.aggregate([{"$project": {"_id": 1}}, {"$unionWith": {"coll": "inventory",
                                                                                "pipeline": [{"$project": {"sku": 1}}]}},
                                      {"$sort": {"_id": 1, "sku": 1}}]))
    assert len(union) == 12 and union[0] == {"_id": 0} and {"_id": 0, "sku": "almonds"} in union
    chain = list(db.inventory.aggregate([{"$match": {"_id": 0}}, {"$graphLookup": {
        "from": "orders", "startWith": "$k", "connectFromField": "qty", "connectToField": "k", "as": "reach",
        "depthField": "d"}}]))
    assert sorted((d["_id"], d["d"]) for d in chain[0]["reach"]) == [(0, Int64(0))]
    facet = list(db.orders.aggregate([{"$facet": {
        "n": [{"$count": "n"}],
        "buckets": [{"$bucketAuto": {"groupBy": "$k", "buckets": 2}}],
        "items": [{"$sortByCount": "$item"}, {"$sort": {"count": -1, "_id": 1}}]}}]))
    assert facet == [{"n": [{"n": 8}],
                      "buckets": [{"_id": {"min": 0, "max": 100}, "count": 4}, {"_id": {"min": 100, "max": 175}, "count": 4}],
                      "items": [{"_id": "almonds", "count": 3}, {"_id": "pecans", "count": 3}, {"_id": "bread", "count": 2}]}]
    sample = list(db.orders.aggregate([{"$sample": {"size": 3}}]))
    assert len(sample) == 3 and len({d["_id"] for d in sample}) == 3


def test_a_lookup_on_a_view_and_from_a_view(db):
    db.create_collection("instock", viewOn="inventory", pipeline=[{"$match": {"instock": {"$gt": 0}}}])
    out = list(db.orders.aggregate([{"$match": {"_id": {"$lt": 3}}},
                                    {"$lookup": {"from": "instock", "localField": "item", "foreignField": "sku", "as": "i"}},
                                    {"$sort": {"_id": 1}}, {"$project": {"n": {"$size": "$i"}}}]))
    assert out == [{"_id": 0, "n": 0}, {"_id": 1, "n": 1}, {"_id": 2, "n": 0}]
    out = list(db.instock.aggregate([{"$lookup": {"from": "orders", "localField": "sku", "foreignField": "item",
                                                  "as": "o"}}, {"$project": {"n": {"$size": "$o"}}}]))
    assert sorted((d["_id"], d["n"]) for d in out) == [(1, 3), (2, 0)]


def test_lookup_errors_are_the_servers(db):
    with pytest.raises(OperationFailure) as e:
        list(db.orders.aggregate([{"$lookup": {"from": "inventory", "as": "x", "localField": "a"}}]))
    assert e.value.code == 9 and "requires either 'pipeline' or both" in e.value.details["errmsg"]
    with pytest.raises(OperationFailure) as e:
        list(db.orders.aggregate([{"$facet": {"a": [{"$out": "z"}]}}]))
    assert e.value.code == 40600


def test_a_sharded_foreign_collection_is_refused_in_a_transaction(sharded_client):
    db = sharded_client.aggtxn
    shard_two_ways(sharded_client, "aggtxn.f")
    db.l.insert_one({"_id": 1, "k": 1})
    db.f.insert_one({"_id": 1, "k": 1})
    with sharded_client.start_session() as s:
        s.start_transaction()
        with pytest.raises(OperationFailure) as e:
            list(db.l.aggregate([{"$lookup": {"from": "f", "localField": "k", "foreignField": "k", "as": "x"}}],
                                session=s))
        assert e.value.code == 3904800
        s.abort_transaction()


def test_mongos_results_equal_the_replica_sets(clusters):
    """The same pipelines over the same documents: through mongos (collection sharded over two shards) and on a
    replica set, every pipeline (sorts total, groups sorted) gives the same documents."""
    from tests.crud.conftest import _client, _cluster, _cleanup

    pipelines = [
        [{"$match": {"qty": {"$gt": 0}}}, {"$addFields": {"t": {"$multiply": ["$qty", "$k"]}}},
         {"$sort": {"t": -1, "_id": 1}}, {"$limit": 3}],
        [{"$unwind": {"path": "$tags", "includeArrayIndex": "i"}}, {"$group": {"_id": "$tags", "n": {"$sum": 1},
                                                                               "first": {"$first": "$_id"}}},
         {"$sort": {"_id": 1}}],
        [{"$sort": {"k": 1}}, {"$group": {"_id": "$item", "firstK": {"$first": "$k"}, "ks": {"$push": "$k"},
                                         "top": {"$topN": {"n": 2, "sortBy": {"qty": -1, "_id": 1}, "output": "$_id"}}}},
         {"$sort": {"_id": 1}}],
        [{"$project": {"item": 1, "_id": 0}}, {"$skip": 2}, {"$count": "n"}],
        [{"$match": {"_id": {"$lt": 6}}}, {"$lookup": {"from": "c", "localField": "item", "foreignField": "item",
                                                      "as": "same"}},
         {"$project": {"n": {"$size": "$same"}}}, {"$sort": {"_id": 1}}],
        [{"$bucket": {"groupBy": "$k", "boundaries": [0, 50, 120, 200], "output": {"qs": {"$sum": "$qty"}}}}],
        [{"$bucketAuto": {"groupBy": "$k", "buckets": 3, "output": {"n": {"$sum": 1}, "q": {"$avg": "$qty"}}}}],
        [{"$facet": {"a": [{"$sortByCount": "$item"}, {"$sort": {"_id": 1}}],
                     "b": [{"$group": {"_id": None, "sd": {"$stdDevPop": "$k"},
                                       "m": {"$median": {"input": "$k", "method": "approximate"}}}}]}}],
        [{"$graphLookup": {"from": "c", "startWith": "$qty", "connectFromField": "qty", "connectToField": "_id",
                           "as": "r", "depthField": "d"}},
         {"$unwind": "$r"}, {"$sort": {"_id": 1, "r._id": 1}}, {"$project": {"r": "$r._id", "d": "$r.d"}}],
        [{"$unionWith": {"coll": "c", "pipeline": [{"$match": {"qty": 0}}]}}, {"$sort": {"_id": 1, "k": 1}}],
        [{"$sort": {"k": -1}}, {"$skip": 1}, {"$limit": 4},
         {"$lookup": {"from": "c", "let": {"q": "$qty"}, "as": "same",
                      "pipeline": [{"$match": {"$expr": {"$eq": ["$qty", "$$q"]}}}, {"$count": "n"}]}}],
        [{"$match": {"k": {"$gt": 1000}}}, {"$group": {"_id": None, "n": {"$sum": 1}}}],
    ]
    docs = [{**o, "tags": ["a", "b"][: o["_id"] % 3]} for o in ORDERS]
    results = {}
    for topology in ("sharded", "replset"):
        cl = _client(_cluster(clusters, topology))
        try:
            if topology == "sharded":
                shard_two_ways(cl, "aggeq.c", split=100)
            cl.aggeq.c.insert_many(docs)
            results[topology] = [list(cl.aggeq.c.aggregate(p)) for p in pipelines]
        finally:
            _cleanup(cl)
    assert results["sharded"] == results["replset"]


def test_coll_stats_index_stats_plan_cache_stats(client):
    db = client.aggstats
    db.c.insert_many([{"_id": i, "a": i} for i in range(5)])
    db.c.create_index("a")
    list(db.c.find({"a": 2}))
    list(db.c.find({"a": {"$gt": 2}}))
    stats = list(db.c.aggregate([{"$collStats": {"count": {}, "storageStats": {}, "latencyStats": {},
                                                 "queryExecStats": {}}}]))
    sharded = client.topology_name == "sharded"
    assert len(stats) == 1
    s = stats[0]
    assert list(s)[:4] == (["ns", "shard", "host", "localTime"] if sharded else ["ns", "host", "localTime", "latencyStats"])
    assert s["ns"] == "aggstats.c" and s["count"] == 5 and isinstance(s["localTime"], datetime.datetime)
    ss = s["storageStats"]
    assert list(ss)[:4] == ["size", "count", "avgObjSize", "numOrphanDocs"]
    assert ss["count"] == 5 and ss["nindexes"] == 2 and set(ss["indexSizes"]) == {"_id_", "a_1"}
    assert ss["scaleFactor"] == 1 and ss["totalSize"] == ss["storageSize"] + ss["totalIndexSize"]
    idx = {d["name"]: d for d in db.c.aggregate([{"$indexStats": {}}])}
    assert idx["a_1"]["accesses"]["ops"] == 2 and idx["a_1"]["key"] == {"a": 1} and idx["a_1"]["spec"]["name"] == "a_1"
    assert list(idx["a_1"])[:4] == ["name", "key", "host", "accesses"]
    assert list(db.c.aggregate([{"$planCacheStats": {}}])) == []
    with pytest.raises(OperationFailure) as e:
        list(db.c.aggregate([{"$collStats": {"bogus": {}}}]))
    assert e.value.code == 40415
    with pytest.raises(OperationFailure) as e:
        list(db.c.aggregate([{"$match": {}}, {"$collStats": {}}]))
    assert e.value.code == 40602


def test_current_op(client):
    ops = list(client.admin.aggregate([{"$currentOp": {"allUsers": True, "idleSessions": True}},
                                       {"$match": {"type": "op", "command.aggregate": 1}}]))
    assert ops and ops[0]["active"] is True and ops[0]["op"] == "command"
    if client.topology_name == "sharded":
        assert ops[0]["opid"].startswith(ops[0]["shard"] + ":")
    with client.start_session() as s:
        s.start_transaction()
        client.aggcurop.c.insert_one({"_id": 1}, session=s)
        idle = list(client.admin.aggregate([{"$currentOp": {}}, {"$match": {"type": "idleSession"}}]))
        assert any(d["lsid"]["id"] == s.session_id["id"] for d in idle)
        s.abort_transaction()
    with pytest.raises(OperationFailure) as e:
        list(client.aggcurop.c.aggregate([{"$currentOp": {}}]))
    assert e.value.code == 73
    with pytest.raises(OperationFailure) as e:
        list(client.admin.aggregate([{"$currentOp": {"bogus": True}}]))
    assert e.value.code == 9


def test_metadata_goes_through_the_join_stages(db):
    """A $text match's score and a $geoNear's distance stay with the documents through $lookup, $unionWith and
    $mergeObjects of $$ROOT (the server's Document keeps its metadata when a stage adds a field)."""
    db.orders.create_index([("item", "text")])
    out = list(db.orders.aggregate([
        {"$match": {"$text": {"$search": "almonds"}}},
        {"$lookup": {"from": "inventory", "localField": "item", "foreignField": "sku", "as": "inv"}},
        {"$replaceWith": {"$mergeObjects": ["$$ROOT", {"score": {"$meta": "textScore"}}]}},
        {"$addFields": {"size": {"$bsonSize": "$$ROOT"}}},
        {"$sort": {"_id": 1}}]))
    assert [o["_id"] for o in out] == [0, 3, 6]
    assert all(o["size"] == len(BSON.encode({k: v for k, v in o.items() if k != "size"})) for o in out)
    assert all(o["score"] > 0 and [i["_id"] for i in o["inv"]] == [0] for o in out)
    db.inventory.update_many({}, {"$set": {"loc": [0, 0]}})
    db.inventory.update_one({"_id": 1}, {"$set": {"loc": [0, 1]}})
    db.inventory.create_index([("loc", "2dsphere")])
    near = list(db.inventory.aggregate([
        {"$geoNear": {"near": {"type": "Point", "coordinates": [0, 1]}, "distanceField": "d", "spherical": True}},
        {"$lookup": {"from": "orders", "localField": "sku", "foreignField": "item", "as": "o"}},
        {"$addFields": {"again": {"$meta": "geoNearDistance"}}}]))
    assert near[0]["_id"] == 1 and near[0]["d"] == 0 and len(near[0]["o"]) == 3
    assert [n["again"] for n in near] == [n["d"] for n in near]
