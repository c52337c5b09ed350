"""The SASL commands: saslStart, saslContinue and hello's saslSupportedMechs / speculativeAuthenticate.

Behaviour follows the server's sasl_commands.cpp and authentication_session.cpp:

- replies are ``{conversationId: 1, done, payload}`` (conversationId is always
  1); the payload comes back as BinData subtype 0, or as a base64 string when
  the request sent a base64 string;
- ``saslStart`` starts a new conversation (abandoning any other); a mechanism
  the server does not offer fails with MechanismUnavailable ("Received
  authentication for mechanism X which is not enabled"); SCRAM on
  ``$external`` with BadValue ("Unsupported mechanism ...");
  ``options.skipEmptyExchange`` must be a boolean (BadValue);
- every failure inside a mechanism step (malformed message, unknown user, no
  credential for the mechanism, wrong proof, replayed nonce...) is answered
  ``AuthenticationFailed: Authentication failed.``; the conversation is gone
  after any failure and after success;
- ``saslContinue`` without a conversation: ProtocolError "No SASL session
  state found"; a conversationId other than 1: ProtocolError "sasl: Mismatched
  conversation id";
- on success the connection is authenticated as ``user@db``; a connection
  already authenticated as someone else fails (5626701 on another database,
  5626702 on the same one);
- ``hello`` with ``saslSupportedMechs: "db.user"`` lists the SCRAM mechanisms
  that user has credentials for (nothing for an unknown user); with
  ``speculativeAuthenticate: {saslStart: 1, ..., db}`` it runs saslStart
  and returns its reply, or nothing at all if that fails.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Any

from bson.binary import Binary

from mongosim.oplog.errors import MongoError
from mongosim.router.auth.names import UserName, auth_error, check_fields, missing_field, parse_user_name
from mongosim.router.auth.restrictions import restrictions_met
from mongosim.router.auth.scram import MECHANISMS, ScramError, ScramServerConversation
from mongosim.router.auth.state import ConnState, SaslSession
from mongosim.router.auth.users import UserStore
from mongosim.shardsim.query.idl_errors import wrong_type

__all__ = [
    "AUTHENTICATION_FAILED",
    "sasl_continue",
    "sasl_start",
    "sasl_supported_mechs",
    "speculative_authenticate",
]

AUTHENTICATION_FAILED = "Authentication failed."


def _authentication_failed() -> MongoError:
    return auth_error("AuthenticationFailed", AUTHENTICATION_FAILED)


def _payload(command: str, cmd: Mapping[str, Any]) -> tuple[bytes, bool]:
    if "payload" not in cmd:
        raise missing_field(command, "payload")
    value = cmd["payload"]
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True), True
        except binascii.Error:
            raise auth_error("BadValue", "Invalid base64 in SASL payload") from None
    if isinstance(value, (bytes, bytearray)):  # Binary is a bytes subclass
        return bytes(value), False
    raise wrong_type(f"{command}.payload", value, ("string", "binData"))


def _reply(session: SaslSession, done: bool, out: bytes) -> dict[str, Any]:
    payload: Any = base64.b64encode(out).decode() if session.payload_as_base64 else Binary(out, 0)
    return {"conversationId": 1, "done": done, "payload": payload}


def _authorize_user(store: UserStore, conn: ConnState, name: UserName) -> None:
    """The server's addAndAuthorizeUser."""
    if conn.user is not None and conn.user != name:
        previous = conn.user
        if previous.db != name.db:
            raise MongoError(
                5626701, f"Each client connection may only be authenticated once. Previously authenticated as: {previous}"
            )
        raise MongoError(
            5626702, f"Client has attempted to authenticate on multiple databases.Already authenticated as: {previous}"
        )
    if store.get(name) is None:
        raise auth_error("UserNotFound", f'Could not find user "{name.user}" for db "{name.db}"')
    if not restrictions_met(store.restrictions_of(name), conn.remote, conn.local):
        raise _authentication_failed()  # (AuthenticationRestrictionUnmet, logged only: router.auth.restrictions)
    conn.user = name


def _step(store: UserStore, conn: ConnState, session: SaslSession, message: bytes) -> dict[str, Any]:
    try:
        done, out = session.conversation.step(message)
    except ScramError as exc:
        conn.sasl = None
        failed = _authentication_failed()
        failed.scram_error = exc  # type: ignore[attr-defined]  # the real reason, for logs; never sent
        raise failed from None
    except Exception:
        conn.sasl = None
        raise
    if done:
        conn.sasl = None
        if session.conversation.success:
            _authorize_user(store, conn, UserName(session.conversation.principal, session.db))
    return _reply(session, done, out)


def _lookup(store: UserStore, db: str, mechanism: str) -> Callable[[str], Any]:
    def lookup(user: str):
        name = UserName(user, db)
        if store.get(name) is None:
            raise ScramError("UserNotFound", f'Could not find user "{user}" for db "{db}"')
        return store.credential(name, mechanism)

    return lookup


