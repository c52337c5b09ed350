"""User-defined roles: the role store's documents, the role commands' replies and errors, the role graph."""

from __future__ import annotations

import pytest
from bson.int64 import Int64

from mongosim.oplog.errors import MongoError
from mongosim.router.auth import AuthManager, required_privileges
from mongosim.router.auth.commands import Refusal
from mongosim.router.auth.names import RoleName
from mongosim.router.auth.privileges import (
    ALL_ACTIONS,
    ANY,
    ANY_NORMAL,
    CLUSTER,
    Privilege,
    Resource,
    action_list,
    builtin_privileges,
    search_list,
)
from mongosim.router.auth.roles import ParsedPrivilege, _parse_resource, resolve_privilege
from mongosim.router.auth.scram import make_credential
from tests.auth.helpers import empty_store, error

CRED = {"SCRAM-SHA-256": make_credential("SCRAM-SHA-256", "u", "pw", iterations=4096).to_doc()}
FIND_ORDERS = {"resource": {"db": "shop", "collection": "orders"}, "actions": ["find"]}


@pytest.fixture
def store():
    return empty_store()


def user(store, name, db, roles):
    """A user without PBKDF2 (the --users credentials path)."""
    store.run_command(db, {"createUser": name, "credentials": CRED, "roles": roles})


# -- createRole ----------------------------------------------------------------------------------


def test_create_role_document_shape(store):
    assert store.run_command("shop", {
        "createRole": "clerk",
        "privileges": [
            {"resource": {"db": "shop", "collection": "orders"}, "actions": ["update", "find"]},
            {"resource": {"db": "shop", "collection": ""}, "actions": ["listCollections"]},
            {"resource": {"db": "shop", "collection": "orders"}, "actions": ["insert", "find"], "extra": 1},
        ],
        "roles": ["read", {"role": "read", "db": "shop"}],
        "writeConcern": {"w": "majority"},
    }) == {"ok": 1.0}
    doc = store.roles.get(("clerk", "shop"))
    assert list(doc) == ["_id", "role", "db", "privileges", "roles"]
    assert doc["_id"] == "shop.clerk"
    # one privilege per resource (merged in order of first appearance), actions in the server's enum order
    assert doc["privileges"] == [
        {"resource": {"db": "shop", "collection": "orders"}, "actions": ["find", "insert", "update"]},
        {"resource": {"db": "shop", "collection": ""}, "actions": ["listCollections"]},
    ]
    assert doc["roles"] == [{"role": "read", "db": "shop"}]  # resolveRoleNames de-duplicates
    store.run_command("shop", {"createRole": "r", "privileges": [], "roles": [],
                               "authenticationRestrictions": [{"clientSource": ["127.0.0.1"]}]})
    assert store.roles.get(("r", "shop"))["authenticationRestrictions"] == [{"clientSource": ["127.0.0.1"]}]
    assert store.roles.system_roles()[0]["_id"] == "shop.clerk"


