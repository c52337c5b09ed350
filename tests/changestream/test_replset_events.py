"""Events of a replica-set stream: every type's fields in the server's order, tokens, DDL, invalidate."""

from __future__ import annotations

import pytest
from bson import Int64, Timestamp

from mongosim.testing import CommandError
from mongosim.oplog.clock import ts_key
from mongosim.oplog.resume_token import decode_resume_token
from tests.changestream.conftest import drain


def fields(ev: dict) -> list[str]:
    return list(ev)


async def test_crud_event_shapes_and_tokens(replset):
    core, c = replset
    await c.insert("db", "c", [{"_id": 0}])
    cs = c.watch("db", "c")
    await cs.open()
    await c.insert("db", "c", [{"_id": 1, "a": 1, "arr": ["foo", {"a": "bar"}, 1, 2, 3]}])
    await c.update("db", "c", {"_id": 1}, {"$set": {"b": 2}, "$unset": {"a": 1}, "$push": {"arr": 4}})
    # the spec's "Test array truncation": a pipeline update that shortens an array
    await c.update("db", "c", {"_id": 1}, [{"$set": {"arr": ["foo", {"a": "bar"}]}}])
    await c.update("db", "c", {"_id": 1}, {"x": 1})
    await c.delete("db", "c", {"_id": 1})
    ins, upd, trunc, rep, dele = await drain(cs, 5)
    assert fields(ins) == ["_id", "operationType", "clusterTime", "wallTime", "fullDocument", "ns", "documentKey"]
    assert ins["fullDocument"] == {"_id": 1, "a": 1, "arr": ["foo", {"a": "bar"}, 1, 2, 3]} and ins["documentKey"] == {"_id": 1}
    assert fields(upd) == ["_id", "operationType", "clusterTime", "wallTime", "ns", "documentKey", "updateDescription"]
    assert upd["updateDescription"] == {"updatedFields": {"b": 2, "arr.5": 4}, "removedFields": ["a"], "truncatedArrays": []}
    assert trunc["updateDescription"] == {"updatedFields": {}, "removedFields": [],
                                          "truncatedArrays": [{"field": "arr", "newSize": 2}]}
    assert fields(rep) == ["_id", "operationType", "clusterTime", "wallTime", "fullDocument", "ns", "documentKey"]
    assert rep["fullDocument"] == {"_id": 1, "x": 1}
    assert fields(dele) == ["_id", "operationType", "clusterTime", "wallTime", "ns", "documentKey"]
    node = core.nodes["shard00"]
    uuid = node.catalog.collection("db", "c").uuid
    for ev in (ins, upd, trunc, rep, dele):
        data = decode_resume_token(ev["_id"])
        assert data.cluster_time == ev["clusterTime"] and data.token_type == 128 and data.version == 2
        assert bytes(data.uuid) == bytes(uuid)
        assert data.event_identifier == {"operationType": ev["operationType"], "documentKey": ev["documentKey"]}
    keys = [e["_id"]["_data"] for e in (ins, upd, trunc, rep, dele)]
    assert keys == sorted(keys)


async def test_every_write_appends_the_servers_oplog_entry(replset):
    core, c = replset
    node = core.nodes["shard00"]
    before = node.oplog.end
    await c.insert("db", "c", [{"_id": 1, "a": 1}])
    await c.update("db", "c", {"_id": 1}, {"$set": {"a": 2}})
    await c.update("db", "c", {"_id": 1}, {"$set": {"a": 2}})  # no-op: no entry
    await c.update("db", "c", {"_id": 1}, {"b": 1})
    await c.delete("db", "c", {"_id": 1})
    entries = [node.oplog.entry_at(p) for p in range(before, node.oplog.end)]
    create, ins, upd, rep, dele = entries
    uuid = node.catalog.databases.get("db") and None
    assert create["op"] == "c" and create["ns"] == "db.$cmd"
    assert create["o"] == {"create": "c", "idIndex": {"v": 2, "key": {"_id": 1}, "name": "_id_"}}
    assert list(ins) == ["op", "ns", "ui", "o", "o2", "ts", "t", "v", "wall"]
    assert ins["o"] == {"_id": 1, "a": 1} and ins["o2"] == {"_id": 1}
    assert ins["t"] == Int64(1) and ins["v"] == Int64(2) and isinstance(ins["ts"], Timestamp)
    assert upd["o"] == {"$v": 2, "diff": {"u": {"a": 2}}} and upd["o2"] == {"_id": 1}
    assert rep["o"] == {"_id": 1, "b": 1} and rep["op"] == "u"
    assert dele["o"] == {"_id": 1} and "o2" not in dele
    keys = [ts_key(e["ts"]) for e in entries]
    assert keys == sorted(set(keys))


