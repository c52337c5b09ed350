"""collMod of collections in the oplog and in change streams: the entry each collMod writes and the
`modify` event streams make of it.

Facts from the server (what mongosim matches, and where it was read):
- catalog/coll_mod.cpp parseCollModRequest builds the entry's `o` in its own order — `collMod`,
  `cappedSize`, `cappedMax` (longs, as given), `index` (without the options that change nothing; left out
  when nothing of it changes), `validator`, `validationLevel`, `validationAction`,
  `changeStreamPreAndPostImages`, `expireAfterSeconds` (a long, or "off"), `timeseries`; the source read
  is 6.x's (the capped fields came in 6.0 and sit first there);
- op_observer_impl.cpp onCollMod: `o2` = `{collectionOptions_old: <CollectionOptions with uuid>,
  indexOptions_old?: {expireAfterSeconds (long), hidden, prepareUnique: the old values of what changed}}`;
- catalog/backwards_compatible_collection_options_util (SERVER-91195, in 8.0.0): the
  `timeseriesBucketsMayHaveMixedSchemaData` flag is not in `o` but in
  `o2.backwardsIncompatibleCollModParameters`;
- timeseries/timeseries_collmod.cpp: a time-series collection's collMod rewrites the view's pipeline first
  (a `system.views` update: the view's `modify` event) and then runs on `system.buckets.<coll>` (its entry
  on that namespace: only streams with showSystemEvents see it); the source read is later than 8.0
  (viewless time-series) but the legacy path it keeps is 8.0's;
- pipeline/change_stream_event_transform.cpp: `modify` with `operationDescription` = `o` without `collMod`
  and `stateBeforeChange: {collectionOptions, indexOptions?}`, only with showExpandedEvents;
- s/collmod_coordinator.cpp: a sharded collection's collMod runs on each shard holding it, each logging
  its entry, so a stream through mongos reports one `modify` per shard
  (jstests/change_streams/collmod_events.js expects numberOfShardsForCollection events).
"""

from __future__ import annotations

from bson import Int64

from tests.changestream.conftest import drain

CAPPED = {"create": "cap", "capped": True, "size": 4096, "max": 10}


def _entries(node, since: int) -> list[dict]:
    return [node.oplog.entry_at(p) for p in range(since, node.oplog.end)]


def _types(doc: dict) -> dict:
    return {k: type(v).__name__ for k, v in doc.items()}


async def test_capped_resize_entry_and_event(replset):
    core, c = replset
    node = core.nodes["shard00"]
    await c.command("db", CAPPED)
    uuid = node.catalog.collection("db", "cap").uuid
    cs = c.watch("db", "cap", showExpandedEvents=True)
    await cs.open()
    before = node.oplog.end
    reply = await c.command("db", {"collMod": "cap", "cappedMax": 0, "cappedSize": 1000.9})
    assert {k: v for k, v in reply.items() if k not in ("$clusterTime", "operationTime")} == {"ok": 1.0}
    (entry,) = _entries(node, before)
    assert list(entry) == ["op", "ns", "ui", "o", "o2", "ts", "t", "v", "wall"]
    assert (entry["op"], entry["ns"], entry["ui"]) == ("c", "db.$cmd", uuid)
    assert list(entry["o"].items()) == [("collMod", "cap"), ("cappedSize", 1000), ("cappedMax", 0)]
    assert _types(entry["o"]) == {"collMod": "str", "cappedSize": "Int64", "cappedMax": "Int64"}
    assert list(entry["o2"]["collectionOptions_old"].items()) == [
        ("uuid", uuid), ("capped", True), ("size", 4096), ("max", 10)]
    assert node.catalog.collection("db", "cap").options == {"capped": True, "size": 1000, "max": 2147483647}
    (ev,) = await drain(cs, 1)
    assert list(ev) == ["_id", "operationType", "clusterTime", "collectionUUID", "wallTime", "ns",
                        "operationDescription", "stateBeforeChange"]
    assert ev["operationType"] == "modify" and ev["ns"] == {"db": "db", "coll": "cap"}
    assert ev["operationDescription"] == {"cappedSize": Int64(1000), "cappedMax": Int64(0)}
    assert ev["stateBeforeChange"] == {"collectionOptions": {"uuid": uuid, "capped": True, "size": 4096, "max": 10}}


async def test_the_next_insert_evicts_down_to_the_new_limits(replset):
    """Nothing is deleted by the collMod itself: the next insert deletes the oldest documents (logged as
    deletes) until the collection is within both limits."""
    core, c = replset
    await c.command("db", CAPPED)
    await c.insert("db", "cap", [{"_id": i} for i in range(8)])
    cs = c.watch("db", "cap", showExpandedEvents=True)
    await cs.open()
    await c.command("db", {"collMod": "cap", "cappedMax": 3})
    assert len(core.nodes["shard00"].catalog.collection("db", "cap").docs) == 8
    await c.insert("db", "cap", [{"_id": 8}])
    events = await drain(cs, 8)
    assert [(e["operationType"], e.get("documentKey", {}).get("_id")) for e in events] == [
        ("modify", None), ("insert", 8), *[("delete", i) for i in range(6)]]
    reply = await c.command("db", {"find": "cap"})
    assert [d["_id"] for d in reply["cursor"]["firstBatch"]] == [6, 7, 8]


