"""User management commands over the in-memory store: documents, replies and the server's errors."""

from __future__ import annotations

import json
import uuid

import pytest
from bson.binary import Binary

from mongosim.oplog.errors import MongoError
from mongosim.router.auth.privileges import action_list
from mongosim.router.auth.scram import ScramCredential, make_credential
from tests.auth.helpers import empty_store, error



@pytest.fixture
def store():
    return empty_store()


def test_create_user_document_shape(store):
    assert store.run_command(
        "test", {"createUser": "one", "pwd": "pwd1", "roles": ["read", {"role": "readWrite", "db": "other"}],
                 "customData": {"team": 1}, "$db": "test", "lsid": {"id": Binary(b"x" * 16, 4)}}
    ) == {"ok": 1.0}
    doc = store.get(("one", "test"))
    assert list(doc) == ["_id", "userId", "user", "db", "credentials", "customData", "roles"]
    assert doc["_id"] == "test.one" and doc["user"] == "one" and doc["db"] == "test"
    assert doc["userId"] == Binary.from_uuid(uuid.UUID(int=1))
    assert list(doc["credentials"]) == ["SCRAM-SHA-1", "SCRAM-SHA-256"]
    assert doc["roles"] == [{"role": "read", "db": "test"}, {"role": "readWrite", "db": "other"}]
    for mech, cred in doc["credentials"].items():
        assert list(cred) == ["iterationCount", "salt", "storedKey", "serverKey"]
        parsed = ScramCredential.from_doc(mech, cred)
        assert parsed == make_credential(
            mech, "one", "pwd1", salt=__import__("base64").b64decode(cred["salt"]), iterations=4096
        )


@pytest.mark.parametrize(
    ("cmd", "db", "expected"),
    [
        ({"createUser": "x"}, "test", (40414, "IDLFailedToParse", "BSON field 'createUser.roles' is missing but a required field")),
        ({"createUser": "x", "roles": []}, "test", (2, "BadValue", "Must provide a 'pwd' field for all user documents, except those with '$external' as the user's source db")),
        ({"createUser": "x", "pwd": "p", "roles": []}, "$external", (2, "BadValue", "Cannot set the password for users defined on the '$external' database")),
        ({"createUser": "x", "pwd": "p", "roles": []}, "local", (2, "BadValue", "Cannot create users in the local database")),
        ({"createUser": "x\0y", "pwd": "p", "roles": []}, "test", (2, "BadValue", "Username cannot contain NULL characters")),
        ({"createUser": "x", "pwd": "p", "roles": [], "mechanisms": []}, "test", (2, "BadValue", "mechanisms field must not be empty")),
        ({"createUser": "x", "pwd": "p", "roles": [], "mechanisms": ["BAD"]}, "test", (2, "BadValue", "Unknown auth mechanism 'BAD'")),
        ({"createUser": "x", "pwd": "p", "roles": [], "mechanisms": ["PLAIN", "BAD"]}, "test", (2, "BadValue", "Unknown auth mechanism 'PLAIN'")),
        ({"createUser": "x", "pwd": "p", "roles": [], "digestPassword": False}, "test", (2, "BadValue", "Use of SCRAM-SHA-256 requires undigested passwords")),
        ({"createUser": "", "pwd": "p", "roles": []}, "test", (2, "BadValue", "User document needs 'user' field to be non-empty")),
        ({"createUser": "x", "pwd": "p", "roles": ["nosuchrole"]}, "test", (31, "RoleNotFound", "Could not find role: nosuchrole@test")),
        ({"createUser": "x", "pwd": "p", "roles": ["root"]}, "test", (31, "RoleNotFound", "Could not find role: root@test")),
        ({"createUser": "x", "pwd": "p", "roles": ["a", "b"]}, "test", (31, "RoleNotFound", "Could not find roles: a@test, b@test")),
        ({"createUser": "x", "pwd": "p", "roles": [{"role": "read"}]}, "test", (2, "BadValue", "RoleName must contain a field named: db")),
        ({"createUser": "x", "pwd": "p", "roles": [{"db": "test"}]}, "test", (2, "BadValue", "RoleName must contain a field named: role")),
        ({"createUser": "x", "pwd": "p", "roles": [{"role": 1, "db": "test"}]}, "test", (2, "BadValue", "RoleName must contain a string field named: role. But, has type int")),
        ({"createUser": "x", "pwd": "p", "roles": [5]}, "test", (2, "BadValue", "RoleName must be either a string or an object")),
        ({"createUser": "x", "pwd": "p", "roles": "read"}, "test", (14, "TypeMismatch", "BSON field 'createUser.roles' is the wrong type 'string', expected type 'array'")),
        ({"createUser": "x", "pwd": 5, "roles": []}, "test", (14, "TypeMismatch", "BSON field 'createUser.pwd' is the wrong type 'int', expected type 'string'")),
        ({"createUser": 5, "pwd": "p", "roles": []}, "test", (14, "TypeMismatch", "BSON field 'createUser.createUser' is the wrong type 'int', expected type 'string'")),
        ({"createUser": "x", "pwd": "p", "roles": [], "foo": 1}, "test", (40415, "IDLUnknownField", "BSON field 'createUser.foo' is an unknown field.")),
        ({"createUser": "x", "pwd": "p\u0007", "roles": [], "mechanisms": ["SCRAM-SHA-256"]}, "test", None),
    ],
)
def test_create_user_errors(store, cmd, db, expected):
    if expected is None:  # SASLprep-prohibited password: BadValue
        assert error(lambda: store.run_command(db, cmd))[:2] == (2, "BadValue")
    else:
        assert error(lambda: store.run_command(db, cmd)) == expected
    assert not store.has_users()