ERRORS = [
    ({"createRole": 1, "privileges": [], "roles": []}, "shop",
     (14, "TypeMismatch", "BSON field 'createRole.createRole' is the wrong type 'int', expected type 'string'")),
    ({"createRole": "x", "roles": []}, "shop",
     (40414, "IDLFailedToParse", "BSON field 'createRole.privileges' is missing but a required field")),
    ({"createRole": "x", "privileges": []}, "shop",
     (40414, "IDLFailedToParse", "BSON field 'createRole.roles' is missing but a required field")),
    ({"createRole": "x", "privileges": [], "roles": [], "foo": 1}, "shop",
     (40415, "IDLUnknownField", "BSON field 'createRole.foo' is an unknown field.")),
    ({"createRole": "x", "privileges": {}, "roles": []}, "shop",
     (14, "TypeMismatch", "BSON field 'createRole.privileges' is the wrong type 'object', expected type 'array'")),
    ({"createRole": "x", "privileges": [1], "roles": []}, "shop",
     (14, "TypeMismatch", "BSON field 'createRole.privileges.0' is the wrong type 'int', expected type 'object'")),
    ({"createRole": "x", "privileges": [{"actions": ["find"]}], "roles": []}, "shop",
     (40414, "IDLFailedToParse", "BSON field 'createRole.privileges.resource' is missing but a required field")),
    ({"createRole": "x", "privileges": [{"resource": {"db": "shop", "collection": ""}}], "roles": []}, "shop",
     (40414, "IDLFailedToParse", "BSON field 'createRole.privileges.actions' is missing but a required field")),
    ({"createRole": "x", "privileges": [{"resource": {"db": 1, "collection": ""}, "actions": []}], "roles": []}, "shop",
     (14, "TypeMismatch", "BSON field 'createRole.privileges.resource.db' is the wrong type 'int', expected type 'string'")),
    ({"createRole": "x", "privileges": [{"resource": {"db": "shop", "collection": ""}, "actions": [1]}], "roles": []},
     "shop",
     (14, "TypeMismatch", "BSON field 'createRole.privileges.actions.0' is the wrong type 'int', expected type 'string'")),
    ({"createRole": "x", "privileges": [], "roles": [{"role": "read"}]}, "shop",
     (2, "BadValue", "RoleName must contain a field named: db")),
    ({"createRole": "", "privileges": [], "roles": []}, "shop", (2, "BadValue", "Role name must be non-empty")),
    ({"createRole": "x", "privileges": [], "roles": []}, "local",
     (2, "BadValue", "Cannot create roles in the local database")),
    ({"createRole": "x", "privileges": [], "roles": []}, "$external",
     (2, "BadValue", "Cannot create roles in the $external database")),
    ({"createRole": "read", "privileges": [], "roles": []}, "shop",
     (2, "BadValue", "Cannot create roles with the same name as a built-in role")),
    ({"createRole": "root", "privileges": [], "roles": []}, "admin",
     (2, "BadValue", "Cannot create roles with the same name as a built-in role")),
    ({"createRole": "__system", "privileges": [], "roles": []}, "admin",
     (2, "BadValue", "Cannot create roles with the same name as a built-in role")),
    ({"createRole": "x", "privileges": [{"resource": {"db": "shop", "collection": ""}, "actions": ["find", "fly"]}],
      "roles": []}, "shop",
     (2, "BadValue", "Unknown action type in privilege set: 'fly'")),
    ({"createRole": "x", "privileges": [{"resource": {"db": "shop", "collection": ""}, "actions": ["zap", "fly", "zap"]}],
      "roles": []}, "shop",
     (2, "BadValue", "Unknown action types in privilege set: 'fly', 'zap'")),
    ({"createRole": "x", "privileges": [{"resource": {"db": "shop", "collection": ""}, "actions": []}], "roles": []},
     "shop", (2, "BadValue", "'actions' field of privilege resource must not be empty")),
    ({"createRole": "x", "privileges": [{"resource": {"cluster": True}, "actions": ["serverStatus"]}], "roles": []},
     "shop",
     (49, "InvalidRoleModification",
      "Roles on the 'shop' database cannot be granted privileges that target other databases or the cluster")),
    ({"createRole": "x", "privileges": [{"resource": {"db": "crm", "collection": "leads"}, "actions": ["find"]}],
      "roles": []}, "shop",
     (49, "InvalidRoleModification",
      "Roles on the 'shop' database cannot be granted privileges that target other databases or the cluster")),
    ({"createRole": "x", "privileges": [{"resource": {"db": "", "collection": "orders"}, "actions": ["find"]}],
      "roles": []}, "shop",
     (49, "InvalidRoleModification",
      "Roles on the 'shop' database cannot be granted privileges that target other databases or the cluster")),
    ({"createRole": "x", "privileges": [], "roles": [{"role": "read", "db": "crm"}]}, "shop",
     (49, "InvalidRoleModification", "Roles on the 'shop' database cannot be granted roles from other databases")),
    ({"createRole": "x", "privileges": [], "roles": ["x"]}, "shop",
     (49, "InvalidRoleModification", "Cannot grant role x@shop to itself.")),
    ({"createRole": "x", "privileges": [], "roles": ["nope", "gone"]}, "shop",
     (31, "RoleNotFound", "Cannot grant roles to 'x@shop': Could not find roles: nope@shop, gone@shop")),
    ({"createRole": "x", "privileges": [], "roles": ["clusterMonitor"]}, "shop",
     (31, "RoleNotFound", "Cannot grant roles to 'x@shop': Could not find role: clusterMonitor@shop")),
]


@pytest.mark.parametrize(("cmd", "db", "expected"), ERRORS)
def test_create_role_errors(store, cmd, db, expected):
    assert error(lambda: store.run_command(db, cmd)) == expected
    assert len(store.roles) == 0


def test_create_role_twice(store):
    store.run_command("shop", {"createRole": "x", "privileges": [], "roles": []})
    assert error(lambda: store.run_command("shop", {"createRole": "x", "privileges": [], "roles": []})) == (
        51002, "Location51002", 'Role "x@shop" already exists')


def test_admin_roles_reach_anything(store):
    store.run_command("admin", {"createRole": "ops", "roles": [{"role": "read", "db": "shop"}, "clusterMonitor"],
                                "privileges": [{"resource": {"cluster": True}, "actions": ["serverStatus"]},
                                               {"resource": {"anyResource": True}, "actions": ["anyAction"]},
                                               {"resource": {"db": "", "collection": ""}, "actions": ["find"]},
                                               {"resource": {"db": "", "collection": "c"}, "actions": ["find"]},
                                               {"resource": {"system_buckets": ""}, "actions": ["find"]},
                                               {"resource": {"db": "t", "system_buckets": "w"}, "actions": ["find"]}]})
    assert store.roles.get(("ops", "admin"))["privileges"] == [
        {"resource": {"cluster": True}, "actions": ["serverStatus"]},
        {"resource": {"anyResource": True}, "actions": ["anyAction"]},
        {"resource": {"db": "", "collection": ""}, "actions": ["find"]},
        {"resource": {"db": "", "collection": "c"}, "actions": ["find"]},
        {"resource": {"system_buckets": ""}, "actions": ["find"]},
        {"resource": {"db": "t", "system_buckets": "w"}, "actions": ["find"]},
    ]


