"""Secondary indexes of time-series collections, as 8.0 translates them onto the buckets
(jstests/core/timeseries/ddl/timeseries_index*.js), through pymongo in both topologies."""

from __future__ import annotations

import datetime

import pytest
from bson import ObjectId
from pymongo.errors import OperationFailure

T0 = datetime.datetime(2000, 1, 1)


@pytest.fixture
def db(client, request):
    db = client[f"tsi_{request.node.name.split('[')[0][-24:]}"]
    client.drop_database(db.name)
    return db


def _indexes(coll) -> list[dict]:
    return [dict(i) for i in coll.list_indexes()]


def _bucket_indexes(coll) -> list[dict]:
    return [dict(i) for i in coll.database[f"system.buckets.{coll.name}"].list_indexes()]


def test_a_new_collection_has_the_meta_time_index(db):
    db.create_collection("w", timeseries={"timeField": "time", "metaField": "m"})
    assert _indexes(db.w) == [{"v": 2, "name": "m_1_time_1", "key": {"m": 1, "time": 1}}]
    assert _bucket_indexes(db.w) == [
        {"v": 2, "name": "m_1_time_1", "key": {"meta": 1, "control.min.time": 1, "control.max.time": 1}}]
    db.create_collection("nometa", timeseries={"timeField": "time"})
    assert _indexes(db.nometa) == [] and _bucket_indexes(db.nometa) == []


def test_keys_translate_both_ways(db):
    db.create_collection("w", timeseries={"timeField": "tm", "metaField": "mm"})
    w = db.w
    w.drop_index("mm_1_tm_1")
    w.create_index([("mm.tag", 1), ("tm", -1)], name="meta_time")
    w.create_index([("x", 1)], name="x_1")
    w.create_index([("x", -1), ("mm", 1)], name="x_desc")
    w.create_index([("loc", "2dsphere")], name="loc")
    buckets = {i["name"]: i for i in _bucket_indexes(w)}
    assert buckets["meta_time"]["key"] == {"meta.tag": 1, "control.max.tm": -1, "control.min.tm": -1}
    assert "originalSpec" not in buckets["meta_time"]
    assert buckets["x_1"]["key"] == {"control.min.x": 1, "control.max.x": 1}
    assert buckets["x_1"]["originalSpec"] == {"key": {"x": 1}, "name": "x_1", "v": 2}
    assert buckets["x_desc"]["key"] == {"control.max.x": -1, "control.min.x": -1, "meta": 1}
    assert buckets["loc"]["key"] == {"data.loc": "2dsphere_bucket"}
    user = {i["name"]: i for i in _indexes(w)}
    assert user["meta_time"] == {"v": 2, "key": {"mm.tag": 1, "tm": -1}, "name": "meta_time"}
    assert user["x_1"] == {"key": {"x": 1}, "name": "x_1", "v": 2}  # the original spec as given
    assert user["x_desc"]["key"] == {"x": -1, "mm": 1}
    assert user["loc"]["key"] == {"loc": "2dsphere"}
    # an index made directly on the buckets maps back when it can
    db.command("createIndexes", "system.buckets.w", indexes=[
        {"key": {"control.min.y": 1, "control.max.y": 1}, "name": "y"},
        {"key": {"control.min.z": 1}, "name": "z"}])
    user = {i["name"]: i for i in _indexes(w)}
    assert user["y"]["key"] == {"y": 1} and "originalSpec" not in user["y"] and "z" not in user
    w.drop_index([("x", 1)])
    w.drop_index("loc")
    assert sorted(i["name"] for i in _indexes(w)) == ["meta_time", "x_desc", "y"]


def test_refused_indexes(db):
    db.create_collection("w", timeseries={"timeField": "time", "metaField": "m"})
    for keys, opts, code, text in [
        ([("x", "text")], {}, 72, "Text indexes are not supported on time-series collections"),
        ([("m", 1)], {"unique": True}, 72, "Unique indexes are not supported on time-series collections"),
        ([("x", 1)], {"sparse": True}, 72, "Sparse indexes are not supported on time-series measurements"),
        ([("x", "hashed")], {}, 67, "Indexes on measurement fields must be ascending or descending (numbers only), "
                                    "or '2dsphere'"),
        ([("time", "hashed")], {}, 67, "Indexes on the time field must be ascending or descending (numbers only)"),
        ([("x", 1)], {"partialFilterExpression": {"x": {"$gt": 5}}, "collation": {"locale": "en"}}, 85,
         "partialFilterExpression and collation arguments are incompatible"),
        ([("x", 1)], {"expireAfterSeconds": 10}, 72, "require a partialFilterExpression on the metaField"),
        ([("x", 1)], {"partialFilterExpression": {"x": None}}, 5916301,
         "Error translating non-metadata time-series predicate to operate on buckets"),
    ]:
        with pytest.raises(OperationFailure) as e:
            db.w.create_index(keys, **opts)
        assert e.value.code == code and text in str(e.value), (keys, opts, e.value)
    db.w.create_index([("m", 1)], sparse=True)  # sparse is fine on the meta field
    db.w.create_index([("time", 1)], expireAfterSeconds=60, partialFilterExpression={"m": "a"}, name="ttl")
    [ttl] = [i for i in _bucket_indexes(db.w) if i["name"] == "ttl"]
    assert ttl["key"] == {"control.min.time": 1} and ttl["partialFilterExpression"] == {"meta": {"$eq": "a"}}
    with pytest.raises(OperationFailure) as e:
        db.w.drop_index([("x", "text")])
    assert e.value.code == 27