def test_create_user_mechanisms(store):
    store.run_command("test", {"createUser": "one", "pwd": "p", "roles": [], "mechanisms": ["SCRAM-SHA-256"]})
    store.run_command("test", {"createUser": "two", "pwd": "p", "roles": [], "mechanisms": ["SCRAM-SHA-1"], "digestPassword": True})
    assert list(store.get(("one", "test"))["credentials"]) == ["SCRAM-SHA-256"]
    assert list(store.get(("two", "test"))["credentials"]) == ["SCRAM-SHA-1"]
    # digestPassword: false is fine for SCRAM-SHA-1 only (the client sends the digest itself)
    store.run_command("test", {"createUser": "three", "pwd": "0123abcd", "roles": [], "mechanisms": ["SCRAM-SHA-1"], "digestPassword": False})
    # the external user has no password
    store.run_command("$external", {"createUser": "CN=x", "roles": [{"role": "read", "db": "test"}]})
    assert store.get(("CN=x", "$external"))["credentials"] == {"external": True}


def test_create_user_twice(store):
    store.run_command("test", {"createUser": "one", "pwd": "p", "roles": []})
    assert error(lambda: store.run_command("test", {"createUser": "one", "pwd": "q", "roles": []})) == (
        51003,
        "Location51003",
        'User "one@test" already exists',
    )
    store.run_command("other", {"createUser": "one", "pwd": "p", "roles": []})  # another database: another user


def test_update_user(store):
    store.run_command("test", {"createUser": "u", "pwd": "old", "roles": ["read"]})
    before = store.get(("u", "test"))["credentials"]
    store.run_command("test", {"updateUser": "u", "pwd": "new", "customData": {"a": 1}, "roles": ["readWrite"]})
    doc = store.get(("u", "test"))
    assert doc["credentials"] != before and list(doc["credentials"]) == ["SCRAM-SHA-1", "SCRAM-SHA-256"]
    assert doc["roles"] == [{"role": "readWrite", "db": "test"}]
    assert list(doc) == ["_id", "userId", "user", "db", "credentials", "customData", "roles"]
    # trim mechanisms without a password
    store.run_command("test", {"updateUser": "u", "mechanisms": ["SCRAM-SHA-256"]})
    assert list(store.get(("u", "test"))["credentials"]) == ["SCRAM-SHA-256"]
    assert error(lambda: store.run_command("test", {"updateUser": "u", "mechanisms": ["SCRAM-SHA-1"]})) == (
        2,
        "BadValue",
        "mechanisms field must be a subset of previously set mechanisms",
    )
    # a new password with mechanisms rebuilds those only
    store.run_command("test", {"updateUser": "u", "pwd": "x", "mechanisms": ["SCRAM-SHA-1"]})
    assert list(store.get(("u", "test"))["credentials"]) == ["SCRAM-SHA-1"]
    store.run_command("test", {"updateUser": "u", "pwd": "x"})
    assert list(store.get(("u", "test"))["credentials"]) == ["SCRAM-SHA-1", "SCRAM-SHA-256"]