def sasl_start(
    store: UserStore,
    conn: ConnState,
    db: str,
    cmd: Mapping[str, Any],
    *,
    mechanisms: tuple[str, ...] = MECHANISMS,
    nonce_factory: Callable[[], str] | None = None,
    speculative: bool = False,
    command: str = "saslStart",
) -> dict[str, Any]:
    """Run ``saslStart`` (or the speculative one from ``hello``); the reply without ``ok``."""
    check_fields(command, cmd, ("mechanism", "autoAuthorize", "options", "payload"))
    if "mechanism" not in cmd:
        raise missing_field(command, "mechanism")
    mechanism = cmd["mechanism"]
    if not isinstance(mechanism, str):
        raise wrong_type(f"{command}.mechanism", mechanism, "string")
    message, as_base64 = _payload(command, cmd)
    options = cmd.get("options")
    if options is not None and not isinstance(options, Mapping):
        raise wrong_type(f"{command}.options", options, "object")
    auto = cmd.get("autoAuthorize", True)
    if not isinstance(auto, (bool, int, float)):
        raise wrong_type(f"{command}.autoAuthorize", auto, ("bool", "int", "long", "double", "decimal"))

    conn.sasl = None  # a new saslStart abandons any conversation in progress
    if mechanism not in mechanisms:
        raise auth_error("MechanismUnavailable", f"Received authentication for mechanism {mechanism} which is not enabled")
    if db == "$external":
        raise auth_error("BadValue", f"Unsupported mechanism '{mechanism}' on authentication database '{db}'")
    kwargs = {"nonce_factory": nonce_factory} if nonce_factory is not None else {}
    conversation = ScramServerConversation(mechanism, _lookup(store, db, mechanism), **kwargs)
    if options is not None:
        try:
            conversation.set_options(dict(options))
        except ScramError as exc:
            raise auth_error(exc.code_name, exc.reason) from None
    session = SaslSession(mechanism, db, conversation, speculative=speculative, payload_as_base64=as_base64)
    conn.sasl = session
    return _step(store, conn, session, message)


def sasl_continue(store: UserStore, conn: ConnState, db: str, cmd: Mapping[str, Any]) -> dict[str, Any]:
    """Run ``saslContinue``; the reply without ``ok``."""
    command = "saslContinue"
    check_fields(command, cmd, ("conversationId", "payload"))
    if "conversationId" not in cmd:
        raise missing_field(command, "conversationId")
    conversation_id = cmd["conversationId"]
    if isinstance(conversation_id, bool) or not isinstance(conversation_id, (int, float)):
        raise wrong_type(f"{command}.conversationId", conversation_id, "int")
    message, as_base64 = _payload(command, cmd)
    session = conn.sasl
    if session is None:
        raise auth_error("ProtocolError", "No SASL session state found")
    if conversation_id != 1:
        conn.sasl = None
        raise auth_error("ProtocolError", "sasl: Mismatched conversation id")
    session.payload_as_base64 = as_base64
    return _step(store, conn, session, message)


def sasl_supported_mechs(store: UserStore, value: Any, mechanisms: tuple[str, ...] = MECHANISMS) -> list[str] | None:
    """hello's ``saslSupportedMechs``: the user's mechanisms, or None (field omitted) for an unknown user."""
    if isinstance(value, str):
        if "." not in value:
            raise auth_error("BadValue", "UserName must contain a '.' separated database.user pair")
        db, user = value.split(".", 1)
        name = UserName(user, db)
    elif isinstance(value, Mapping):
        name = parse_user_name(dict(value), "")
    else:
        return None
    if store.get(name) is None:
        return None
    have = store.mechanisms_of(name)
    return [m for m in MECHANISMS if m in mechanisms and m in have and store.credential(name, m) is not None]


def speculative_authenticate(
    store: UserStore,
    conn: ConnState,
    spec: Any,
    *,
    mechanisms: tuple[str, ...] = MECHANISMS,
    nonce_factory: Callable[[], str] | None = None,
) -> dict[str, Any] | None:
    """hello's ``speculativeAuthenticate``: the saslStart reply to embed, or None when it failed."""
    if not isinstance(spec, Mapping):
        raise auth_error("BadValue", "hello.speculativeAuthenticate must be an Object")
    if not spec:
        raise auth_error("BadValue", "hello.speculativeAuthenticate must be a non-empty Object")
    first = next(iter(spec))
    if first == "authenticate":
        return None  # MONGODB-X509 is not offered: treated as a failed speculation
    if first != "saslStart":
        raise MongoError(
            51769, f"hello.speculativeAuthenticate must be a valid authentication command, not \"{first}\""
        )
    if "db" not in spec or not isinstance(spec["db"], str):
        return None
    db = spec["db"]
    cmd = {k: v for k, v in spec.items() if k != "db"}
    try:
        return sasl_start(
            store, conn, db, cmd, mechanisms=mechanisms, nonce_factory=nonce_factory, speculative=True
        )
    except MongoError:
        conn.sasl = None
        return None
