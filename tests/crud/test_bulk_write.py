"""The 8.0 bulkWrite command (pymongo's `client.bulk_write`), in both topologies.

Reply shapes follow the server's BulkWriteReplyItem / BulkWriteCommandReply:
items `{ok, idx, [code, errmsg, ...], n, nModified?, upserted?: {index: 0, _id}}`,
a cursor on `admin.$cmd.bulkWrite`, and the summary counts.
"""

from __future__ import annotations

import pymongo
import pytest
from pymongo import DeleteMany, DeleteOne, InsertOne, ReplaceOne, UpdateMany, UpdateOne
from pymongo.errors import ClientBulkWriteException, OperationFailure

from tests.crud.conftest import shard_two_ways
from tests.driver_version import RAW_BULK_WRITE, UPDATE_ONE_SORT


def bulk(client, ops, ns_info, **kw):
    return client.admin.command({"bulkWrite": 1, "ops": ops, "nsInfo": [{"ns": n} for n in ns_info], **kw})


def test_mixed_namespaces_verbose_results(client):
    r = client.bulk_write([
        InsertOne({"_id": 1, "x": 1}, namespace="bw.a"),
        InsertOne({"_id": 2, "x": 2}, namespace="bw.a"),
        InsertOne({"_id": 1}, namespace="bw2.b"),
        UpdateOne({"_id": 1}, {"$inc": {"x": 10}}, namespace="bw.a"),
        UpdateMany({}, {"$set": {"y": True}}, namespace="bw.a"),
        ReplaceOne({"_id": 3}, {"z": 3}, upsert=True, namespace="bw.a"),
        DeleteOne({"_id": 1}, namespace="bw2.b"),
        DeleteMany({"x": {"$gt": 100}}, namespace="bw.a"),
    ], verbose_results=True)
    assert (r.inserted_count, r.matched_count, r.modified_count, r.upserted_count, r.deleted_count) == (3, 3, 3, 1, 1)
    assert r.insert_results[0].inserted_id == 1
    assert r.update_results[3].matched_count == 1 and r.update_results[4].modified_count == 2
    assert r.update_results[5].upserted_id == 3
    assert r.delete_results[6].deleted_count == 1 and r.delete_results[7].deleted_count == 0
    assert list(client.bw.a.find()) == [{"_id": 1, "x": 11, "y": True}, {"_id": 2, "x": 2, "y": True}, {"_id": 3, "z": 3}]
    assert list(client.bw2.b.find()) == []


@RAW_BULK_WRITE
def test_reply_shape_and_summary(client):
    reply = bulk(client, [
        {"insert": 0, "document": {"_id": 1}},
        {"update": 0, "filter": {"_id": 1}, "updateMods": {"$set": {"a": 1}}},
        {"update": 1, "filter": {"_id": 7}, "updateMods": {"$set": {"a": 1}}, "upsert": True},
        {"delete": 0, "filter": {"_id": 1}},
    ], ["bw.a", "bw.b"])
    assert list(reply)[:8] == ["cursor", "nErrors", "nInserted", "nMatched", "nModified", "nUpserted", "nDeleted", "ok"]
    assert list(reply["cursor"]) == ["id", "firstBatch", "ns"]
    assert reply["cursor"]["id"] == 0 and reply["cursor"]["ns"] == "admin.$cmd.bulkWrite"
    assert reply["cursor"]["firstBatch"] == [
        {"ok": 1.0, "idx": 0, "n": 1},
        {"ok": 1.0, "idx": 1, "n": 1, "nModified": 1},
        {"ok": 1.0, "idx": 2, "n": 1, "nModified": 0, "upserted": {"index": 0, "_id": 7}},
        {"ok": 1.0, "idx": 3, "n": 1},
    ]
    assert [reply[k] for k in ("nErrors", "nInserted", "nMatched", "nModified", "nUpserted", "nDeleted")] == [0, 1, 1, 1, 1, 1]


@RAW_BULK_WRITE
def test_errors_only_and_error_items(client):
    client.bw.a.insert_one({"_id": 1})
    reply = bulk(client, [{"insert": 0, "document": {"_id": 1}}, {"insert": 0, "document": {"_id": 2}},
                          {"update": 0, "filter": {"_id": 2}, "updateMods": {"$inc": {"_id": 1}}}],
                 ["bw.a"], ordered=False, errorsOnly=True)
    items = reply["cursor"]["firstBatch"]
    assert [i["idx"] for i in items] == [0, 2]
    dup = items[0]
    assert list(dup) == ["ok", "idx", "code", "errmsg", "keyPattern", "keyValue", "n"]
    assert (dup["ok"], dup["code"], dup["keyPattern"], dup["keyValue"], dup["n"]) == (0.0, 11000, {"_id": 1}, {"_id": 1}, 0)
    assert items[1]["code"] == 66 and items[1]["nModified"] == 0  # ImmutableField; updates say nModified
    assert (reply["nErrors"], reply["nInserted"], reply["nMatched"]) == (2, 1, 0)


