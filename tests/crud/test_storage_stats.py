"""dbStats, collStats, dataSize, $listSessions and writes to system.profile through pymongo, in both
topologies (a sharded collection spans both shards).

Reply shapes: src/mongo/s/commands/cluster_coll_stats_cmd.cpp (mongos collStats: sharded, primary,
the first shard's capped/wiredTiger/indexDetails, ns, the summed counts, indexSizes, avgObjSize,
maxSize, nindexes, scaleFactor, nchunks, shards), cluster_db_stats_cmd.cpp (raw per shard, then the
sums), cluster_data_size_cmd.cpp (size, numObjects, millis summed); sizes are the documents' BSON
sizes (shardsim/storage_stats.py).  userAllowedWriteNS (src/mongo/db/ops/insert.cpp): "cannot write
to <db>.system.profile", InvalidNamespace.
"""

from __future__ import annotations

import pytest
from bson import BSON, Int64
from pymongo.errors import OperationFailure, WriteError

from tests.crud.conftest import shard_two_ways

DOCS = [{"_id": i, "k": k, "pad": "x" * i} for i, k in enumerate((1, 2, 3, 150, 160))]
DATA = sum(len(BSON.encode(d)) for d in DOCS)


@pytest.fixture
def coll(client):
    if client.topology_name == "sharded":
        shard_two_ways(client, "st.c")
    c = client.st.c
    c.insert_many([dict(d) for d in DOCS])
    return c


def test_db_stats(client, coll):
    client.st.create_collection("other")
    client.st.command("create", "v", viewOn="c", pipeline=[])
    stats = client.st.command("dbStats")
    body = {k: v for k, v in stats.items() if k not in ("raw", "ok", "$clusterTime", "operationTime")}
    assert list(body)[:6] == ["db", "collections", "views", "objects", "avgObjSize", "dataSize"]
    # system.views is a collection of the database, its view definition one of its objects
    view_doc = len(BSON.encode(client.st.system.views.find_one()))
    assert stats["db"] == "st" and stats["objects"] == 6 and stats["dataSize"] == DATA + view_doc
    assert stats["avgObjSize"] == pytest.approx((DATA + view_doc) / 6) and isinstance(stats["avgObjSize"], float)
    # (mongos sums the shards' counts: the sharded collection counts once per shard holding it)
    sharded = client.topology_name == "sharded"
    assert stats["views"] == 1 and stats["collections"] == (4 if sharded else 3) and stats["indexes"] >= 2
    assert stats["totalSize"] == stats["storageSize"] + stats["indexSize"]
    if client.topology_name == "sharded":
        raw = stats["raw"]
        assert len(raw) == 2 and all(key.startswith(("shard00/", "shard01/")) for key in raw)
        assert sum(r["objects"] for r in raw.values()) == 6
        assert sum(r["dataSize"] for r in raw.values()) == DATA + view_doc
    else:
        assert "raw" not in stats
    scaled = client.st.command("dbStats", scale=1024)
    assert scaled["scaleFactor"] == 1024 and scaled["dataSize"] <= (DATA + view_doc) // 1024 + 1
    assert "freeStorageSize" not in stats and "totalFreeStorageSize" in client.st.command("dbStats", freeStorage=1)
    empty = client.nothing_here.command("dbStats")
    assert (empty["objects"], empty["dataSize"], empty["collections"]) == (0, 0, 0)