@pytest.mark.parametrize("predicate, expected", [
    ({"a": 5}, {"$and": [{"control.min.a": {"$_internalExprLte": 5}}, {"control.max.a": {"$_internalExprGte": 5}}]}),
    ({"a": {"$exists": True}}, {"$and": [{"control.min.a": {"$exists": True}}, {"control.max.a": {"$exists": True}}]}),
    ({"$or": [{"m.a": {"$lt": 5}}, {"m.b": {"$lt": 6}}]}, {"$or": [{"meta.a": {"$lt": 5}}, {"meta.b": {"$lt": 6}}]}),
    ({"$or": [{"a": {"$lt": 5}}, {"m.b": {"$lt": 6}}]},
     {"$or": [{"control.min.a": {"$_internalExprLt": 5}}, {"meta.b": {"$lt": 6}}]}),
    ({"m.a": {"$in": [1, 2]}}, {"meta.a": {"$in": [1, 2]}}),
    ({"time": {"$lt": datetime.datetime(2020, 1, 1)}},
     {"$and": [{"control.min.time": {"$_internalExprLt": datetime.datetime(2020, 1, 1)}},
               {"control.max.time": {"$_internalExprLt": datetime.datetime(2020, 1, 1, 1)}},
               {"_id": {"$lt": ObjectId("5e0be1000000000000000000")}}]}),
    ({"time": {"$gt": datetime.datetime(2020, 1, 1)}},
     {"$and": [{"control.max.time": {"$_internalExprGt": datetime.datetime(2020, 1, 1)}},
               {"control.min.time": {"$_internalExprGt": datetime.datetime(2019, 12, 31, 23)}},
               {"_id": {"$gt": ObjectId("5e0bd2f0ffffffffffffffff")}}]}),
    ({"time": {"$eq": datetime.datetime(2020, 1, 1)}},
     {"$and": [{"control.min.time": {"$_internalExprLte": datetime.datetime(2020, 1, 1)}},
               {"control.min.time": {"$_internalExprGte": datetime.datetime(2019, 12, 31, 23)}},
               {"control.max.time": {"$_internalExprGte": datetime.datetime(2020, 1, 1)}},
               {"control.max.time": {"$_internalExprLte": datetime.datetime(2020, 1, 1, 1)}},
               {"_id": {"$lte": ObjectId("5e0be100ffffffffffffffff")}},
               {"_id": {"$gte": ObjectId("5e0bd2f00000000000000000")}}]}),
    ({"$and": [{"time": {"$gt": T0}}, {"m.bucket": {"$gte": "B"}}, {"b": {"$gte": 0}}]},
     {"meta.bucket": {"$gte": "B"},
      "$and": [{"$and": [{"control.max.time": {"$_internalExprGt": T0}},
                         {"control.min.time": {"$_internalExprGt": datetime.datetime(1999, 12, 31, 23)}},
                         {"_id": {"$gt": ObjectId("386d3570ffffffffffffffff")}}]},
               {"control.max.b": {"$_internalExprGte": 0}}]}),
])
def test_partial_filters_become_bucket_predicates(db, predicate, expected):
    db.create_collection("w", timeseries={"timeField": "time", "metaField": "m"})
    db.w.create_index([("a", 1)], name="p", partialFilterExpression=predicate)
    [p] = [i for i in _bucket_indexes(db.w) if i["name"] == "p"]
    assert p["partialFilterExpression"] == expected
    assert p["originalSpec"]["partialFilterExpression"] == predicate


@pytest.mark.parametrize("predicate", [{"a": {}}, {"a": [1]}, {"time": 7}, {"a": None}, {"a": {"$ne": None}},
                                       {"$or": [{}, {"a": {}}]}, {"a": {"$in": [None]}}, {"a": {"$exists": False}}])