async def test_retryable_write_fields_and_retry_writes_once(replset):
    core, c = replset
    node = core.nodes["shard00"]
    lsid = {"id": __import__("bson").Binary(b"\x01" * 16, 4)}
    cmd = {"insert": "c", "documents": [{"_id": 1}, {"_id": 2}], "lsid": lsid, "txnNumber": Int64(1)}
    before = node.oplog.end
    r1 = await c.command("db", dict(cmd))
    r2 = await c.command("db", dict(cmd))  # a retry: same result, nothing written
    assert r1["n"] == r2["n"] == 2
    entries = [node.oplog.entry_at(p) for p in range(before, node.oplog.end) if node.oplog.entry_at(p)["op"] == "i"]
    assert len(entries) == 2
    first, second = entries
    assert list(first)[:2] == ["lsid", "txnNumber"] and first["stmtId"] == 0 and second["stmtId"] == 1
    assert first["prevOpTime"] == {"ts": Timestamp(0, 0), "t": Int64(-1)}
    assert second["prevOpTime"]["ts"] == first["ts"]
    assert len(first["lsid"]["uid"]) == 32


async def test_ddl_events_expanded_and_classic(replset):
    core, c = replset
    classic = c.watch("db", 1)
    expanded = c.watch("db", 1, showExpandedEvents=True)
    await classic.open()
    await expanded.open()
    await c.command("db", {"create": "a"})
    await c.command("db", {"createIndexes": "a", "indexes": [{"key": {"x": 1}, "name": "x_1"}]})
    await c.command("db", {"collMod": "a"})
    await c.command("db", {"dropIndexes": "a", "index": "x_1"})
    await c.command("admin", {"renameCollection": "db.a", "to": "db.b"})
    await c.command("db", {"drop": "b"})
    evs = await drain(expanded, 6)
    assert [e["operationType"] for e in evs] == ["create", "createIndexes", "modify", "dropIndexes", "rename", "drop"]
    create, cix, mod, dix, ren, drop = evs
    assert fields(create) == ["_id", "operationType", "clusterTime", "collectionUUID", "wallTime", "ns", "operationDescription"]
    assert create["operationDescription"] == {"idIndex": {"v": 2, "key": {"_id": 1}, "name": "_id_"}}
    assert cix["operationDescription"] == {"indexes": [{"v": 2, "key": {"x": 1}, "name": "x_1"}]}
    assert mod["stateBeforeChange"]["collectionOptions"]["uuid"] == create["collectionUUID"]
    assert dix["operationDescription"] == {"indexes": [{"v": 2, "key": {"x": 1}, "name": "x_1"}]}
    assert fields(ren)[0] == "to" and ren["to"] == {"db": "db", "coll": "b"} and ren["ns"] == {"db": "db", "coll": "a"}
    # (OpObserverImpl::preRenameCollection writes dropTarget only when a target is dropped)
    assert ren["operationDescription"] == {"to": {"db": "db", "coll": "b"}}
    assert decode_resume_token(create["_id"]).event_identifier == {"operationType": "create",
                                                                    "operationDescription": create["operationDescription"]}
    assert [e["operationType"] for e in await drain(classic, 2)] == ["rename", "drop"]