def test_coll_stats(client, coll):
    coll.create_index("pad")
    stats = client.st.command("collStats", "c")
    assert stats["ns"] == "st.c" and stats["count"] == 5 and stats["size"] == DATA
    indexes = {"_id_", "pad_1"} | ({"k_1"} if client.topology_name == "sharded" else set())  # (+ the shard key's)
    assert stats["nindexes"] == len(indexes) and set(stats["indexSizes"]) == indexes
    assert stats["totalSize"] == stats["storageSize"] + stats["totalIndexSize"]
    if client.topology_name == "sharded":
        assert stats["sharded"] is True and "primary" not in stats
        assert stats["nchunks"] == 2 and set(stats["shards"]) == {"shard00", "shard01"}
        assert [stats["shards"][s]["count"] for s in ("shard00", "shard01")] == [3, 2]
        assert stats["avgObjSize"] == pytest.approx(DATA / 5, abs=1) and stats["maxSize"] == Int64(0)
        keys = list(stats)
        assert keys.index("sharded") < keys.index("ns") < keys.index("count") < keys.index("shards")
        halved = client.st.command("collStats", "c", scale=2)
        assert halved["size"] == DATA // 2 and halved["scaleFactor"] == 2
        assert halved["shards"]["shard00"]["scaleFactor"] == 2
        with pytest.raises(OperationFailure) as e:
            client.st.command("collStats", "c", scale=0)
        assert e.value.code == 4390200
        client.st.create_collection("plain")
        plain = client.st.command("collStats", "plain")
        assert plain["sharded"] is False and plain["primary"] == "shard00" and plain["nchunks"] == 1
    else:
        assert "sharded" not in stats and stats["avgObjSize"] == DATA // 5
    missing = client.st.command("collStats", "nope")
    assert missing["count"] == 0 and missing["size"] == 0


def test_data_size(client, coll):
    reply = client.st.command("dataSize", "st.c")
    assert (reply["size"], reply["numObjects"]) == (DATA, 5) and isinstance(reply["numObjects"], Int64)
    ranged = client.st.command("dataSize", "st.c", keyPattern={"k": 1}, min={"k": 2}, max={"k": 151})
    assert ranged["numObjects"] == 3
    assert ranged["size"] == sum(len(BSON.encode(d)) for d in DOCS if 2 <= d["k"] < 151)
    with pytest.raises(OperationFailure) as e:
        client.st.command("dataSize", 5)
    assert e.value.code == 14  # TypeMismatch
    with pytest.raises(OperationFailure) as e:
        client.st.command("dataSize", "st")
    assert e.value.code == 73 and "Invalid namespace specified 'st'" in str(e.value)  # InvalidNamespace


def test_list_sessions_reads_what_the_caches_flushed(client):
    with client.start_session() as s:
        client.st.c.insert_one({"_id": 1}, session=s)
        sid = s.session_id["id"]
        sessions = client.config.system.sessions
        before = [r["_id"]["id"] for r in sessions.aggregate([{"$listSessions": {"allUsers": True}}])]
        client.admin.command("refreshLogicalSessionCacheNow")
        mine = list(sessions.aggregate([{"$listSessions": {}}]))
        assert sid not in before and sid in [r["_id"]["id"] for r in mine]
        rec = next(r for r in mine if r["_id"]["id"] == sid)
        assert set(rec) >= {"_id", "lastUse"} and set(rec["_id"]) == {"id", "uid"}
        assert list(sessions.aggregate([{"$listSessions": {"users": [{"user": "nobody", "db": "x"}]}}])) == []
        lsid = s.session_id
    client.admin.command("endSessions", [lsid])  # (pymongo pools its sessions: end this one explicitly)
    client.admin.command("refreshLogicalSessionCacheNow")  # the ended session leaves the collection
    left = [r["_id"]["id"] for r in client.config.system.sessions.aggregate([{"$listSessions": {"allUsers": True}}])]
    assert sid not in left
    with pytest.raises(OperationFailure) as e:
        list(client.st.c.aggregate([{"$listSessions": {}}]))
    assert e.value.code == 73  # InvalidNamespace: only config.system.sessions
    with pytest.raises(OperationFailure) as e:
        list(client.config.system.sessions.aggregate([{"$match": {}}, {"$listSessions": {}}]))
    assert e.value.code == 40602


def test_writes_to_system_profile_are_refused(client):
    """mongod fails the command; mongos reports the shard's batch error as a write error per
    statement (BatchWriteOp), so pymongo raises a WriteError there."""
    client.st.c.insert_one({"_id": 1})
    expected = WriteError if client.topology_name == "sharded" else OperationFailure
    with pytest.raises(OperationFailure) as e:
        client.st.system.profile.insert_one({"a": 1})
    assert type(e.value) is expected
    assert e.value.code == 73 and "cannot write to st.system.profile" in str(e.value)
    with pytest.raises(OperationFailure) as e:
        client.st.system.profile.delete_many({})
    assert e.value.code == 73
    assert client.st.system.profile.count_documents({}) == 0
