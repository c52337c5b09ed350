"""The database profiler through pymongo: `profile` and `<db>.system.profile` on a replica-set member,
and a mongos that keeps slowms/sampleRate/filter for its logs but profiles nothing."""

from __future__ import annotations

import pymongo
import pytest
from pymongo import WriteConcern
from pymongo.errors import OperationFailure
from pymongo.read_concern import ReadConcern


@pytest.fixture
def rs(replset_client):
    client = pymongo.MongoClient(replset_client.mongosim_cluster.uri, appname="profiled-app")
    client.drop_database("prof")
    yield client.prof
    client.prof.command("profile", 0, slowms=100, sampleRate=1.0, filter="unset")
    client.drop_database("prof")
    client.close()


def _entries(db, **flt) -> list[dict]:
    return list(db.system.profile.find(flt))


def test_operations_are_found_by_their_comment(rs):
    reply = rs.command("profile", 2)
    assert list(reply)[:4] == ["was", "slowms", "sampleRate", "ok"] and (reply["was"], reply["slowms"]) == (0, 100)
    rs.c.insert_many([{"_id": i} for i in range(3)], comment="load")
    assert [d["_id"] for d in rs.c.find({"_id": {"$gte": 1}}, comment="the read")] == [1, 2]
    rs.c.update_one({"_id": 1}, {"$set": {"x": 1}}, comment="the write")
    rs.c.delete_many({"_id": 2})
    (read,) = _entries(rs, **{"command.comment": "the read"})
    assert read["op"] == "query" and read["ns"] == "prof.c" and read["nreturned"] == 2
    assert read["command"]["filter"] == {"_id": {"$gte": 1}}
    assert list(read)[:3] == ["op", "ns", "command"]
    assert read["client"].startswith("127.0.0.1:") and read["appName"] == "profiled-app"
    assert read["allUsers"] == [] and read["user"] == "" and read["protocol"] == "op_msg"
    assert "_id" not in read  # profile documents have none
    (write,) = _entries(rs, **{"command.comment": "the write"})
    assert (write["op"], write["nMatched"], write["nModified"]) == ("update", 1, 1)
    assert _entries(rs, op="insert")[0]["ninserted"] == 3
    assert _entries(rs, op="remove")[0]["ndeleted"] == 1


_FIND_FIELDS = ["op", "ns", "command", "cursorid", "nBatches", "numYield", "nreturned", "readConcern",
                "responseLength", "protocol", "millis", "ts", "client", "appName", "allUsers", "user"]


def test_entries_carry_the_read_and_write_concern_in_the_servers_order(rs):
    """8.0's OpDebug::append then profile(): the effective read concern and the write concern waited
    for, each with its provenance; a cursor's getMore keeps the cursor's read concern."""
    rs.command("profile", 2)
    rs.c.insert_many([{"_id": i} for i in range(3)], comment="load")
    (load,) = _entries(rs, **{"command.comment": "load"})
    assert list(load) == ["op", "ns", "command", "ninserted", "numYield", "readConcern", "writeConcern",
                          "responseLength", "protocol", "millis", "ts", "client", "appName", "allUsers", "user"]
    assert load["readConcern"] == {"level": "local", "provenance": "implicitDefault"}
    assert load["writeConcern"] == {"w": "majority", "wtimeout": 0, "provenance": "implicitDefault"}
    majority = rs.c.with_options(read_concern=ReadConcern("majority"))
    assert len(list(majority.find({}, batch_size=2, comment="batched"))) == 3
    (find,) = _entries(rs, op="query", **{"command.comment": "batched"})
    assert list(find) == _FIND_FIELDS and find["nBatches"] == 1 and find["numYield"] == 0
    assert find["readConcern"] == {"level": "majority", "provenance": "clientSupplied"}
    (more,) = _entries(rs, op="getmore")
    assert more["cursorExhausted"] is True and "cursorid" not in more and more["nreturned"] == 1
    assert more["readConcern"] == {"level": "majority", "provenance": "clientSupplied"}  # the cursor's
    rs.c.find_one({"_id": 1}, comment="one")
    (one,) = _entries(rs, **{"command.comment": "one"})
    assert one["cursorExhausted"] is True and one["readConcern"]["provenance"] == "implicitDefault"
    w1 = rs.c.with_options(write_concern=WriteConcern(w=1, wtimeout=500))
    w1.update_one({"_id": 1}, {"$set": {"x": 1}}, comment="w1")
    (update,) = _entries(rs, **{"command.comment": "w1"})
    assert list(update)[3:6] == ["nMatched", "nModified", "nUpserted"]
    assert update["writeConcern"] == {"w": 1, "wtimeout": 500, "provenance": "clientSupplied"}
    # the cluster-wide default read concern: provenance customDefault
    rs.client.admin.command("setDefaultRWConcern", defaultReadConcern={"level": "majority"})
    try:
        rs.c.find_one({"_id": 1}, comment="default")
    finally:
        rs.client.admin.command("setDefaultRWConcern", defaultReadConcern={})
    (default,) = _entries(rs, **{"command.comment": "default"})
    assert default["readConcern"] == {"level": "majority", "provenance": "customDefault"}
    assert "readConcern" not in default["command"]  # (the command as the client sent it)


