"""Secondaries apply a view's collMod and a rename across databases, and serve what the primary serves.

A view's collMod replicates as the replacement of its `system.views` document; a rename across
databases as the create, createIndexes, inserts (plain, or an applyOps batch without a session), rename
and drop entries the primary wrote (shardsim/rename_collection.py).
"""

from __future__ import annotations

from tests.replset.conftest import member_client, member_state, secondary_read, settle


async def test_secondaries_converge_and_read_the_new_definitions(rs3, autojump_clock):
    core, c = rs3
    rs = core.replica_sets["shard00"]
    await c.insert("a", "base", [{"_id": i, "k": i % 2} for i in range(6)])
    await c.command("a", {"create": "v", "viewOn": "base", "pipeline": [{"$match": {"k": 0}}]})
    await c.command("a", {"collMod": "v", "viewOn": "base", "pipeline": [{"$match": {"k": 1}}]})
    await c.command("a", {"createIndexes": "base", "indexes": [{"key": {"k": 1}, "name": "k_1"}]})
    await c.insert("b", "old", [{"_id": "x"}])
    await c.command("a", {"create": "cap", "capped": True, "size": 4096})
    await c.insert("a", "cap", [{"_id": i} for i in range(3)])
    await c.command("admin", {"renameCollection": "a.cap", "to": "b.cap"})
    await c.command("admin", {"renameCollection": "a.base", "to": "b.old", "dropTarget": True})
    await c.command("b", {"create": "w", "viewOn": "old", "pipeline": [{"$match": {"k": 1}}]})
    await settle(rs)
    primary = member_state(rs.primary)
    for m in rs.members:
        assert member_state(m) == primary, m.host
        catalog = m.node.catalog
        assert catalog.collection("a", "base") is None and catalog.collection("a", "cap") is None
        assert [s["name"] for s in catalog.collection("b", "old").indexes] == ["_id_", "k_1"]
        assert catalog.collection("a", "system.views").get("a.v") == {
            "_id": "a.v", "viewOn": "base", "pipeline": [{"$match": {"k": 1}}]}
    for m in rs.members[1:]:
        sec = member_client(core, m)
        reply = await sec.command("b", secondary_read({"find": "w", "sort": {"_id": 1}}))
        assert [d["_id"] for d in reply["cursor"]["firstBatch"]] == [1, 3, 5]
        listed = await sec.command("a", secondary_read({"listCollections": 1, "filter": {"name": "v"}}))
        assert listed["cursor"]["firstBatch"][0]["options"] == {"viewOn": "base", "pipeline": [{"$match": {"k": 1}}]}
        reply = await sec.command("b", secondary_read({"find": "cap"}))
        assert [d["_id"] for d in reply["cursor"]["firstBatch"]] == [0, 1, 2]
