"""killOp, the currentOp command, and replSetGetStatus through mongos, over the wire.

An operation killed while it waits (a tailable awaitData getMore) fails with Interrupted (11601);
through mongos the op is `"<shardId>:<opId>"`, as `$currentOp` prints it.
"""

from __future__ import annotations

import pymongo
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

from mongosim.oplog.errors import MongoError
from mongosim.router.cluster_kill_op import split_shard_op
from mongosim.shardsim.kill_op import parse_op_id
from tests.crud.conftest import in_thread, wait_for_op


def _waiting_get_more(client, db_name: str = "ko"):
    """A getMore waiting for data on a tailable cursor in a thread, by raw commands (pymongo kills a
    cursor object's cursor when it fails); returns (thread, outcome, cursor id)."""
    db = client[db_name]
    db.create_collection("cap", capped=True, size=10000)
    db.cap.insert_one({"a": 1})
    reply = db.command("find", "cap", tailable=True, awaitData=True)
    cid = reply["cursor"]["id"]
    assert cid and reply["cursor"]["firstBatch"][0]["a"] == 1
    return (*in_thread(lambda: db.command("getMore", cid, collection="cap", maxTimeMS=600_000)), cid)


def _find_get_more(client) -> list[dict]:
    return wait_for_op(client, {"command.getMore": {"$exists": True}}, "the getMore")


def test_kill_op_interrupts_a_waiting_get_more(client):
    t, outcome, cursor_id = _waiting_get_more(client)
    ops = _find_get_more(client)
    assert len(ops) == 1 and ops[0]["op"] == "getmore" and ops[0]["ns"] == "ko.cap"
    opid = ops[0]["opid"]
    reply = client.admin.command("killOp", op=opid)
    if client.topology_name == "sharded":
        shard, num = opid.split(":")
        assert shard in ("shard00", "shard01")
        assert (reply["shard"], reply["shardid"]) == (shard, int(num))
    else:
        assert isinstance(opid, int)
        assert reply["info"] == "attempting to kill op"
    t.join(30)
    assert not t.is_alive()
    err = outcome["err"]
    assert (err.code, err.details["codeName"], err.details["errmsg"]) == (11601, "Interrupted",
                                                                          "operation was interrupted")
    # the node lists it no more, and the cursor went with it (a failed getMore frees its cursor)
    assert client.admin.command({"currentOp": 1, "command.getMore": {"$exists": True}})["inprog"] == []
    with pytest.raises(OperationFailure) as e:
        client.ko.command("getMore", cursor_id, collection="cap")
    assert e.value.code == 43  # CursorNotFound


def test_kill_op_of_no_operation_succeeds(client):
    op = "shard00:987654" if client.topology_name == "sharded" else 987654
    assert client.admin.command("killOp", op=op)["ok"] == 1.0
    assert client.admin.command("killOp", op=12345)["ok"] == 1.0  # (mongos: a local op)


@pytest.mark.parametrize("op,code", [
    ("abc", None), ({"x": 1}, None), (2**40, 26823), (1.5, 2),
])
def test_kill_op_bad_op(client, op, code):
    sharded = client.topology_name == "sharded"
    if code is None:  # a string: mongos parses shardid:opid; mongod wants a number
        code = (28625 if isinstance(op, str) else 50760) if sharded else 14
    with pytest.raises(OperationFailure) as e:
        client.admin.command("killOp", op=op)
    assert e.value.code == code


def test_kill_op_errors(client):
    sharded = client.topology_name == "sharded"
    with pytest.raises(OperationFailure) as e:
        client.admin.command("killOp")
    assert e.value.code == (50759 if sharded else 4)  # (mongod: NoSuchKey)
    with pytest.raises(OperationFailure) as e:
        client.ko.command("killOp", op=1)
    assert e.value.code == 13 and "may only be run against the admin database" in str(e.value)
    with pytest.raises(OperationFailure) as e:
        client.ko.command("currentOp")
    assert e.value.code == 13


