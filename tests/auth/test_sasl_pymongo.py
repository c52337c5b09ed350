"""The SASL commands driven by pymongo's own client-side authentication code (no socket)."""

from __future__ import annotations

import pytest
from bson.binary import Binary
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pymongo.auth_shared import MongoCredential, _Cache
from pymongo.errors import OperationFailure
from pymongo.hello import Hello
from pymongo.saslprep import saslprep as pymongo_saslprep
from pymongo.synchronous import auth as pymongo_auth

from mongosim.oplog.errors import MongoError
from mongosim.router.auth import AuthManager, UserStore


def creds(mechanism: str, user: str, password: str, source: str = "admin") -> MongoCredential:
    return MongoCredential(mechanism, source, user, password, None, _Cache())


def handshake(conn, credentials: MongoCredential) -> dict:
    """What pymongo's Connection._hello does during the handshake: saslSupportedMechs + speculative auth."""
    cmd = conn.hello_cmd()
    if credentials.mechanism == "DEFAULT" and credentials.username:
        cmd["saslSupportedMechs"] = credentials.source + "." + credentials.username
    # pymongo's _AuthContext.from_credentials, whose home and signature vary across pymongo 4.x
    spec_cls = pymongo_auth._SPECULATIVE_AUTH_MAP.get(credentials.mechanism)
    ctx = spec_cls(credentials, conn.address) if spec_cls else None
    if ctx is not None:
        spec = ctx.speculate_command()
        if spec is not None:
            cmd["speculativeAuthenticate"] = spec
    doc = conn.command("admin", cmd)
    hello = Hello(doc)
    conn.negotiated_mechs = hello.sasl_supported_mechs
    if ctx is not None:
        ctx.parse_response(hello)
        if ctx.speculate_succeeded():
            conn.auth_ctx = ctx
    return doc


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-1", "SCRAM-SHA-256"])
def test_pymongo_authenticates_with_explicit_mechanism(make_conn, mechanism):
    conn = make_conn()
    pymongo_auth.authenticate(creds(mechanism, "root", "rootpw"), conn)
    assert conn.state.user == ("root", "admin")
    names = [next(iter(c)) for c in conn.sent]
    assert names == ["saslStart", "saslContinue"]  # skipEmptyExchange: two round trips
    start = conn.sent[0]
    assert start["options"] == {"skipEmptyExchange": True} and isinstance(start["payload"], bytes)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-1", "SCRAM-SHA-256"])
def test_pymongo_speculative_authentication_in_one_round_trip(make_conn, mechanism):
    conn = make_conn()
    credentials = creds(mechanism, "root", "rootpw")
    doc = handshake(conn, credentials)
    spec = doc["speculativeAuthenticate"]
    assert list(spec) == ["conversationId", "done", "payload"]
    assert spec["conversationId"] == 1 and spec["done"] is False
    pymongo_auth.authenticate(credentials, conn)
    assert [next(iter(c)) for c in conn.sent] == ["hello", "saslContinue"]
    assert conn.state.user == ("root", "admin")


def test_pymongo_default_mechanism_negotiates_sha256(make_conn):
    conn = make_conn()
    credentials = creds("DEFAULT", "root", "rootpw")
    doc = handshake(conn, credentials)
    assert doc["saslSupportedMechs"] == ["SCRAM-SHA-1", "SCRAM-SHA-256"]
    assert list(doc)[-3:] == ["saslSupportedMechs", "speculativeAuthenticate", "ok"]
    pymongo_auth.authenticate(credentials, conn)
    assert conn.state.user == ("root", "admin")
    assert [next(iter(c)) for c in conn.sent] == ["hello", "saslContinue"]


def test_pymongo_default_falls_back_to_sha1_for_sha1_only_user(make_conn):
    conn = make_conn()
    credentials = creds("DEFAULT", "sha1only", "pw1")
    doc = handshake(conn, credentials)
    assert doc["saslSupportedMechs"] == ["SCRAM-SHA-1"]
    # pymongo speculates with SCRAM-SHA-256; the user has no such credential: no speculative reply
    assert "speculativeAuthenticate" not in doc
    assert conn.auth_ctx is None
    pymongo_auth.authenticate(credentials, conn)
    assert conn.state.user == ("sha1only", "admin")
    sent = [(next(iter(c)), c.get("mechanism")) for c in conn.sent]
    assert sent == [("hello", None), ("saslStart", "SCRAM-SHA-1"), ("saslContinue", None)]


def test_pymongo_special_characters_in_user_name_and_password(make_conn):
    for mechanism in ("SCRAM-SHA-1", "SCRAM-SHA-256"):
        conn = make_conn()
        pymongo_auth.authenticate(creds(mechanism, "we=ird,name", "p\u00e4ss"), conn)
        assert conn.state.user == ("we=ird,name", "admin")


def test_pymongo_sha256_password_saslprep(make_conn, auth):
    # "I\u00adX" (soft hyphen) and "\u2168" (roman numeral nine) both prepare to "IX"
    auth.store.create_user("admin", {"createUser": "prep", "pwd": "I\u00adX", "roles": [], "mechanisms": ["SCRAM-SHA-256"]})
    conn = make_conn()
    pymongo_auth.authenticate(creds("SCRAM-SHA-256", "prep", "\u2168"), conn)
    assert conn.state.user == ("prep", "admin")


