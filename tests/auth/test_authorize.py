"""AuthManager.authorize: the Unauthorized errors, the localhost exception, cursors, listDatabases."""

from __future__ import annotations

import datetime
import uuid

import pytest
from bson.binary import Binary
from bson.int64 import Int64
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp
from pymongo.auth_shared import MongoCredential, _Cache
from pymongo.synchronous import auth as pymongo_auth

from mongosim.oplog.errors import MongoError
from mongosim.router.auth import AuthManager, UserStore, is_localhost_address
from mongosim.router.auth.bsonrepr import to_string

LSID = {"id": Binary(uuid.UUID("07e7b998-a2d7-43c3-92ea-70033ad20e7c").bytes, 4)}


def login(make_conn, user, password, source="admin", **kw):
    conn = make_conn(**kw)
    pymongo_auth.authenticate(MongoCredential("SCRAM-SHA-256", source, user, password, None, _Cache()), conn)
    return conn


def err(call):
    with pytest.raises(MongoError) as info:
        call()
    return info.value


def test_unauthenticated_command_requires_authentication(make_conn):
    conn = make_conn()
    reply = conn.run("shop", {"find": "orders", "filter": {}})
    assert reply == {"ok": 0.0, "errmsg": "Command find requires authentication", "code": 13, "codeName": "Unauthorized"}
    # the handshake and authentication commands need nothing
    for cmd in ({"hello": 1}, {"isMaster": 1}, {"ping": 1}, {"buildInfo": 1}, {"endSessions": []}):
        assert conn.run("admin", cmd)["ok"] == 1.0


def test_authenticated_user_is_authorized_by_roles(make_conn):
    conn = login(make_conn, "alice", "alicepw")
    assert conn.run("shop", {"insert": "orders", "documents": [{}]})["ok"] == 1.0
    reply = conn.run("crm", {"find": "leads", "filter": {}, "lsid": LSID})
    assert reply["code"] == 13 and reply["codeName"] == "Unauthorized"
    assert reply["errmsg"] == (
        'not authorized on crm to execute command { find: "leads", filter: {}, '
        'lsid: { id: UUID("07e7b998-a2d7-43c3-92ea-70033ad20e7c") }, $db: "crm" }'
    )


def test_unauthorized_message_redacts_password_and_skips_sequences(auth):
    conn = auth.new_connection()
    conn.user = ("alice", "admin")
    e = err(lambda: auth.authorize("shop", {"createUser": "x", "pwd": "secret", "roles": [], "$db": "shop"}, conn))
    assert e.errmsg == 'not authorized on shop to execute command { createUser: "x", pwd: "xxx", roles: [], $db: "shop" }'
    cmd = {"insert": "orders", "ordered": True, "$db": "crm", "documents": [{"_id": 1}]}
    e = err(lambda: auth.authorize("crm", cmd, conn, sequence_fields=["documents"]))
    assert e.errmsg == 'not authorized on crm to execute command { insert: "orders", ordered: true, $db: "crm" }'


def test_role_changes_apply_to_open_connections(make_conn, auth):
    conn = login(make_conn, "alice", "alicepw")
    assert conn.run("crm", {"find": "leads"})["code"] == 13
    auth.handle_user_command("admin", {"grantRolesToUser": "alice", "roles": [{"role": "read", "db": "crm"}]})
    assert conn.run("crm", {"find": "leads"})["ok"] == 1.0
    auth.handle_user_command("admin", {"dropUser": "alice"})
    assert conn.run("crm", {"find": "leads"})["errmsg"] == "Command find requires authentication"
    assert conn.state.user is None


def test_users_info_on_oneself_needs_no_privilege(make_conn):
    conn = login(make_conn, "alice", "alicepw")
    reply = conn.run("admin", {"usersInfo": "alice"})
    assert reply["ok"] == 1.0 and [u["user"] for u in reply["users"]] == ["alice"]
    assert conn.run("admin", {"usersInfo": "root"})["code"] == 13
    assert conn.run("admin", {"usersInfo": 1})["code"] == 13


def test_auth_disabled_is_a_no_op(store):
    manager = AuthManager(enabled=False, store=store)
    conn = manager.new_connection()
    manager.authorize("shop", {"dropDatabase": 1}, conn)
    manager.check_get_more(conn, 5, ("someone", "admin"))
    assert manager.list_databases_filter({"listDatabases": 1}, conn) is None


# -- localhost exception ---------------------------------------------------------------------------


@pytest.fixture
def empty():
    return AuthManager(enabled=True, store=UserStore(iterations={"SCRAM-SHA-1": 4096, "SCRAM-SHA-256": 4096}))


def test_localhost_exception_allows_only_the_first_user(empty, make_conn):
    conn = make_conn(is_localhost=True, manager=empty)
    # no "requires authentication" under the exception, but no privileges beyond creating the user
    reply = conn.run("shop", {"find": "orders"})
    assert reply["code"] == 13 and reply["errmsg"].startswith("not authorized on shop to execute command { find:")
    assert conn.run("admin", {"usersInfo": 1})["code"] == 13
    # a user on another database, or with roles on another database, is refused
    assert conn.run("shop", {"createUser": "u", "pwd": "p", "roles": ["read"]})["code"] == 13
    assert conn.run("admin", {"createUser": "u", "pwd": "p", "roles": [{"role": "read", "db": "shop"}]})["code"] == 13
    # the first admin user
    assert conn.run("admin", {"createUser": "boss", "pwd": "bosspw", "roles": ["root"]}) == {"ok": 1.0}
    # and nothing more: the exception is gone for this connection
    reply = conn.run("admin", {"createUser": "second", "pwd": "p", "roles": ["root"]})
    assert reply["errmsg"] == "Command createUser requires authentication"
    pymongo_auth.authenticate(MongoCredential("SCRAM-SHA-256", "admin", "boss", "bosspw", None, _Cache()), conn)
    assert conn.run("admin", {"createUser": "second", "pwd": "p", "roles": ["root"]}) == {"ok": 1.0}


