"""A small, independent SCRAM client (RFC 5802 / RFC 7677) used by the tests.

Written from the RFCs and the MongoDB auth spec, sharing no code with
`router.auth.scram`; password preparation uses pymongo's own `saslprep` and
MD5 digest rule so that the server side is checked against independent code.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

from pymongo.saslprep import saslprep as pymongo_saslprep

HASHES = {"SCRAM-SHA-1": hashlib.sha1, "SCRAM-SHA-256": hashlib.sha256}


class ScramClient:
    def __init__(self, mechanism: str, username: str, password: str, nonce: str) -> None:
        self.mechanism = mechanism
        self.hash = HASHES[mechanism]
        self.username = username
        if mechanism == "SCRAM-SHA-1":
            digest = hashlib.md5(f"{username}:mongo:{password}".encode()).hexdigest()  # noqa: S324
            self.password = digest.encode()
        else:
            self.password = pymongo_saslprep(password).encode()
        self.nonce = nonce
        escaped = username.replace("=", "=3D").replace(",", "=2C")
        self.first_bare = f"n={escaped},r={nonce}"
        self.server_signature = b""

    def first(self) -> bytes:
        return ("n,," + self.first_bare).encode()

    def final(self, server_first: bytes) -> bytes:
        attrs = dict(item.split("=", 1) for item in server_first.decode().split(","))
        rnonce, salt, iterations = attrs["r"], base64.b64decode(attrs["s"]), int(attrs["i"])
        assert rnonce.startswith(self.nonce)
        salted = hashlib.pbkdf2_hmac(self.hash().name, self.password, salt, iterations)
        client_key = hmac.new(salted, b"Client Key", self.hash).digest()
        stored_key = self.hash(client_key).digest()
        without_proof = f"c=biws,r={rnonce}"
        auth_message = f"{self.first_bare},{server_first.decode()},{without_proof}".encode()
        signature = hmac.new(stored_key, auth_message, self.hash).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = hmac.new(salted, b"Server Key", self.hash).digest()
        self.server_signature = base64.b64encode(hmac.new(server_key, auth_message, self.hash).digest())
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> bool:
        return server_final == b"v=" + self.server_signature
