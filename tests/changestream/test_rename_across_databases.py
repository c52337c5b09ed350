"""renameCollection across databases: the oplog entries 8.0 writes, and exactly the events each stream sees.

Facts from the server (8.0):
- catalog/rename_collection.cpp renameCollectionAcrossDatabases: a collection `tmpXXXXX.renameCollection`
  created in the target database with the source's options, the source's indexes but `_id` built on it
  while it is empty (IndexBuildsCoordinator::createIndexesOnEmptyCollection, fromMigrate false: one
  createIndexes entry each), the documents copied in batches (buildBatchedWritesWithPolicy, at most
  maxNumberOfInsertsBatchInsertsForRenameAcrossDatabases = 500 documents and
  maxSizeOfBatchedInsertsForRenameAcrossDatabasesBytes = 4 MB, storage_parameters.idl; one at a time
  into a capped collection with an index) — a batch of several in a WriteUnitOfWork grouped for
  transaction, i.e. one `applyOps` entry without lsid, txnNumber or prevOpTime
  (OpObserverImpl::onBatchedWriteCommit), a batch of one a plain insert, none fromMigrate — then the
  temporary collection renamed over the target within its database, then the source dropped;
- op_observer_impl.cpp preRenameCollection: `{renameCollection, to, stayTemp}` plus `dropTarget: <UUID>`
  and `o2: {numRecords}` only when a target is dropped;
- jstests/change_streams/ddl_rename_cross_db.js: a database stream on the target sees the temporary
  collection's create, createIndexes and inserts, then a rename from it; a collection stream on the
  target sees the rename then invalidate; the source's streams see its drop.  (SERVER-107688, after 8.0,
  marks the copy fromMigrate: jstests/change_streams/cross_db_rename_no_staging_events.js.)
"""

from __future__ import annotations

import re

from mongosim.oplog.resume_token import decode_resume_token
from tests.changestream.conftest import drain

TMP = re.compile(r"^tmp[a-zA-Z0-9]{5}\.renameCollection$")


def _entries(node, since: int) -> list[dict]:
    return [node.oplog.entry_at(p) for p in range(since, node.oplog.end)]


async def test_the_oplog_entries_of_a_rename_across_databases(replset):
    core, c = replset
    node = core.nodes["shard00"]
    await c.command("a", {"create": "src", "validator": {"k": {"$gte": 0}}})
    await c.insert("a", "src", [{"_id": i, "k": i} for i in range(3)])
    await c.command("a", {"createIndexes": "src", "indexes": [{"key": {"k": 1}, "name": "k_1"},
                                                             {"key": {"k": -1, "_id": 1}, "name": "kd"}]})
    await c.insert("b", "dst", [{"_id": "old"}])
    target_uuid = node.catalog.collection("b", "dst").uuid
    source_uuid = node.catalog.collection("a", "src").uuid
    before = node.oplog.end
    reply = await c.command("admin", {"renameCollection": "a.src", "to": "b.dst", "dropTarget": True})
    assert {k: v for k, v in reply.items() if k not in ("$clusterTime", "operationTime")} == {"ok": 1.0}
    create, ix1, ix2, batch, rename, drop = _entries(node, before)
    tmp = create["o"]["create"]
    assert TMP.match(tmp)
    tmp_uuid = create["ui"]
    assert tmp_uuid not in (source_uuid, target_uuid)
    assert (create["ns"], create["o"]) == ("b.$cmd", {"create": tmp, "validator": {"k": {"$gte": 0}},
                                                      "idIndex": {"v": 2, "key": {"_id": 1}, "name": "_id_"}})
    assert ix1["o"] == {"createIndexes": tmp, "v": 2, "key": {"k": 1}, "name": "k_1"} and ix1["ui"] == tmp_uuid
    assert ix2["o"] == {"createIndexes": tmp, "v": 2, "key": {"k": -1, "_id": 1}, "name": "kd"}
    assert list(batch) == ["op", "ns", "o", "ts", "t", "v", "wall"]  # no lsid, txnNumber, prevOpTime
    assert (batch["op"], batch["ns"]) == ("c", "admin.$cmd")
    assert batch["o"] == {"applyOps": [{"op": "i", "ns": f"b.{tmp}", "ui": tmp_uuid, "o": {"_id": i, "k": i},
                                        "o2": {"_id": i}} for i in range(3)]}
    assert (rename["ns"], rename["ui"]) == ("b.$cmd", tmp_uuid)
    assert rename["o"] == {"renameCollection": f"b.{tmp}", "to": "b.dst", "stayTemp": False, "dropTarget": target_uuid}
    assert rename["o2"] == {"numRecords": 1}
    assert (drop["ns"], drop["ui"], drop["o"], drop["o2"]) == ("a.$cmd", source_uuid, {"drop": "src"}, {"numRecords": 3})
    assert not any(e.get("fromMigrate") for e in (create, ix1, ix2, batch, rename, drop))
    moved = node.catalog.collection("b", "dst")
    assert moved.uuid == tmp_uuid and [d["_id"] for d in moved.scan()] == [0, 1, 2]
    assert [s["name"] for s in moved.indexes] == ["_id_", "k_1", "kd"] and moved.options == {"validator": {"k": {"$gte": 0}}}
    assert node.catalog.collection("a", "src") is None


