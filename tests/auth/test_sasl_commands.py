"""saslStart / saslContinue at the command level: reply shapes and the server's error codes."""

from __future__ import annotations

import base64
import importlib.util
import pathlib

import pytest
from bson.binary import Binary

from mongosim.oplog.errors import MongoError

_spec = importlib.util.spec_from_file_location("scram_client", pathlib.Path(__file__).with_name("scram_client.py"))
scram_client = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scram_client)
ScramClient = scram_client.ScramClient


def start(auth, conn, client, *, db="admin", skip=True, as_string=False, **extra):
    payload = base64.b64encode(client.first()).decode() if as_string else Binary(client.first())
    cmd = {"saslStart": 1, "mechanism": client.mechanism, "payload": payload, "autoAuthorize": 1}
    if skip is not None:
        cmd["options"] = {"skipEmptyExchange": skip}
    cmd.update(extra)
    return auth.handle_sasl_start(db, cmd, conn)


def cont(auth, conn, payload: bytes, *, conversation_id=1, db="admin", as_string=False):
    value = base64.b64encode(payload).decode() if as_string else Binary(payload)
    return auth.handle_sasl_continue(db, {"saslContinue": 1, "conversationId": conversation_id, "payload": value}, conn)


def code_of(call) -> tuple[int, str, str]:
    with pytest.raises(MongoError) as info:
        call()
    return info.value.code, info.value.code_name, info.value.errmsg


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-1", "SCRAM-SHA-256"])
def test_conversation_reply_shape_and_success(auth, mechanism):
    conn = auth.new_connection()
    client = ScramClient(mechanism, "alice", "alicepw", "fyko+d2lbbFgONRv9qkxdawL")
    reply = start(auth, conn, client)
    assert list(reply) == ["conversationId", "done", "payload", "ok"]
    assert reply["conversationId"] == 1 and reply["done"] is False and reply["ok"] == 1.0
    assert isinstance(reply["payload"], Binary) and reply["payload"].subtype == 0
    final = cont(auth, conn, client.final(bytes(reply["payload"])))
    assert final["done"] is True and client.verify(bytes(final["payload"]))
    assert conn.user == ("alice", "admin") and conn.sasl is None


def test_without_skip_empty_exchange_three_round_trips(auth):
    conn = auth.new_connection()
    client = ScramClient("SCRAM-SHA-256", "alice", "alicepw", "clientnonce")
    reply = start(auth, conn, client, skip=None)
    second = cont(auth, conn, client.final(bytes(reply["payload"])))
    assert second["done"] is False and client.verify(bytes(second["payload"]))
    assert conn.user is None  # not authenticated before the conversation is done
    third = cont(auth, conn, b"")
    assert third["done"] is True and bytes(third["payload"]) == b""
    assert conn.user == ("alice", "admin")


def test_base64_string_payloads_are_answered_in_kind(auth):
    conn = auth.new_connection()
    client = ScramClient("SCRAM-SHA-256", "alice", "alicepw", "clientnonce")
    reply = start(auth, conn, client, as_string=True)
    assert isinstance(reply["payload"], str)
    final = cont(auth, conn, client.final(base64.b64decode(reply["payload"])), as_string=True)
    assert isinstance(final["payload"], str) and client.verify(base64.b64decode(final["payload"]))


def test_unknown_mechanism(auth):
    conn = auth.new_connection()
    cmd = {"saslStart": 1, "mechanism": "PLAIN", "payload": Binary(b"\0alice\0alicepw")}
    assert code_of(lambda: auth.handle_sasl_start("admin", cmd, conn)) == (
        334,
        "MechanismUnavailable",
        "Received authentication for mechanism PLAIN which is not enabled",
    )


def test_scram_on_external_database(auth):
    conn = auth.new_connection()
    client = ScramClient("SCRAM-SHA-256", "alice", "alicepw", "clientnonce")
    assert code_of(lambda: start(auth, conn, client, db="$external")) == (
        2,
        "BadValue",
        "Unsupported mechanism 'SCRAM-SHA-256' on authentication database '$external'",
    )