def test_kill_op_shard_format_through_mongos(sharded_client):
    for bad in ("shard00:", ":5", "ab"):
        with pytest.raises(OperationFailure) as e:
            sharded_client.admin.command("killOp", op=bad)
        assert e.value.code == 28625
        assert e.value.details["errmsg"] == ("The op argument to killOp must be of the format shardid:opid but found "
                                             f'"{bad}"')
    with pytest.raises(OperationFailure) as e:
        sharded_client.admin.command("killOp", op="shard99:1")
    assert e.value.details["codeName"] == "ShardNotFound"
    with pytest.raises(OperationFailure) as e:
        sharded_client.admin.command("killOp", op="shard00:x1")
    assert e.value.details["codeName"] == "FailedToParse"


def test_current_op_command(client):
    reply = client.admin.command("currentOp")
    assert reply["ok"] == 1.0 and isinstance(reply["inprog"], list) and reply["inprog"]
    agg = [op for op in reply["inprog"] if op.get("command", {}).get("aggregate") == 1]
    assert agg and agg[0]["command"]["pipeline"][0]["$currentOp"] == {"idleConnections": False, "allUsers": True,
                                                                       "truncateOps": True}
    # the command's other fields filter
    assert client.admin.command({"currentOp": 1, "op": "no such kind"})["inprog"] == []
    assert client.admin.command({"currentOp": 1, "$all": True, "active": True})["inprog"]


def test_repl_set_get_status_through_mongos(sharded_client):
    with pytest.raises(OperationFailure) as e:
        sharded_client.admin.command("replSetGetStatus")
    d = e.value.details
    assert (d["ok"], d["errmsg"], d["info"]) == (0.0, "replSetGetStatus is not supported through mongos", "mongos")
    assert "code" not in d  # (an errmsg command: no code)
    with pytest.raises(OperationFailure) as e:
        sharded_client.ko.command("replSetGetStatus")
    assert e.value.code == 13
    for name in ("replSetGetConfig", "replSetStepDown", "replSetFreeze"):  # (no router commands)
        with pytest.raises(OperationFailure) as e:
            sharded_client.admin.command(name)
        assert e.value.code == 59


def test_repl_set_get_status_on_a_member(replset_client):
    reply = replset_client.admin.command("replSetGetStatus")
    assert reply["ok"] == 1.0 and reply["set"] == "rs0" and reply["myState"] == 1


def test_current_op_entries_name_their_client(client):
    """desc "conn<N>", connectionId, client (client_s for what mongos sent), appName and clientMetadata:
    db.currentOp({appName: ...}) finds the application's operations."""
    cl = pymongo.MongoClient(client.mongosim_cluster.uri, serverSelectionTimeoutMS=5000, appname="kill-op-app")
    try:
        ops = cl.admin.command({"currentOp": 1, "appName": "kill-op-app"})["inprog"]
        assert ops
        for op in ops:
            assert op["desc"] == f"conn{op['connectionId']}"
            assert op["clientMetadata"]["application"] == {"name": "kill-op-app"}
            peer = op["client_s" if client.topology_name == "sharded" else "client"]
            assert peer.startswith("127.0.0.1:")
            assert list(op)[:3] == ["type", "host", "desc"]
        assert client.admin.command({"currentOp": 1, "appName": "kill-op-app"})["inprog"] == []  # (another client)
    finally:
        cl.close()


@given(st.integers(-(2**40), 2**40))
def test_op_ids_are_32_bit(op):
    """killOp's op: an integer that fits 32 bits (as an unsigned opid), else 26823."""
    if -(2**31) <= op < 2**31:
        assert parse_op_id({"op": op}) == op % 2**32
        assert parse_op_id({"op": float(op)}) == op % 2**32
    else:
        with pytest.raises(MongoError) as e:
            parse_op_id({"op": op})
        assert e.value.code == 26823


@given(st.text(st.characters(blacklist_characters=":"), min_size=1), st.integers(-(2**31), 2**31 - 1))
def test_shard_op_ids_split_at_the_colon(shard, opid):
    assert split_shard_op(f"{shard}:{opid}") == (shard, opid)