def test_ordered_stops_and_unordered_goes_on(client):
    client.bw.a.insert_one({"_id": 2})
    ops = [InsertOne({"_id": 1}, namespace="bw.a"), InsertOne({"_id": 2}, namespace="bw.a"),
           InsertOne({"_id": 3}, namespace="bw.b")]
    with pytest.raises(ClientBulkWriteException) as ei:
        client.bulk_write(ops, verbose_results=True)
    assert [e["idx"] for e in ei.value.write_errors] == [1]
    assert ei.value.partial_result.inserted_count == 1
    assert client.bw.b.count_documents({}) == 0
    client.bw.a.delete_one({"_id": 1})
    with pytest.raises(ClientBulkWriteException) as ei:
        client.bulk_write(ops, ordered=False, verbose_results=True)
    assert [e["idx"] for e in ei.value.write_errors] == [1]
    assert ei.value.partial_result.inserted_count == 2
    assert client.bw.b.count_documents({}) == 1


def test_undefined_variable_is_a_write_error(client):
    client.bw.c.insert_many([{"_id": 1}, {"_id": 2}, {"_id": 3}])
    with pytest.raises(ClientBulkWriteException) as ei:
        client.bulk_write([DeleteOne({"_id": 1}, namespace="bw.c"),
                           DeleteOne({"$expr": {"$eq": ["$_id", "$$id2"]}}, namespace="bw.c"),
                           DeleteOne({"_id": 3}, namespace="bw.c")], ordered=False)
    assert [(e["idx"], e["code"]) for e in ei.value.write_errors] == [(1, 17276)]
    assert ei.value.partial_result.deleted_count == 2


@RAW_BULK_WRITE
def test_cursor_batches_and_get_more(client):
    reply = bulk(client, [{"insert": 0, "document": {"_id": i}} for i in range(5)], ["bw.a"], cursor={"batchSize": 2})
    cur = reply["cursor"]
    assert [i["idx"] for i in cur["firstBatch"]] == [0, 1] and cur["id"] != 0
    more = client.admin.command({"getMore": cur["id"], "collection": "$cmd.bulkWrite", "batchSize": 2})
    assert [i["idx"] for i in more["cursor"]["nextBatch"]] == [2, 3]
    more = client.admin.command({"getMore": cur["id"], "collection": "$cmd.bulkWrite"})
    assert [i["idx"] for i in more["cursor"]["nextBatch"]] == [4] and more["cursor"]["id"] == 0


@UPDATE_ONE_SORT
def test_let_comment_bypass_and_sort(client):
    client.bw.c.insert_many([{"_id": 1, "x": 11}, {"_id": 2, "x": 22}, {"_id": 3, "x": 33}])
    r = client.bulk_write([
        UpdateOne({"$expr": {"$eq": ["$_id", "$$id1"]}}, {"$inc": {"x": 1}}, namespace="bw.c"),
        DeleteOne({"$expr": {"$eq": ["$_id", "$$id2"]}}, namespace="bw.c"),
        UpdateOne({"_id": {"$gt": 0}}, [{"$set": {"last": "$$flag"}}], sort={"_id": -1}, namespace="bw.c"),
    ], let={"id1": 1, "id2": 2, "flag": True}, comment={"bulk": "write"}, bypass_document_validation=True,
        verbose_results=True)
    assert (r.matched_count, r.modified_count, r.deleted_count) == (2, 2, 1)
    assert list(client.bw.c.find()) == [{"_id": 1, "x": 12}, {"_id": 3, "x": 33, "last": True}]


