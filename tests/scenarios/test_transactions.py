"""Issue 6: transactions, retryable writes and migrations as a pymongo user sees them."""

from __future__ import annotations

import pymongo
import pytest
from bson import Int64

from mongosim.oplog.resume_token import decode_resume_token
from tests.scenarios.conftest import read, read_quiet, shard_three_ways


def test_three_shard_transaction_is_one_clusterTime_and_resumable(client):
    shard_three_ways(client)
    coll = client.s.c
    coll.insert_one({"_id": "x", "k": 5})
    with coll.watch(max_await_time_ms=100) as cs:
        with client.start_session() as s, s.start_transaction():
            for i, k in enumerate([10, 110, 210, 220]):
                coll.insert_one({"_id": i, "k": k}, session=s)
            coll.update_one({"_id": "x", "k": 5}, {"$set": {"y": 1}}, session=s)
        evs = read(cs, 5)
    assert len(evs) == 5
    assert len({e["clusterTime"] for e in evs}) == 1
    assert all("lsid" in e and e["txnNumber"] == Int64(1) for e in evs)
    assert list(evs[0])[:3] == ["txnNumber", "lsid", "_id"]
    # ordered by txnOpIndex, then documentKey
    idx = [decode_resume_token(e["_id"]).txn_op_index for e in evs]
    assert idx == sorted(idx)
    keys = [e["_id"]["_data"] for e in evs]
    assert keys == sorted(keys)
    # resuming from the 2nd of the 5 events yields exactly the last 3
    with coll.watch(resume_after=evs[1]["_id"], max_await_time_ms=100) as again:
        rest = read(again, 3)
        assert [e["_id"] for e in rest] == [e["_id"] for e in evs[2:]]
        assert read_quiet(again, 0.3) == []


def test_prepared_transaction_oplog_shape(cluster, client):
    shard_three_ways(client)
    coll = client.s.c
    starts = {name: cluster.core.nodes[name].oplog.end for name in ("shard00", "shard01")}
    with client.start_session() as s, s.start_transaction():
        coll.insert_one({"_id": 1, "k": 1}, session=s)
        coll.insert_one({"_id": 2, "k": 150}, session=s)
    for name in ("shard00", "shard01"):
        log = cluster.core.nodes[name].oplog
        entries = [log.entry_at(p) for p in range(starts[name], log.end)]
        prep = [e for e in entries if e["op"] == "c" and e["o"].get("prepare")]
        commit = [e for e in entries if e["op"] == "c" and "commitTransaction" in e["o"]]
        assert len(prep) == 1 and len(commit) == 1
        assert commit[0]["prevOpTime"]["ts"] == prep[0]["ts"]
        assert commit[0]["o"]["commitTimestamp"] >= prep[0]["ts"]
        assert list(prep[0])[:2] == ["lsid", "txnNumber"] and prep[0]["ns"] == "admin.$cmd"


def test_aborted_transaction_produces_nothing_and_conflicts_are_transient(client):
    coll = client.t.c
    coll.insert_one({"_id": 1, "v": 0})
    with coll.watch(max_await_time_ms=100) as cs:
        with client.start_session() as s:
            s.start_transaction()
            coll.insert_one({"_id": 2}, session=s)
            s.abort_transaction()
        with client.start_session() as s1, client.start_session() as s2:
            s1.start_transaction()
            s2.start_transaction()
            coll.update_one({"_id": 1}, {"$inc": {"v": 1}}, session=s1)
            with pytest.raises(pymongo.errors.OperationFailure) as ei:
                coll.update_one({"_id": 1}, {"$inc": {"v": 1}}, session=s2)
            assert ei.value.code == 112 and ei.value.has_error_label("TransientTransactionError")
            # worded as the server words every WriteConflict (throwWriteConflictException)
            assert ei.value.details["errmsg"] == (
                "Caused by :: Write conflict during plan execution and yielding is disabled. :: "
                "Please retry your operation or multi-document transaction.")
            s1.commit_transaction()
        evs = read(cs, 1)
        assert [e["operationType"] for e in evs] == ["update"] and read_quiet(cs, 0.2) == []
    assert coll.find_one({"_id": 2}) is None and coll.find_one({"_id": 1})["v"] == 1


