"""Deletes, updates, upserts and findAndModify of time-series measurements, as 8.0 runs them, through
pymongo in both topologies (jstests/core/timeseries/write/*: the server's behaviour tests)."""

from __future__ import annotations

import datetime

import pytest
from bson import ObjectId
from pymongo import MongoClient
from pymongo.errors import OperationFailure, WriteError

T0 = datetime.datetime(2021, 7, 12, 16, 0)


def at(seconds: int) -> datetime.datetime:
    return T0 + datetime.timedelta(seconds=seconds)


@pytest.fixture
def db(client, request):
    db = client[f"tsw_{request.node.name.split('[')[0][-24:]}"]
    client.drop_database(db.name)
    return db


def _setup(db, docs, meta=True, name="w"):
    ts = {"timeField": "time", "metaField": "tag"} if meta else {"timeField": "time"}
    db.create_collection(name, timeseries=ts)
    if docs:
        db[name].insert_many(docs)
    return db[name]


def _docs():
    # tag A: ids 1-3 (one bucket), B: 4-5, C: 6-7
    tags = {1: "A", 2: "A", 3: "A", 4: "B", 5: "B", 6: "C", 7: "C"}
    out = []
    for i, tag in tags.items():
        d = {"_id": i, "time": at(i), "tag": tag}
        if i > 1:
            d["f"] = 100 + i
        out.append(d)
    return out


def _ids(coll, flt=None):
    return sorted(d["_id"] for d in coll.find(flt or {}))


def _buckets(coll):
    return list(coll.database[f"system.buckets.{coll.name}"].find())


# -- deletes ------------------------------------------------------------------------------------
def test_delete_many_rewrites_partly_matched_buckets_and_deletes_emptied_ones(db):
    w = _setup(db, _docs())
    assert len(_buckets(w)) == 3
    assert w.delete_many({"f": {"$lt": 106}}).deleted_count == 4  # 2, 3 (A), 4, 5 (B), not 1 (no f)
    assert _ids(w) == [1, 6, 7]
    buckets = {b["meta"]: b for b in _buckets(w)}
    assert set(buckets) == {"A", "C"}  # B emptied: deleted
    a = buckets["A"]
    assert a["data"]["_id"] == {"0": 1} and a["control"]["max"]["_id"] == 1 and "f" not in a["control"]["min"]
    assert w.delete_many({"_id": {"$gt": 100}}).deleted_count == 0


def test_delete_one_deletes_a_single_measurement(db):
    w = _setup(db, _docs())
    assert w.delete_one({"tag": "A"}).deleted_count == 1
    assert len(_ids(w, {"tag": "A"})) == 2
    assert w.delete_one({"f": 106}).deleted_count == 1
    assert _ids(w, {"tag": "C"}) == [7]
    assert w.delete_one({"nope": 1}).deleted_count == 0


def test_a_meta_only_delete_many_deletes_whole_buckets_and_counts_measurements(db):
    w = _setup(db, _docs())
    assert w.delete_many({"tag": {"$in": ["A", "C"]}}).deleted_count == 5
    assert _ids(w) == [4, 5] and [b["meta"] for b in _buckets(w)] == ["B"]
    assert w.delete_many({}).deleted_count == 2
    assert _buckets(w) == []


def test_delete_with_collation(db):
    w = _setup(db, [{"_id": 1, "time": at(1), "tag": "café"}, {"_id": 2, "time": at(2), "tag": "cafe"},
                    {"_id": 3, "time": at(3), "tag": "cafE"}])
    assert w.delete_many({"tag": "cafe"}, collation={"locale": "fr", "strength": 1}).deleted_count == 3


# -- updates ------------------------------------------------------------------------------------
def test_update_many_of_a_measurement_field(db):
    w = _setup(db, _docs())
    r = w.update_many({"f": {"$gte": 103}}, {"$inc": {"f": 10}})
    assert (r.matched_count, r.modified_count) == (5, 5)
    assert sorted(d["f"] for d in w.find({"f": {"$exists": True}})) == [102, 113, 114, 115, 116, 117]
    # the changed measurements left their buckets for new ones: A keeps 1 and 2, B's and C's emptied (deleted)
    assert sorted((b["meta"], len(b["data"]["time"])) for b in _buckets(w)) == [("A", 1), ("A", 2), ("B", 2),
                                                                                 ("C", 2)]


def test_update_counts_matched_and_modified_measurements(db):
    w = _setup(db, [{"_id": 1, "time": at(1), "tag": {"a": "A", "b": "B"}},
                    {"_id": 4, "time": at(4), "tag": {"a": "A", "b": "B"}, "f": "F"},
                    {"_id": 5, "time": at(5), "tag": {"a": "A", "b": "B", "c": "C"}}])
    r = w.update_many({"tag.a": "A"}, {"$set": {"tag.c": "C"}})
    assert (r.matched_count, r.modified_count) == (3, 2)
    assert all(d["tag"] == {"a": "A", "b": "B", "c": "C"} for d in w.find())