@RAW_BULK_WRITE
def test_validation_errors(client):
    with pytest.raises(OperationFailure) as ei:
        client.bw.command({"bulkWrite": 1, "ops": [{"insert": 0, "document": {}}], "nsInfo": [{"ns": "bw.a"}]})
    assert ei.value.code == 13 and "admin database" in ei.value.details["errmsg"]
    with pytest.raises(OperationFailure) as ei:
        bulk(client, [], ["bw.a"])
    assert ei.value.code == 16 and ei.value.details["errmsg"] == (
        "Write batch sizes must be between 1 and 100000. Got 0 operations.")
    with pytest.raises(OperationFailure) as ei:
        bulk(client, [{"insert": 1, "document": {}}], ["bw.a"])
    assert ei.value.code == 2 and "invalid nsInfo index" in ei.value.details["errmsg"]
    with pytest.raises(OperationFailure) as ei:
        bulk(client, [{"insert": 0, "document": {}}], ["bw.a$b"])
    assert ei.value.code == 73
    with pytest.raises(OperationFailure) as ei:
        bulk(client, [{"insert": 0, "document": {}, "bogus": 1}], ["bw.a"])
    assert ei.value.code == 40415
    with pytest.raises(OperationFailure) as ei:
        bulk(client, [{"insert": 0, "document": {"_id": i}} for i in range(100_001)], ["bw.a"])
    assert ei.value.code == 16
    assert client.bw.a.count_documents({}) == 0


@RAW_BULK_WRITE
def test_retryable_statements_answer_from_the_session(client):
    lsid = {"id": client.start_session().session_id["id"]}
    cmd = {"bulkWrite": 1, "ops": [{"insert": 0, "document": {"_id": 1}},
                                   {"update": 0, "filter": {"_id": 1}, "updateMods": {"$inc": {"n": 1}}},
                                   {"update": 0, "filter": {"_id": 9}, "updateMods": {"$set": {"u": 1}}, "upsert": True},
                                   {"delete": 0, "filter": {"_id": 9}}],
           "nsInfo": [{"ns": "bw.r"}], "lsid": lsid, "txnNumber": 1}
    first = client.admin.command(cmd)
    again = client.admin.command(cmd)
    assert again["cursor"]["firstBatch"] == first["cursor"]["firstBatch"]
    assert again["retriedStmtIds"] == [0, 1, 2, 3] and "retriedStmtIds" not in first
    assert list(client.bw.r.find()) == [{"_id": 1, "n": 1}]
    multi = {**cmd, "ops": [{"update": 0, "filter": {}, "updateMods": {"$inc": {"n": 1}}, "multi": True}],
             "txnNumber": 2}
    item = client.admin.command(multi)["cursor"]["firstBatch"][0]
    assert (item["ok"], item["code"], item["errmsg"]) == (0.0, 72, "Cannot use retryable writes with multi=true")


def test_retried_bulk_write_after_network_error(client):
    client.admin.command({"configureFailPoint": "failCommand", "mode": {"times": 1},
                          "data": {"failCommands": ["bulkWrite"], "closeConnection": True}})
    r = client.bulk_write([InsertOne({"_id": 4}, namespace="bw.r")], verbose_results=True)
    assert r.inserted_count == 1 and client.bw.r.count_documents({}) == 1


def test_in_a_transaction(client):
    client.bw.t.insert_many([{"_id": 1, "x": 1}, {"_id": 2, "x": 2}])
    with client.start_session() as s:
        with s.start_transaction():
            r = client.bulk_write([InsertOne({"_id": 3}, namespace="bw.t"),
                                   UpdateOne({"_id": 1}, {"$inc": {"x": 1}}, namespace="bw.t"),
                                   DeleteOne({"_id": 2}, namespace="bw.t")], session=s)
            assert (r.inserted_count, r.modified_count, r.deleted_count) == (1, 1, 1)
            assert client.bw.t.count_documents({}) == 2  # not visible outside before commit
    assert list(client.bw.t.find()) == [{"_id": 1, "x": 2}, {"_id": 3}]
    with client.start_session() as s:
        s.start_transaction()
        with pytest.raises(ClientBulkWriteException):
            client.bulk_write([InsertOne({"_id": 4}, namespace="bw.t"), InsertOne({"_id": 1}, namespace="bw.t")],
                              session=s)
        with pytest.raises(OperationFailure) as ei:  # the error aborted the transaction
            s.commit_transaction()
        assert ei.value.code == 251
    assert client.bw.t.count_documents({"_id": 4}) == 0


def test_write_concern_error_is_reported(client):
    client.admin.command({"configureFailPoint": "failCommand", "mode": {"times": 1},
                          "data": {"failCommands": ["bulkWrite"],
                                   "writeConcernError": {"code": 91, "errmsg": "Replication is being shut down"}}})
    with pytest.raises(ClientBulkWriteException) as ei:
        pymongo.MongoClient(client.mongosim_cluster.uri, retryWrites=False).bulk_write(
            [InsertOne({"_id": 10}, namespace="bw.w")])
    assert ei.value.write_concern_errors[0]["code"] == 91
    assert client.bw.w.count_documents({}) == 1


