"""The Node.js driver against mongosim: CRUD, a change stream, a failover, transactions, client bulkWrite and
GridFS, as an application written against it (node/app.js) uses them.

pymongo runs the driver specification's tests; this checks that another driver, with its own wire code,
session handling and change-stream resume logic, gets the answers a real cluster gives: the same
documents, error codes and labels, and the same change events with byte-identical resume tokens (read
again through pymongo from a token the Node.js driver stored).  The driver comes from
node/package-lock.json (`node_driver.py`).
"""

from __future__ import annotations

import pymongo
import pytest

from tests.drivers.node_driver import node_modules, run_app

RETRY = "Please retry your operation or multi-document transaction."


@pytest.fixture(scope="module")
def modules():
    return node_modules()


@pytest.fixture
def shop(mongosim_cluster):
    """shop.orders sharded on {k: 1}: k < 100 on shard00, k >= 100 on shard01."""
    client = pymongo.MongoClient(mongosim_cluster.uri)
    client.admin.command("enableSharding", "shop", primaryShard="shard00")
    client.admin.command("shardCollection", "shop.orders", key={"k": 1})
    client.admin.command("split", "shop.orders", middle={"k": 100})
    client.admin.command("moveChunk", "shop.orders", find={"k": 100}, to="shard01")
    yield client
    client.close()


@pytest.mark.mongosim(isolated=True, shards=2)
def test_crud(modules, mongosim_cluster, shop):
    out = run_app(modules, "crud", mongosim_cluster.uri)
    assert out["insertOne"] == 1 and out["insertMany"] == 3
    assert out["find"] == [{"_id": 4, "k": 170}, {"_id": 3, "k": 50}, {"_id": 2, "k": 150}]
    assert out["countDocuments"] == 2 and out["estimatedDocumentCount"] == 4
    assert out["distinct"] == [5, 50, 150, 170]
    assert out["updateOne"] == [1, 1] and out["updateMany"] == [4, 4] and out["upsert"] == [1, 9]
    assert out["replaceOne"] == 1
    assert out["findOneAndUpdate"] == {"_id": 1, "k": 5, "total": 11, "seen": True}
    assert out["findOneAndDelete"] == {"_id": 4, "k": 170, "total": 40, "seen": True}
    assert out["bulkWrite"] == [1, 1, 1, 1]
    assert out["aggregate"] == [{"_id": False, "total": 11 + 33 + 55}, {"_id": True, "total": 21}]
    assert out["createIndex"] == "total_1" and out["indexes"] == ["_id_", "k_1", "total_1"]
    assert out["explainStage"] == "SHARD_MERGE" and out["explainShards"] == 2
    assert out["batches"] == 250  # a find of 250 documents in batches of 7: getMores until the cursor ends
    dup = out["duplicateKey"]["error"]
    assert (dup["name"], dup["code"]) == ("MongoServerError", 11000)
    assert dup["message"] == "E11000 duplicate key error collection: shop.orders index: _id_ dup key: { _id: 1 }"
    bad = out["unknownModifier"]["error"]
    assert bad["code"] == 9 and bad["message"].startswith("Unknown modifier: $frobnicate.")
    assert out["noSuchCommand"]["error"] | {"message": None} == {
        "name": "MongoServerError", "code": 59, "codeName": "CommandNotFound", "labels": [], "message": None}
    bulk = out["bulkErrors"]["error"]
    assert bulk["name"] == "MongoBulkWriteError" and bulk["writeErrors"] == [[0, 11000], [2, 11000]]
    assert bulk["insertedCount"] == 1 and out["afterBulk"] == 1  # unordered: the statement between went in
    docs = list(shop.shop.orders.find({"total": {"$ne": 0}}, sort=[("_id", 1)]))
    assert docs == [{"_id": 1, "k": 5, "total": 11, "seen": True}, {"_id": 2, "k": 150, "total": 21, "seen": True},
                    {"_id": 3, "k": 50, "total": 33}, {"_id": 5, "k": 60, "total": 55},
                    {"_id": 400, "k": 5}]