@pytest.mark.parametrize(
    ("resource", "expected"),
    [
        ({"cluster": True}, CLUSTER),
        ({"cluster": 1}, CLUSTER),
        ({"anyResource": True}, ANY),
        ({"db": "", "collection": ""}, ANY_NORMAL),
        ({"db": "a", "collection": ""}, Resource.database("a")),
        ({"db": "", "collection": "c"}, Resource.collection("c")),
        ({"db": "a", "collection": "c", "other": 1}, Resource.namespace("a", "c")),
        ({"db": "local", "collection": "oplog.$main"}, Resource.namespace("local", "oplog.$main")),
        ({"system_buckets": "w"}, Resource("buckets_named", "", "w")),
        ({"db": "a", "system_buckets": ""}, Resource("buckets_in_db", "a")),
        ({"cluster": False}, "resource: {cluster: false} must be true"),
        ({"cluster": True, "db": "a"}, "resource: {cluster: true} conflicts with resource type 'db'"),
        ({"cluster": True, "anyResource": False}, "resource: {cluster: true} conflicts with resource type 'anyResource'"),
        ({"anyResource": 0}, "resource: {anyResource: false} must be true"),
        ({"anyResource": True, "collection": ""}, "resource: {anyResource: true} conflicts with resource type 'collection'"),
        ({"db": "a", "collection": "c", "system_buckets": "w"},
         "resource: {collection: '...'} conflicts with resource type 'system_buckets'"),
        ({"collection": "c"}, "resource {collection: '...'} must include 'db' field as well"),
        ({"db": "a", "collection": "a$b"}, "'a$b' is not a valid collection name"),
        ({"db": "a", "collection": ".c"}, "'.c' is not a valid collection name"),
        ({"db": "a"}, "resource pattern must contain 'collection' or 'systemBuckets' specifier"),
        ({}, "resource pattern must contain 'collection' or 'systemBuckets' specifier"),
    ],
)
def test_resource_patterns(resource, expected):
    parsed = ParsedPrivilege(_parse_resource("createRole", "privileges.resource", resource), ("find",))
    if isinstance(expected, Resource):
        found = resolve_privilege(parsed)
        assert found == Privilege.of(expected, "find")
        assert found.resource.to_doc() == {  # the form the server writes back
            k: (True if k in ("cluster", "anyResource") else v) for k, v in resource.items() if k != "other"}
    else:
        with pytest.raises(MongoError) as info:
            resolve_privilege(parsed)
        assert (info.value.code_name, info.value.errmsg) == ("BadValue", expected)


def test_any_action_is_every_action(store):
    store.run_command("admin", {"createRole": "all", "roles": [],
                                "privileges": [{"resource": {"db": "shop", "collection": ""}, "actions": ["find", "anyAction"]}]})
    assert store.roles.graph.privileges([RoleName("all", "admin")]) == {Resource.database("shop"): ALL_ACTIONS}
    assert action_list(ALL_ACTIONS) == ["anyAction"]
    # revoking one action takes anyAction away and leaves the others (ActionSet::removeAllActionsFromSet)
    store.run_command("admin", {"revokePrivilegesFromRole": "all",
                                "privileges": [{"resource": {"db": "shop", "collection": ""}, "actions": ["find"]}]})
    (priv,) = store.roles.get(("all", "admin"))["privileges"]
    assert "anyAction" not in priv["actions"] and "find" not in priv["actions"] and "insert" in priv["actions"]
    assert len(priv["actions"]) == len(ALL_ACTIONS) - 2


# -- updateRole ----------------------------------------------------------------------------------


def test_update_role(store):
    store.run_command("shop", {"createRole": "base", "privileges": [FIND_ORDERS], "roles": []})
    store.run_command("shop", {"createRole": "x", "privileges": [FIND_ORDERS], "roles": ["read"],
                               "authenticationRestrictions": [{"clientSource": ["10.0.0.0/8"]}]})
    assert store.run_command("shop", {"updateRole": "x", "roles": ["base", "base"]}) == {"ok": 1.0}
    doc = store.roles.get(("x", "shop"))
    assert doc["roles"] == [{"role": "base", "db": "shop"}] and doc["privileges"] == [FIND_ORDERS]
    store.run_command("shop", {"updateRole": "x", "privileges": [], "authenticationRestrictions": []})
    doc = store.roles.get(("x", "shop"))
    assert list(doc) == ["_id", "role", "db", "privileges", "roles"] and doc["privileges"] == []
    assert error(lambda: store.run_command("shop", {"updateRole": "x"})) == (
        2, "BadValue", "Must specify at least one field to update in updateRole")
    assert error(lambda: store.run_command("shop", {"updateRole": "nope", "roles": []})) == (
        31, "RoleNotFound", "Could not find role: nope@shop")
    # a built-in role exists, but has no document to update
    assert error(lambda: store.run_command("shop", {"updateRole": "read", "roles": []})) == (
        31, "RoleNotFound", "Role read@shop not found")
    assert error(lambda: store.run_command("shop", {"updateRole": "base", "roles": ["x"]})) == (
        49, "InvalidRoleModification", "Granting roles to base@shop would introduce a cycle in the role graph")
    assert error(lambda: store.run_command("shop", {"updateRole": "x", "privileges": [
        {"resource": {"db": "crm", "collection": ""}, "actions": ["find"]}]}))[:2] == (49, "InvalidRoleModification")
    assert error(lambda: store.run_command("shop", {"updateRole": "x", "roles": "base"}))[:2] == (14, "TypeMismatch")