async def test_index_changes_log_only_what_changes(replset):
    core, c = replset
    node = core.nodes["shard00"]
    await c.command("db", {"createIndexes": "c", "indexes": [
        {"key": {"a": 1}, "name": "a_1"}, {"key": {"t": 1}, "name": "t_1", "expireAfterSeconds": 100}]})
    cs = c.watch("db", "c", showExpandedEvents=True)
    await cs.open()
    before = node.oplog.end
    reply = await c.command("db", {"collMod": "c", "index": {"hidden": True, "name": "a_1"}})
    assert {k: reply[k] for k in ("hidden_old", "hidden_new")} == {"hidden_old": False, "hidden_new": True}
    await c.command("db", {"collMod": "c", "index": {"name": "a_1", "hidden": True}})  # a no-op
    reply = await c.command("db", {"collMod": "c", "index": {"keyPattern": {"t": 1}, "expireAfterSeconds": 50}})
    assert [(k, reply[k], type(reply[k]).__name__) for k in ("expireAfterSeconds_old", "expireAfterSeconds_new")] == [
        ("expireAfterSeconds_old", 100, "Int64"), ("expireAfterSeconds_new", 50, "Int64")]
    hidden, noop, ttl = _entries(node, before)
    assert list(hidden["o"].items()) == [("collMod", "c"), ("index", {"name": "a_1", "hidden": True})]
    assert hidden["o2"]["indexOptions_old"] == {"hidden": False}
    assert noop["o"] == {"collMod": "c"} and "indexOptions_old" not in noop["o2"]
    assert ttl["o"] == {"collMod": "c", "index": {"keyPattern": {"t": 1}, "expireAfterSeconds": 50}}
    assert _types(ttl["o2"]["indexOptions_old"]) == {"expireAfterSeconds": "Int64"}
    events = await drain(cs, 3)
    assert [e["operationDescription"] for e in events] == [
        {"index": {"name": "a_1", "hidden": True}}, {}, {"index": {"keyPattern": {"t": 1}, "expireAfterSeconds": 50}}]
    assert [e["stateBeforeChange"].get("indexOptions") for e in events] == [
        {"hidden": False}, None, {"expireAfterSeconds": 100}]


async def test_options_are_written_back_in_the_servers_order(replset):
    """CollectionOptions::appendBSON: the options come out in its order, whatever the commands' order;
    an empty validator and disabled pre- and post-images are not written at all."""
    core, c = replset
    node = core.nodes["shard00"]
    await c.command("db", {"create": "c", "validator": {"a": {"$exists": True}}})
    await c.command("db", {"collMod": "c", "validationAction": "warn", "changeStreamPreAndPostImages": {"enabled": 1},
                           "validationLevel": "moderate"})
    options = node.catalog.collection("db", "c").options
    assert list(options.items()) == [("changeStreamPreAndPostImages", {"enabled": True}),
                                     ("validator", {"a": {"$exists": True}}), ("validationLevel", "moderate"),
                                     ("validationAction", "warn")]
    before = node.oplog.end
    await c.command("db", {"collMod": "c", "validator": {}, "changeStreamPreAndPostImages": {"enabled": False}})
    assert node.catalog.collection("db", "c").options == {"validationLevel": "moderate", "validationAction": "warn"}
    (entry,) = _entries(node, before)
    assert list(entry["o"]) == ["collMod", "validator", "changeStreamPreAndPostImages"]
    assert list(entry["o2"]["collectionOptions_old"])[1:] == list(options)


async def test_clustered_expire_after_seconds(replset):
    core, c = replset
    node = core.nodes["shard00"]
    await c.command("db", {"create": "cl", "clusteredIndex": {"key": {"_id": 1}, "unique": True}})
    cs = c.watch("db", "cl", showExpandedEvents=True)
    await cs.open()
    before = node.oplog.end
    await c.command("db", {"collMod": "cl", "expireAfterSeconds": 60.7})
    options = node.catalog.collection("db", "cl").options
    assert options == {"clusteredIndex": {"v": 2, "key": {"_id": 1}, "name": "_id_", "unique": True},
                       "expireAfterSeconds": 60}
    assert type(options["expireAfterSeconds"]) is Int64
    await c.command("db", {"collMod": "cl", "expireAfterSeconds": "off"})
    assert "expireAfterSeconds" not in node.catalog.collection("db", "cl").options
    on, off = _entries(node, before)
    assert _types(on["o"]) == {"collMod": "str", "expireAfterSeconds": "Int64"}
    assert off["o"] == {"collMod": "cl", "expireAfterSeconds": "off"}
    assert off["o2"]["collectionOptions_old"]["expireAfterSeconds"] == 60
    events = await drain(cs, 2)
    assert [e["operationDescription"] for e in events] == [{"expireAfterSeconds": 60}, {"expireAfterSeconds": "off"}]


