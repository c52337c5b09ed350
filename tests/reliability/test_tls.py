"""TLS: `mongosim serve --tls-cert-file cert.pem [--tls-key-file key.pem]`, used with pymongo `tls=True`."""

from __future__ import annotations

import socket
import ssl

import pymongo
import pytest

from mongosim import Cluster
from tests.reliability.certs import have_openssl, make_certs
from tests.reliability.proc import ServerProcess

pytestmark = pytest.mark.skipif(not have_openssl(), reason="needs the openssl CLI to make test certificates")


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


def _roundtrip(uri: str, ca: str) -> None:
    with pymongo.MongoClient(uri, tls=True, tlsCAFile=ca, serverSelectionTimeoutMS=10000) as client:
        assert client.admin.command("ping")["ok"] == 1
        with client.tlsdb.c.watch() as stream:
            client.tlsdb.c.insert_one({"_id": 1, "x": "over tls"})
            ev = stream.next()
            assert ev["operationType"] == "insert" and ev["fullDocument"]["x"] == "over tls"


def test_cli_tls_separate_key_file(certs):
    with ServerProcess("--shards", "2", "--instant-hwm", "--tls-cert-file", str(certs.cert),
                       "--tls-key-file", str(certs.key)) as srv:
        _roundtrip(srv.uri, str(certs.ca))


def test_cli_tls_combined_pem(certs):
    with ServerProcess("--shards", "1", "--instant-hwm", "--tls-cert-file", str(certs.combined)) as srv:
        _roundtrip(srv.uri, str(certs.ca))


def test_tls_rejects_plaintext_and_untrusted_clients_but_keeps_serving(certs):
    with Cluster(shards=1, port=0, instant_hwm=True, tls_cert_file=str(certs.cert),
                 tls_key_file=str(certs.key)) as cluster:
        # a plain-text client: the server drops it (no TLS handshake), nothing else happens
        with pymongo.MongoClient(cluster.uri, serverSelectionTimeoutMS=1500) as plain:
            with pytest.raises(pymongo.errors.ServerSelectionTimeoutError):
                plain.admin.command("ping")
        # raw garbage on the TLS port
        with socket.create_connection(("127.0.0.1", cluster.port), timeout=5) as s:
            s.sendall(b"\x16\x03\x01\x00\x05hello" + b"\x00" * 64)
            s.settimeout(5)
            try:
                s.recv(100)
            except OSError:
                pass
        # a client that does not trust our CA: certificate verification fails client-side
        with pymongo.MongoClient(cluster.uri, tls=True, serverSelectionTimeoutMS=1500) as untrusting:
            with pytest.raises(pymongo.errors.ServerSelectionTimeoutError):
                untrusting.admin.command("ping")
        # and a proper TLS client still works
        _roundtrip(cluster.uri, str(certs.ca))
        # the server sees the real peer address of a TLS connection (not an in-process one)
        ctx = ssl.create_default_context(cafile=str(certs.ca))
        with socket.create_connection(("127.0.0.1", cluster.port), timeout=5) as raw:
            with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
                from mongosim.router import wire
                from mongosim.oplog import bsonutil

                tls.sendall(wire.encode_op_msg({"whatsmyuri": 1, "$db": "admin"}, 1, 0))
                data = _read_frame(tls)
                reply = bsonutil.decode(data[21:])
                assert reply.get("ok") == 1
                assert reply.get("you", "").startswith("127.0.0.1:"), reply


def _read_frame(sock) -> bytes:
    buf = b""
    while len(buf) < 4 or len(buf) < int.from_bytes(buf[:4], "little"):
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def test_missing_certificate_file_fails_at_start(tmp_path):
    with pytest.raises(Exception):
        with Cluster(shards=1, port=0, tls_cert_file=str(tmp_path / "nope.pem")):
            pass
