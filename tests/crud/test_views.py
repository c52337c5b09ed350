"""Views: reads through a view (find, count, distinct, aggregate), the server's refusals, both topologies."""

from __future__ import annotations

import pytest
from pymongo.errors import BulkWriteError, OperationFailure, WriteError


@pytest.fixture
def db(client, request):
    db = client[f"views_{request.node.name.split('[')[0][-20:]}"]
    client.drop_database(db.name)
    db.base.insert_many([{"_id": i, "k": i % 3, "tags": ["a", "b"] if i % 2 else ["c"]} for i in range(10)])
    db.create_collection("big", viewOn="base", pipeline=[{"$match": {"_id": {"$gte": 4}}}])
    db.create_collection("bigger", viewOn="big", pipeline=[{"$match": {"_id": {"$gte": 6}}}])
    return db


def test_find_through_a_view(db):
    assert [d["_id"] for d in db.big.find({"k": 1}).sort("_id", -1)] == [7, 4]
    assert [d["_id"] for d in db.bigger.find()] == [6, 7, 8, 9]
    assert list(db.big.find({}, {"_id": 1}).sort("_id", 1).skip(1).limit(2)) == [{"_id": 5}, {"_id": 6}]


def test_find_cursor_on_a_view_names_the_view_and_pages(db):
    reply = db.command({"find": "big", "batchSize": 2})
    assert reply["cursor"]["ns"] == f"{db.name}.big" and len(reply["cursor"]["firstBatch"]) == 2
    assert reply["cursor"]["id"] != 0
    assert len(list(db.big.find(batch_size=2))) == 6


def test_count_distinct_aggregate_through_a_view(db):
    assert db.big.count_documents({}) == 6
    assert db.bigger.count_documents({"k": 0}) == 2  # _id 6 and 9
    assert db.command({"count": "big", "query": {"k": 0}})["n"] == 2
    assert db.big.distinct("tags") == ["a", "b", "c"]
    assert db.bigger.distinct("k", {"_id": {"$lt": 8}}) == [0, 1]
    assert list(db.big.aggregate([{"$group": {"_id": None, "n": {"$sum": 1}}}])) == [{"_id": None, "n": 6}]


def test_a_view_is_not_a_collection(db):
    with pytest.raises((WriteError, BulkWriteError)) as e:
        db.big.insert_one({"_id": 100})
    assert e.value.code == 166 if isinstance(e.value, WriteError) else e.value.details["writeErrors"][0]["code"] == 166
    with pytest.raises(WriteError) as e:
        db.big.update_one({"_id": 4}, {"$set": {"x": 1}})
    assert e.value.code == 166 and str(e.value).startswith(f"Namespace {db.name}.big is a view, not a collection")
    with pytest.raises(OperationFailure) as e:
        db.big.find_one_and_update({"_id": 4}, {"$set": {"x": 1}})
    assert e.value.code == 166
    with pytest.raises(OperationFailure) as e:
        db.big.create_index("k")
    assert e.value.code == 166
    assert db.base.count_documents({}) == 10 and db.base.find_one({"_id": 4}) == {"_id": 4, "k": 1, "tags": ["c"]}


def test_a_change_stream_on_a_view_is_refused(db):
    with pytest.raises(OperationFailure) as e:
        db.big.watch()
    assert (e.value.code, e.value.details["codeName"]) == (166, "CommandNotSupportedOnView")