def test_a_transactions_statements_show_its_read_concern(rs):
    rs.c.insert_one({"_id": 1})
    rs.command("profile", 2)
    with rs.client.start_session() as session:
        with session.start_transaction(read_concern=ReadConcern("snapshot")):
            rs.c.find_one({"_id": 1}, session=session, comment="first")
            rs.c.insert_one({"_id": 2}, session=session, comment="second")
    first, second = (_entries(rs, **{"command.comment": c})[0] for c in ("first", "second"))
    assert first["readConcern"] == second["readConcern"] == {"level": "snapshot", "provenance": "clientSupplied"}
    assert "writeConcern" not in second  # (a statement waits for none: the commit does)


def test_a_shard_members_entries_show_what_mongos_sent(sharded_client):
    """A shard's member takes a command from mongos with the read and write concern mongos sent; its
    own clients' finds get no implicit read concern there (mongos gives them one), their writes do."""
    cluster = sharded_client.mongosim_cluster
    sharded_client.admin.command("enableSharding", "prof", primaryShard="shard00")
    shard = pymongo.MongoClient(cluster.replica_set_uri("shard00"))
    try:
        shard.prof.command("profile", 2)
        db = sharded_client.prof
        db.c.insert_one({"_id": 1}, comment="insert")
        db.c.with_options(write_concern=WriteConcern(w=1)).insert_one({"_id": 2}, comment="insert w1")
        db.c.with_options(read_concern=ReadConcern("majority")).find_one({"_id": 1}, comment="find")
        shard.prof.d.insert_one({"_id": 1}, comment="direct insert")
        shard.prof.d.find_one({}, comment="direct find")
        found = shard.prof.system.profile.find({"command.comment": {"$exists": 1}})
        entries = {e["command"]["comment"]: e for e in found}
        assert entries["insert"]["writeConcern"] == {"w": "majority", "wtimeout": 0, "provenance": "implicitDefault"}
        assert "readConcern" not in entries["insert"] and "client" not in entries["insert"]
        assert entries["insert w1"]["writeConcern"]["provenance"] == "clientSupplied"
        assert entries["find"]["readConcern"] == {"level": "majority", "provenance": "clientSupplied"}
        assert entries["direct insert"]["readConcern"] == {"level": "local", "provenance": "implicitDefault"}
        assert "readConcern" not in entries["direct find"]
        shard.prof.command("profile", 0)
    finally:
        shard.close()


def test_mongos_refuses_a_clients_write_concern_provenance(sharded_client):
    """strategy.cpp: a client's writeConcern may name no provenance but clientSupplied (InvalidOptions),
    checked before its readConcern's."""
    db = sharded_client.prof
    for provenance in ("implicitDefault", "customDefault", "internalWriteDefault"):
        with pytest.raises(OperationFailure) as info:
            db.command("insert", "c", documents=[{"_id": 1}], writeConcern={"w": 1, "provenance": provenance},
                       readConcern={"level": "local", "provenance": "implicitDefault"})
        assert info.value.code == 72
        assert info.value.details["errmsg"] == 'writeConcern provenance must be unset or "clientSupplied"'
    assert db.c.count_documents({}) == 0
    reply = db.command("insert", "c", documents=[{"_id": 1}], writeConcern={"w": 1, "provenance": "clientSupplied"})
    assert reply["n"] == 1