async def test_batches_of_500_documents_or_4_mb(replset):
    core, c = replset
    node = core.nodes["shard00"]
    await c.insert("a", "many", [{"_id": i} for i in range(1001)])
    await c.insert("a", "big", [{"_id": i, "pad": "x" * 1_000_000} for i in range(5)])
    await c.insert("a", "one", [{"_id": 1}])
    await c.command("a", {"create": "cap", "capped": True, "size": 100_000})
    await c.insert("a", "cap", [{"_id": i} for i in (3, 1, 2)])
    shapes = {}
    for name in ("many", "big", "one", "cap"):
        before = node.oplog.end
        await c.command("admin", {"renameCollection": f"a.{name}", "to": f"b.{name}"})
        copied = _entries(node, before)[1:-2]  # (between the create and the rename)
        shapes[name] = [len(e["o"]["applyOps"]) if e["op"] == "c" else e["op"] for e in copied]
    assert shapes == {"many": [500, 500, "i"], "big": [4, "i"], "one": ["i"], "cap": ["i", "i", "i"]}
    assert [d["_id"] for d in node.catalog.collection("b", "cap").scan()] == [3, 1, 2]  # natural order kept
    assert node.catalog.collection("b", "cap").options["capped"] is True


async def test_what_each_stream_sees(replset):
    core, c = replset
    node = core.nodes["shard00"]
    await c.insert("a", "src", [{"_id": i} for i in range(3)])
    await c.command("a", {"createIndexes": "src", "indexes": [{"key": {"k": 1}, "name": "k_1"}]})
    await c.insert("b", "dst", [{"_id": "old"}])
    target_uuid = node.catalog.collection("b", "dst").uuid
    streams = {
        "b expanded": c.watch("b", 1, showExpandedEvents=True),
        "b": c.watch("b", 1),
        "b.dst": c.watch("b", "dst"),
        "a": c.watch("a", 1),
        "a.src": c.watch("a", "src", showExpandedEvents=True),
        "cluster": c.watch("admin", 1),
    }
    for cs in streams.values():
        await cs.open()
    await c.command("admin", {"renameCollection": "a.src", "to": "b.dst", "dropTarget": True})
    await c.insert("b", "dst", [{"_id": "after"}])
    got = {name: await drain(cs, n) for (name, cs), n in zip(streams.items(), (7, 5, 2, 1, 2, 6))}

    def kinds(evs):
        return [(e["operationType"], e.get("ns", {}).get("db"), "tmp" if TMP.match(e.get("ns", {}).get("coll", "") or "")
                 else e.get("ns", {}).get("coll")) for e in evs]

    assert kinds(got["b expanded"]) == [("create", "b", "tmp"), ("createIndexes", "b", "tmp"), ("insert", "b", "tmp"),
                                        ("insert", "b", "tmp"), ("insert", "b", "tmp"), ("rename", "b", "tmp"),
                                        ("insert", "b", "dst")]
    assert kinds(got["b"]) == [("insert", "b", "tmp")] * 3 + [("rename", "b", "tmp"), ("insert", "b", "dst")]
    assert kinds(got["b.dst"]) == [("rename", "b", "tmp"), ("invalidate", None, None)]
    assert kinds(got["a"]) == [("drop", "a", "src")]
    assert kinds(got["a.src"]) == [("drop", "a", "src"), ("invalidate", None, None)]
    assert kinds(got["cluster"]) == [("insert", "b", "tmp")] * 3 + [("rename", "b", "tmp"), ("drop", "a", "src"),
                                                                    ("insert", "b", "dst")]
    create, cix, i0, i1, i2, rename, _after = got["b expanded"]
    tmp_uuid = create["collectionUUID"]
    assert cix["operationDescription"] == {"indexes": [{"v": 2, "key": {"k": 1}, "name": "k_1"}]}
    # the inserts come from one applyOps entry: one clusterTime, txnOpIndex 0, 1, 2 in their tokens, no session
    assert i0["clusterTime"] == i1["clusterTime"] == i2["clusterTime"]
    for n, ev in enumerate((i0, i1, i2)):
        assert list(ev) == ["_id", "operationType", "clusterTime", "collectionUUID", "wallTime", "fullDocument", "ns",
                            "documentKey"]
        assert ev["collectionUUID"] == tmp_uuid and ev["documentKey"] == {"_id": n}
        token = decode_resume_token(ev["_id"])
        assert token.txn_op_index == n and bytes(token.uuid) == bytes(tmp_uuid)
    assert list(rename)[:2] == ["to", "_id"] and rename["to"] == {"db": "b", "coll": "dst"}
    assert rename["operationDescription"] == {"to": {"db": "b", "coll": "dst"}, "dropTarget": target_uuid}
    assert rename["collectionUUID"] == tmp_uuid
    classic_rename = got["b"][3]
    assert "operationDescription" not in classic_rename and classic_rename["to"] == {"db": "b", "coll": "dst"}
    # resuming from the second insert of the batch goes on with the third
    resumed = c.watch("b", 1, resumeAfter=i1["_id"])
    await resumed.open()
    assert [e["_id"] for e in await drain(resumed, 2)] == [i2["_id"], got["b"][3]["_id"]]


