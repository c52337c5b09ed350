"""User-defined roles through pymongo, against both front doors with `--auth` (mongos and a replica set)."""

from __future__ import annotations

import json

import pymongo
import pytest
from pymongo.errors import OperationFailure

from mongosim import Cluster


@pytest.fixture(scope="module", params=["sharded", "replset"])
def cluster(request, tmp_path_factory):
    users = tmp_path_factory.mktemp("roles") / "users.json"
    users.write_text(json.dumps([{"createUser": "admin", "pwd": "s3cret", "roles": ["root"]}]))
    with Cluster(shards=2, port=0, topology=request.param, instant_hwm=True, auth=True, users_file=str(users)) as c:
        yield c


def _client(c, **kw) -> pymongo.MongoClient:
    return pymongo.MongoClient(c.uri, serverSelectionTimeoutMS=5000, **kw)


@pytest.fixture(scope="module")
def admin(cluster):
    client = _client(cluster, username="admin", password="s3cret")
    yield client
    client.close()


def _denied(call) -> None:
    with pytest.raises(OperationFailure) as info:
        call()
    assert info.value.code == 13, info.value.details


def test_a_custom_role_grants_exactly_its_privileges(cluster, admin):
    admin.shop.orders.insert_one({"_id": 1})
    admin.shop.command("createRole", "ordersReader", roles=[],
                       privileges=[{"resource": {"db": "shop", "collection": "orders"}, "actions": ["find"]}])
    admin.shop.command("createUser", "clerk", pwd="c", roles=["ordersReader"])
    clerk = _client(cluster, username="clerk", password="c", authSource="shop")
    assert clerk.shop.orders.find_one() == {"_id": 1}
    _denied(lambda: clerk.shop.orders.insert_one({"_id": 2}))
    _denied(lambda: clerk.shop.other.find_one())
    _denied(lambda: clerk.crm.orders.find_one())

    # a privilege on the whole database, granted while the client is logged in, applies at once
    admin.shop.command("grantPrivilegesToRole", "ordersReader",
                       privileges=[{"resource": {"db": "shop", "collection": ""}, "actions": ["insert"]}])
    clerk.shop.orders.insert_one({"_id": 2})
    clerk.shop.other.insert_one({"_id": 1})
    _denied(lambda: clerk.shop.other.find_one())  # insert, not find

    # revoking applies at once too
    admin.shop.command("revokePrivilegesFromRole", "ordersReader",
                       privileges=[{"resource": {"db": "shop", "collection": "orders"}, "actions": ["find"]}])
    _denied(lambda: clerk.shop.orders.find_one())

    # dropRole takes the role from the user
    admin.shop.command("dropRole", "ordersReader")
    assert admin.shop.command("usersInfo", "clerk")["users"][0]["roles"] == []
    _denied(lambda: clerk.shop.orders.insert_one({"_id": 3}))
    clerk.close()


def test_a_cluster_privilege(cluster, admin):
    admin.admin.command("createRole", "statusOnly", roles=[],
                        privileges=[{"resource": {"cluster": True}, "actions": ["serverStatus"]}],
                        writeConcern={"w": "majority"})
    admin.admin.command("createUser", "watcher", pwd="w", roles=["statusOnly"])
    watcher = _client(cluster, username="watcher", password="w")
    assert watcher.admin.command("serverStatus")["ok"] == 1.0
    _denied(lambda: watcher.admin.command("hostInfo"))
    _denied(lambda: watcher.admin.command("getCmdLineOpts"))
    _denied(lambda: watcher.shop.orders.find_one())
    # a non-admin role may not target the cluster
    with pytest.raises(OperationFailure) as info:
        admin.shop.command("createRole", "bad", roles=[],
                           privileges=[{"resource": {"cluster": True}, "actions": ["serverStatus"]}])
    assert info.value.code == 49
    assert info.value.details["errmsg"] == (
        "Roles on the 'shop' database cannot be granted privileges that target other databases or the cluster")
    watcher.close()