def test_large_transaction_writes_a_partial_txn_chain(cluster, client):
    coll = client.t.big
    coll.insert_one({"_id": 0})
    node = cluster.core.nodes[next(n for n, nd in cluster.core.nodes.items()
                                   if n != "config" and nd.catalog.collection("t", "big"))]
    node.apply_ops_limit = 2000  # a small limit so the chain shows up
    start = node.oplog.end
    try:
        with coll.watch(max_await_time_ms=100) as cs:
            with client.start_session() as s, s.start_transaction():
                for i in range(30):
                    coll.insert_one({"_id": i + 1, "pad": "x" * 200}, session=s)
            evs = read(cs, 30)
    finally:
        del node.apply_ops_limit
    assert [e["documentKey"]["_id"] for e in evs] == list(range(1, 31))
    assert [decode_resume_token(e["_id"]).txn_op_index for e in evs] == list(range(30))
    log = node.oplog
    txn = [log.entry_at(p) for p in range(start, log.end) if log.entry_at(p)["op"] == "c" and "applyOps" in log.entry_at(p)["o"]]
    assert len(txn) > 1 and all(e["o"].get("partialTxn") for e in txn[:-1]) and "partialTxn" not in txn[-1]["o"]
    for a, b in zip(txn, txn[1:]):
        assert b["prevOpTime"]["ts"] == a["ts"]


def test_retryable_write_retried_returns_first_result_once(cluster, client):
    shard_three_ways(client)
    lsid = {"id": __import__("bson").Binary(b"\x07" * 16, 4)}
    cmd = {"insert": "c", "documents": [{"_id": 1, "k": 1}, {"_id": 2, "k": 150}], "lsid": lsid, "txnNumber": Int64(5)}
    starts = {name: cluster.core.nodes[name].oplog.end for name in ("shard00", "shard01")}
    r1 = client.s.command(dict(cmd))
    r2 = client.s.command(dict(cmd))
    assert r1["n"] == r2["n"] == 2 and "writeErrors" not in r2
    assert client.s.c.count_documents({}) == 2
    for name in ("shard00", "shard01"):
        log = cluster.core.nodes[name].oplog
        inserts = [log.entry_at(p) for p in range(starts[name], log.end)
                   if log.entry_at(p)["op"] == "i" and log.entry_at(p)["ns"] == "s.c"]
        assert len(inserts) == 1 and inserts[0]["txnNumber"] == Int64(5)


def test_move_chunk_under_a_watch_adds_no_event_and_loses_nothing(client):
    shard_three_ways(client)
    coll = client.s.c
    coll.insert_many([{"_id": i, "k": i} for i in range(50)])
    with coll.watch(max_await_time_ms=100) as cs:
        coll.update_one({"_id": 7, "k": 7}, {"$set": {"v": 1}})
        client.admin.command("moveChunk", "s.c", find={"k": 0}, to="shard02")
        assert [e["operationType"] for e in read(cs, 1)] == ["update"]
        assert read_quiet(cs, 0.3) == []
        coll.update_one({"_id": 7, "k": 7}, {"$set": {"v": 2}})
        coll.delete_one({"_id": 7, "k": 7})
        evs = read(cs, 2)
        assert [(e["operationType"], e["documentKey"]) for e in evs] == [
            ("update", {"k": 7, "_id": 7}), ("delete", {"k": 7, "_id": 7})]
    assert coll.count_documents({}) == 49


def test_show_commit_timestamp_marks_the_events_of_a_prepared_transaction(client):
    shard_three_ways(client)
    coll = client.s.c
    start = client.admin.command("ping")["operationTime"]
    with client.start_session() as s, s.start_transaction():  # two shards: prepared, committed by 2PC
        coll.insert_one({"_id": 1, "k": 10}, session=s)
        coll.insert_one({"_id": 2, "k": 150}, session=s)
    with client.start_session() as s, s.start_transaction():  # one shard: committed without prepare
        coll.insert_one({"_id": 3, "k": 20}, session=s)

    def events(**opts):
        spec = {"startAtOperationTime": start, **opts}
        cur = client.s.command("aggregate", "c", pipeline=[{"$changeStream": spec}], cursor={})["cursor"]
        evs = list(cur["firstBatch"])
        while len(evs) < 3:
            more = client.s.command("getMore", cur["id"], collection="c", maxTimeMS=200)["cursor"]
            evs += more["nextBatch"]
        return sorted(evs, key=lambda e: e["documentKey"]["_id"])

    shown = events(showCommitTimestamp=True)
    prepared = shown[:2]
    assert all(list(e)[3:6] == ["operationType", "clusterTime", "commitTimestamp"] for e in prepared)
    assert prepared[0]["commitTimestamp"] == prepared[1]["commitTimestamp"]  # the coordinator's one time
    assert all(e["clusterTime"] >= e["commitTimestamp"] for e in prepared)
    assert "commitTimestamp" not in shown[2]  # an unprepared transaction has none
    assert all("commitTimestamp" not in e for e in events())  # and nobody sees it without asking
