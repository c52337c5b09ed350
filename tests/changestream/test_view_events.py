"""A view's DDL in change streams: what collMod on a view writes to the oplog and the events streams make of it.

Facts from the server (8.0):
- catalog/coll_mod.cpp: a view's collMod is "observed as operations on the system.views collection"
  (no collMod command entry); catalog/views_for_database.cpp `_upsertIntoCatalog` replaces the view's
  document (`collection_internal::updateDocument` with the whole new document: a replacement `u` entry,
  `o2` = `{_id: "db.view"}`), even when the definition does not change;
- pipeline/change_stream_event_transform.cpp ChangeStreamViewDefinitionEventTransformation: an insert /
  update / delete on `<db>.system.views` is a `create` / `modify` / `drop` event of the view,
  `operationDescription` the document without `_id` (none for drop), no `collectionUUID` and no
  `stateBeforeChange`; the token carries system.views' UUID and the operationDescription;
- pipeline/change_stream_filter_helpers.cpp buildViewDefinitionEventFilter, added only with
  showExpandedEvents and never for a single-collection stream; its namespace regex
  (getViewNsRegexForChangeStream) is the stream's database's system.views, or every non-internal
  database's for a whole-cluster stream.
"""

from __future__ import annotations

from mongosim.oplog.resume_token import decode_resume_token
from tests.changestream.conftest import drain

DEFINITION = {"viewOn": "base", "pipeline": [{"$match": {"a": 1}}]}


async def _view_ddl(c) -> None:
    await c.command("db", {"create": "v", "viewOn": "base", "pipeline": [{"$match": {"a": 2}}]})
    await c.command("db", {"collMod": "v", **DEFINITION})
    await c.command("db", {"collMod": "v"})  # nothing changes: the document is written again all the same
    await c.command("db", {"drop": "v"})
    await c.insert("db", "base", [{"_id": 9}])


async def test_coll_mod_of_a_view_logs_a_replacement_of_its_system_views_document(replset):
    core, c = replset
    node = core.nodes["shard00"]
    await c.insert("db", "base", [{"_id": 1}])
    await c.command("db", {"create": "v", "viewOn": "base", "pipeline": [{"$match": {"a": 2}}]})
    before = node.oplog.end
    reply = await c.command("db", {"collMod": "v", **DEFINITION})
    assert {k: v for k, v in reply.items() if k not in ("$clusterTime", "operationTime")} == {"ok": 1.0}
    (entry,) = [node.oplog.entry_at(p) for p in range(before, node.oplog.end)]
    views = node.catalog.collection("db", "system.views")
    assert list(entry) == ["op", "ns", "ui", "o", "o2", "ts", "t", "v", "wall"]
    assert (entry["op"], entry["ns"], entry["ui"]) == ("u", "db.system.views", views.uuid)
    assert entry["o"] == {"_id": "db.v", **DEFINITION} and list(entry["o"]) == ["_id", "viewOn", "pipeline"]
    assert entry["o2"] == {"_id": "db.v"}
    assert views.get("db.v") == {"_id": "db.v", **DEFINITION}


async def test_a_database_stream_with_expanded_events_reports_create_modify_drop(replset):
    core, c = replset
    await c.insert("db", "base", [{"_id": 1}])
    expanded = c.watch("db", 1, showExpandedEvents=True)
    classic = c.watch("db", 1)
    base_stream = c.watch("db", "base", showExpandedEvents=True)
    for cs in (expanded, classic, base_stream):
        await cs.open()
    await _view_ddl(c)
    create, mod, again, drop, ins = await drain(expanded, 5)
    assert [e["operationType"] for e in (create, mod, again, drop, ins)] == ["create", "modify", "modify", "drop",
                                                                             "insert"]
    uuid = core.nodes["shard00"].catalog.collection("db", "system.views").uuid
    for ev in (create, mod, again):
        assert list(ev) == ["_id", "operationType", "clusterTime", "wallTime", "ns", "operationDescription"]
        assert ev["ns"] == {"db": "db", "coll": "v"}
    assert list(drop) == ["_id", "operationType", "clusterTime", "wallTime", "ns"]
    assert create["operationDescription"] == {"viewOn": "base", "pipeline": [{"$match": {"a": 2}}]}
    assert mod["operationDescription"] == again["operationDescription"] == DEFINITION
    for ev in (create, mod, again, drop):
        token = decode_resume_token(ev["_id"])
        assert bytes(token.uuid) == bytes(uuid) and token.cluster_time == ev["clusterTime"]
        ident = {"operationType": ev["operationType"]}
        if "operationDescription" in ev:
            ident["operationDescription"] = ev["operationDescription"]
        assert token.event_identifier == ident
    # neither a stream without showExpandedEvents nor a single-collection stream has view events
    (only,) = await drain(classic, 1)
    assert only["operationType"] == "insert"
    (only,) = await drain(base_stream, 1)
    assert only["operationType"] == "insert"
    # resuming after the modify event goes on with the next one
    resumed = c.watch("db", 1, showExpandedEvents=True, resumeAfter=mod["_id"])
    await resumed.open()
    assert [e["_id"] for e in await drain(resumed, 3)] == [again["_id"], drop["_id"], ins["_id"]]


async def test_a_whole_cluster_stream_reports_every_databases_view_events(replset):
    """getViewNsRegexForChangeStream for kAllDatabases: `^(?!(admin|config|local)\\.)[^.]+\\.system\\.views$`."""
    core, c = replset
    await c.insert("db", "base", [{"_id": 1}])
    cluster = c.watch("admin", 1, showExpandedEvents=True)
    await cluster.open()
    await _view_ddl(c)
    evs = await drain(cluster, 5)
    assert [(e["operationType"], e["ns"]["coll"]) for e in evs] == [
        ("create", "v"), ("modify", "v"), ("modify", "v"), ("drop", "v"), ("insert", "base")]
    assert evs[1]["operationDescription"] == DEFINITION


async def test_through_the_router_the_primary_shards_view_event(sharded):
    core, c = sharded
    await c.admin({"enableSharding": "db", "primaryShard": "shard01"})
    await c.insert("db", "base", [{"_id": 1}])
    cs = c.watch("db", 1, showExpandedEvents=True)
    await cs.open()
    await _view_ddl(c)
    evs = await drain(cs, 5)
    assert [e["operationType"] for e in evs] == ["create", "modify", "modify", "drop", "insert"]
    assert evs[1]["operationDescription"] == DEFINITION
    views = core.nodes["shard01"].catalog.collection("db", "system.views")
    assert bytes(decode_resume_token(evs[1]["_id"]).uuid) == bytes(views.uuid)