def test_inherited_roles(cluster, admin):
    admin.inv.items.insert_one({"_id": 1})
    admin.inv.command("createRole", "base", roles=["read"], privileges=[])
    admin.inv.command("createRole", "top", roles=[], privileges=[])
    admin.inv.command("createUser", "inheritor", pwd="i", roles=["top"])
    user = _client(cluster, username="inheritor", password="i", authSource="inv")
    _denied(lambda: user.inv.items.find_one())
    admin.inv.command("grantRolesToRole", "top", roles=["base"])
    assert user.inv.items.find_one() == {"_id": 1}
    # connectionStatus lists every role the user holds, inherited ones too (its indirect roles)
    status = user.admin.command("connectionStatus", showPrivileges=True)["authInfo"]
    assert status["authenticatedUserRoles"] == [{"role": "top", "db": "inv"}, {"role": "base", "db": "inv"},
                                                {"role": "read", "db": "inv"}]
    assert any(p["resource"] == {"db": "inv", "collection": ""} and "find" in p["actions"]
               for p in status["authenticatedUserPrivileges"])
    # a role's own description needs no viewRole privilege
    (top,) = user.inv.command("rolesInfo", "top")["roles"]
    assert top["inheritedRoles"] == [{"role": "base", "db": "inv"}, {"role": "read", "db": "inv"}]
    _denied(lambda: user.inv.command("rolesInfo", "base"))
    with pytest.raises(OperationFailure) as info:
        admin.inv.command("grantRolesToRole", "base", roles=["top"])
    assert (info.value.code, info.value.details["errmsg"]) == (
        49, "Granting roles to base@inv would introduce a cycle in the role graph")
    admin.inv.command("revokeRolesFromRole", "top", roles=["base"])
    _denied(lambda: user.inv.items.find_one())
    user.close()


def test_roles_info_shape_and_errors(cluster, admin):
    db = admin.get_database("ri")
    db.command("createRole", "r1", roles=["read"],
               privileges=[{"resource": {"db": "ri", "collection": "c"}, "actions": ["insert", "find"]}])
    reply = db.command("rolesInfo", "r1", showPrivileges=True)
    (r1,) = reply["roles"]
    assert list(r1) == ["_id", "role", "db", "privileges", "roles", "inheritedRoles", "inheritedPrivileges",
                        "isBuiltin"]
    assert r1["privileges"] == [{"resource": {"db": "ri", "collection": "c"}, "actions": ["find", "insert"]}]
    assert r1["isBuiltin"] is False and r1["inheritedRoles"] == [{"role": "read", "db": "ri"}]
    (read,) = db.command("rolesInfo", "read")["roles"]
    assert read == {"db": "ri", "role": "read", "roles": [], "inheritedRoles": [], "isBuiltin": True}
    assert [r["role"] for r in db.command("rolesInfo", 1)["roles"]] == ["r1"]
    with pytest.raises(OperationFailure) as info:
        db.command("createRole", "r1", roles=[], privileges=[])
    assert (info.value.code, info.value.details["errmsg"]) == (51002, 'Role "r1@ri" already exists')
    with pytest.raises(OperationFailure) as info:
        db.command("createRole", "r2", roles=[], privileges=[{"resource": {"db": "ri", "collection": ""},
                                                               "actions": ["fly"]}])
    assert (info.value.code, info.value.details["errmsg"]) == (2, "Unknown action type in privilege set: 'fly'")
    with pytest.raises(OperationFailure) as info:
        db.command("grantRolesToUser", "admin", roles=["nope"])
    assert info.value.code == 11  # UserNotFound: the user is admin@admin, not admin@ri
    with pytest.raises(OperationFailure) as info:
        admin.admin.command("grantRolesToUser", "admin", roles=[{"role": "nope", "db": "ri"}])
    assert (info.value.code, info.value.details["errmsg"]) == (31, "Could not find role: nope@ri")
    assert db.command("dropAllRolesFromDatabase", 1)["n"] == 1


def test_admin_commands_need_their_privileges(cluster, admin):
    """killOp, currentOp, getLog, setParameter, fsync, setFeatureCompatibilityVersion need cluster
    privileges; replSetGetStatus through mongos needs none (its router stub answers anyone)."""
    admin.admin.command("createUser", "plain", pwd="p", roles=[{"role": "readWrite", "db": "shop"}])
    plain = _client(cluster, username="plain", password="p", authSource="admin")
    anonymous = _client(cluster)
    try:
        for cmd in ({"killOp": 1, "op": 1}, {"currentOp": 1}, {"getLog": "global"},
                    {"setParameter": 1, "logLevel": 0}, {"fsync": 1}, {"fsyncUnlock": 1},
                    {"setFeatureCompatibilityVersion": "8.0", "confirm": True}):
            _denied(lambda: plain.admin.command(cmd))
        assert admin.admin.command("getLog", "*")["names"] == ["global", "startupWarnings"]
        if cluster.options.topology == "sharded":
            with pytest.raises(OperationFailure) as info:
                anonymous.admin.command("replSetGetStatus")
            assert info.value.details["info"] == "mongos" and "code" not in info.value.details
        else:
            _denied(lambda: anonymous.admin.command("replSetGetStatus"))
    finally:
        plain.close()
        anonymous.close()
        admin.admin.command("dropUser", "plain")