async def test_collection_stream_invalidates_and_start_after(replset):
    core, c = replset
    await c.insert("db", "c", [{"_id": 0}])
    cs = c.watch("db", "c")
    await cs.open()
    await c.command("db", {"drop": "c"})
    drop, inv = await drain(cs, 2)
    assert drop["operationType"] == "drop" and inv["operationType"] == "invalidate"
    assert fields(inv) == ["_id", "operationType", "clusterTime", "wallTime"]
    d, i = decode_resume_token(drop["_id"]), decode_resume_token(inv["_id"])
    assert i.from_invalidate and not d.from_invalidate and inv["_id"]["_data"] > drop["_id"]["_data"]
    assert await cs.try_next() is None and cs.closed
    # resumeAfter an invalidate token is refused; startAfter starts a new stream after it
    with pytest.raises(CommandError) as ei:
        await c.watch("db", "c", resumeAfter=inv["_id"]).open()
    assert ei.value.code == 260
    after = c.watch("db", "c", startAfter=inv["_id"])
    await after.open()
    await c.insert("db", "c", [{"_id": 5}])
    (ev,) = await drain(after, 1)
    assert ev["operationType"] == "insert" and ev["documentKey"] == {"_id": 5}


async def test_resume_option_errors(replset):
    core, c = replset
    await c.insert("db", "c", [{"_id": 0}])
    cs = c.watch("db", "c")
    await cs.open()
    await c.insert("db", "c", [{"_id": 1}])
    (ev,) = await drain(cs, 1)
    cases = [
        ({"resumeAfter": ev["_id"], "startAfter": ev["_id"]}, 50865),
        ({"resumeAfter": ev["_id"], "startAtOperationTime": Timestamp(1, 1)}, 40674),
        ({"resumeAfter": {"_data": "zz"}}, None),
        ({"fullDocument": "nope"}, 2),
        ({"fullDocument": 1}, 14),
        ({"bogus": 1}, 40415),
    ]
    for opts, code in cases:
        with pytest.raises(CommandError) as ei:
            await c.command("db", {"aggregate": "c", "pipeline": [{"$changeStream": opts}], "cursor": {}})
        if code is not None:
            assert ei.value.code == code, (opts, ei.value)
    for bad in ([{"$group": {"_id": 1}}], [{"$nope": 1}]):
        with pytest.raises(CommandError) as ei:
            await c.command("db", {"aggregate": "c", "pipeline": [{"$changeStream": {}}, *bad], "cursor": {}})
        assert ei.value.code in (20, 40324)
    with pytest.raises(CommandError) as ei:
        await c.command("db", {"aggregate": 1, "pipeline": [{"$changeStream": {"allChangesForCluster": True}}], "cursor": {}})
    assert ei.value.code == 72


async def test_project_out_id_is_fatal(replset):
    core, c = replset
    cs = c.watch("db", "c", [{"$project": {"_id": 0}}])
    await cs.open()
    await c.insert("db", "c", [{"_id": 1}])
    with pytest.raises(CommandError) as ei:
        await drain(cs, 1)
    assert ei.value.code == 280 and "NonResumableChangeStreamError" in ei.value.labels


async def test_history_lost_when_the_oplog_no_longer_reaches_back(autojump_clock):
    from mongosim.core import open_cluster
    from mongosim.testing import AsyncClient

    async with open_cluster(topology="replset", listen=False, epoch=1_700_000_000, oplog_size_mb=0.01) as core:
        c = AsyncClient(core.frontend)
        await c.insert("db", "c", [{"_id": 0}])
        cs = c.watch("db", "c")
        await cs.open()
        await c.insert("db", "c", [{"_id": 1}])
        (ev,) = await drain(cs, 1)
        for i in range(300):
            await c.insert("db", "c", [{"_id": 100 + i, "pad": "x" * 100}])
        with pytest.raises(CommandError) as ei:
            await c.watch("db", "c", resumeAfter=ev["_id"]).open()
        assert ei.value.code == 286
        # a stream that fell behind the cap while tailing fails too (never a silent gap)
        with pytest.raises(CommandError) as ei:
            await drain(cs, 300)
        assert ei.value.code in (136, 286)