def test_localhost_exception_is_for_local_connections_only(empty, make_conn):
    remote = make_conn(is_localhost=False, manager=empty)
    reply = remote.run("admin", {"createUser": "boss", "pwd": "p", "roles": ["root"]})
    assert reply["errmsg"] == "Command createUser requires authentication"
    assert not empty.store.has_users()


def test_localhost_exception_latches_off(empty, make_conn):
    local = make_conn(is_localhost=True, manager=empty)
    other = make_conn(is_localhost=True, manager=empty)
    assert local.run("admin", {"createUser": "boss", "pwd": "p", "roles": ["root"]})["ok"] == 1.0
    assert other.run("admin", {"ping": 1})["ok"] == 1.0  # a request sees the user: latched off
    empty.handle_user_command("admin", {"dropUser": "boss"})
    assert other.run("admin", {"createUser": "x", "pwd": "p", "roles": ["root"]})["code"] == 13
    fresh = make_conn(is_localhost=True, manager=empty)  # a new connection gets it back
    assert fresh.run("admin", {"createUser": "x", "pwd": "p", "roles": ["root"]})["ok"] == 1.0


def test_localhost_exception_can_be_disabled(make_conn):
    manager = AuthManager(enabled=True, localhost_exception=False)
    conn = make_conn(is_localhost=True, manager=manager)
    assert conn.run("admin", {"createUser": "boss", "pwd": "p", "roles": ["root"]})["code"] == 13


@pytest.mark.parametrize(
    ("host", "local"),
    [("127.0.0.1", True), ("127.8.9.10", True), ("::1", True), ("[::1]", True), ("localhost", True),
     ("/tmp/mongodb-27017.sock", True), ("10.0.0.1", False), ("example.com", False), ("", False), (None, False)],
)
def test_is_localhost_address(host, local):
    assert is_localhost_address(host) is local


# -- cursors and listDatabases ---------------------------------------------------------------------


def test_get_more_only_on_own_cursors(auth, make_conn):
    alice = login(make_conn, "alice", "alicepw")
    root = login(make_conn, "root", "rootpw")
    owner = auth.cursor_owner(alice.state)
    auth.check_get_more(alice.state, 123, owner)
    e = err(lambda: auth.check_get_more(root.state, 123, owner))
    assert (e.code, e.errmsg) == (13, "cursor id 123 was not created by the authenticated user")


def test_kill_cursors(auth, make_conn):
    alice = login(make_conn, "alice", "alicepw")
    reader = login(make_conn, "reader", "readerpw", source="shop")
    root = login(make_conn, "root", "rootpw")
    owner = auth.cursor_owner(alice.state)
    cmd = {"killCursors": "orders", "cursors": [Int64(123)], "$db": "shop"}
    auth.check_kill_cursors("shop", cmd, alice.state, [(owner, "shop.orders")])
    auth.check_kill_cursors("shop", cmd, root.state, [(owner, "shop.orders")])  # killAnyCursor (hostManager)
    e = err(lambda: auth.check_kill_cursors("shop", cmd, reader.state, [(owner, "shop.orders")]))
    assert e.errmsg == 'not authorized on shop to execute command { killCursors: "orders", cursors: [ 123 ], $db: "shop" }'


def test_list_databases_filter(auth, make_conn):
    root = login(make_conn, "root", "rootpw")
    assert auth.list_databases_filter({"listDatabases": 1}, root.state) is None
    keep = auth.list_databases_filter({"listDatabases": 1, "authorizedDatabases": True}, root.state)
    assert keep("shop") and keep("anything")
    alice = login(make_conn, "alice", "alicepw")
    keep = auth.list_databases_filter({"listDatabases": 1}, alice.state)
    assert keep("shop") and not keep("crm") and not keep("admin")
    e = err(lambda: auth.list_databases_filter({"listDatabases": 1, "authorizedDatabases": False}, alice.state))
    assert (e.code, e.errmsg) == (13, "Insufficient permissions to list all databases")


# -- BSONObj::toString ---------------------------------------------------------------------------


def test_bson_to_string():
    doc = {
        "s": "text",
        "i": 1,
        "l": Int64(2),
        "d": 1.0,
        "f": 0.5,
        "neg": -1.0,
        "b": False,
        "n": None,
        "o": {},
        "a": [],
        "arr": [1, "x"],
        "oid": ObjectId("5f1e2d3c4b5a697887766554"),
        "ts": Timestamp(1605170209, 2),
        "dt": datetime.datetime(1970, 1, 1, 0, 0, 1, 500000),
        "bin": Binary(b"\x01\xab", 0),
        "re": Regex("^a", "i"),
    }
    assert to_string(doc) == (
        '{ s: "text", i: 1, l: 2, d: 1.0, f: 0.5, neg: -1.0, b: false, n: null, o: {}, a: [], arr: [ 1, "x" ], '
        "oid: ObjectId('5f1e2d3c4b5a697887766554'), ts: Timestamp(1605170209, 2), dt: new Date(1500), "
        "bin: BinData(0, 01AB), re: /^a/i }"
    )
    assert to_string({"long": "x" * 200}) == '{ long: "' + "x" * 150 + '..." }'
    assert to_string({}) == "{}"
