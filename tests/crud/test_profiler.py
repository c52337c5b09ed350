"""The database profiler through pymongo: `profile` and `<db>.system.profile` on a replica-set member,
and a mongos that keeps slowms/sampleRate/filter for its logs but profiles nothing."""

from __future__ import annotations

import pymongo
import pytest
from pymongo.errors import OperationFailure


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
    assert {e["op"] for e in _entries(rs)} == {"query"}
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

