"""Throw-away TLS certificates for tests, made with the `openssl` CLI.

A private CA, and a server certificate it signed for `localhost` and
`127.0.0.1` (subjectAltName), written as PEM files into a directory.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass
class TestCerts:
    ca: Path  # CA certificate (the client's tlsCAFile)
    cert: Path  # server certificate
    key: Path  # server private key
    combined: Path  # certificate and key in one file (--tls-cert-file alone)


def have_openssl() -> bool:
    return shutil.which("openssl") is not None


def _run(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_certs(directory: Path) -> TestCerts:
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    _run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=mongosim test CA",
         "-keyout", "ca.key", "-out", "ca.pem", cwd=d)
    _run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", "server.key",
         "-out", "server.csr", cwd=d)
    (d / "san.cnf").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n"
                               "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
                               "extendedKeyUsage=serverAuth\n")
    _run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
         "-days", "2", "-extfile", "san.cnf", "-out", "server.pem", cwd=d)
    combined = d / "server-combined.pem"
    combined.write_bytes((d / "server.pem").read_bytes() + (d / "server.key").read_bytes())
    return TestCerts(d / "ca.pem", d / "server.pem", d / "server.key", combined)
