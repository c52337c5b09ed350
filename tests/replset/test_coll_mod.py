"""Secondaries apply collMod entries as the primary applied the command (repl/oplog.cpp applyCommand:
collMod runs processCollModCommandForApplyOps on the entry's `o`, with the backwards-incompatible
parameters taken back from `o2`: backwards_compatible_collection_options parseCollModCmdFromOplogEntry)
and end with the same options, index specs and data; a time-series collection's new view pipeline
arrives as its `system.views` update."""

from __future__ import annotations

from tests.replset.conftest import member_client, member_state, secondary_read, settle


def _catalog(m) -> dict:
    return {c.ns: (c.options, [dict(s) for s in c.indexes]) for c in m.node.catalog.all_collections()}


async def test_secondaries_converge_on_collection_collmods(rs3, autojump_clock):
    core, c = rs3
    rs = core.replica_sets["shard00"]
    await c.command("a", {"create": "cap", "capped": True, "size": 4096})
    await c.insert("a", "cap", [{"_id": i, "p": "x" * 100} for i in range(10)])
    await c.command("a", {"create": "cl", "clusteredIndex": {"key": {"_id": 1}, "unique": True}})
    await c.command("a", {"create": "ts", "timeseries": {"timeField": "t", "metaField": "m"}})
    await c.insert("a", "plain", [{"_id": i, "a": i, "t": i} for i in range(3)])
    await c.command("a", {"createIndexes": "plain", "indexes": [{"key": {"a": 1}, "name": "a_1"},
                                                               {"key": {"t": 1}, "name": "t_1", "expireAfterSeconds": 9}]})
    for cmd in [
        {"collMod": "cap", "cappedSize": 1000, "cappedMax": 0},
        {"collMod": "cl", "expireAfterSeconds": 3600},
        {"collMod": "cl", "expireAfterSeconds": "off"},
        {"collMod": "cl", "expireAfterSeconds": 60},
        {"collMod": "ts", "timeseries": {"granularity": "minutes"}, "expireAfterSeconds": 100},
        {"collMod": "ts", "timeseriesBucketsMayHaveMixedSchemaData": True},
        {"collMod": "plain", "validator": {"a": {"$type": "int"}}, "validationAction": "warn",
         "changeStreamPreAndPostImages": {"enabled": True}},
        {"collMod": "plain", "index": {"name": "a_1", "hidden": True}},
        {"collMod": "plain", "index": {"keyPattern": {"t": 1}, "expireAfterSeconds": 30}},
        {"collMod": "plain", "index": {"name": "a_1", "prepareUnique": True}},
        {"collMod": "plain", "index": {"name": "a_1", "unique": True}},
    ]:
        await c.command("a", cmd)
    await c.insert("a", "cap", [{"_id": 10, "p": "y"}])  # evicts down to 1000 bytes: deletes the primary logs
    await settle(rs)
    primary = rs.primary
    assert primary.node.catalog.collection("a", "cap").options == {"capped": True, "size": 1000, "max": 2147483647}
    assert primary.node.catalog.collection("a", "plain").index("a_1") == {
        "v": 2, "key": {"a": 1}, "name": "a_1", "hidden": True, "unique": True}
    for m in rs.members:
        assert _catalog(m) == _catalog(primary), m.host
        assert member_state(m) == member_state(primary), m.host
    for m in rs.members[1:]:
        sec = member_client(core, m)
        listed = await sec.command("a", secondary_read({"listCollections": 1, "filter": {"name": "ts"}}))
        assert listed["cursor"]["firstBatch"][0]["options"] == {
            "storageEngine": {"wiredTiger": {"configString": "app_metadata=(timeseriesBucketsMayHaveMixedSchemaData=true)"}},
            "expireAfterSeconds": 100,
            "timeseries": {"timeField": "t", "metaField": "m", "granularity": "minutes", "bucketMaxSpanSeconds": 86400}}
        view = m.node.catalog.collection("a", "system.views").get("a.ts")
        assert view["pipeline"][0]["$_internalUnpackBucket"]["bucketMaxSpanSeconds"] == 86400
