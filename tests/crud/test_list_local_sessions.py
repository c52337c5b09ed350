"""$listLocalSessions: the sessions a mongos (or a replica-set member) has seen, through pymongo in both
topologies, and with authentication: whose sessions are listed, the records' shape, when sessions leave."""

from __future__ import annotations

import datetime
import hashlib
import json

import pymongo
import pytest
from bson import Binary
from pymongo.errors import OperationFailure

from mongosim import Cluster

NO_AUTH_UID = hashlib.sha256(b"").digest()


def _sessions(client, spec=None, **kw) -> list[dict]:
    return list(client.admin.aggregate([{"$listLocalSessions": spec if spec is not None else {}}], **kw))


def _ids(records) -> set[bytes]:
    return {bytes(r["_id"]["id"]) for r in records}


def test_records_of_the_sessions_used(client):
    client.drop_database("lls")
    before = datetime.datetime.utcnow() - datetime.timedelta(seconds=1)
    with client.start_session() as s:
        client.lls.c.insert_one({"_id": 1}, session=s)
        lsid = s.session_id["id"]
        with client.start_session() as s2:
            client.lls.c.find_one({}, session=s2)
            records = _sessions(client, {"allUsers": True})
            assert {bytes(lsid), bytes(s2.session_id["id"])} <= _ids(records)
    rec = next(r for r in records if bytes(r["_id"]["id"]) == bytes(lsid))
    assert list(rec) == ["_id", "lastUse"] and list(rec["_id"]) == ["id", "uid"]  # no user: no authentication
    assert bytes(rec["_id"]["uid"]) == NO_AUTH_UID and isinstance(rec["_id"]["id"], Binary)
    assert before <= rec["lastUse"] <= datetime.datetime.utcnow() + datetime.timedelta(seconds=1)
    assert rec["lastUse"].microsecond % 1000 == 0  # a BSON date
    # the current user's sessions (nobody: the digest of the empty name) are every session here
    assert _ids(_sessions(client)) == _ids(_sessions(client, {"allUsers": True})) | _ids(_sessions(client))
    assert _sessions(client, {"users": [{"user": "someone", "db": "admin"}]}) == []


def test_the_rest_of_the_pipeline_runs_on_the_records(client):
    client.drop_database("lls")
    out = list(client.lls.aggregate([{"$listLocalSessions": {}}, {"$limit": 1},
                                     {"$addFields": {"dummy": "dummy field"}}, {"$project": {"_id": 0, "dummy": 1}}]))
    assert out == [{"dummy": "dummy field"}]
    client.lls.aggregate([{"$listLocalSessions": {}}, {"$limit": 1}, {"$out": "sessions"}])
    (saved,) = list(client.lls.sessions.find())
    assert set(saved) == {"_id", "lastUse"} and bytes(saved["_id"]["uid"]) == NO_AUTH_UID


def test_ended_sessions_leave_at_the_next_refresh(client):
    s = client.start_session()
    client.admin.command("ping", session=s)
    lsid = bytes(s.session_id["id"])
    client.admin.command("endSessions", [s.session_id])
    assert lsid in _ids(_sessions(client))  # still cached: the server forgets it at its refresh
    client.admin.command("refreshLogicalSessionCacheNow")
    assert lsid not in _ids(_sessions(client))
    s.end_session()


def test_start_session_registers_the_session(client):
    lsid = client.admin.command("startSession")["id"]
    assert bytes(lsid["id"]) in _ids(_sessions(client))


@pytest.mark.parametrize("pipeline, code, message", [
    ([{"$listLocalSessions": 1}], 14, "$listLocalSessions options must be specified in an object, but found: int"),
    ([{"$listLocalSessions": {"allUsers": True, "users": [{"user": "a", "db": "b"}]}}], 12,
     "$listLocalSessions may not specify {allUsers:true} and {users:[...]} at the same time"),
    ([{"$listLocalSessions": {"x": 1}}], 40415, "BSON field '$listLocalSessions.x' is an unknown field."),
    ([{"$match": {}}, {"$listLocalSessions": {}}], 40602, "$listLocalSessions is only valid as the first stage in a pipeline"),
])
def test_bad_stages(client, pipeline, code, message):
    with pytest.raises(OperationFailure) as info:
        client.admin.command("aggregate", 1, pipeline=pipeline, cursor={})
    assert (info.value.code, info.value.details["errmsg"]) == (code, message)


