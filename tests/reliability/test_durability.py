"""Durability: `--data-dir DIR` keeps oplogs, documents and sharding config across restarts.

- a clean restart (stop, start) restores every node exactly: documents,
  indexes, UUIDs, shard keys, pre-images, oplog bytes;
- a crash (SIGKILL of `mongosim serve`, no shutdown) loses no acknowledged
  write: every resume token handed out before it still resumes, with every
  event after it, nothing lost or duplicated;
- a torn journal tail (a crash in the middle of an append) and a leftover
  temporary snapshot (a crash in the middle of a snapshot) still load;
- a crash in the middle of a write storm loads into a state where documents
  and the change stream agree.
"""

from __future__ import annotations

import os
import random
import struct
import threading
import time
from pathlib import Path

import bson
import pymongo
import pytest
from bson import Timestamp

from mongosim import Cluster
from mongosim.oplog import bsonutil
from mongosim.shardsim.persistence import PersistenceError, journal_files
from tests.reliability.proc import ServerProcess


def _shard(client, ns: str = "d.c") -> None:
    db = ns.split(".")[0]
    client.admin.command("enableSharding", db, primaryShard="shard00")
    client.admin.command("shardCollection", ns, key={"k": 1})
    client.admin.command("split", ns, middle={"k": 500})
    client.admin.command("moveChunk", ns, find={"k": 500}, to="shard01")


def _node_state(core) -> dict:
    """Everything that must survive a restart, per node, in comparable form."""
    out = {}
    for name, node in core.nodes.items():
        colls = {}
        for c in node.catalog.all_collections():
            # as BSON: what a client can see (a datetime keeps milliseconds only)
            colls[c.ns] = (c.uuid, c.options, c.indexes, c.shard_key,
                           [bsonutil.encode_in_order(doc) for doc in c.docs.values()])
        out[name] = {"colls": colls, "oplog": [node.oplog.raw_at(p) for p in range(node.oplog.start, node.oplog.end)],
                     "base": node.oplog.start, "pre": dict(node.preimages)}
    return out


def test_clean_restart_restores_every_node_exactly(tmp_path):
    d = str(tmp_path / "data")
    with Cluster(shards=2, port=0, instant_hwm=True, data_dir=d) as cluster:
        client = pymongo.MongoClient(cluster.uri)
        _shard(client)
        client.d.create_collection("pre", changeStreamPreAndPostImages={"enabled": True})
        client.d.c.create_index([("v", 1)], name="v_index")  # (a unique one must lead with the shard key)
        client.d.pre.create_index([("x", 1)], unique=True, name="x_unique")
        with client.d.c.watch(full_document_before_change="whenAvailable") as s:
            client.d.c.insert_many([{"k": k, "v": k} for k in range(0, 1000, 50)])
            client.d.c.update_many({}, {"$inc": {"v": 1000}})
            client.d.c.delete_one({"k": 550})
            client.d.pre.insert_one({"_id": 1, "x": 1})
            client.d.pre.update_one({"_id": 1}, {"$set": {"x": 2}})
            events = [s.next() for _ in range(20 + 20 + 1)]
        before = cluster.call(_node_state, cluster.core)
        client.close()
    with Cluster(shards=2, port=0, instant_hwm=True, data_dir=d) as cluster:
        after = cluster.call(_node_state, cluster.core)
        for name in before:
            # a restart adds only its own periodic noops, its routers' uptime pings, and the config server's
            # AutoMerger entries in config.changelog (a new primary's balancer enables it: autoMerge.enable,
            # then its first round's autoMerge.start/end, as AutoMergerPolicy::enable logs at every start)
            b, a = before[name], after[name]
            pings, changelog = "config.mongos", "config.changelog"
            assert {k: v for k, v in a["colls"].items() if k not in (pings, changelog)} == \
                {k: v for k, v in b["colls"].items() if k not in (pings, changelog)}, name
            if changelog in b["colls"]:
                *meta_b, docs_b = b["colls"][changelog]
                *meta_a, docs_a = a["colls"][changelog]
                added = [bson.decode(d)["what"] for d in docs_a if d not in docs_b]
                assert meta_a == meta_b and set(docs_b) <= set(docs_a), name
                assert set(added) <= {"autoMerge.enable", "autoMerge.start", "autoMerge.end"}, added
            assert a["base"] == b["base"] and a["oplog"][: len(b["oplog"])] == b["oplog"], name
            assert a["pre"] == b["pre"], name
        client = pymongo.MongoClient(cluster.uri)
        assert client.d.pre.find_one({"_id": 1})["x"] == 2
        with pytest.raises(pymongo.errors.DuplicateKeyError):  # the unique index came back too
            client.d.pre.insert_one({"_id": 2, "x": 2})
        # indexes answer queries as before the restart (rebuilt from the restored documents)
        assert sorted(d["k"] for d in client.d.c.find({"v": {"$gte": 1500}}).hint("v_index")) == \
            [k for k in range(500, 1000, 50) if k != 550]
        with client.d.c.watch(resume_after=events[19]["_id"]) as s:
            rest = [s.next() for _ in range(21)]
        assert [e["_id"] for e in rest] == [e["_id"] for e in events[20:]]
        with client.d.pre.watch(full_document_before_change="required",
                                start_at_operation_time=events[0]["clusterTime"]) as s:
            ins, upd = s.next(), s.next()
        assert upd["fullDocumentBeforeChange"] == {"_id": 1, "x": 1}
        client.close()