# -- grant / revoke privileges -------------------------------------------------------------------


def test_grant_and_revoke_privileges(store):
    store.run_command("shop", {"createRole": "x", "privileges": [FIND_ORDERS], "roles": []})
    store.run_command("shop", {"grantPrivilegesToRole": "x", "privileges": [
        {"resource": {"db": "shop", "collection": "orders"}, "actions": ["insert"]},
        {"resource": {"db": "shop", "collection": ""}, "actions": ["listCollections"]}]})
    assert store.roles.get(("x", "shop"))["privileges"] == [
        {"resource": {"db": "shop", "collection": "orders"}, "actions": ["find", "insert"]},
        {"resource": {"db": "shop", "collection": ""}, "actions": ["listCollections"]},
    ]
    store.run_command("shop", {"revokePrivilegesFromRole": "x", "privileges": [
        {"resource": {"db": "shop", "collection": "orders"}, "actions": ["find"]},
        {"resource": {"db": "shop", "collection": ""}, "actions": ["listCollections", "insert"]},
        {"resource": {"db": "shop", "collection": "nothing"}, "actions": ["find"]}]})  # not held: no error
    assert store.roles.get(("x", "shop"))["privileges"] == [
        {"resource": {"db": "shop", "collection": "orders"}, "actions": ["insert"]}]
    for command in ("grantPrivilegesToRole", "revokePrivilegesFromRole"):
        assert error(lambda: store.run_command("shop", {command: "x", "privileges": []})) == (
            2, "BadValue", f'{command} command requires a non-empty "privileges" array')
        assert error(lambda: store.run_command("shop", {command: "read", "privileges": [FIND_ORDERS]})) == (
            2, "BadValue", "read@shop is a built-in role and cannot be modified")
        assert error(lambda: store.run_command("shop", {command: "nope", "privileges": [FIND_ORDERS]})) == (
            31, "RoleNotFound", "Role nope@shop not found")
        assert error(lambda: store.run_command("shop", {command: "x", "privileges": [
            {"resource": {"db": "shop", "collection": ""}, "actions": ["fly"]}]})) == (
            2, "BadValue", "Unknown action type in privilege set: 'fly'")
    assert error(lambda: store.run_command("shop", {"grantPrivilegesToRole": "x", "privileges": [
        {"resource": {"cluster": True}, "actions": ["serverStatus"]}]}))[:2] == (49, "InvalidRoleModification")


# -- grant / revoke roles ------------------------------------------------------------------------


def test_grant_and_revoke_roles_to_role(store):
    for name in ("a", "b", "c"):
        store.run_command("shop", {"createRole": name, "privileges": [], "roles": []})
    store.run_command("shop", {"grantRolesToRole": "a", "roles": ["b", "read"]})
    store.run_command("shop", {"grantRolesToRole": "b", "roles": ["c"]})
    assert store.roles.get(("a", "shop"))["roles"] == [{"role": "b", "db": "shop"}, {"role": "read", "db": "shop"}]
    cycle = (49, "InvalidRoleModification", "Granting roles to c@shop would introduce a cycle in the role graph")
    assert error(lambda: store.run_command("shop", {"grantRolesToRole": "c", "roles": ["a"]})) == cycle
    assert error(lambda: store.run_command("shop", {"grantRolesToRole": "c", "roles": ["read", "b"]}))[2] == cycle[2]
    assert error(lambda: store.run_command("shop", {"grantRolesToRole": "a", "roles": ["a"]})) == (
        49, "InvalidRoleModification", "Cannot grant role a@shop to itself.")
    assert error(lambda: store.run_command("shop", {"grantRolesToRole": "a", "roles": [{"role": "b", "db": "crm"}]})) == (
        49, "InvalidRoleModification", "Roles on the 'shop' database cannot be granted roles from other databases")
    assert error(lambda: store.run_command("shop", {"grantRolesToRole": "a", "roles": ["zz"]})) == (
        31, "RoleNotFound", "Cannot grant roles to 'a@shop': Could not find role: zz@shop")
    assert error(lambda: store.run_command("shop", {"grantRolesToRole": "zz", "roles": ["a"]})) == (
        31, "RoleNotFound", "Role zz@shop not found")
    assert error(lambda: store.run_command("shop", {"grantRolesToRole": "read", "roles": ["a"]})) == (
        2, "BadValue", "read@shop is a built-in role and cannot be modified")
    assert error(lambda: store.run_command("shop", {"revokeRolesFromRole": "a", "roles": []})) == (
        2, "BadValue", 'revokeRolesFromRole command requires a non-empty "roles" array')
    # revoking a role not held (or not existing) is no error
    store.run_command("shop", {"revokeRolesFromRole": "a", "roles": ["read", "zz"]})
    assert store.roles.get(("a", "shop"))["roles"] == [{"role": "b", "db": "shop"}]
    store.run_command("shop", {"revokeRolesFromRole": "b", "roles": ["c"]})
    store.run_command("shop", {"grantRolesToRole": "c", "roles": ["a"]})  # no cycle any more
    # an admin role may inherit roles of any database
    store.run_command("admin", {"createRole": "ops", "privileges": [], "roles": [{"role": "a", "db": "shop"}]})
    assert store.roles.graph.resolve([RoleName("ops", "admin")]).roles == [
        RoleName("ops", "admin"), RoleName("a", "shop"), RoleName("b", "shop")]