def test_unacknowledged(client):
    r = client.bulk_write([InsertOne({"_id": 1}, namespace="bw.u"), DeleteOne({"_id": 1}, namespace="bw.u"),
                           InsertOne({"_id": 2}, namespace="bw.u")], write_concern=pymongo.WriteConcern(w=0),
                          ordered=False)
    assert not r.acknowledged
    client.admin.command("ping")
    assert sorted(d["_id"] for d in client.bw.u.find()) in ([2], [1, 2])


def test_change_stream_sees_the_writes(client):
    client.bw.cs.insert_one({"_id": 0})
    with client.bw.watch() as stream:
        client.bulk_write([InsertOne({"_id": 1}, namespace="bw.cs"), UpdateOne({"_id": 0}, {"$set": {"a": 1}},
                                                                              namespace="bw.cs"),
                           DeleteOne({"_id": 1}, namespace="bw.cs")])
        events = [stream.next() for _ in range(3)]
    assert [e["operationType"] for e in events] == ["insert", "update", "delete"]
    assert events[1]["updateDescription"]["updatedFields"] == {"a": 1}


# -- through mongos, a collection on both shards --------------------------------------------
@pytest.fixture
def sharded(sharded_client):
    shard_two_ways(sharded_client, "bws.c")
    return sharded_client


@UPDATE_ONE_SORT
def test_sharded_ops_go_to_their_shards(sharded):
    r = sharded.bulk_write([InsertOne({"_id": i, "k": k}, namespace="bws.c") for i, k in enumerate([1, 2, 150, 160])]
                           + [UpdateMany({}, {"$inc": {"n": 1}}, namespace="bws.c"),
                              UpdateOne({"k": {"$gt": 0}}, {"$set": {"first": 1}}, sort={"k": -1}, namespace="bws.c"),
                              DeleteOne({"_id": 1}, namespace="bws.c"),
                              DeleteMany({"k": {"$gte": 150}, "n": 1, "first": {"$exists": False}},
                                         namespace="bws.c")],
                           verbose_results=True)
    assert (r.inserted_count, r.matched_count, r.modified_count, r.deleted_count) == (4, 5, 5, 2)
    assert list(sharded.bws.c.find().sort("k")) == [{"_id": 0, "k": 1, "n": 1}, {"_id": 3, "k": 160, "n": 1, "first": 1}]
    on = {name: [d["_id"] for d in node.catalog.collection("bws", "c").scan()]
          for name, node in _nodes(sharded).items() if name != "config"}
    assert on == {"shard00": [0], "shard01": [3]}


def test_sharded_ordered_error_stops_across_shards(sharded):
    sharded.bws.c.insert_one({"_id": 2, "k": 150})
    with pytest.raises(ClientBulkWriteException) as ei:
        sharded.bulk_write([InsertOne({"_id": 1, "k": 1}, namespace="bws.c"),
                            InsertOne({"_id": 2, "k": 150}, namespace="bws.c"),
                            InsertOne({"_id": 3, "k": 3}, namespace="bws.c")])
    assert [e["idx"] for e in ei.value.write_errors] == [1]
    assert sorted(d["_id"] for d in sharded.bws.c.find()) == [1, 2]


def test_sharded_shard_key_change_moves_the_document(sharded):
    sharded.bws.c.insert_one({"_id": 1, "k": 1})
    with sharded.bws.watch() as stream:
        r = sharded.bulk_write([UpdateOne({"_id": 1, "k": 1}, {"$set": {"k": 150}}, namespace="bws.c")],
                               verbose_results=True)
        events = [stream.next()["operationType"] for _ in range(2)]
    assert r.update_results[0].modified_count == 1
    assert events == ["delete", "insert"]
    assert [d["_id"] for d in _nodes(sharded)["shard01"].catalog.collection("bws", "c").scan()] == [1]


def test_sharded_retryable_bulk_write_in_a_transaction(sharded):
    with sharded.start_session() as s:
        with s.start_transaction():
            sharded.bulk_write([InsertOne({"_id": i, "k": k}, namespace="bws.c") for i, k in enumerate([1, 150])]
                               + [UpdateMany({}, {"$set": {"t": 1}}, namespace="bws.c")], session=s)
    assert [d.get("t") for d in sharded.bws.c.find()] == [1, 1]


def _nodes(client):
    return client.mongosim_cluster.core.nodes


