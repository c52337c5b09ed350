"""fsync, fsync {lock: true} and fsyncUnlock over the wire: a locked cluster holds writes back until unlocked.

Writes wait on the node's fsync lock (an event), never on a timer; reads go on meanwhile.
"""

from __future__ import annotations

import pytest
from pymongo.errors import ExecutionTimeout, OperationFailure

from tests.crud.conftest import in_thread, wait_for_op

LOCKED_INFO = "now locked against writes, use db.fsyncUnlock() to unlock"
SEE_ALSO = "http://dochub.mongodb.org/core/fsynccommand"


def _shard_replies(client, reply: dict, key: str = "all") -> list[dict]:
    """The node replies: through mongos each node's under raw, on a replica set the reply itself."""
    if client.topology_name == "sharded":
        raw = reply[key]["raw"] if key == "all" else reply["raw"]
        assert len(raw) == 3 and any(k.startswith("configRepl/") for k in raw)  # (the config server and 2 shards)
        return list(raw.values())
    return [reply]


def _insert_in_thread(coll, doc):
    return in_thread(lambda: coll.insert_one(doc).inserted_id)


def _wait_for_insert_op(client) -> list[dict]:
    return wait_for_op(client, {"command.insert": "c", "ns": "fs.c"}, "the insert")


def test_fsync_without_lock(client):
    reply = client.admin.command("fsync")
    assert reply["numFiles"] == 1
    for r in _shard_replies(client, reply):
        assert r["numFiles"] == 1 and r["ok"] == 1.0


def test_fsync_lock_holds_writes_until_unlock(client):
    client.fs.c.insert_one({"_id": 0})
    reply = client.admin.command("fsync", lock=True)
    try:
        for r in _shard_replies(client, reply):
            assert (r["info"], r["lockCount"], r["seeAlso"]) == (LOCKED_INFO, 1, SEE_ALSO)
        t, outcome = _insert_in_thread(client.fs.c, {"_id": 1})
        ops = _wait_for_insert_op(client)
        assert len(ops) == 1 and not outcome
        assert client.fs.c.find_one({"_id": 0}) == {"_id": 0}  # reads go on
        # a write with maxTimeMS gives up (mongos reports the shard's error as the write's)
        if client.topology_name == "sharded":
            reply = client.fs.command("insert", "c", documents=[{"_id": 2}], maxTimeMS=50)
            assert reply["n"] == 0 and reply["writeErrors"][0]["code"] == 50
        else:
            with pytest.raises(ExecutionTimeout):
                client.fs.command("insert", "c", documents=[{"_id": 2}], maxTimeMS=50)
    finally:
        unlocked = client.admin.command("fsyncUnlock")
    for r in _shard_replies(client, unlocked, "raw"):
        assert (r["info"], r["lockCount"]) == ("fsyncUnlock completed", 0)
    t.join(30)
    assert outcome == {"value": 1}
    assert sorted(d["_id"] for d in client.fs.c.find()) == [0, 1]


def test_fsync_lock_counts(client):
    client.admin.command("fsync", lock=True)
    try:
        second = client.admin.command("fsync", lock=True)
        assert all(r["lockCount"] == 2 for r in _shard_replies(client, second))
        first_unlock = client.admin.command("fsyncUnlock")
        assert all(r["lockCount"] == 1 for r in _shard_replies(client, first_unlock, "raw"))
    finally:
        last = client.admin.command("fsyncUnlock")
    assert all(r["lockCount"] == 0 for r in _shard_replies(client, last, "raw"))
    client.fs.c.insert_one({"_id": "after"})  # unlocked: writes go at once


def test_kill_op_interrupts_a_write_held_by_the_lock(client):
    client.fs.c.insert_one({"_id": 0})
    client.admin.command("fsync", lock=True)
    try:
        t, outcome = _insert_in_thread(client.fs.c, {"_id": 1})
        ops = _wait_for_insert_op(client)
        client.admin.command("killOp", op=ops[0]["opid"])
        t.join(30)
        assert outcome["err"].code == 11601
    finally:
        client.admin.command("fsyncUnlock")
    assert client.fs.c.find_one({"_id": 1}) is None


def test_fsync_unlock_when_not_locked(client):
    with pytest.raises(OperationFailure) as e:
        client.admin.command("fsyncUnlock")
    d = e.value.details
    assert d["ok"] == 0.0 and "code" not in d
    if client.topology_name == "sharded":
        assert all(r == {"ok": 0.0, "errmsg": "fsyncUnlock called when not locked"} for r in d["raw"].values())
        assert d["errmsg"].startswith("{ configRepl/")
    else:
        assert d["errmsg"] == "fsyncUnlock called when not locked"


def test_fsync_is_admin_only(client):
    for name in ("fsync", "fsyncUnlock"):
        with pytest.raises(OperationFailure) as e:
            client.fs.command(name)
        assert e.value.code == 13 and e.value.details["errmsg"] == f"{name} may only be run against the admin database."
