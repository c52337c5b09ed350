"""SCRAM-SHA-1 and SCRAM-SHA-256, server side, as MongoDB implements them.

Sans-IO: a `ScramServerConversation` consumes client messages (bytes) and
produces server messages (bytes); the SASL command layer (`router.auth.sasl`)
wraps it into `saslStart` / `saslContinue` / `hello.speculativeAuthenticate`.

Facts this module follows (RFC 5802, RFC 7677 and the server's
sasl_scram_server_conversation.cpp / mechanism_scram.h):

- the "password" SCRAM-SHA-1 feeds to PBKDF2 is MongoDB's digest
  ``hex(md5("<user>:mongo:<password>"))``; SCRAM-SHA-256 uses the password
  prepared with SASLprep (stored-string rules) and no digest; user names are
  never SASLprep'ed;
- stored credentials: ``{iterationCount, salt, storedKey, serverKey}`` with the
  salt, storedKey = H(ClientKey) and serverKey = HMAC(SaltedPassword,
  "Server Key") base64-encoded; salts are hash-size - 4 random bytes (16 for
  SHA-1, 28 for SHA-256); default iteration counts 10000 / 15000;
- the server nonce is the client nonce followed by base64 of 24 random bytes;
- the client-first-message must start with ``n,`` or ``y,`` (channel binding
  ``p=`` is refused), may carry ``a=<authzid>`` equal to the user name, and no
  ``m=`` extension; ``=2C`` / ``=3D`` in the user name are unescaped;
- the server does not check the ``c=`` value of the client-final-message,
  only its presence;
- with ``skipEmptyExchange`` the conversation is done after the server-final
  message (2 steps); without it a third, empty exchange completes it.

Every failure raises `ScramError`; the SASL layer turns any of them into
``AuthenticationFailed: Authentication failed.`` as the server does, the
detailed reason only being kept for logging.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mongosim.router.auth.saslprep import SASLprepError, saslprep

__all__ = [
    "DEFAULT_ITERATIONS",
    "MECHANISMS",
    "SCRAM_SHA_1",
    "SCRAM_SHA_256",
    "ScramCredential",
    "ScramError",
    "SASLprepError",
    "ScramServerConversation",
    "client_key_from_password",
    "decode_username",
    "encode_username",
    "make_credential",
    "mongo_password_digest",
    "salted_password",
    "scram_password",
]

SCRAM_SHA_1 = "SCRAM-SHA-1"
SCRAM_SHA_256 = "SCRAM-SHA-256"
MECHANISMS: tuple[str, ...] = (SCRAM_SHA_1, SCRAM_SHA_256)

DEFAULT_ITERATIONS = {SCRAM_SHA_1: 10000, SCRAM_SHA_256: 15000}
_HASH = {SCRAM_SHA_1: "sha1", SCRAM_SHA_256: "sha256"}
_HASH_SIZE = {SCRAM_SHA_1: 20, SCRAM_SHA_256: 32}
SERVER_NONCE_BYTES = 24


class ScramError(Exception):
    """A SCRAM step failed; `code_name` and `reason` are what the server logs, never what it returns."""

    def __init__(self, code_name: str, reason: str) -> None:
        self.code_name = code_name
        self.reason = reason
        super().__init__(f"{code_name}: {reason}")


# -- passwords and credentials ----------------------------------------------------------------


def mongo_password_digest(username: str, password: str) -> str:
    """MongoDB's legacy password digest, the SCRAM-SHA-1 "password": hex(md5(user:mongo:pwd))."""
    return hashlib.md5(f"{username}:mongo:{password}".encode()).hexdigest()  # noqa: S324


def scram_password(mechanism: str, username: str, password: str, *, digest_password: bool = True) -> bytes:
    """The bytes fed to PBKDF2 for `mechanism`.

    SCRAM-SHA-1: the MD5 digest (or `password` itself when the caller sends an
    already digested password, ``digestPassword: false``); SCRAM-SHA-256: the
    SASLprep'ed password (raises `SASLprepError`).
    """
    if mechanism == SCRAM_SHA_1:
        return (mongo_password_digest(username, password) if digest_password else password).encode()
    if mechanism == SCRAM_SHA_256:
        prepared = saslprep(password)
        if not prepared and password:  # e.g. only U+00AD: as unusable as an empty password
            raise SASLprepError("SASLprep: the password maps to an empty string")
        return prepared.encode()
    raise ValueError(f"unknown SCRAM mechanism {mechanism!r}")


def _hmac(mechanism: str, key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, _HASH[mechanism]).digest()


def _h(mechanism: str, data: bytes) -> bytes:
    return hashlib.new(_HASH[mechanism], data).digest()


