"""Authentication through pymongo against both front doors (`--auth`)."""

from __future__ import annotations

import hashlib
import json

import pymongo
import pytest

from mongosim import Cluster


@pytest.fixture(params=["sharded", "replset"])
def auth_cluster(request, tmp_path):
    users = tmp_path / "users.json"
    users.write_text(json.dumps([
        {"createUser": "admin", "pwd": "s3cret", "roles": ["root"]},
        {"createUser": "reader", "db": "shop", "pwd": "r", "roles": ["read"]},
        {"createUser": "sha1", "pwd": "p", "roles": ["root"], "mechanisms": ["SCRAM-SHA-1"]},
    ]))
    with Cluster(shards=2, port=0, topology=request.param, instant_hwm=True, auth=True, users_file=str(users)) as c:
        yield c


def _client(c, **kw):
    return pymongo.MongoClient(c.uri, serverSelectionTimeoutMS=5000, **kw)


def test_scram_sha256_and_sha1_logins_and_privileges(auth_cluster):
    admin = _client(auth_cluster, username="admin", password="s3cret")
    admin.shop.items.insert_one({"_id": 1})
    assert admin.admin.command("connectionStatus")["authInfo"]["authenticatedUsers"] == [{"user": "admin", "db": "admin"}]
    sha1 = _client(auth_cluster, username="sha1", password="p", authMechanism="SCRAM-SHA-1")
    assert sha1.shop.items.count_documents({}) == 1
    reader = _client(auth_cluster, username="reader", password="r", authSource="shop")
    assert reader.shop.items.find_one() == {"_id": 1}
    with pytest.raises(pymongo.errors.OperationFailure) as ei:
        reader.shop.items.insert_one({"_id": 2})
    assert ei.value.code == 13
    # a change stream needs find + changeStream on its namespace
    with reader.shop.items.watch(max_await_time_ms=100) as cs:
        admin.shop.items.insert_one({"_id": 3})
        ev = None
        for _ in range(100):
            ev = cs.try_next()
            if ev:
                break
        assert ev["documentKey"] == {"_id": 3}
        # a transaction's events carry its lsid, whose uid is the SHA-256 of the writer's "user@db"
        with admin.start_session() as s, s.start_transaction():
            admin.shop.items.insert_one({"_id": 4}, session=s)
        for _ in range(100):
            ev = cs.try_next()
            if ev:
                break
        assert ev["documentKey"] == {"_id": 4} and ev["lsid"]["uid"] == hashlib.sha256(b"admin@admin").digest()
    with pytest.raises(pymongo.errors.OperationFailure) as ei:
        reader.watch()  # a cluster-wide stream: not for a single database's reader
    assert ei.value.code == 13


def test_wrong_password_and_anonymous(auth_cluster):
    with pytest.raises(pymongo.errors.OperationFailure) as ei:
        _client(auth_cluster, username="admin", password="nope").admin.command("ping")
    assert ei.value.code == 18
    anon = _client(auth_cluster)
    assert anon.admin.command("ping")["ok"] == 1.0  # ping needs no authentication
    with pytest.raises(pymongo.errors.OperationFailure) as ei:
        anon.shop.items.find_one()
    assert ei.value.code == 13


def test_user_management_commands(auth_cluster):
    admin = _client(auth_cluster, username="admin", password="s3cret")
    admin.shop.command("createUser", "writer", pwd="w", roles=["readWrite"])
    info = admin.shop.command("usersInfo", "writer")["users"][0]
    assert info["user"] == "writer" and info["roles"] == [{"role": "readWrite", "db": "shop"}]
    writer = _client(auth_cluster, username="writer", password="w", authSource="shop")
    writer.shop.items.insert_one({"_id": 10})
    admin.shop.command("dropUser", "writer")
    with pytest.raises(pymongo.errors.OperationFailure):
        _client(auth_cluster, username="writer", password="w", authSource="shop").shop.items.find_one()


def test_localhost_exception_creates_the_first_user(tmp_path):
    with Cluster(shards=1, port=0, auth=True) as c:
        anon = pymongo.MongoClient(c.uri, serverSelectionTimeoutMS=5000)
        anon.admin.command("createUser", "first", pwd="x", roles=["root"])
        with pytest.raises(pymongo.errors.OperationFailure):
            anon.admin.command("createUser", "second", pwd="y", roles=["root"])
        first = pymongo.MongoClient(c.uri, username="first", password="x", serverSelectionTimeoutMS=5000)
        assert first.admin.command("listDatabases")["ok"] == 1.0



def test_coll_mod_of_a_view_names_both_fields_when_auth_is_on(auth_cluster):
    """auth/authorization_checks.cpp checkAuthForCollMod (run only with auth on: without it the command is
    authorized before its checks run): after the collMod privilege, naming only one of viewOn / pipeline
    is InvalidOptions, on a collection too; then the new definition needs what an aggregate of it would
    (checkAuthForCreateOrModifyView), unless the user cannot read the view anyway."""
    admin = _client(auth_cluster, username="admin", password="s3cret")
    admin.shop.items.insert_one({"_id": 1})
    admin.shop.create_collection("v", viewOn="items", pipeline=[])
    for fields in ({"pipeline": []}, {"viewOn": "items"}):
        for target in ("v", "items"):
            with pytest.raises(pymongo.errors.OperationFailure) as ei:
                admin.shop.command({"collMod": target, **fields})
            assert (ei.value.code, ei.value.details["errmsg"]) == (
                72, "Must specify both 'viewOn' and 'pipeline' when modifying a view and auth is enabled")
    admin.shop.command("collMod", "v", viewOn="items", pipeline=[{"$match": {"_id": 1}}])
    assert admin.shop.v.find_one() == {"_id": 1}
    reader = _client(auth_cluster, username="reader", password="r", authSource="shop")
    with pytest.raises(pymongo.errors.OperationFailure) as ei:
        reader.shop.command("collMod", "v", pipeline=[])  # no collMod privilege: Unauthorized comes first
    assert ei.value.code == 13
    admin.shop.command("createUser", "dba", pwd="d", roles=["dbAdmin"])  # collMod, but no find
    dba = _client(auth_cluster, username="dba", password="d", authSource="shop")
    dba.shop.command("collMod", "v", viewOn="items", pipeline=[{"$lookup": {"from": "crm", "pipeline": [],
                                                                           "as": "x"}}])
    admin.shop.command("createUser", "owner", pwd="o", roles=["dbOwner"])  # reads shop's views, not crm
    owner = _client(auth_cluster, username="owner", password="o", authSource="shop")
    with pytest.raises(pymongo.errors.OperationFailure) as ei:
        owner.shop.command("collMod", "v", viewOn="items", pipeline=[
            {"$lookup": {"from": {"db": "crm", "coll": "leads"}, "pipeline": [], "as": "x"}}])
    assert ei.value.code == 13
    owner.shop.command("collMod", "v", viewOn="items", pipeline=[])