def test_update_user_errors(store):
    store.run_command("test", {"createUser": "u", "pwd": "old", "roles": []})
    assert error(lambda: store.run_command("test", {"updateUser": "u"})) == (
        2,
        "BadValue",
        "Must specify at least one field to update in updateUser",
    )
    assert error(lambda: store.run_command("test", {"updateUser": "u", "pwd": "p", "mechanisms": []})) == (
        2,
        "BadValue",
        "mechanisms field must not be empty",
    )
    assert error(lambda: store.run_command("test", {"updateUser": "nobody", "pwd": "p"})) == (
        11,
        "UserNotFound",
        "User nobody@test not found",
    )
    assert error(lambda: store.run_command("test", {"updateUser": "u", "roles": ["nope"]}))[:2] == (31, "RoleNotFound")


def test_drop_user(store):
    store.run_command("test", {"createUser": "u", "pwd": "p", "roles": []})
    assert store.run_command("test", {"dropUser": "u"}) == {"ok": 1.0}
    assert error(lambda: store.run_command("test", {"dropUser": "u"})) == (11, "UserNotFound", "User 'u@test' not found")


def test_drop_all_users_from_database(store):
    for name in ("a", "b"):
        store.run_command("test", {"createUser": name, "pwd": "p", "roles": []})
    store.run_command("other", {"createUser": "c", "pwd": "p", "roles": []})
    assert store.run_command("test", {"dropAllUsersFromDatabase": 1}) == {"n": 2, "ok": 1.0}
    assert list(store.docs) == [("c", "other")]


def test_grant_and_revoke_roles(store):
    store.run_command("test", {"createUser": "u", "pwd": "p", "roles": ["read"]})
    store.run_command("test", {"grantRolesToUser": "u", "roles": ["readWrite", "read", {"role": "clusterMonitor", "db": "admin"}]})
    assert store.get(("u", "test"))["roles"] == [
        {"role": "read", "db": "test"},
        {"role": "readWrite", "db": "test"},
        {"role": "clusterMonitor", "db": "admin"},
    ]
    store.run_command("test", {"revokeRolesFromUser": "u", "roles": ["read", {"role": "clusterMonitor", "db": "admin"}]})
    assert store.get(("u", "test"))["roles"] == [{"role": "readWrite", "db": "test"}]
    assert error(lambda: store.run_command("test", {"grantRolesToUser": "u", "roles": []})) == (
        2,
        "BadValue",
        'grantRolesToUser command requires a non-empty "roles" array',
    )
    assert error(lambda: store.run_command("test", {"grantRolesToUser": "nobody", "roles": ["read"]})) == (
        11,
        "UserNotFound",
        'Could not find user "nobody" for db "test"',
    )
    assert error(lambda: store.run_command("test", {"revokeRolesFromUser": "u", "roles": ["clusterMonitor"]})) == (
        31,
        "RoleNotFound",
        "Could not find role: clusterMonitor@test",
    )


def test_users_info_shapes(store):
    store.run_command("test", {"createUser": "one", "pwd": "p", "roles": ["read"], "customData": {"k": 1}})
    store.run_command("test", {"createUser": "two", "pwd": "p", "roles": [], "mechanisms": ["SCRAM-SHA-256"]})
    store.run_command("other", {"createUser": "one", "pwd": "p", "roles": []})
    reply = store.run_command("test", {"usersInfo": 1})
    assert list(reply) == ["users", "ok"]
    one, two = reply["users"]
    assert list(one) == ["_id", "userId", "user", "db", "customData", "roles", "mechanisms"]
    assert one["_id"] == "test.one" and one["mechanisms"] == ["SCRAM-SHA-1", "SCRAM-SHA-256"]
    assert two["mechanisms"] == ["SCRAM-SHA-256"] and "customData" not in two
    assert store.run_command("test", {"usersInfo": "one"})["users"] == [one]
    assert [u["_id"] for u in store.run_command("test", {"usersInfo": ["two", {"user": "one", "db": "other"}, "missing"]})["users"]] == [
        "other.one",
        "test.two",
    ]  # sorted by user, then db
    everyone = store.run_command("x", {"usersInfo": {"forAllDBs": True}})["users"]
    assert [u["_id"] for u in everyone] == ["other.one", "test.one", "test.two"]
    creds = store.run_command("test", {"usersInfo": "one", "showCredentials": True})["users"][0]
    assert list(creds) == ["_id", "userId", "user", "db", "credentials", "customData", "roles", "mechanisms"]
    assert "customData" not in store.run_command("test", {"usersInfo": "one", "showCustomData": False})["users"][0]
    assert store.run_command("none", {"usersInfo": 1}) == {"users": [], "ok": 1.0}
    sha256 = store.run_command("test", {"usersInfo": 1, "filter": {"mechanisms": "SCRAM-SHA-1"}})["users"]
    assert [u["user"] for u in sha256] == ["one"]