def salted_password(mechanism: str, password: bytes, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(_HASH[mechanism], password, salt, iterations)


def client_key_from_password(mechanism: str, password: bytes, salt: bytes, iterations: int) -> bytes:
    return _hmac(mechanism, salted_password(mechanism, password, salt, iterations), b"Client Key")


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """One mechanism's entry of a user document's ``credentials`` (all binary fields base64)."""

    mechanism: str
    iteration_count: int
    salt: str
    stored_key: str
    server_key: str

    def to_doc(self) -> dict[str, Any]:
        """The ``credentials.<mechanism>`` sub-document, in the server's field order."""
        return {
            "iterationCount": self.iteration_count,
            "salt": self.salt,
            "storedKey": self.stored_key,
            "serverKey": self.server_key,
        }

    @classmethod
    def from_doc(cls, mechanism: str, doc: dict[str, Any]) -> ScramCredential:
        """Parse a stored credential; ValueError when it is malformed (bad base64, sizes, count)."""
        if mechanism not in _HASH:
            raise ValueError(f"unknown SCRAM mechanism {mechanism!r}")
        try:
            count = doc["iterationCount"]
            salt, stored, server = doc["salt"], doc["storedKey"], doc["serverKey"]
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{mechanism} credential lacks {exc}") from None
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"{mechanism} credential has an invalid iterationCount")
        for name, value in (("salt", salt), ("storedKey", stored), ("serverKey", server)):
            if not isinstance(value, str):
                raise ValueError(f"{mechanism} credential field {name} must be a string")
            try:
                raw = base64.b64decode(value, validate=True)
            except binascii.Error:
                raise ValueError(f"{mechanism} credential field {name} is not base64") from None
            if name != "salt" and len(raw) != _HASH_SIZE[mechanism]:
                raise ValueError(f"{mechanism} credential field {name} has the wrong size")
        return cls(mechanism, int(count), salt, stored, server)

    def stored_key_bytes(self) -> bytes:
        return base64.b64decode(self.stored_key)

    def server_key_bytes(self) -> bytes:
        return base64.b64decode(self.server_key)


def make_credential(
    mechanism: str,
    username: str,
    password: str,
    *,
    salt: bytes | None = None,
    iterations: int | None = None,
    digest_password: bool = True,
) -> ScramCredential:
    """Create the stored credential for `password` (random salt unless given)."""
    if mechanism not in _HASH:
        raise ValueError(f"unknown SCRAM mechanism {mechanism!r}")
    if iterations is None:
        iterations = DEFAULT_ITERATIONS[mechanism]
    if salt is None:
        salt = secrets.token_bytes(_HASH_SIZE[mechanism] - 4)
    pwd = scram_password(mechanism, username, password, digest_password=digest_password)
    salted = salted_password(mechanism, pwd, salt, iterations)
    client_key = _hmac(mechanism, salted, b"Client Key")
    server_key = _hmac(mechanism, salted, b"Server Key")
    b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
    return ScramCredential(mechanism, iterations, b64(salt), b64(_h(mechanism, client_key)), b64(server_key))


# -- user name escaping (RFC 5802 section 5.1) ---------------------------------------------------


def encode_username(username: str) -> str:
    """Escape ``=`` and ``,`` for the ``n=`` attribute, as clients do."""
    return username.replace("=", "=3D").replace(",", "=2C")


def decode_username(encoded: str) -> str:
    """Unescape ``=2C`` and ``=3D`` (in the server's order)."""
    return encoded.replace("=2C", ",").replace("=3D", "=")


# -- the server conversation --------------------------------------------------------------------

CredentialLookup = Callable[[str], "ScramCredential | None"]
"""Given the (decoded) principal name, return its credential for this mechanism.

Raise `ScramError("UserNotFound", ...)` for an unknown user and return None
when the user exists without credentials for the mechanism.
"""


def _default_nonce() -> str:
    return base64.b64encode(secrets.token_bytes(SERVER_NONCE_BYTES)).decode()