# -- dropRole / dropAllRolesFromDatabase ---------------------------------------------------------


def test_drop_role_takes_it_from_users_and_roles(store):
    store.run_command("shop", {"createRole": "x", "privileges": [FIND_ORDERS], "roles": []})
    store.run_command("shop", {"createRole": "y", "privileges": [], "roles": ["x", "read"]})
    user(store, "u", "shop", ["x", "read"])
    user(store, "v", "other", [{"role": "x", "db": "shop"}])
    generation = store.generation
    assert store.run_command("shop", {"dropRole": "x", "writeConcern": {"w": 1}}) == {"ok": 1.0}
    assert store.generation > generation
    assert store.get(("u", "shop"))["roles"] == [{"role": "read", "db": "shop"}]
    assert store.get(("v", "other"))["roles"] == []
    assert store.roles.get(("y", "shop"))["roles"] == [{"role": "read", "db": "shop"}]
    assert store.roles.get(("x", "shop")) is None and RoleName("x", "shop") not in store.roles.graph
    assert error(lambda: store.run_command("shop", {"dropRole": "x"})) == (31, "RoleNotFound", "Could not find role: x@shop")
    assert error(lambda: store.run_command("shop", {"dropRole": "read"})) == (
        2, "BadValue", "read@shop is a built-in role and cannot be modified")
    assert error(lambda: store.run_command("shop", {"dropRole": "y", "x": 1}))[:2] == (40415, "IDLUnknownField")


def test_drop_all_roles_from_database(store):
    store.run_command("shop", {"createRole": "x", "privileges": [], "roles": []})
    store.run_command("shop", {"createRole": "y", "privileges": [], "roles": ["x"]})
    store.run_command("crm", {"createRole": "z", "privileges": [], "roles": []})
    store.run_command("admin", {"createRole": "w", "privileges": [],
                                "roles": [{"role": "x", "db": "shop"}, {"role": "z", "db": "crm"}]})
    user(store, "u", "shop", ["x", "read", {"role": "z", "db": "crm"}])
    assert store.run_command("shop", {"dropAllRolesFromDatabase": 1}) == {"n": 2, "ok": 1.0}
    # {$pull: {roles: {db: "shop"}}}: the database's built-in roles go too
    assert store.get(("u", "shop"))["roles"] == [{"role": "z", "db": "crm"}]
    assert store.roles.get(("w", "admin"))["roles"] == [{"role": "z", "db": "crm"}]
    assert [d["_id"] for d in store.roles.system_roles()] == ["crm.z", "admin.w"]
    assert store.run_command("shop", {"dropAllRolesFromDatabase": 1}) == {"n": 0, "ok": 1.0}


# -- rolesInfo -----------------------------------------------------------------------------------


@pytest.fixture
def graph(store):
    store.run_command("shop", {"createRole": "base", "privileges": [FIND_ORDERS], "roles": []})
    store.run_command("shop", {"createRole": "mid", "privileges": [
        {"resource": {"db": "shop", "collection": ""}, "actions": ["insert"]}], "roles": ["base", "read"],
        "authenticationRestrictions": [{"clientSource": ["127.0.0.1"]}]})
    store.run_command("shop", {"createRole": "top", "privileges": [], "roles": ["mid"]})
    return store


def test_roles_info_user_defined(graph):
    reply = graph.run_command("shop", {"rolesInfo": "top"})
    assert list(reply) == ["roles", "ok"]
    assert reply["roles"] == [{
        "_id": "shop.top", "role": "top", "db": "shop", "roles": [{"role": "mid", "db": "shop"}],
        "inheritedRoles": [{"role": "mid", "db": "shop"}, {"role": "base", "db": "shop"}, {"role": "read", "db": "shop"}],
        "isBuiltin": False,
    }]
    (mid,) = graph.run_command("shop", {"rolesInfo": {"role": "mid", "db": "shop"}, "showPrivileges": True,
                                        "showAuthenticationRestrictions": True})["roles"]
    assert list(mid) == ["_id", "role", "db", "privileges", "roles", "authenticationRestrictions", "inheritedRoles",
                         "inheritedPrivileges", "inheritedAuthenticationRestrictions", "isBuiltin"]
    assert mid["privileges"] == [{"resource": {"db": "shop", "collection": ""}, "actions": ["insert"]}]
    assert mid["authenticationRestrictions"] == [[{"clientSource": ["127.0.0.1"]}]]
    assert mid["inheritedAuthenticationRestrictions"] == [[{"clientSource": ["127.0.0.1"]}]]
    # the role's own privileges, then its subordinates' (merged among themselves)
    inherited = mid["inheritedPrivileges"]
    assert inherited[0] == mid["privileges"][0] and inherited[1] == FIND_ORDERS
    assert inherited[2]["resource"] == {"db": "shop", "collection": ""} and "find" in inherited[2]["actions"]


