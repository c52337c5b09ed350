"""Nothing is lost when batches stop short of 16 MB, and cursors of forwarded commands page through mongos."""

from __future__ import annotations

import pytest


def test_find_with_a_limit_over_16mb_returns_every_document(client):
    coll = client.big_batches.docs
    coll.drop()
    pad = "x" * 10_000
    coll.insert_many([{"_id": i, "pad": pad} for i in range(1900)])
    got = [d["_id"] for d in coll.find({}, {"_id": 1, "pad": 1}).sort("_id", 1).limit(1900)]
    assert got == list(range(1900))
    assert len(list(coll.find().limit(1800))) == 1800


def test_list_collections_and_indexes_page_with_getmore(client):
    db = client.big_batches_list
    for i in range(5):
        db.create_collection(f"c{i}")
    reply = db.command({"listCollections": 1, "cursor": {"batchSize": 2}, "nameOnly": True})
    assert reply["cursor"]["id"] != 0 and len(reply["cursor"]["firstBatch"]) == 2
    names = sorted(c["name"] for c in db.list_collections(batch_size=2))
    assert names == [f"c{i}" for i in range(5)]
    for k in "abcd":
        db.c0.create_index(k)
    reply = db.command({"listIndexes": "c0", "cursor": {"batchSize": 1}})
    assert reply["cursor"]["id"] != 0
    coll = reply["cursor"]["ns"].split(".", 1)[1]  # "$cmd.listIndexes.c0", as the server names it
    more = db.command({"getMore": reply["cursor"]["id"], "collection": coll, "batchSize": 10})
    assert len(reply["cursor"]["firstBatch"]) + len(more["cursor"]["nextBatch"]) == 5
    assert more["cursor"]["id"] == 0


def test_a_document_over_16mib_is_refused_and_nothing_is_written(client):
    from pymongo.errors import WriteError

    coll = client.big_batches.huge
    coll.drop()
    coll.insert_one({"_id": 1, "x": "x" * 16777186})  # just under the limit (the server's own jstest case)
    with pytest.raises(WriteError) as e:
        coll.insert_one({"_id": 2, "x": "x" * (16 * 1024 * 1024)})
    assert e.value.code == 2 and e.value.details["errmsg"].startswith("object to insert too large. size in bytes: ")
    assert e.value.details["errmsg"].endswith(", max size: 16777216")
    assert [d["_id"] for d in coll.find({}, {"_id": 1})] == [1]