async def test_through_the_router(sharded):
    core, c = sharded
    await c.admin({"enableSharding": "a", "primaryShard": "shard02"})
    await c.insert("a", "src", [{"_id": i} for i in range(2)])
    cs = c.watch("admin", 1, showExpandedEvents=True)
    await cs.open()
    await c.admin({"renameCollection": "a.src", "to": "b.dst", "stayTemp": True})
    evs = await drain(cs, 5)
    assert [e["operationType"] for e in evs] == ["create", "insert", "insert", "rename", "drop"]
    assert TMP.match(evs[0]["ns"]["coll"]) and evs[3]["operationDescription"] == {"to": {"db": "b", "coll": "dst"}}
    assert core.nodes["shard02"].catalog.collection("b", "dst") is not None  # the target database: the source's primary
    config = (await c.command("config", {"find": "databases", "filter": {"_id": "b"}}))["cursor"]["firstBatch"]
    assert config[0]["primary"] == "shard02"
    entry = next(core.nodes["shard02"].oplog.entry_at(p) for p in range(core.nodes["shard02"].oplog.end - 1, 0, -1)
                 if core.nodes["shard02"].oplog.entry_at(p)["o"].get("renameCollection"))
    assert entry["o"]["stayTemp"] is True and "dropTarget" not in entry["o"] and "o2" not in entry
