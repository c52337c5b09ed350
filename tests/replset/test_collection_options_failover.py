"""A collection's options act on a member elected primary as they did on the old one: a capped
collection keeps evicting its oldest documents, a validator keeps refusing documents.  (Secondaries
apply the primary's entries as they are, so they never enforce the options themselves; what they must
keep is the state the options need once they are primary: the capped insertion order, the compiled
validator; also after a rollback or an initial sync.)"""

from __future__ import annotations

import trio

from tests.replset.conftest import member_client, settle


async def _find_ids(c, coll: str) -> list:
    reply = await c.command("db", {"find": coll})
    return [d["_id"] for d in reply["cursor"]["firstBatch"]]


async def _fail_over(core, rs):
    old = rs.primary
    await core.faults.step_down("shard00")
    while rs.primary is None or rs.primary is old:
        await rs.changed.park()
    return member_client(core, rs.primary)


async def test_a_new_primary_evicts_from_a_capped_collection(rs3, autojump_clock):
    core, c = rs3
    rs = core.replica_sets["shard00"]
    await c.command("db", {"create": "cap", "capped": True, "size": 4096, "max": 3})
    await c.insert("db", "cap", [{"_id": i} for i in range(3)])
    await settle(rs)
    new = await _fail_over(core, rs)
    stream = new.watch("db", "cap", max_await_time_ms=100)
    await stream.open()
    await new.insert("db", "cap", [{"_id": 3}])
    assert await _find_ids(new, "cap") == [1, 2, 3]
    events = [await stream.next() for _ in range(2)]
    assert [(e["operationType"], e["documentKey"]["_id"]) for e in events] == [("insert", 3), ("delete", 0)]
    await settle(rs)
    for m in rs.members:  # the delete replicated as the old primary's did
        assert sorted(d["_id"] for d in m.node.catalog.collection("db", "cap").docs.values()) == [1, 2, 3]


async def test_a_users_delete_frees_its_bytes_on_every_member(rs3, autojump_clock):
    core, c = rs3
    rs = core.replica_sets["shard00"]
    big = "x" * 1000
    await c.command("db", {"create": "cap", "capped": True, "size": 3100})  # three 1022-byte documents
    await c.insert("db", "cap", [{"_id": i, "s": big} for i in range(3)])
    await c.command("db", {"delete": "cap", "deletes": [{"q": {"_id": 1}, "limit": 1}]})
    await settle(rs)
    new = await _fail_over(core, rs)
    # the third fits once the deleted document's bytes no longer count
    await new.insert("db", "cap", [{"_id": 3, "s": big}])
    assert await _find_ids(new, "cap") == [0, 2, 3]
    await new.insert("db", "cap", [{"_id": 4, "s": big}])
    assert await _find_ids(new, "cap") == [2, 3, 4]


async def test_a_new_primary_enforces_the_validator(rs3, autojump_clock):
    core, c = rs3
    rs = core.replica_sets["shard00"]
    await c.command("db", {"create": "v", "validator": {"n": {"$type": "int"}}})
    await settle(rs)
    new = await _fail_over(core, rs)
    reply = await new.command("db", {"insert": "v", "documents": [{"_id": 1, "n": "one"}]}, check=False)
    assert reply["writeErrors"][0]["code"] == 121  # DocumentValidationFailure
    assert await _find_ids(new, "v") == []


async def test_a_rolled_back_eviction_is_evicted_again(rs3, autojump_clock):
    """The cut-off primary's w: 1 capped insert evicted the oldest document; the rollback brings
    that document back, and it is again the first to go when the member is primary once more."""
    core, c = rs3
    rs = core.replica_sets["shard00"]
    await c.command("db", {"create": "cap", "capped": True, "size": 4096, "max": 3})
    await c.insert("db", "cap", [{"_id": i} for i in range(3)])
    await settle(rs)
    old = rs.primary
    core.faults.partition("shard00", "primary")
    await c.command("db", {"insert": "cap", "documents": [{"_id": "doomed"}], "writeConcern": {"w": 1}})
    assert sorted(old.node.catalog.collection("db", "cap").docs, key=str)[-1][-1] == "doomed"
    while old.state == "PRIMARY" or rs.primary is None:
        await trio.sleep(0.1)
    core.faults.heal("shard00")
    await settle(rs, 2)
    assert rs.rollbacks and rs.rollbacks[-1]["member"] == old.host
    assert await _find_ids(member_client(core, rs.primary), "cap") == [0, 1, 2]
    await member_client(core, old).admin({"replSetStepUp": 1})
    while rs.primary is not old:
        await rs.changed.park()
    await c.insert("db", "cap", [{"_id": 3}])
    assert await _find_ids(c, "cap") == [1, 2, 3]


async def test_initial_sync_keeps_the_capped_order(rs3, autojump_clock):
    core, c = rs3
    rs = core.replica_sets["shard00"]
    await c.command("db", {"create": "cap", "capped": True, "size": 4096, "max": 3})
    await c.insert("db", "cap", [{"_id": i} for i in (5, 1, 9)])
    await settle(rs)
    from mongosim.shardsim.initial_sync import initial_sync

    target, other = [m for m in rs.members if m is not rs.primary]
    initial_sync(target, rs.primary)
    core.faults.freeze("shard00", other.id, 60)
    await core.faults.step_down("shard00")
    while rs.primary is not target:
        await rs.changed.park()
    new = member_client(core, target)
    await new.insert("db", "cap", [{"_id": 0}])
    assert await _find_ids(new, "cap") == [1, 9, 0]