def _contains(exc: BaseException, kind: type) -> bool:
    if isinstance(exc, kind):
        return True
    return isinstance(exc, BaseExceptionGroup) and any(_contains(e, kind) for e in exc.exceptions)


def test_data_dir_is_locked_and_topology_checked(tmp_path):
    with Cluster(shards=1, port=0, data_dir=str(tmp_path)):
        with pytest.raises(BaseException) as info:
            with Cluster(shards=1, port=0, data_dir=str(tmp_path)):
                pass
        assert _contains(info.value, PersistenceError)
    with pytest.raises(BaseException) as info:
        with Cluster(port=0, topology="replset", data_dir=str(tmp_path)):
            pass
    assert _contains(info.value, PersistenceError)


def _read(stream, n: int, timeout: float = 30.0) -> list[dict]:
    out = []
    t0 = time.time()
    while len(out) < n:
        assert time.time() - t0 < timeout, f"only {len(out)} of {n} events"
        ev = stream.try_next()
        if ev is not None:
            out.append(ev)
    return out


def _events(client, n: int, **opts) -> list[dict]:
    with client.d.c.watch(**opts) as s:
        return _read(s, n)


def test_sigkill_then_restart_resume_tokens_lose_nothing(tmp_path):
    d = tmp_path / "data"
    with ServerProcess("--shards", "2", "--instant-hwm", "--data-dir", str(d)) as srv:
        client = pymongo.MongoClient(srv.uri, serverSelectionTimeoutMS=10000)
        _shard(client)
        start = client.admin.command("ping")["operationTime"]
        with client.d.c.watch() as s:
            for k in range(0, 1000, 25):
                client.d.c.insert_one({"k": k, "v": 0})
            client.d.c.update_many({"k": {"$lt": 300}}, {"$set": {"v": 1}})
            client.d.c.delete_many({"k": {"$gte": 900}})
            seen = _read(s, 20)  # the consumer is behind: it read only 20 of the events
        # more acknowledged writes that no stream has read yet
        client.d.c.insert_many([{"k": 2000 + i} for i in range(10)])
        client.close()
        srv.kill()  # SIGKILL: no shutdown, no final snapshot
    assert journal_files(d), "the journal holds what the last snapshot does not"
    with ServerProcess("--shards", "2", "--instant-hwm", "--data-dir", str(d)) as srv:
        client = pymongo.MongoClient(srv.uri, serverSelectionTimeoutMS=10000)
        assert client.d.c.count_documents({}) == 40 - 4 + 10
        assert client.d.c.count_documents({"v": 1}) == 12
        total = 40 + 12 + 4 + 10
        everything = _events(client, total, start_at_operation_time=start)
        ops = [e["operationType"] for e in everything]
        assert ops.count("insert") == 50 and ops.count("update") == 12 and ops.count("delete") == 4
        # every token handed out before the crash resumes with exactly what followed it
        for i in (0, 7, 19):
            rest = _events(client, total - i - 1, resume_after=seen[i]["_id"])
            assert [e["_id"] for e in rest] == [e["_id"] for e in everything[i + 1:]]
            assert [e["_id"] for e in everything[: i + 1]] == [e["_id"] for e in seen[: i + 1]]
        # and the stream goes on with writes made after the restart
        with client.d.c.watch(resume_after=seen[19]["_id"]) as s:
            client.d.c.insert_one({"k": 3000})
            after = _read(s, total - 20 + 1)
        assert after[-1]["fullDocument"]["k"] == 3000
        assert after[-1]["clusterTime"] > everything[-1]["clusterTime"]
        client.close()