def test_on_a_collection_in_a_transaction_and_with_a_read_concern(client):
    client.drop_database("lls")
    client.lls.c.insert_one({"_id": 1})
    with pytest.raises(OperationFailure) as info:
        list(client.lls.c.aggregate([{"$listLocalSessions": {}}]))
    assert info.value.code == 73 and "must be run against the database with {aggregate: 1}" in str(info.value)
    with pytest.raises(OperationFailure) as info:
        client.admin.command("aggregate", 1, pipeline=[{"$listLocalSessions": {}}], cursor={},
                             readConcern={"level": "majority"})
    assert info.value.code == 72 and info.value.details["errmsg"].endswith(
        "Aggregation stage $listLocalSessions cannot run with a readConcern other than 'local'. Current readConcern: majority")
    with client.start_session() as s:
        s.start_transaction()
        with pytest.raises(OperationFailure) as info:
            list(client.lls.aggregate([{"$listLocalSessions": {}}], session=s))
        assert info.value.code == 263


@pytest.fixture(scope="module", params=["sharded", "replset"])
def auth_cluster(request, tmp_path_factory):
    users = tmp_path_factory.mktemp("lls") / "users.json"
    users.write_text(json.dumps([
        {"createUser": "admin", "pwd": "s3cret", "roles": ["root"]},
        {"createUser": "app", "db": "shop", "pwd": "a", "roles": ["readWrite"]},
    ]))
    with Cluster(shards=2, port=0, topology=request.param, instant_hwm=True, auth=True, users_file=str(users)) as c:
        yield c


def test_with_authentication_each_user_lists_their_own(auth_cluster):
    admin = pymongo.MongoClient(auth_cluster.uri, username="admin", password="s3cret")
    app = pymongo.MongoClient(auth_cluster.uri, username="app", password="a", authSource="shop")
    app.shop.c.insert_one({"_id": 1})
    mine = _sessions(app, {})
    assert mine and all(r["user"] == {"name": "app@shop"} for r in mine)
    assert all(bytes(r["_id"]["uid"]) == hashlib.sha256(b"app@shop").digest() for r in mine)
    assert list(mine[0]) == ["_id", "lastUse", "user"]
    with pytest.raises(OperationFailure) as info:  # everyone's sessions: the listSessions privilege
        _sessions(app, {"allUsers": True})
    assert info.value.code == 13
    everyone = _sessions(admin, {"allUsers": True})
    assert {"app@shop", "admin@admin"} <= {r["user"]["name"] for r in everyone}
    assert _ids(_sessions(admin, {"users": [{"user": "app", "db": "shop"}]})) >= _ids(mine)
    admin.close()
    app.close()


async def test_each_router_lists_its_own_sessions(autojump_clock):
    """Every mongos has its own session cache: a session used through one is not listed by another,
    and a restarted mongos starts with an empty cache."""
    import os

    from mongosim.core import open_cluster
    from mongosim.testing import AsyncClient

    async with open_cluster(shards=1, routers=2, listen=False, epoch=1_700_000_000, instant_hwm=True) as core:
        a, b = AsyncClient(core.routers[0]), AsyncClient(core.routers[1])
        lsid = {"id": Binary(os.urandom(16), 4)}
        await a.command("db", {"insert": "c", "documents": [{"_id": 1}], "lsid": lsid})

        async def listed(client) -> set[bytes]:
            reply = await client.command("admin", {"aggregate": 1, "pipeline": [{"$listLocalSessions": {"allUsers": True}}],
                                                   "cursor": {}})
            return {bytes(r["_id"]["id"]) for r in reply["cursor"]["firstBatch"]}

        assert bytes(lsid["id"]) in await listed(a)
        assert bytes(lsid["id"]) not in await listed(b)
        core.routers[0].stop()
        core.routers[0].start()
        assert bytes(lsid["id"]) not in await listed(a)