def test_partial_filters_without_a_bucket_form_are_refused(db, predicate):
    db.create_collection("w", timeseries={"timeField": "time", "metaField": "m"})
    with pytest.raises(OperationFailure) as e:
        db.w.create_index([("a", 1)], partialFilterExpression=predicate)
    assert e.value.code == 5916301


def test_queries_use_bucket_indexes_with_the_answers_of_a_scan(db):
    db.create_collection("w", timeseries={"timeField": "time", "metaField": "m"})
    docs = [{"time": T0 + datetime.timedelta(minutes=7 * i), "m": {"s": i % 3}, "x": (i * 37) % 101, "_id": i}
            for i in range(300)]
    db.w.insert_many(docs)
    db.w.create_index([("x", 1)])
    indexed = [{"m": {"s": 1}}, {"x": {"$gte": 50, "$lt": 60}}, {"x": 17},
               {"m": {"s": 2}, "time": {"$lt": T0 + datetime.timedelta(hours=3)}}]
    scanned = [{"m.s": 1}, {"time": {"$gte": T0 + datetime.timedelta(hours=10)}}, {"$or": [{"x": 3}, {"m.s": 0}]}]
    for q in indexed + scanned:
        plan = str(db.command("explain", {"find": "w", "filter": q}, verbosity="queryPlanner"))
        assert ("IXSCAN" in plan) == (q in indexed), (q, plan)
        assert sorted(d["_id"] for d in db.w.find(q)) == sorted(d["_id"] for d in docs if _matches(d, q)), q
    # a hint names the user's index
    assert sorted(d["_id"] for d in db.w.find({"x": 17}).hint([("x", 1)])) == [d["_id"] for d in docs if d["x"] == 17]
    assert db.w.count_documents({"x": 17}, hint="m_1_time_1") == sum(1 for d in docs if d["x"] == 17)


def _matches(doc, q) -> bool:
    from mongosim.shardsim.query.matcher import Matcher

    return Matcher(q).matches(doc)


def test_list_indexes_shows_the_options_of_each_index(db):
    """createTimeseriesIndexFromBucketsIndex: an index on the meta and time fields is the bucket index
    with its key mapped back (every other option of the bucket index kept: hidden, sparse, a TTL's
    expireAfterSeconds, collation...); one with an `originalSpec` (a measurement field, a partial
    filter) is that spec as the user gave it (v added).  So collMod's `hidden` shows on the first
    kind, not on the second (it changes the bucket index, not its originalSpec: updateHiddenSetting)."""
    db.create_collection("w", timeseries={"timeField": "t", "metaField": "m"})
    w = db.w
    w.create_index([("m.a", 1)], name="meta_hidden", hidden=True)
    w.create_index([("m.b", 1)], name="meta_sparse", sparse=True)
    w.create_index([("m.c", 1)], name="meta_collation", collation={"locale": "fr"})
    w.create_index([("t", 1)], name="ttl", expireAfterSeconds=60, partialFilterExpression={"m": "x"})
    w.create_index([("x", 1)], name="x_hidden", hidden=True)
    w.create_index([("m.d", 1)], name="meta_later")
    w.create_index([("y", 1)], name="y_later")
    db.command("collMod", "w", index={"name": "meta_later", "hidden": True})
    db.command("collMod", "w", index={"name": "y_later", "hidden": True})
    user = {i["name"]: i for i in _indexes(w)}
    assert user["meta_hidden"] == {"v": 2, "key": {"m.a": 1}, "name": "meta_hidden", "hidden": True}
    assert user["meta_sparse"] == {"v": 2, "key": {"m.b": 1}, "name": "meta_sparse", "sparse": True}
    assert user["meta_collation"]["key"] == {"m.c": 1} and user["meta_collation"]["collation"]["locale"] == "fr"
    assert user["ttl"]["key"] == {"t": 1} and user["ttl"]["expireAfterSeconds"] == 60
    assert user["ttl"]["partialFilterExpression"] == {"m": "x"}  # (the original spec's, not the buckets')
    assert user["x_hidden"]["hidden"] is True and user["x_hidden"]["key"] == {"x": 1}
    assert user["meta_later"] == {"v": 2, "key": {"m.d": 1}, "name": "meta_later", "hidden": True}
    assert user["y_later"] == {"key": {"y": 1}, "name": "y_later", "v": 2}  # (no hidden: its originalSpec)
    buckets = {i["name"]: i for i in _bucket_indexes(w)}
    assert buckets["y_later"]["hidden"] is True and "hidden" not in buckets["y_later"]["originalSpec"]
    # a hidden index is not used: a hint naming it is refused
    with pytest.raises(OperationFailure):
        list(w.find({"m.a": 1}).hint("meta_hidden"))