def test_torn_journal_tail_and_leftover_temp_snapshot_load(tmp_path):
    d = tmp_path / "data"
    with ServerProcess("--shards", "1", "--data-dir", str(d)) as srv:
        client = pymongo.MongoClient(srv.uri, serverSelectionTimeoutMS=10000)
        client.d.c.insert_many([{"_id": i} for i in range(10)])  # creates d.c: a snapshot
        for i in range(10, 30):
            client.d.c.insert_one({"_id": i})  # journaled
        client.close()
        srv.kill()
    (_gen, journal), *_ = journal_files(d)[-1:]
    size = journal.stat().st_size
    assert size > 0
    with open(journal, "ab") as f:  # a record cut short by the crash, and one with a bad checksum
        f.write(struct.pack("<II", 1000, 0) + b"\x01partial")
    (d / "snapshot.bin.tmp").write_bytes(b"half a snapshot")
    with ServerProcess("--shards", "1", "--data-dir", str(d)) as srv:
        client = pymongo.MongoClient(srv.uri, serverSelectionTimeoutMS=10000)
        assert sorted(x["_id"] for x in client.d.c.find()) == list(range(30))
        client.d.c.insert_one({"_id": 30})
        client.close()
        srv.kill()
    # cut the last record in half this time
    (_gen, journal), *_ = journal_files(d)[-1:]
    data = journal.read_bytes()
    journal.write_bytes(data[: len(data) - 7])
    with ServerProcess("--shards", "1", "--data-dir", str(d)) as srv:
        client = pymongo.MongoClient(srv.uri, serverSelectionTimeoutMS=10000)
        ids = sorted(x["_id"] for x in client.d.c.find())
        assert ids[:30] == list(range(30))  # the torn record is the only thing that may be missing
        client.close()