def test_roles_info_builtin(graph):
    (read,) = graph.run_command("shop", {"rolesInfo": "read"})["roles"]
    assert read == {"db": "shop", "role": "read", "roles": [], "inheritedRoles": [], "isBuiltin": True}
    (read,) = graph.run_command("shop", {"rolesInfo": "read", "showPrivileges": 1})["roles"]
    assert list(read) == ["db", "role", "roles", "privileges", "inheritedRoles", "inheritedPrivileges", "isBuiltin"]
    assert read["privileges"] == read["inheritedPrivileges"] == [
        Privilege(r, a).to_doc() for r, a in builtin_privileges(RoleName("read", "shop")).items()]


def test_roles_info_forms(graph):
    names = lambda reply: [(r["role"], r["db"]) for r in reply["roles"]]  # noqa: E731
    assert names(graph.run_command("shop", {"rolesInfo": 1})) == [("base", "shop"), ("mid", "shop"), ("top", "shop")]
    for one in (1, 1.0, Int64(1), 1.5):
        assert len(graph.run_command("shop", {"rolesInfo": one})["roles"]) == 3
    assert graph.run_command("crm", {"rolesInfo": 1}) == {"roles": [], "ok": 1.0}
    assert names(graph.run_command("x", {"rolesInfo": ["top", {"role": "read", "db": "shop"}, "missing", "read"]})) == [
        ("read", "shop"), ("read", "x")]
    assert names(graph.run_command("shop", {"rolesInfo": ["top", "missing", "read"]})) == [("top", "shop"), ("read", "shop")]
    everything = graph.run_command("shop", {"rolesInfo": 1, "showBuiltinRoles": True, "showPrivileges": True})["roles"]
    builtin = [r for r in everything if r["isBuiltin"]]
    assert {r["role"] for r in builtin} == {"read", "readWrite", "dbAdmin", "userAdmin", "dbOwner", "enableSharding"}
    assert list(builtin[0]) == ["role", "db", "isBuiltin", "roles", "inheritedRoles", "privileges", "inheritedPrivileges"]
    (top,) = [r for r in everything if r["role"] == "top"]
    assert list(top) == ["_id", "role", "db", "privileges", "roles", "isBuiltin", "inheritedRoles", "inheritedPrivileges"]
    admin = graph.run_command("admin", {"rolesInfo": 1, "showBuiltinRoles": True})["roles"]
    assert {"root", "clusterAdmin", "__system", "read"} <= {r["role"] for r in admin}


def test_roles_info_user_fragment(graph):
    reply = graph.run_command("shop", {"rolesInfo": ["top", "read"], "showPrivileges": "asUserFragment"})
    assert list(reply) == ["userFragment", "ok"]
    fragment = reply["userFragment"]
    assert list(fragment) == ["roles", "inheritedRoles", "inheritedPrivileges"]
    assert fragment["roles"] == [{"role": "top", "db": "shop"}, {"role": "read", "db": "shop"}]
    assert [r["role"] for r in fragment["inheritedRoles"]] == ["top", "read", "mid", "base"]
    assert error(lambda: graph.run_command("shop", {"rolesInfo": 1, "showPrivileges": "asUserFragment"})) == (
        20, "IllegalOperation", "Cannot get user fragment for all roles in a database")


@pytest.mark.parametrize(
    ("cmd", "expected"),
    [
        ({"rolesInfo": True}, (2, "BadValue", "RoleName must be either a string or an object")),
        ({"rolesInfo": 2}, (2, "BadValue", "RoleName must be either a string or an object")),
        ({"rolesInfo": {"forAllDBs": True}}, (2, "BadValue", "RoleName must contain a field named: role")),
        ({"rolesInfo": [{"role": "x"}]}, (2, "BadValue", "RoleName must contain a field named: db")),
        ({"rolesInfo": 1, "showPrivileges": "yes"},
         (2, "BadValue", "Failed to parse 'showPrivileges'. 'showPrivileges' should either be a boolean or the "
                         "string 'asUserFragment', given: showPrivileges: \"yes\"")),
        ({"rolesInfo": 1, "showBuiltinRoles": "yes"},
         (14, "TypeMismatch", "BSON field 'rolesInfo.showBuiltinRoles' is the wrong type 'string', "
                              "expected types '[bool, long, int, decimal, double]'")),
        ({"rolesInfo": 1, "filter": {}}, (40415, "IDLUnknownField", "BSON field 'rolesInfo.filter' is an unknown field.")),
    ],
)
def test_roles_info_errors(graph, cmd, expected):
    assert error(lambda: graph.run_command("shop", cmd)) == expected


