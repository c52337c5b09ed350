"""Shared fixtures: an AuthManager with users (PBKDF2 done once per session), a pymongo-like fake connection."""

from __future__ import annotations

import copy

import bson
import pytest
from pymongo.errors import OperationFailure

from mongosim.oplog.errors import MongoError
from mongosim.router.auth import USER_MANAGEMENT_COMMANDS, AuthManager, UserStore

# Low iteration counts keep the suite fast; the defaults (10000 / 15000) are checked in test_users.
FAST = {"SCRAM-SHA-1": 4096, "SCRAM-SHA-256": 4096}

USERS = [
    {"createUser": "root", "pwd": "rootpw", "roles": ["root"]},
    {"createUser": "alice", "pwd": "alicepw", "roles": [{"role": "readWrite", "db": "shop"}]},
    {"createUser": "sha1only", "pwd": "pw1", "roles": ["readAnyDatabase"], "mechanisms": ["SCRAM-SHA-1"]},
    {"createUser": "sha256only", "pwd": "pw256", "roles": [], "mechanisms": ["SCRAM-SHA-256"]},
    {"createUser": "we=ird,name", "pwd": "p\u00e4ss", "roles": [{"role": "read", "db": "shop"}]},
    {"createUser": "reader", "pwd": "readerpw", "db": "shop", "roles": ["read"]},
]


@pytest.fixture(scope="session")
def _template_store() -> UserStore:
    store = UserStore(iterations=FAST)
    store.load_users(copy.deepcopy(USERS))
    return store


@pytest.fixture
def store(_template_store) -> UserStore:
    fresh = UserStore(iterations=FAST)
    fresh.docs = copy.deepcopy(_template_store.docs)
    return fresh


@pytest.fixture
def auth(store) -> AuthManager:
    return AuthManager(enabled=True, store=store)


class FakeConnection:
    """Just enough of pymongo's Connection for its auth code: `command`, `hello_cmd`, negotiated state.

    Requests and replies go through BSON encoding, as on the wire.
    """

    def __init__(self, auth: AuthManager, *, is_localhost: bool = False) -> None:
        self.auth = auth
        self.state = auth.new_connection(is_localhost=is_localhost)
        self.address = ("localhost", 27017)
        self.auth_ctx = None
        self.negotiated_mechs = None
        self.max_wire_version = 25  # read by pymongo < 4.10's DEFAULT mechanism
        self.sent: list[dict] = []

    def hello_cmd(self) -> dict:
        return {"hello": 1}

    def run(self, dbname: str, spec: dict) -> dict:
        cmd = bson.decode(bson.encode({**spec, "$db": dbname}))
        self.sent.append(cmd)
        name = next(iter(cmd))
        try:
            self.auth.authorize(dbname, cmd, self.state)
            if name in ("hello", "isMaster", "ismaster"):
                reply = {"isWritablePrimary": True, "maxWireVersion": 25, "msg": "isdbgrid"}
                reply.update(self.auth.hello_fields(cmd, self.state))
                reply["ok"] = 1.0
            elif name == "saslStart":
                reply = self.auth.handle_sasl_start(dbname, cmd, self.state)
            elif name == "saslContinue":
                reply = self.auth.handle_sasl_continue(dbname, cmd, self.state)
            elif name in USER_MANAGEMENT_COMMANDS:
                reply = self.auth.handle_user_command(dbname, cmd, self.state)
            elif name == "connectionStatus":
                reply = self.auth.connection_status(dbname, cmd, self.state)
            else:
                reply = {"ok": 1.0}
        except MongoError as exc:
            reply = exc.to_reply()
        return bson.decode(bson.encode(reply))

    def command(self, dbname: str, spec: dict, *args, **kwargs) -> dict:
        reply = self.run(dbname, spec)
        if not reply.get("ok"):
            raise OperationFailure(reply.get("errmsg"), reply.get("code"), reply)
        return reply


@pytest.fixture
def make_conn(auth):
    def make(*, is_localhost: bool = False, manager: AuthManager | None = None) -> FakeConnection:
        return FakeConnection(manager or auth, is_localhost=is_localhost)

    return make