def test_crash_in_a_write_storm_leaves_a_loadable_consistent_state(tmp_path):
    d = tmp_path / "data"
    acked: list[int] = []
    with ServerProcess("--shards", "2", "--instant-hwm", "--data-dir", str(d)) as srv:
        client = pymongo.MongoClient(srv.uri, serverSelectionTimeoutMS=5000, retryWrites=False)
        _shard(client)
        start = client.admin.command("ping")["operationTime"]
        stop = threading.Event()

        def writer(base: int) -> None:
            i = 0
            while not stop.is_set():
                k = base + i
                try:
                    client.d.c.insert_one({"k": k % 1000, "n": k})
                    if i % 5 == 0:
                        client.d.c.update_one({"n": k}, {"$set": {"u": True}})
                except pymongo.errors.PyMongoError:
                    return
                acked.append(k)
                i += 1

        threads = [threading.Thread(target=writer, args=(b,)) for b in (0, 100_000, 200_000)]
        for t in threads:
            t.start()
        time.sleep(random.uniform(1.0, 2.0))
        srv.kill()
        stop.set()
        for t in threads:
            t.join(10)
        client.close()
    assert len(acked) > 20
    with ServerProcess("--shards", "2", "--instant-hwm", "--data-dir", str(d)) as srv:
        client = pymongo.MongoClient(srv.uri, serverSelectionTimeoutMS=10000)
        present = {x["n"] for x in client.d.c.find({}, {"n": 1})}
        assert set(acked) <= present, f"acknowledged but lost: {sorted(set(acked) - present)[:10]}"
        assert len(present) - len(set(acked)) <= 3  # at most the in-flight write of each writer
        # the change stream and the documents agree
        n_updates = client.d.c.count_documents({"u": True})
        with client.d.c.watch(start_at_operation_time=start) as s:
            evs = _read(s, len(present) + n_updates)
            assert s.try_next() is None
        assert sorted(e["fullDocument"]["n"] for e in evs if e["operationType"] == "insert") == sorted(present)
        client.close()


def test_sigterm_is_a_clean_shutdown(tmp_path):
    d = tmp_path / "data"
    with ServerProcess("--shards", "1", "--data-dir", str(d)) as srv:
        client = pymongo.MongoClient(srv.uri, serverSelectionTimeoutMS=10000)
        client.d.c.insert_one({"_id": 1})
        client.close()
        srv.proc.terminate()
        assert srv.proc.wait(30) == 0
    # a clean shutdown leaves a snapshot with everything and an empty journal
    assert all(p.stat().st_size == 0 for _g, p in journal_files(d))


def test_replay_stops_before_a_change_only_a_snapshot_carries(tmp_path):
    """A DDL entry in the journal with no snapshot after it was never acknowledged (its reply
    waits for the snapshot): replay stops there, and drops what follows, instead of guessing."""
    from bson import Timestamp as Ts

    from mongosim.oplog import entry as oplog_entry
    from mongosim.shardsim.persistence import _KIND_OPLOG, frame

    d = tmp_path / "data"
    with Cluster(shards=1, port=0, data_dir=str(d)) as cluster:
        client = pymongo.MongoClient(cluster.uri)
        client.d.c.insert_one({"_id": 1})
        names = list(cluster.core.nodes)
        last = cluster.call(lambda: cluster.core.nodes["shard00"].oplog.last_key)
        client.close()
    idx = names.index("shard00")
    ts = [Ts((last >> 32) + 10, i) for i in (1, 2, 3)]
    wall = __import__("datetime").datetime(2030, 1, 1)
    good = oplog_entry.finish(oplog_entry.insert_op("d.c", None, {"_id": 2}, {"_id": 2}), ts[0], wall)
    with Cluster(shards=1, port=0, data_dir=str(d)) as cluster:  # learn the collection's UUID
        uuid = cluster.call(lambda: cluster.core.nodes["shard00"].catalog.collection("d", "c").uuid)
    good["ui"] = uuid
    ddl = oplog_entry.finish(oplog_entry.command_op("d", {"create": "x"}), ts[1], wall)
    after = oplog_entry.finish(oplog_entry.insert_op("d.c", uuid, {"_id": 3}, {"_id": 3}), ts[2], wall)
    (_g, journal), *_ = journal_files(d)[-1:]
    with open(journal, "ab") as f:
        for e in (good, ddl, after):
            f.write(frame(bytes((idx, _KIND_OPLOG)) + bsonutil.encode(e)))
    with Cluster(shards=1, port=0, data_dir=str(d)) as cluster:
        store = cluster.core.store
        assert store.replayed == 1 and "create" in (store.stopped_at or "")
        client = pymongo.MongoClient(cluster.uri)
        assert sorted(x["_id"] for x in client.d.c.find()) == [1, 2]
        assert "x" not in client.d.list_collection_names()
        client.close()