async def test_time_series_collmod_modifies_the_view_then_the_buckets(replset):
    core, c = replset
    node = core.nodes["shard00"]
    await c.command("db", {"create": "ts", "timeseries": {"timeField": "t", "metaField": "m"}})
    buckets = node.catalog.collection("db", "system.buckets.ts")
    views = node.catalog.collection("db", "system.views")
    expanded = c.watch("db", 1, showExpandedEvents=True)
    system = c.watch("db", 1, showExpandedEvents=True, showSystemEvents=True)
    for cs in (expanded, system):
        await cs.open()
    before = node.oplog.end
    await c.command("db", {"collMod": "ts", "timeseries": {"granularity": "minutes"}, "expireAfterSeconds": 600})
    view_update, coll_mod = _entries(node, before)
    assert (view_update["op"], view_update["ns"], view_update["ui"]) == ("u", "db.system.views", views.uuid)
    pipeline = [{"$_internalUnpackBucket": {"timeField": "t", "metaField": "m", "bucketMaxSpanSeconds": 86400}}]
    assert view_update["o"] == {"_id": "db.ts", "viewOn": "system.buckets.ts", "pipeline": pipeline}
    assert (coll_mod["ns"], coll_mod["ui"]) == ("db.$cmd", buckets.uuid)
    assert list(coll_mod["o"].items()) == [("collMod", "system.buckets.ts"), ("expireAfterSeconds", 600),
                                           ("timeseries", {"granularity": "minutes"})]
    assert coll_mod["o2"]["collectionOptions_old"]["timeseries"] == {
        "timeField": "t", "metaField": "m", "granularity": "seconds", "bucketMaxSpanSeconds": 3600}
    assert buckets.options["timeseries"] == {"timeField": "t", "metaField": "m", "granularity": "minutes",
                                             "bucketMaxSpanSeconds": 86400}
    await c.insert("db", "other", [{"_id": 1}])
    seen = await drain(expanded, 3)
    assert [(e["operationType"], e["ns"]["coll"]) for e in seen] == [
        ("modify", "ts"), ("create", "other"), ("insert", "other")]
    assert seen[0]["operationDescription"] == {"viewOn": "system.buckets.ts", "pipeline": pipeline}
    seen = await drain(system, 2)
    assert [(e["operationType"], e["ns"]["coll"]) for e in seen] == [
        ("modify", "ts"), ("modify", "system.buckets.ts")]
    assert seen[1]["operationDescription"] == {"expireAfterSeconds": 600, "timeseries": {"granularity": "minutes"}}


async def test_mixed_schema_flag_goes_to_o2(replset):
    core, c = replset
    node = core.nodes["shard00"]
    await c.command("db", {"create": "ts", "timeseries": {"timeField": "t"}})
    before = node.oplog.end
    await c.command("db", {"collMod": "ts", "timeseriesBucketsMayHaveMixedSchemaData": True})
    (entry,) = _entries(node, before)  # (the view does not change)
    assert entry["o"] == {"collMod": "system.buckets.ts"}
    assert list(entry["o2"]) == ["collectionOptions_old", "backwardsIncompatibleCollModParameters"]
    assert entry["o2"]["backwardsIncompatibleCollModParameters"] == {"timeseriesBucketsMayHaveMixedSchemaData": True}
    assert node.catalog.collection("db", "system.buckets.ts").options["storageEngine"] == {
        "wiredTiger": {"configString": "app_metadata=(timeseriesBucketsMayHaveMixedSchemaData=true)"}}


async def test_a_sharded_collection_reports_one_modify_per_shard(sharded):
    core, c = sharded
    await c.command("admin", {"enableSharding": "db", "primaryShard": "shard00"})
    await c.command("admin", {"shardCollection": "db.c", "key": {"k": 1}})
    await c.command("admin", {"split": "db.c", "middle": {"k": 0}})
    await c.command("admin", {"moveChunk": "db.c", "find": {"k": 0}, "to": "shard02"})
    await c.insert("db", "c", [{"_id": 1, "k": -1}, {"_id": 2, "k": 1}])
    cs = c.watch("db", "c", showExpandedEvents=True)
    await cs.open()
    reply = await c.command("db", {"collMod": "c", "validator": {"k": {"$type": "number"}}})
    assert {k: v for k, v in reply.items() if k not in ("$clusterTime", "operationTime")} == {"ok": 1.0}
    events = await drain(cs, 2)
    assert [e["operationType"] for e in events] == ["modify", "modify"]
    assert {e["collectionUUID"] for e in events} == {core.nodes["shard00"].catalog.collection("db", "c").uuid}
    assert all(e["operationDescription"] == {"validator": {"k": {"$type": "number"}}} for e in events)
    assert events[0]["clusterTime"] < events[1]["clusterTime"]  # (the primary shard's first)
    for shard in ("shard00", "shard02"):
        assert core.nodes[shard].catalog.collection("db", "c").options == {"validator": {"k": {"$type": "number"}}}
    assert core.nodes["shard01"].catalog.collection("db", "c") is None