@pytest.mark.mongosim(isolated=True, shards=2)
def test_a_change_stream_and_its_resume_tokens(modules, mongosim_cluster, shop):
    out = run_app(modules, "stream", mongosim_cluster.uri)
    events = out["events"]
    assert [e["operationType"] for e in events] == ["insert", "insert", "update", "replace", "delete"]
    assert [e["documentKey"] for e in events] == [{"k": 5, "_id": 1}, {"k": 150, "_id": 2}, {"k": 5, "_id": 1},
                                                  {"k": 150, "_id": 2}, {"k": 5, "_id": 1}]
    tokens = [e["_id"]["_data"] for e in events]
    assert tokens == sorted(tokens) and len(set(tokens)) == 5
    assert events[2]["fullDocument"] is None  # updateLookup after the delete: no document left
    assert out["resumeToken"]["_data"] >= tokens[-1]
    assert out["rest"] == events[2:]  # resumeAfter the second event: the three after it, again
    assert out["last"] == events[4:]  # startAfter the fourth
    # the same events through pymongo, from the token the Node.js driver handed out: the same bytes
    with shop.shop.orders.watch(resume_after=events[0]["_id"], full_document="updateLookup") as stream:
        again = [stream.next() for _ in range(4)]
    assert again == events[1:]


@pytest.mark.mongosim(isolated=True, shards=2, members=3, noop_interval=0.5)
def test_a_stream_and_retryable_writes_across_failovers(modules, mongosim_cluster, shop):
    """Both shards' primaries step down between two runs of inserts: every insert is written once and the
    stream delivers every event once, in order (whether the driver had to resume or not)."""
    def primaries():
        return {name: mongosim_cluster.faults.member(name).host for name in ("shard00", "shard01")}

    before = primaries()
    out = run_app(modules, "failover", mongosim_cluster.uri)
    after = primaries()
    assert all(after[name] != before[name] for name in before)
    assert out["stepDown"] == [1, 1]
    assert out["ids"] == list(range(20))
    assert out["tokens"] == sorted(out["tokens"]) and len(set(out["tokens"])) == 20
    assert out["aggregates"] >= 1 and out["inserts"] >= 20
    assert sorted(d["_id"] for d in shop.shop.orders.find()) == list(range(20))


@pytest.mark.mongosim(isolated=True, shards=2)
def test_transactions(modules, mongosim_cluster, shop):
    out = run_app(modules, "transaction", mongosim_cluster.uri)
    assert out["committed"] == "done"
    events = out["events"]
    assert [(e["operationType"], e["documentKey"]["_id"]) for e in events] == [
        ("update", 1), ("update", 2), ("insert", 3), ("insert", 5)]  # the aborted insert of 4: no event
    txn = events[:3]
    assert {e["txnNumber"] for e in txn} == {1} and len({str(e["lsid"]) for e in txn}) == 1
    assert "txnNumber" not in events[3] and "lsid" not in events[3]
    conflict = out["conflict"]["error"]
    assert conflict == {"name": "MongoServerError", "code": 112, "codeName": "WriteConflict",
                        "labels": ["TransientTransactionError"],
                        "message": f"Caused by :: Write conflict during plan execution and yielding is disabled. "
                                   f":: {RETRY}"}
    assert out["final"] == [{"_id": 1, "k": 5, "stock": 2, "by": "a"}, {"_id": 2, "k": 150, "stock": 2},
                            {"_id": 3, "k": 160, "order": True}, {"_id": 5, "k": 7, "after": True}]


@pytest.mark.mongosim(isolated=True, shards=2)
def test_client_bulk_write(modules, mongosim_cluster, shop):
    """The driver's client-level bulkWrite (8.0's bulkWrite command through mongos) over two namespaces:
    each operation's verbose result, and an unordered batch with a duplicate key that writes the rest."""
    out = run_app(modules, "clientBulkWrite", mongosim_cluster.uri)
    assert out["counts"] == [3, 1, 1, 1]
    assert out["inserted"] == [[0, 1], [1, 1], [3, 2]] and out["updated"] == [[2, 1, 1]] and out["deleted"] == [[4, 1]]
    failed = out["failed"]["error"]
    assert failed["name"] == "MongoClientBulkWriteError" and failed["writeErrors"] == [[0, 11000]]
    assert failed["insertedCount"] == 1
    assert out["orders"] == [{"_id": 1, "k": 5, "v": 1}, {"_id": 2, "k": 150}, {"_id": 3, "k": 7}]
    assert shop.shop.items.count_documents({}) == 0


@pytest.mark.mongosim(isolated=True, shards=2)
def test_gridfs(modules, mongosim_cluster):
    """GridFS through the driver: the indexes it creates, a chunked upload read back whole, and a delete."""
    out = run_app(modules, "gridfs", mongosim_cluster.uri)
    assert out["same"] is True and out["length"] == 300 * 1024 + 17 and out["chunkSize"] == 64 * 1024
    assert out["metadata"] == {"kind": "test"} and out["chunkCount"] == 5  # ceil(307217 / 65536)
    assert out["indexes"] == [{"_id": 1}, {"files_id": 1, "n": 1}]
    assert out["left"] == [0, 0]