class ScramServerConversation:
    """The server half of one SCRAM conversation.

    `step(message)` returns ``(done, reply)``; `success` is true once the
    conversation completed with a verified proof; `principal` is the user name
    from the client-first-message.
    """

    def __init__(
        self,
        mechanism: str,
        lookup: CredentialLookup,
        *,
        skip_empty_exchange: bool = False,
        nonce_factory: Callable[[], str] = _default_nonce,
    ) -> None:
        if mechanism not in _HASH:
            raise ValueError(f"unknown SCRAM mechanism {mechanism!r}")
        self.mechanism = mechanism
        self._lookup = lookup
        self.skip_empty_exchange = skip_empty_exchange
        self._nonce_factory = nonce_factory
        self._step = 0
        self._nonce = ""
        self._auth_message = ""
        self._credential: ScramCredential | None = None
        self.principal = ""
        self.success = False

    def set_options(self, options: dict[str, Any]) -> None:
        """Apply the ``saslStart.options`` document (only ``skipEmptyExchange`` is known)."""
        if "skipEmptyExchange" in options:
            value = options["skipEmptyExchange"]
            if not isinstance(value, bool):
                raise ScramError("BadValue", "skipEmptyExchange must be boolean")
            self.skip_empty_exchange = value

    @property
    def total_steps(self) -> int:
        return 2 if self.skip_empty_exchange else 3

    def step(self, message: bytes) -> tuple[bool, bytes]:
        self._step += 1
        if self._step > self.total_steps:
            raise ScramError("AuthenticationFailed", f"Invalid SCRAM authentication step: {self._step}")
        try:
            text = bytes(message).decode("utf-8")
        except UnicodeDecodeError:
            raise ScramError("BadValue", "SCRAM message is not valid UTF-8") from None
        if self._step == 1:
            return False, self._first_step(text).encode()
        if self._step == 2:
            reply = self._second_step(text)
            self.success = self.skip_empty_exchange
            return self.skip_empty_exchange, reply.encode()
        self.success = True
        return True, b""

    # step 1: client-first-message -> server-first-message
    def _first_step(self, data: str) -> str:
        def bad_count(got: int) -> ScramError:
            return ScramError(
                "BadValue",
                f"Incorrect number of arguments for first SCRAM client message, got {got} expected at least 3",
            )

        cbind_comma = data.find(",")
        if cbind_comma < 0:
            raise bad_count(1)
        cbind_flag = data[:cbind_comma]
        if cbind_flag.startswith("p="):
            raise ScramError("BadValue", "Server does not support channel binding")
        if cbind_flag not in ("y", "n"):
            raise ScramError("BadValue", f"Incorrect SCRAM client message prefix: {cbind_flag}")
        header_comma = data.find(",", cbind_comma + 1)
        if header_comma < 0:
            raise bad_count(2)
        authzid = data[cbind_comma + 1 : header_comma]
        if authzid:
            if not authzid.startswith("a="):
                raise ScramError("BadValue", f"Incorrect SCRAM authzid: {authzid}")
            authzid = authzid[2:]
        bare = data[header_comma + 1 :]
        if bare.startswith("m="):
            raise ScramError("BadValue", "SCRAM mandatory extensions are not supported")
        parts = [p for p in bare.split(",") if p]
        if len(parts) < 2:
            raise bad_count(len(parts) + 2)
        if not parts[0].startswith("n=") or len(parts[0]) < 3:
            raise ScramError("BadValue", f"Invalid SCRAM user name: {parts[0]}")
        self.principal = decode_username(parts[0][2:])
        if authzid and self.principal != authzid:
            raise ScramError("BadValue", f"SCRAM user name {self.principal} does not match authzid {authzid}")
        if not parts[1].startswith("r=") or len(parts[1]) < 6:
            raise ScramError("BadValue", f"Invalid SCRAM client nonce: {parts[1]}")
        client_nonce = parts[1][2:]

        credential = self._lookup(self.principal)
        if credential is None:
            raise ScramError(
                "MechanismUnavailable",
                f"Unable to use {self.mechanism} based authentication for user without any "
                f"{self.mechanism} credentials registered",
            )
        self._credential = credential
        self._nonce = client_nonce + self._nonce_factory()
        reply = f"r={self._nonce},s={credential.salt},i={credential.iteration_count}"
        self._auth_message = f"{bare},{reply}"
        return reply

    # step 2: client-final-message -> server-final-message
    def _second_step(self, data: str) -> str:
        def bad_count(got: int) -> ScramError:
            return ScramError(
                "BadValue",
                f"Incorrect number of arguments for second SCRAM client message, got {got} expected at least 3",
            )

        last_comma = data.rfind(",")
        if last_comma < 0:
            raise bad_count(1)
        without_proof = data[:last_comma]
        self._auth_message += "," + without_proof
        last_field = data[last_comma + 1 :]
        if len(last_field) < 3 or not last_field.startswith("p="):
            raise ScramError("BadValue", f"Incorrect SCRAM ClientProof: {last_field}")
        proof_b64 = last_field[2:]
        parts = [p for p in without_proof.split(",") if p]
        if len(parts) < 2:
            raise bad_count(len(parts) + 1)
        if not parts[0].startswith("c=") or len(parts[0]) < 3:
            raise ScramError("BadValue", f"Incorrect SCRAM channel binding: {parts[0]}")
        if not parts[1].startswith("r=") or len(parts[1]) < 6:
            raise ScramError("BadValue", f"Incorrect SCRAM client|server nonce: {parts[1]}")
        nonce = parts[1][2:]
        if nonce != self._nonce:
            raise ScramError(
                "BadValue",
                f"Unmatched SCRAM nonce received from client in second step, expected {self._nonce} "
                f"but received {nonce}",
            )
        assert self._credential is not None
        try:
            proof = base64.b64decode(proof_b64, validate=True)
        except binascii.Error:
            proof = b""
        auth_message = self._auth_message.encode()
        stored_key = self._credential.stored_key_bytes()
        client_signature = _hmac(self.mechanism, stored_key, auth_message)
        if len(proof) != len(client_signature):
            raise ScramError("AuthenticationFailed", "SCRAM authentication failed, storedKey mismatch")
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
        if not hmac.compare_digest(_h(self.mechanism, client_key), stored_key):
            raise ScramError("AuthenticationFailed", "SCRAM authentication failed, storedKey mismatch")
        server_signature = _hmac(self.mechanism, self._credential.server_key_bytes(), auth_message)
        return "v=" + base64.b64encode(server_signature).decode()