def test_users_info_show_privileges(store):
    store.run_command("admin", {"createUser": "mon", "pwd": "p", "roles": ["clusterMonitor"]})
    user = store.run_command("admin", {"usersInfo": "mon", "showPrivileges": True})["users"][0]
    assert list(user)[:6] == ["_id", "userId", "user", "db", "mechanisms", "roles"]
    # built-in roles are flat, as on the server: clusterMonitor inherits read@local's privileges, not the role
    assert user["inheritedRoles"] == [{"role": "clusterMonitor", "db": "admin"}]
    local = next(p for p in user["inheritedPrivileges"] if p["resource"] == {"db": "local", "collection": ""})
    assert "find" in local["actions"]
    cluster = next(p for p in user["inheritedPrivileges"] if p["resource"] == {"cluster": True})
    assert "serverStatus" in cluster["actions"] and cluster["actions"] == action_list(cluster["actions"])
    assert error(lambda: store.run_command("admin", {"usersInfo": 1, "showPrivileges": True})) == (
        20,
        "IllegalOperation",
        "Privilege or restriction details require exact-match usersInfo queries",
    )


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        (None, "UserName must be either a string or an object"),
        (True, "UserName must be either a string or an object"),
        ({"foo": "bar"}, "UserName contains an unknown field named: 'foo"),
        ({"user": 123, "db": "x"}, "UserName must contain a string field named: user. But, has type int"),
        ({"user": "one", "db": 123}, "UserName must contain a string field named: db. But, has type int"),
        ([{"user": "missing_db"}], "UserName must contain a field named: db"),
        ([{"db": "x"}], "UserName must contain a field named: user"),
    ],
)
def test_users_info_bad_arguments(store, arg, message):
    assert error(lambda: store.run_command("test", {"usersInfo": arg})) == (2, "BadValue", message)


# -- --users FILE ---------------------------------------------------------------------------------


def test_load_users_file(tmp_path, store):
    cred = make_credential("SCRAM-SHA-256", "ci", "cipw", iterations=4096)
    path = tmp_path / "users.json"
    path.write_text(
        json.dumps(
            [
                {"createUser": "admin", "pwd": "secret", "roles": ["root"]},
                {"createUser": "app", "pwd": "p", "db": "shop", "roles": ["readWrite", {"role": "read", "db": "reports"}]},
                {"createUser": "ci", "roles": [{"role": "clusterMonitor", "db": "admin"}], "credentials": {"SCRAM-SHA-256": cred.to_doc()}},
            ]
        )
    )
    assert store.load_users_file(path) == [("admin", "admin"), ("app", "shop"), ("ci", "admin")]
    assert store.get(("app", "shop"))["roles"] == [{"role": "readWrite", "db": "shop"}, {"role": "read", "db": "reports"}]
    assert store.credential(("ci", "admin"), "SCRAM-SHA-256") == cred
    assert store.credential(("ci", "admin"), "SCRAM-SHA-1") is None


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("{}", "expected a JSON array"),
        ("[1]", "[0]: each entry must be a document starting with 'createUser'"),
        ('[{"user": "x"}]', "[0]: each entry must be a document"),
        ('[{"createUser": "x", "pwd": "p", "roles": ["nope"]}]', "[0]: Could not find role: nope@admin"),
        ('[{"createUser": "x", "pwd": "p", "roles": []}, {"createUser": "x", "pwd": "p", "roles": []}]', '[1]: User "x@admin" already exists'),
        ("[", "Expecting"),
    ],
)
def test_load_users_file_errors(tmp_path, store, content, fragment):
    path = tmp_path / "users.json"
    path.write_text(content)
    with pytest.raises(MongoError) as info:
        store.load_users_file(path)
    assert fragment in info.value.errmsg