# -- users holding user-defined roles ------------------------------------------------------------


def test_users_hold_user_defined_roles(graph):
    user(graph, "u", "shop", ["top"])
    assert error(lambda: graph.run_command("shop", {"createUser": "v", "credentials": CRED, "roles": ["nope"]})) == (
        31, "RoleNotFound", "Could not find role: nope@shop")
    graph.run_command("shop", {"grantRolesToUser": "u", "roles": ["base"]})
    assert error(lambda: graph.run_command("shop", {"grantRolesToUser": "u", "roles": ["nope"]}))[:2] == (31, "RoleNotFound")
    graph.run_command("shop", {"updateUser": "u", "roles": ["top", "mid"]})
    info = graph.run_command("shop", {"usersInfo": "u", "showPrivileges": True})["users"][0]
    assert info["roles"] == [{"role": "top", "db": "shop"}, {"role": "mid", "db": "shop"}]
    assert info["inheritedRoles"] == [{"role": r, "db": "shop"} for r in ("base", "mid", "read", "top")]
    resources = [p["resource"] for p in info["inheritedPrivileges"]]
    assert {"db": "shop", "collection": "orders"} in resources and {"db": "shop", "collection": ""} in resources
    granted = graph.effective_privileges(("u", "shop"))
    assert {"insert", "find"} <= granted[Resource.database("shop")]


def test_users_file_creates_roles(tmp_path, store):
    import json

    path = tmp_path / "users.json"
    path.write_text(json.dumps([
        {"createRole": "clerk", "db": "shop", "privileges": [FIND_ORDERS], "roles": []},
        {"createUser": "c", "db": "shop", "credentials": CRED, "roles": ["clerk"]},
        {"createRole": "bad", "db": "shop", "privileges": [], "roles": ["nope"]},
    ]))
    with pytest.raises(MongoError) as info:
        store.load_users_file(path)
    assert info.value.errmsg.endswith("[2]: Cannot grant roles to 'bad@shop': Could not find role: nope@shop")
    assert store.roles.get(("clerk", "shop")) is not None and store.get(("c", "shop"))["roles"] == [
        {"role": "clerk", "db": "shop"}]


# -- authorization -------------------------------------------------------------------------------


@pytest.fixture
def manager(store):
    store.run_command("shop", {"createRole": "clerk", "privileges": [FIND_ORDERS], "roles": []})
    store.run_command("admin", {"createRole": "monitor", "roles": [],
                                "privileges": [{"resource": {"cluster": True}, "actions": ["serverStatus"]}]})
    user(store, "u", "shop", ["clerk", {"role": "monitor", "db": "admin"}])
    user(store, "admin", "admin", ["root"])
    return AuthManager(enabled=True, store=store)


def allowed(manager, conn, db, cmd) -> bool:
    return manager.is_authorized(db, {**cmd, "$db": db}, conn)


def test_user_defined_role_grants_exactly_its_privileges(manager):
    conn = manager.new_connection()
    conn.user = ("u", "shop")
    assert allowed(manager, conn, "shop", {"find": "orders"})
    assert not allowed(manager, conn, "shop", {"find": "other"})
    assert not allowed(manager, conn, "shop", {"insert": "orders", "documents": [{}]})
    assert allowed(manager, conn, "admin", {"serverStatus": 1})
    assert not allowed(manager, conn, "admin", {"hostInfo": 1})
    # a database privilege reaches its collections, not its system collections
    manager.handle_user_command("shop", {"grantPrivilegesToRole": "clerk", "privileges": [
        {"resource": {"db": "shop", "collection": ""}, "actions": ["insert"]}]})
    assert allowed(manager, conn, "shop", {"insert": "anything", "documents": [{}]})
    assert not allowed(manager, conn, "shop", {"insert": "system.js", "documents": [{}]})
    # revoking applies at once to the logged-in connection
    manager.handle_user_command("shop", {"revokePrivilegesFromRole": "clerk", "privileges": [FIND_ORDERS]})
    assert not allowed(manager, conn, "shop", {"find": "orders"})
    # an inherited role's privileges count, and stop counting when the role goes
    manager.handle_user_command("shop", {"grantRolesToRole": "clerk", "roles": ["read"]})
    assert allowed(manager, conn, "shop", {"find": "orders"})
    manager.handle_user_command("shop", {"dropRole": "clerk"})
    assert not allowed(manager, conn, "shop", {"insert": "anything", "documents": [{}]})
    assert not allowed(manager, conn, "shop", {"find": "orders"})
    assert manager.store.roles_of(("u", "shop")) == [RoleName("monitor", "admin")]


def test_roles_info_on_ones_own_roles_needs_no_privilege(manager):
    conn = manager.new_connection()
    conn.user = ("u", "shop")
    assert allowed(manager, conn, "shop", {"rolesInfo": "clerk"})
    assert allowed(manager, conn, "shop", {"rolesInfo": [{"role": "monitor", "db": "admin"}, "clerk"]})
    assert not allowed(manager, conn, "shop", {"rolesInfo": "read"})
    assert not allowed(manager, conn, "shop", {"rolesInfo": 1})


