"""What the oplog and change streams show of time-series deletes and updates
(jstests/noPassthrough/timeseries/timeseries_update_oplog.js and friends)."""

from __future__ import annotations

import datetime

import pytest
from pymongo import MongoClient

T0 = datetime.datetime(2023, 6, 29, 16)
INITIAL = [{"_id": 0, "time": T0, "tag": 0}, {"_id": 1, "time": T0, "tag": 0, "a": 1},
           {"_id": 2, "time": T0, "tag": 0, "a": 1}, {"_id": 3, "time": T0, "tag": 1}]


@pytest.fixture
def rs(replset_client, request):
    name = f"tso_{request.node.name[-20:]}"
    replset_client.drop_database(name)
    plain = MongoClient(replset_client.mongosim_cluster.uri, retryWrites=False)
    db = plain[name]
    db.create_collection("w", timeseries={"timeField": "time", "metaField": "tag"})
    db.w.insert_many(INITIAL)
    yield replset_client, db
    plain.close()


def _entries_since(client, start) -> list[dict]:
    return list(client.local["oplog.rs"].find({"ts": {"$gt": start}}))


def _last_ts(client):
    return client.local["oplog.rs"].find_one(sort=[("$natural", -1)])["ts"]


@pytest.mark.parametrize("flt, multi, kinds", [
    ({"a": 1}, True, ["u", "i"]),  # some of the bucket's measurements: the bucket updated, the new one inserted
    ({"tag": 0}, True, ["d", "i"]),  # all of them: the bucket deleted
    ({"tag": 0}, False, ["u", "i"]),
    ({"tag": 1}, False, ["d", "i"]),
])
def test_an_update_is_one_apply_ops_entry(rs, flt, multi, kinds):
    client, db = rs
    start = _last_ts(client)
    (db.w.update_many if multi else db.w.update_one)(flt, {"$inc": {"updated": 1}})
    [entry] = _entries_since(client, start)
    assert entry["op"] == "c" and entry["ns"] == "admin.$cmd" and "lsid" not in entry
    ops = entry["o"]["applyOps"]
    assert [op["op"] for op in ops] == kinds
    assert {op["ns"] for op in ops} == {f"{db.name}.system.buckets.w"}
    if kinds[0] == "u":
        assert ops[0]["o"]["_id"] == ops[0]["o2"]["_id"]  # a replacement of the whole bucket


def test_retryable_updates_run_in_an_internal_transaction(rs):
    client, db = rs
    start = _last_ts(client)
    client[db.name].w.update_one({"tag": 0}, {"$inc": {"updated": 1}})  # (pymongo: retryable)
    [entry] = _entries_since(client, start)
    assert set(entry["lsid"]) == {"id", "uid", "txnNumber", "txnUUID"} and entry["txnNumber"] == 0
    assert [op["op"] for op in entry["o"]["applyOps"]] == ["u", "i"]
    assert entry["o"]["applyOps"][0]["stmtId"] == 0 and "stmtId" not in entry["o"]["applyOps"][1]
    start = _last_ts(client)
    r = client[db.name].w.update_one({"tag": 2, "time": T0}, {"$inc": {"updated": 1}}, upsert=True)
    [entry] = _entries_since(client, start)
    assert [op["op"] for op in entry["o"]["applyOps"]] == ["i"]
    assert entry["o"]["applyOps"][0]["o"]["control"]["min"]["_id"] == r.upserted_id


def test_a_non_retryable_upsert_is_a_plain_insert(rs):
    client, db = rs
    start = _last_ts(client)
    db.w.update_one({"tag": 2, "time": T0}, {"$inc": {"updated": 1}}, upsert=True)
    [entry] = _entries_since(client, start)
    assert entry["op"] == "i" and entry["ns"] == f"{db.name}.system.buckets.w"


def test_deletes_update_or_delete_buckets_and_retry_once(rs):
    client, db = rs
    start = _last_ts(client)
    assert db.w.delete_many({"a": 1}).deleted_count == 2
    assert db.w.delete_many({"tag": 1}).deleted_count == 1
    entries = _entries_since(client, start)
    assert [e["op"] for e in entries] == ["u", "d"]
    assert sorted(entries[0]["o"]["data"]["_id"].values()) == [0]
    start = _last_ts(client)
    assert client[db.name].w.delete_one({"_id": 0}).deleted_count == 1  # retryable
    [entry] = _entries_since(client, start)
    assert entry["op"] == "d" and entry["stmtId"] == 0 and "txnUUID" not in entry["lsid"]


def test_streams_hide_the_buckets_unless_system_events_are_shown(rs):
    client, db = rs
    with db.watch() as plain, db.watch([], show_expanded_events=True) as expanded:
        events = db.aggregate([{"$changeStream": {"showSystemEvents": True}}])
        db.w.update_many({"a": 1}, {"$set": {"b": 2}})
        db.w.delete_many({"tag": 1})
        db.other.insert_one({"_id": "marker"})
        seen = [events.next() for _ in range(4)]
        assert [(e["operationType"], e["ns"]["coll"]) for e in seen] == [
            ("replace", "system.buckets.w"), ("insert", "system.buckets.w"), ("delete", "system.buckets.w"),
            ("insert", "other")]
        assert plain.next()["documentKey"] == {"_id": "marker"}
        assert [(e["operationType"], e["ns"]["coll"]) for e in (expanded.next(), expanded.next())] == [
            ("create", "other"), ("insert", "other")]