@UPDATE_ONE_SORT
def test_sharded_update_one_with_sort_across_shards(sharded):
    sharded.bws.c.insert_many([{"_id": i, "k": k, "v": v} for i, (k, v) in enumerate([(1, 5), (2, 9), (150, 7), (160, 1)])])
    sharded.bws.c.update_one({"v": {"$gt": 0}}, {"$set": {"top": True}}, sort={"v": -1})
    sharded.bws.c.update_one({"v": {"$gt": 0}}, {"$set": {"low": True}}, sort={"v": 1})
    assert [d["_id"] for d in sharded.bws.c.find({"top": True})] == [1]
    assert [d["_id"] for d in sharded.bws.c.find({"low": True})] == [3]
    doc = sharded.bws.c.find_one_and_update({"v": {"$gt": 0}}, {"$set": {"fam": True}}, sort=[("v", -1)])
    assert doc["_id"] == 1


def test_sharded_shard_key_change_inside_a_transaction(sharded):
    sharded.bws.c.insert_many([{"_id": 1, "k": 1}, {"_id": 2, "k": 2}])
    with sharded.start_session() as s:
        with s.start_transaction():
            r = sharded.bulk_write([UpdateOne({"_id": 1, "k": 1}, {"$set": {"k": 150}}, namespace="bws.c"),
                                    InsertOne({"_id": 3, "k": 3}, namespace="bws.c"),
                                    UpdateOne({"_id": 2, "k": 2}, {"$set": {"k": 160}}, namespace="bws.c")],
                                   session=s, verbose_results=True)
            assert (r.modified_count, r.inserted_count) == (2, 1)
    nodes = _nodes(sharded)
    assert sorted(d["_id"] for d in nodes["shard01"].catalog.collection("bws", "c").scan()) == [1, 2]
    assert sorted(d["_id"] for d in nodes["shard00"].catalog.collection("bws", "c").scan()) == [3]


def test_merge_write_concern_errors():
    from mongosim.router.bulk_write import merge_write_concern_errors

    assert merge_write_concern_errors([]) is None
    one = merge_write_concern_errors([("shard00", {"code": 64, "codeName": "WriteConcernFailed",
                                                   "errmsg": "waiting for replication timed out"})])
    assert one == {"code": 64, "errmsg": "WriteConcernFailed: waiting for replication timed out at shard00"}
    two = merge_write_concern_errors([("shard00", {"code": 91, "errmsg": "shutting down"}),
                                      ("shard01", {"code": 64, "errmsg": "timed out"})])
    assert two == {"code": 91, "errmsg": "Multiple errors reported :: ShutdownInProgress: shutting down at shard00"
                                         " :: and :: WriteConcernTimeout: timed out at shard01"}


@RAW_BULK_WRITE
def test_ops_on_a_view_fail_one_by_one(replset_client):
    db = replset_client.bw
    db.src.insert_one({"_id": 1})
    db.create_collection("v", viewOn="src", pipeline=[])
    reply = bulk(replset_client, [{"insert": 0, "document": {"_id": 2}}, {"insert": 0, "document": {"_id": 3}},
                                  {"delete": 0, "filter": {}}, {"insert": 1, "document": {"_id": 4}}],
                 ["bw.v", "bw.src"], ordered=False)
    assert [(i["idx"], i.get("code")) for i in reply["cursor"]["firstBatch"]] == [(0, 166), (1, 166), (2, 166), (3, None)]


def test_messages_over_max_message_size_are_split_by_the_driver(client):
    """maxMessageSizeBytes (48 MB) bounds one OP_MSG: pymongo sends 4 x 13 MB in two bulkWrites,
    the ops and nsInfo as document sequences; every document arrives."""
    assert client.admin.command("hello")["maxMessageSizeBytes"] == 48_000_000
    sent = []

    class Listener(pymongo.monitoring.CommandListener):
        def started(self, event):
            if event.command_name == "bulkWrite":
                sent.append(len(event.command["ops"]))

        def succeeded(self, event):
            pass

        def failed(self, event):
            pass

    watched = pymongo.MongoClient(client.mongosim_cluster.uri, event_listeners=[Listener()])
    big = "x" * (13 * 1024 * 1024)
    r = watched.bulk_write([InsertOne({"_id": i, "s": big}, namespace=f"bw.big{i % 2}") for i in range(4)])
    watched.close()
    assert r.inserted_count == 4 and sent == [3, 1]
    assert client.bw.big0.count_documents({}) == 2 and client.bw.big1.count_documents({}) == 2