def test_a_role_with_any_action_runs_anything(manager):
    manager.handle_user_command("admin", {"createRole": "god", "roles": [],
                                          "privileges": [{"resource": {"anyResource": True}, "actions": ["anyAction"]}]})
    manager.handle_user_command("shop", {"grantRolesToUser": "u", "roles": [{"role": "god", "db": "admin"}]})
    conn = manager.new_connection()
    conn.user = ("u", "shop")
    for db, cmd in (("shop", {"insert": "x", "documents": [{}]}), ("admin", {"shutdown": 1}),
                    ("local", {"find": "oplog.rs"}), ("admin", {"someFutureCommand": 1})):
        assert allowed(manager, conn, db, cmd)


def test_role_command_requirements():
    db = Resource.database
    assert required_privileges("shop", {"createRole": "x", "roles": ["read", {"role": "r", "db": "crm"}], "privileges": [
        FIND_ORDERS, {"resource": {"cluster": True}, "actions": ["serverStatus"]}],
        "authenticationRestrictions": []}) == [
        Privilege.of(db("shop"), "createRole"), Privilege.of(db("shop"), "grantRole"),
        Privilege.of(db("crm"), "grantRole"), Privilege.of(db("shop"), "grantRole"),
        Privilege.of(db("admin"), "grantRole"), Privilege.of(db("shop"), "setAuthenticationRestriction")]
    assert required_privileges("shop", {"updateRole": "x", "roles": []}) == [Privilege.of(ANY_NORMAL, "revokeRole")]
    assert required_privileges("shop", {"revokePrivilegesFromRole": "x", "privileges": [
        {"resource": {"db": "", "collection": "c"}, "actions": ["find"]}]}) == [Privilege.of(db("admin"), "revokeRole")]
    assert required_privileges("shop", {"revokeRolesFromRole": "x", "roles": ["r"]}) == [Privilege.of(db("shop"), "revokeRole")]
    assert required_privileges("shop", {"dropRole": "x"}) == [Privilege.of(db("shop"), "dropRole")]
    assert required_privileges("shop", {"dropAllRolesFromDatabase": 1}) == [Privilege.of(db("shop"), "dropRole")]
    assert required_privileges("shop", {"rolesInfo": 1}) == [Privilege.of(db("shop"), "viewRole")]
    assert required_privileges("shop", {"rolesInfo": ["a", {"role": "b", "db": "crm"}]},
                               user_roles=[RoleName("a", "shop")]) == [Privilege.of(db("crm"), "viewRole")]
    # a malformed resource fails when the check reaches it; the IDL's errors come first
    reqs = required_privileges("shop", {"grantPrivilegesToRole": "x", "privileges": [
        FIND_ORDERS, {"resource": {"cluster": False}, "actions": ["find"]}, FIND_ORDERS]})
    assert reqs == [Privilege.of(db("shop"), "grantRole"), Refusal("BadValue", "resource: {cluster: false} must be true")]
    with pytest.raises(MongoError) as info:
        required_privileges("shop", {"createRole": "x", "privileges": []})
    assert info.value.code == 40414


def test_unauthorized_before_a_malformed_resource(manager):
    conn = manager.new_connection()
    conn.user = ("u", "shop")
    bad = {"createRole": "x", "roles": [], "privileges": [{"resource": {"cluster": False}, "actions": ["find"]}]}
    with pytest.raises(MongoError) as info:
        manager.authorize("shop", {**bad, "$db": "shop"}, conn)
    assert info.value.code == 13
    conn.user = ("admin", "admin")
    with pytest.raises(MongoError) as info:
        manager.authorize("shop", {**bad, "$db": "shop"}, conn)
    assert (info.value.code, info.value.errmsg) == (2, "resource: {cluster: false} must be true")


def test_search_list_reaches_system_buckets():
    found = search_list(Resource.namespace("t", "system.buckets.w"))
    assert Resource("buckets", "t", "w") in found and Resource("any_buckets") in found
    assert Resource.database("t") not in found and ANY_NORMAL not in found


def test_builtin_privileges_flatten_the_inherited_roles():
    """builtin_privileges = the union over the role and every role builtin_roles.yml makes it inherit."""
    from mongosim.router.auth import privileges as p

    def naive(role: RoleName) -> dict:
        seen, stack, out = set(), [role], {}
        while stack:
            r = stack.pop()
            if r in seen:
                continue
            seen.add(r)
            spec = p.BUILTIN_ROLES[r.role]
            stack += [RoleName(sub, sub_db or r.db) for sub, sub_db in spec.roles]
            for pattern, actions in spec.privileges:
                resource = p._resource(pattern, r.db)
                out[resource] = out.get(resource, frozenset()) | (ALL_ACTIONS if "anyAction" in actions else actions)
        return out

    for name, spec in p.BUILTIN_ROLES.items():
        role = RoleName(name, "admin" if spec.admin_only else "shop")
        assert builtin_privileges(role) == naive(role)
    assert builtin_privileges(RoleName("root", "shop")) == {}
    assert builtin_privileges(RoleName("read", "$external")) == {}
