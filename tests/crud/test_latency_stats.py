"""Top: `$collStats: {latencyStats}` (mongosh's `db.c.latencyStats()`) and the `top` command count each
collection's operations by kind, with the server's histogram buckets."""

from __future__ import annotations

import pytest
from bson import Int64
from pymongo.errors import OperationFailure

from mongosim.shardsim.top import LOWER_BOUNDS, bucket


def _latency(coll, histograms: bool) -> dict:
    """The shards' latencyStats summed (one document per shard holding the collection)."""
    docs = list(coll.aggregate([{"$collStats": {"latencyStats": {"histograms": histograms}}}]))
    out = {}
    for kind in ("reads", "writes", "commands", "transactions"):
        parts = [d["latencyStats"][kind] for d in docs]
        out[kind] = {"ops": sum(p["ops"] for p in parts), "latency": sum(p["latency"] for p in parts),
                     "histogram": [h for p in parts for h in p.get("histogram", [])], "keys": list(parts[0])}
    return out


def test_latency_stats_count_reads_writes_and_commands(client):
    client.drop_database("top_db")
    coll = client.top_db.c
    coll.insert_one({"_id": 1})
    coll.insert_many([{"_id": 2}, {"_id": 3}])
    for _ in range(3):
        coll.find_one({"_id": 2})
    coll.create_index("x")
    stats = _latency(coll, histograms=True)
    assert stats["writes"]["ops"] == 2 and stats["reads"]["ops"] == 3 and stats["commands"]["ops"] >= 1
    assert stats["transactions"]["ops"] == 0
    assert stats["reads"]["keys"] == ["histogram", "latency", "ops", "queryableEncryptionLatencyMicros"]
    for kind in ("reads", "writes"):
        hist = stats[kind]["histogram"]
        assert sum(h["count"] for h in hist) == stats[kind]["ops"]
        assert all(isinstance(h["micros"], Int64) and h["micros"] in LOWER_BOUNDS for h in hist)
    # the aggregate just run is a read too; without histograms, no histogram
    again = _latency(coll, histograms=False)
    assert again["reads"]["ops"] == 4 and again["reads"]["keys"] == ["latency", "ops", "queryableEncryptionLatencyMicros"]
    # a dropped collection starts afresh
    coll.drop()
    coll.insert_one({"_id": 1})
    assert _latency(coll, histograms=False)["reads"]["ops"] == 0


def test_top_on_a_member(replset_client):
    replset_client.drop_database("top_rs")
    coll = replset_client.top_rs.c
    coll.insert_many([{"_id": i} for i in range(3)])
    coll.insert_one({"_id": 9})
    list(coll.find())
    coll.update_one({"_id": 1}, {"$set": {"a": 1}})
    coll.delete_one({"_id": 2})
    totals = replset_client.admin.command("top")["totals"]
    assert next(iter(totals)) == "note" and totals["note"] == "all times in microseconds"
    c = totals["top_rs.c"]
    assert list(c) == ["total", "readLock", "writeLock", "queries", "getmore", "insert", "update", "remove", "commands"]
    assert (c["insert"]["count"], c["queries"]["count"], c["update"]["count"], c["remove"]["count"]) == (2, 1, 1, 1)
    assert c["total"]["count"] == c["readLock"]["count"] + c["writeLock"]["count"] and c["writeLock"]["count"] == 4
    with pytest.raises(OperationFailure) as e:
        replset_client.top_rs.command("top")
    assert e.value.code == 13 and e.value.details["errmsg"] == "top may only be run against the admin database."


def test_histogram_buckets_are_the_servers():
    # two buckets per power of two from 2^11 to 2^20, one per power below and above
    assert LOWER_BOUNDS[:13] == [0, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 3072]
    assert len(LOWER_BOUNDS) == 51 and LOWER_BOUNDS[-1] == 2**40
    for micros in (0, 1, 2, 3, 1023, 1024, 2047, 2048, 3071, 3072, 4095, 2**20 + 1, 3 << 19, 2**21, 2**45):
        i = bucket(micros)
        assert LOWER_BOUNDS[i] <= max(micros, 0) and (i == 50 or micros < LOWER_BOUNDS[i + 1])