def test_update_one_of_the_meta_field_moves_the_measurement_to_another_series(db):
    w = _setup(db, _docs())
    r = w.update_one({"_id": 2}, {"$set": {"tag": "B"}})
    assert (r.matched_count, r.modified_count) == (1, 1)
    assert _ids(w, {"tag": "B"}) == [2, 4, 5] and _ids(w, {"tag": "A"}) == [1, 3]
    # meta values are normalized: a reordered object is the same series
    w.update_many({"tag": "C"}, {"$set": {"tag": {"z": 1, "a": 2}}})
    assert [d["tag"] for d in w.find({"_id": 6})] == [{"a": 2, "z": 1}]
    assert w.count_documents({"tag": {"a": 2, "z": 1}}) == 2


def test_update_of_the_time_field_and_its_errors(db):
    w = _setup(db, _docs())
    w.update_many({"tag": "B"}, {"$set": {"time": datetime.datetime(2023, 1, 27, 16)}})
    assert [d["time"].year for d in w.find({"tag": "B"})] == [2023, 2023]
    with pytest.raises(WriteError) as e:
        w.update_many({"f": 102}, {"$unset": {"time": ""}})
    assert e.value.code == 2 and "'time' must be present and contain a valid BSON UTC datetime value" in str(e.value)
    with pytest.raises(WriteError) as e:
        w.update_one({"f": 102}, [{"$set": {"time": "string"}}])
    assert e.value.code == 2
    assert w.count_documents({"f": 102}) == 1  # nothing written


def test_replacement_updates_may_change_or_keep_the_id(db):
    w = _setup(db, [{"time": datetime.datetime(2023, 2, 6, 19, 19), "tag": 1, "_id": 1, "a": 1},
                    {"time": datetime.datetime(2022, 2, 6, 19, 19), "tag": 2, "_id": 2, "a": 2}])
    w.replace_one({"_id": 1}, {"time": datetime.datetime(2022, 2, 6, 19, 19), "tag": 2, "a": 2})
    assert sorted((d["_id"], d["tag"], d["a"]) for d in w.find()) == [(1, 2, 2), (2, 2, 2)]
    w.replace_one({"_id": 1}, {"_id": 10, "time": at(0), "tag": 3})
    assert _ids(w) == [2, 10]
    with pytest.raises(WriteError) as e:
        w.replace_one({"_id": 10}, {"tag": 1, "a": 1})
    assert e.value.code == 2


def test_positional_array_filters_and_pipeline_updates(db):
    w = _setup(db, [{"_id": 5, "time": at(5), "tag": {"a": "A"}, "f": [2, 3]},
                    {"_id": 6, "time": at(6), "tag": {"a": "A"}, "f": [1, 10]},
                    {"_id": 8, "time": at(8), "tag": [1, 2, 3, 4], "f": [4, 3, 2, 1]}])
    w.update_many({"f": {"$gt": 2}, "tag": {"a": "A"}}, {"$set": {"f.$": 20}})
    assert {d["_id"]: d["f"] for d in w.find()}[5] == [2, 20]
    w.update_many({"tag": [1, 2, 3, 4]}, {"$set": {"f.$[i]": 0}}, array_filters=[{"i": {"$gte": 3}}])
    assert w.find_one({"_id": 8})["f"] == [0, 0, 2, 1]
    w.update_many({"tag.a": "A"}, [{"$set": {"sumF": {"$sum": "$f"}}}])
    assert sorted(d.get("sumF") for d in w.find({"tag.a": "A"})) == [21, 22]
    with pytest.raises(WriteError) as e:
        w.update_many({}, {"$set": {"f.$": 20}})
    assert e.value.code == 2


def test_upserts_insert_a_measurement_with_a_generated_id(db):
    w = _setup(db, [{"_id": 1, "time": T0, "tag": {"a": "A", "b": "B"}}])
    r = w.update_one({"tag": {"z": "Z"}}, {"$set": {"time": T0}}, upsert=True)
    assert isinstance(r.upserted_id, ObjectId) and (r.matched_count, r.modified_count) == (0, 0)
    assert w.find_one({"_id": r.upserted_id}) == {"time": T0, "tag": {"z": "Z"}, "_id": r.upserted_id}
    r = w.update_many({"_id": 100}, {"$set": {"time": T0}}, upsert=True)
    assert r.upserted_id == 100
    r = w.update_one({"tag.a": "A"}, {"$set": {"f": 10}}, upsert=True)
    assert r.upserted_id is None and r.modified_count == 1
    with pytest.raises(WriteError) as e:
        w.update_one({"tag": {"z": "Y"}}, {"$set": {"f": 10}}, upsert=True)
    assert e.value.code == 2  # no time field