def test_skip_empty_exchange_must_be_boolean(auth):
    conn = auth.new_connection()
    client = ScramClient("SCRAM-SHA-256", "alice", "alicepw", "clientnonce")
    assert code_of(lambda: start(auth, conn, client, skip=1)) == (2, "BadValue", "skipEmptyExchange must be boolean")


def test_command_shape_errors(auth):
    conn = auth.new_connection()
    assert code_of(lambda: auth.handle_sasl_start("admin", {"saslStart": 1, "payload": Binary(b"")}, conn)) == (
        40414,
        "IDLFailedToParse",
        "BSON field 'saslStart.mechanism' is missing but a required field",
    )
    assert code_of(
        lambda: auth.handle_sasl_start("admin", {"saslStart": 1, "mechanism": "SCRAM-SHA-1", "payload": 5}, conn)
    ) == (14, "TypeMismatch", "BSON field 'saslStart.payload' is the wrong type 'int', expected types '[string, binData]'")
    assert code_of(
        lambda: auth.handle_sasl_start(
            "admin", {"saslStart": 1, "mechanism": "SCRAM-SHA-1", "payload": b"", "bogus": 1}, conn
        )
    ) == (40415, "IDLUnknownField", "BSON field 'saslStart.bogus' is an unknown field.")


def test_continue_without_conversation(auth):
    conn = auth.new_connection()
    assert code_of(lambda: cont(auth, conn, b"c=biws,r=x,p=y")) == (17, "ProtocolError", "No SASL session state found")


def test_mismatched_conversation_id(auth):
    conn = auth.new_connection()
    client = ScramClient("SCRAM-SHA-256", "alice", "alicepw", "clientnonce")
    reply = start(auth, conn, client)
    assert code_of(lambda: cont(auth, conn, client.final(bytes(reply["payload"])), conversation_id=2)) == (
        17,
        "ProtocolError",
        "sasl: Mismatched conversation id",
    )
    assert conn.sasl is None and conn.user is None


@pytest.mark.parametrize(
    "garble",
    [
        lambda final: final.replace(b"c=biws", b"x=biws"),
        lambda final: final[:-6] + b"AAAAA=",
        lambda final: final.split(b",p=")[0],
        lambda final: b"\xff" + final,
        lambda final: final.replace(b"r=clientnonce", b"r=othernonce"),
    ],
)
def test_garbled_client_final_is_authentication_failed(auth, garble):
    conn = auth.new_connection()
    client = ScramClient("SCRAM-SHA-256", "alice", "alicepw", "clientnonce")
    reply = start(auth, conn, client)
    final = client.final(bytes(reply["payload"]))
    assert code_of(lambda: cont(auth, conn, garble(final))) == (18, "AuthenticationFailed", "Authentication failed.")
    assert conn.sasl is None and conn.user is None


@pytest.mark.parametrize(
    "first",
    [b"p=tls-server-end-point,,n=alice,r=abcdef", b"n,,n=alice", b"garbage", b"n,,n=nobody,r=abcdef", b""],
)
def test_garbled_or_unknown_client_first_is_authentication_failed(auth, first):
    conn = auth.new_connection()
    cmd = {"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": Binary(first)}
    assert code_of(lambda: auth.handle_sasl_start("admin", cmd, conn)) == (
        18,
        "AuthenticationFailed",
        "Authentication failed.",
    )
    assert conn.sasl is None


def test_replays(auth):
    client = ScramClient("SCRAM-SHA-256", "alice", "alicepw", "clientnonce")
    conn = auth.new_connection()
    reply = start(auth, conn, client)
    final = client.final(bytes(reply["payload"]))
    cont(auth, conn, final)
    # the same message again on the finished conversation: the server has no session any more
    assert code_of(lambda: cont(auth, conn, final))[:2] == (17, "ProtocolError")
    # replayed into a new conversation (new server nonce): authentication fails
    other = auth.new_connection()
    start(auth, other, client)
    assert code_of(lambda: cont(auth, other, final)) == (18, "AuthenticationFailed", "Authentication failed.")
    assert other.user is None