@pytest.mark.parametrize(
    ("mechanism", "user", "password"),
    [
        ("SCRAM-SHA-256", "root", "wrong"),
        ("SCRAM-SHA-1", "root", "wrong"),
        ("SCRAM-SHA-256", "nobody", "x"),
        ("SCRAM-SHA-1", "sha256only", "pw256"),  # no SCRAM-SHA-1 credential
        ("SCRAM-SHA-256", "sha1only", "pw1"),
    ],
)
def test_pymongo_failures_are_authentication_failed(make_conn, mechanism, user, password):
    conn = make_conn()
    with pytest.raises(OperationFailure) as info:
        pymongo_auth.authenticate(creds(mechanism, user, password), conn)
    assert info.value.code == 18
    assert info.value.details["errmsg"] == "Authentication failed."
    assert info.value.details["codeName"] == "AuthenticationFailed"
    assert conn.state.user is None and conn.state.sasl is None


def test_wrong_source_database_fails(make_conn):
    conn = make_conn()
    with pytest.raises(OperationFailure) as info:
        pymongo_auth.authenticate(creds("SCRAM-SHA-256", "root", "rootpw", source="shop"), conn)
    assert info.value.code == 18
    conn = make_conn()
    pymongo_auth.authenticate(creds("SCRAM-SHA-256", "reader", "readerpw", source="shop"), conn)
    assert conn.state.user == ("reader", "shop")


def test_sasl_supported_mechs_variants(make_conn):
    conn = make_conn()
    assert conn.command("admin", {"hello": 1, "saslSupportedMechs": "admin.sha256only"})["saslSupportedMechs"] == [
        "SCRAM-SHA-256"
    ]
    assert "saslSupportedMechs" not in conn.command("admin", {"hello": 1, "saslSupportedMechs": "admin.nobody"})
    assert "saslSupportedMechs" not in conn.command("admin", {"hello": 1, "saslSupportedMechs": "admin."})
    reply = conn.run("admin", {"hello": 1, "saslSupportedMechs": "admin"})
    assert (reply["code"], reply["errmsg"]) == (2, "UserName must contain a '.' separated database.user pair")
    # the first "." splits: database "shop", user "reader"
    assert conn.command("admin", {"isMaster": 1, "saslSupportedMechs": "shop.reader"})["saslSupportedMechs"] == [
        "SCRAM-SHA-1",
        "SCRAM-SHA-256",
    ]


def test_hello_speculative_authenticate_validation(make_conn):
    conn = make_conn()
    reply = conn.run("admin", {"hello": 1, "speculativeAuthenticate": 5})
    assert (reply["code"], reply["errmsg"]) == (2, "hello.speculativeAuthenticate must be an Object")
    reply = conn.run("admin", {"hello": 1, "speculativeAuthenticate": {}})
    assert reply["code"] == 2
    reply = conn.run("admin", {"hello": 1, "speculativeAuthenticate": {"find": 1}})
    assert reply["code"] == 51769
    # no "db": ignored, like any speculative failure
    spec = {"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": Binary(b"n,,n=root,r=abcdef")}
    assert "speculativeAuthenticate" not in conn.command("admin", {"hello": 1, "speculativeAuthenticate": spec})
    bad = {**spec, "mechanism": "PLAIN", "db": "admin"}
    assert "speculativeAuthenticate" not in conn.command("admin", {"hello": 1, "speculativeAuthenticate": bad})
    assert conn.state.sasl is None


def test_speculative_with_wrong_password_fails_at_sasl_continue(make_conn):
    conn = make_conn()
    credentials = creds("DEFAULT", "root", "wrong")
    doc = handshake(conn, credentials)
    assert "speculativeAuthenticate" in doc  # the first step cannot tell
    with pytest.raises(OperationFailure) as info:
        pymongo_auth.authenticate(credentials, conn)
    assert info.value.code == 18 and conn.state.user is None


_NAMES = st.text(min_size=1, max_size=12).filter(lambda s: "\0" not in s)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=_NAMES, password=st.text(min_size=1, max_size=12))
@example(name="0", password="\xad")  # SASLprep maps it to nothing (found by this test)
def test_any_user_name_and_password_round_trip_through_pymongo(make_conn, name, password):
    manager = AuthManager(enabled=True, store=UserStore(iterations={"SCRAM-SHA-1": 4096, "SCRAM-SHA-256": 4096}))
    try:
        prepared = pymongo_saslprep(password)
    except (ValueError, IndexError):
        prepared = None
    cmd = {"createUser": name, "pwd": password, "roles": ["root"]}
    if prepared is None:
        # SCRAM-SHA-256 cannot store this password; SCRAM-SHA-1 can
        with pytest.raises(MongoError):
            manager.handle_user_command("admin", cmd)
        manager.handle_user_command("admin", {**cmd, "mechanisms": ["SCRAM-SHA-1"]})
        mechanisms = ["SCRAM-SHA-1"]
    else:
        manager.handle_user_command("admin", cmd)
        mechanisms = ["SCRAM-SHA-1", "SCRAM-SHA-256"]
    for mechanism in mechanisms:
        conn = make_conn(manager=manager)
        pymongo_auth.authenticate(creds(mechanism, name, password), conn)
        assert conn.state.user == (name, "admin")
    info = manager.handle_user_command("admin", {"usersInfo": name})
    assert [u["user"] for u in info["users"]] == [name]