def test_a_member_keeps_a_clients_write_concern_provenance(replset_client):
    """A mongod takes any provenance its client names (extractWriteConcern), and records it."""
    db = replset_client.prof
    db.command("profile", 2)
    try:
        db.command("insert", "c", documents=[{"_id": 1}], writeConcern={"w": 1, "provenance": "customDefault"},
                   comment="named")
        (entry,) = _entries(db, **{"command.comment": "named"})
        assert entry["writeConcern"] == {"w": 1, "wtimeout": 0, "provenance": "customDefault"}
    finally:
        db.command("profile", 0)


def test_a_failed_command_is_recorded_with_its_error(rs):
    rs.command("profile", 2)
    with pytest.raises(OperationFailure):
        rs.command("aggregate", "c", pipeline=[{"$bogus": 1}], cursor={}, comment="bad")
    (entry,) = _entries(rs, **{"command.comment": "bad"})
    assert entry["ok"] == 0 and entry["errCode"] == 40324 and entry["errName"] == "Location40324"


def test_levels_filter_and_settings(rs):
    assert rs.command("profile", -1)["was"] == 0
    rs.command("profile", 2, slowms=20, sampleRate=0.5)
    reply = rs.command("profile", 0)
    assert (reply["was"], reply["slowms"], reply["sampleRate"]) == (2, 20, 0.5)
    rs.c.insert_one({"_id": 9}, comment="after level 0")
    assert _entries(rs, **{"command.comment": "after level 0"}) == []
    # a filter decides alone (slowms and sampleRate no longer apply)
    reply = rs.command("profile", 1, filter={"op": "query"})
    assert reply["note"].startswith("When a filter expression is set")
    rs.c.insert_one({"_id": 10})
    rs.c.find_one({"_id": 10}, comment="kept")
    # (the `profile: 0` above ran at level 2: recorded, as the level at a command's start decides)
    assert {e["op"] for e in _entries(rs) if "profile" not in e["command"]} == {"query"}
    assert rs.command("profile", -1)["filter"] == {"op": "query"}
    with pytest.raises(OperationFailure) as info:
        rs.command("profile", 2, sampleRate=1.5)
    assert info.value.code == 2 and info.value.details["errmsg"] == "'sampleRate' must be between 0.0 and 1.0 inclusive"


def test_system_profile_is_capped_unreplicated_and_not_writable(rs):
    with rs.watch() as stream:
        rs.command("profile", 2)
        for i in range(20):
            rs.c.insert_one({"_id": i, "pad": "x" * 100_000})
        events = []
        while (ev := stream.try_next()) is not None:
            events.append(ev)
    assert {e["ns"]["coll"] for e in events} == {"c"}  # nothing of system.profile in the oplog
    inserted = [e["command"]["documents"][0]["_id"] for e in _entries(rs, op="insert")]
    assert inserted == list(range(20 - len(inserted), 20)) and 5 < len(inserted) < 11  # 1 MB: the oldest went
    with pytest.raises(OperationFailure) as info:
        rs.system.profile.insert_one({"a": 1})
    assert info.value.code == 73 and info.value.details["errmsg"] == "cannot write to prof.system.profile"
    assert list(rs.system.profile.list_indexes()) == []
    rs.client.drop_database("prof")  # the database's profiling settings go with it
    assert rs.command("profile", -1)["was"] == 0


def test_a_mongos_profiles_nothing(sharded_client):
    db = sharded_client.prof
    for level in (1, 2):
        with pytest.raises(OperationFailure) as info:
            db.command("profile", level)
        assert info.value.code == 2 and info.value.details["errmsg"].startswith("Profiling is not permitted on mongoS")
    reply = db.command("profile", 0, slowms=30)
    assert (reply["was"], reply["slowms"]) == (0, 100)
    assert db.command("profile", -1)["slowms"] == 30
    db.command("profile", 0, slowms=100)



def test_the_level_at_the_commands_start_decides(rs):
    """8.0's CurOp keeps the database's profiling level as the command enters it (curop.cpp
    enter_inlock / raiseDbProfileLevel) and completeAndLogOperation profiles by that level, so the
    `profile` command that turns profiling off is itself recorded and the one turning it on is not
    (jstests/core/administrative/profile/profile1.js counts the same way)."""
    rs.command("profile", 2, comment="on")
    rs.command("profile", 0, comment="off")
    assert [e["command"]["comment"] for e in _entries(rs, op="command", **{"command.profile": {"$exists": True}})] \
        == ["off"]