def test_a_new_sasl_start_abandons_the_previous_conversation(auth):
    conn = auth.new_connection()
    first = ScramClient("SCRAM-SHA-256", "alice", "alicepw", "nonce-one")
    reply_one = start(auth, conn, first)
    second = ScramClient("SCRAM-SHA-1", "alice", "alicepw", "nonce-two")
    reply_two = start(auth, conn, second)
    assert code_of(lambda: cont(auth, conn, first.final(bytes(reply_one["payload"]))))[0] == 18
    conn2 = auth.new_connection()
    reply_two = start(auth, conn2, second)
    assert cont(auth, conn2, second.final(bytes(reply_two["payload"])))["done"]


def test_reauthenticating_as_the_same_user_is_allowed(auth):
    conn = auth.new_connection()
    for _ in range(2):
        client = ScramClient("SCRAM-SHA-256", "alice", "alicepw", "clientnonce")
        reply = start(auth, conn, client)
        cont(auth, conn, client.final(bytes(reply["payload"])))
    assert conn.user == ("alice", "admin")


def test_authenticating_as_a_second_user_fails(auth):
    conn = auth.new_connection()
    client = ScramClient("SCRAM-SHA-256", "alice", "alicepw", "clientnonce")
    cont(auth, conn, client.final(bytes(start(auth, conn, client)["payload"])))
    # another database
    reader = ScramClient("SCRAM-SHA-256", "reader", "readerpw", "clientnonce")
    reply = start(auth, conn, reader, db="shop")
    assert code_of(lambda: cont(auth, conn, reader.final(bytes(reply["payload"])), db="shop")) == (
        5626701,
        "Location5626701",
        "Each client connection may only be authenticated once. Previously authenticated as: alice@admin",
    )
    # the same database
    root = ScramClient("SCRAM-SHA-256", "root", "rootpw", "clientnonce")
    reply = start(auth, conn, root)
    assert code_of(lambda: cont(auth, conn, root.final(bytes(reply["payload"]))))[0] == 5626702
    assert conn.user == ("alice", "admin")


def test_logout_and_connection_status(auth):
    conn = auth.new_connection()
    client = ScramClient("SCRAM-SHA-256", "alice", "alicepw", "clientnonce")
    cont(auth, conn, client.final(bytes(start(auth, conn, client)["payload"])))
    status = auth.connection_status("admin", {"connectionStatus": 1}, conn)
    assert status == {
        "authInfo": {
            "authenticatedUsers": [{"user": "alice", "db": "admin"}],
            "authenticatedUserRoles": [{"role": "readWrite", "db": "shop"}],
        },
        "ok": 1.0,
    }
    assert auth.handle_logout("shop", {"logout": 1}, conn) == {"ok": 1.0}
    assert conn.user == ("alice", "admin")  # logout is per database
    auth.handle_logout("admin", {"logout": 1}, conn)
    assert conn.user is None
    assert auth.connection_status("admin", {"connectionStatus": 1}, conn)["authInfo"]["authenticatedUsers"] == []


def test_server_defaults_are_used_for_new_users(auth):
    # the fixture store uses fast iteration counts; a default store uses the server's
    from mongosim.router.auth import UserStore

    store = UserStore()
    store.create_user("admin", {"createUser": "u", "pwd": "p", "roles": []})
    creds = store.get(("u", "admin"))["credentials"]
    assert creds["SCRAM-SHA-1"]["iterationCount"] == 10000
    assert creds["SCRAM-SHA-256"]["iterationCount"] == 15000
    conn = auth.new_connection()
    auth.store.docs[("u", "admin")] = store.get(("u", "admin"))
    client = ScramClient("SCRAM-SHA-256", "u", "p", "clientnonce")
    reply = start(auth, conn, client)
    assert bytes(reply["payload"]).endswith(b",i=15000")
    assert cont(auth, conn, client.final(bytes(reply["payload"])))["done"]