def test_updates_refused_as_8_0_refuses_them(db, client):
    w = _setup(db, _docs())
    # The statement's sort as pymongo >= 4.11 sends it (update_one(sort=...));
    # sent by hand so the lowest supported pymongo runs the test too.
    reply = db.command("update", "w", updates=[{"q": {"tag": "A"}, "u": {"$set": {"x": 1}}, "sort": {"_id": 1}}])
    error = reply["writeErrors"][0]
    assert error["code"] == 72 and "with a query and sort on a time-series collection" in error["errmsg"]
    reply = db.command("update", "w", updates=[{"q": {}, "u": {"x": 1}, "multi": True}])
    assert reply["writeErrors"][0]["code"] == 9  # multi + replacement


def test_find_and_modify_on_measurements(db, client):
    _setup(db, _docs())
    plain = MongoClient(client.mongosim_cluster.uri, retryWrites=False)
    try:
        w = plain[db.name].w
        removed = w.find_one_and_delete({"f": 106}, projection={"_id": 1, "f": 1})
        assert removed == {"_id": 6, "f": 106}
        assert _ids(w, {"tag": "C"}) == [7]
        after = w.find_one_and_update({"_id": 2}, {"$inc": {"f": 1}}, return_document=True)
        assert after["f"] == 103 and after["tag"] == "A"
        before = w.find_one_and_update({"_id": 3}, {"$set": {"f": 0}})
        assert before["f"] == 103
        assert w.find_one_and_update({"_id": 99}, {"$set": {"time": T0}}, upsert=True, return_document=True)["_id"] == 99
    finally:
        plain.close()
    with pytest.raises(OperationFailure) as e:  # pymongo's default: retryable writes
        db.w.find_one_and_delete({"f": 107})
    assert e.value.code == 7308305 and e.value.details["errmsg"] == "Retryable findAndModify on a timeseries is not supported"
    with pytest.raises(OperationFailure) as e:
        db.w.find_one_and_update({"f": 107}, {"$set": {"g": 1}})
    assert e.value.code == 7314600


# -- transactions -------------------------------------------------------------------------------
def test_in_a_transaction_single_writes_run_and_multi_writes_are_refused(db, client):
    w = _setup(db, _docs())
    with client.start_session() as s:
        with s.start_transaction():
            w.update_one({"_id": 1}, {"$inc": {"updated": 1}}, session=s)
            w.delete_one({"_id": 7}, session=s)
            assert w.count_documents({"updated": 1}, session=s) == 1
            assert w.count_documents({"updated": 1}) == 0
        assert w.count_documents({"updated": 1}) == 1 and _ids(w, {"tag": "C"}) == [6]
        s.start_transaction()
        w.update_one({"_id": 2}, {"$inc": {"updated": 1}}, session=s)
        s.abort_transaction()
        assert w.count_documents({"updated": 1}) == 1
        for op in (lambda: w.update_many({"tag": "A"}, {"$set": {"b": 1}}, session=s),
                   lambda: w.delete_many({"tag": "A"}, session=s)):
            s.start_transaction()
            with pytest.raises(OperationFailure) as e:
                op()
            assert e.value.code == 263 and "inside of a multi-document transaction on a time-series collection" \
                in str(e.value)
            with pytest.raises(OperationFailure) as e:
                s.commit_transaction()
            assert e.value.code == 251
        s.start_transaction()
        with pytest.raises(OperationFailure) as e:
            w.insert_one({"time": T0}, session=s)
        assert e.value.code == 263 and "Cannot insert into a time-series collection in a multi-document " \
            "transaction" in str(e.value)
        s.abort_transaction()


# -- bulkWrite ----------------------------------------------------------------------------------
def test_bulk_write_command_on_a_time_series_collection(db, client):
    from pymongo import DeleteMany, InsertOne, UpdateOne
    from pymongo.errors import ClientBulkWriteException

    w = _setup(db, _docs())
    plain = db.plain
    result = client.bulk_write([
        InsertOne({"_id": 8, "time": at(8), "tag": "A", "f": 108}, namespace=w.full_name),
        UpdateOne({"_id": 2}, {"$set": {"f": 0}}, namespace=w.full_name),
        DeleteMany({"tag": "C"}, namespace=w.full_name),
        InsertOne({"_id": 1}, namespace=plain.full_name),
    ], verbose_results=True)
    assert (result.inserted_count, result.matched_count, result.modified_count, result.deleted_count) == (2, 1, 1, 2)
    assert _ids(w) == [1, 2, 3, 4, 5, 8] and w.find_one({"_id": 2})["f"] == 0
    assert plain.count_documents({}) == 1
    with pytest.raises(ClientBulkWriteException) as e:  # a measurement without its time: its own error
        client.bulk_write([InsertOne({"_id": 9, "time": at(9)}, namespace=w.full_name),
                           InsertOne({"_id": 10}, namespace=w.full_name),
                           InsertOne({"_id": 11, "time": at(11)}, namespace=w.full_name)], ordered=False)
    [error] = e.value.write_errors
    assert error["idx"] == 1 and error["code"] == 2 and "'time' must be present" in error["errmsg"]
    assert e.value.partial_result.inserted_count == 2 and {9, 11} <= set(_ids(w))
