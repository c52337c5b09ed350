"""`mongosim` as a command: every misuse is one line on stderr naming its cause, with exit status 2 (bad
arguments) or 1 (run time); Ctrl-C stops `serve` cleanly; `-v`, `--trace`, `status` and `fault` against a
running server; `--version`, `--help` examples and `python -m mongosim`."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time

import pymongo
import pytest

from mongosim.cli import main


def one_line_error(capsys, prefix: str) -> str:
    out = capsys.readouterr()
    assert out.err.count("\n") == 1 and out.err.endswith("\n"), out.err
    assert out.err.startswith(prefix), out.err
    assert "Traceback" not in out.err
    return out.err


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens there once the socket is closed


# -- bad arguments: exit 2 ------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, says", [
    (["serve", "--port", "99999"], "argument --port: 99999 is out of range: a port is 0-65535"),
    (["serve", "--port", "-1"], "argument --port: -1 is out of range: a port is 0-65535"),
    (["serve", "--port", "http"], "argument --port: 'http' is not a port number (0-65535)"),
    (["serve", "--shards", "0"], "argument --shards: 0 is too small: it must be >= 1"),
    (["serve", "--arbiters", "-1"], "argument --arbiters: -1 is too small: it must be >= 0"),
    (["serve", "--users", "/nonexistent/users.json"], "argument --users: no such file: /nonexistent/users.json"),
    (["serve", "--tls-cert-file", "/nonexistent/cert.pem"], "argument --tls-cert-file: no such file"),
    (["serve", "--tls-key-file", __file__], "--tls-key-file needs --tls-cert-file"),
    (["serve", "--noop-interval", "0"], "argument --noop-interval: 0 must be a positive number"),
    (["serve", "--trace", "/nonexistent/dir/trace.jsonl"], "argument --trace: cannot write /nonexistent/dir/trace.jsonl"),
    (["serve", "--topology", "mesh"], "argument --topology: invalid choice: 'mesh'"),
    (["explain", "db.c", "--pipeline", '[{"$bogus": 1}]'],
     "the router refused this watch(): Location40324 (40324): Unrecognized pipeline stage name: '$bogus'"),
    (["explain", "db.c", "--pipeline", '{"$match": {}}'], "argument --pipeline: must be a JSON array"),
    (["explain", "--shards", "0"], "argument --shards: 0 is too small"),
    (["fault", "shard01"], "nothing to do: give --delay"),
    (["fault", "shard01", "--delay", "1", "--uri", "http://x"], "argument --uri: 'http://x' is not a MongoDB URI"),
    (["demo", "no-such-scenario"], "no scenario 'no-such-scenario'"),
    (["frobnicate"], "argument COMMAND: invalid choice: 'frobnicate'"),
    ([], "the following arguments are required: COMMAND"),
])
def test_bad_arguments_are_one_line_and_exit_2(capsys, argv, says):
    assert main(argv) == 2
    err = one_line_error(capsys, "mongosim")
    assert says in err, err


# -- run-time failures: exit 1 ----------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [["fault", "shard01", "--delay", "0.5"], ["status"]])
def test_talking_to_no_server_is_one_line_and_exit_1(capsys, argv):
    port = closed_port()
    assert main([*argv, "--uri", f"mongodb://127.0.0.1:{port}/"]) == 1
    err = one_line_error(capsys, f"mongosim {argv[0]}: ")
    assert f"no server at 127.0.0.1:{port} (connection refused)" in err


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mongosim", *args], capture_output=True, text=True, timeout=timeout)


def test_a_port_in_use_is_one_line_and_exit_1():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = run_cli("serve", "--port", str(port))
    assert proc.returncode == 1
    assert proc.stderr == (f"mongosim serve: port {port} on 127.0.0.1 is already in use (another mongod or mongosim?); "
                           "choose another with --port, or --port 0 for any free port\n")


def test_unusable_tls_and_users_files_are_one_line_and_exit_1(tmp_path):
    not_pem = tmp_path / "cert.pem"
    not_pem.write_text("this is not a certificate\n")
    proc = run_cli("serve", "--port", "0", "--tls-cert-file", str(not_pem))
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"mongosim serve: cannot serve TLS with --tls-cert-file {not_pem}: ")
    users = tmp_path / "users.json"
    users.write_text('[{"createUser": "app", "roles": ["readWrite"]}]')  # no pwd nor credentials
    proc = run_cli("serve", "--port", "0", "--auth", "--users", str(users))
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"mongosim serve: bad --users file: ") and f"{users}[0]" in proc.stderr


# -- a running server ---------------------------------------------------------------------------------------

class Server:
    """`python -m mongosim serve` in a subprocess, on a free port."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "mongosim", "serve", "--port", "0", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self._readline(30)
        m = re.search(r"ready: (mongodb://\S+)", line)
        assert m, line + self.proc.stderr.read()
        self.uri = m.group(1)

    def _readline(self, timeout: float) -> str:
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, "the server did not start"
        return self.proc.stdout.readline()

    def stop(self, sig: int = signal.SIGINT) -> tuple[int, str, str]:
        self.proc.send_signal(sig)
        out, err = self.proc.communicate(timeout=30)
        return self.proc.returncode, out, err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_stops_cleanly(sig):
    server = Server()
    with pymongo.MongoClient(server.uri, serverSelectionTimeoutMS=5000) as client:
        client.db.c.insert_one({"_id": 1})
    code, out, err = server.stop(sig)
    assert (code, out.splitlines()[-1], err) == (0, "mongosim stopped", "")


def test_noscripting_serves_a_deployment_without_javascript():
    """`serve --noscripting` is mongod's `security.javascriptEnabled: false`; the default runs scripts."""
    for args, enabled in (((), True), (("--noscripting",), False)):
        server = Server(*args)
        try:
            with pymongo.MongoClient(server.uri, serverSelectionTimeoutMS=5000) as client:
                client.db.c.insert_many([{"_id": 1, "a": 1}, {"_id": 2, "a": 5}])
                if enabled:
                    assert [d["_id"] for d in client.db.c.find({"$where": "this.a > 2"})] == [2]
                else:
                    with pytest.raises(pymongo.errors.OperationFailure) as e:
                        client.db.c.find_one({"$where": "this.a > 2"})
                    assert e.value.code == 6108304 and "no globalScriptEngine in $where parsing" in str(e.value)
        finally:
            assert server.stop()[0] == 0


@pytest.fixture(scope="module")
def verbose_server(tmp_path_factory):
    """A 2-shard server with -v and --trace whose idle shards promise only every 1000 s (a gate stays closed)."""
    trace = tmp_path_factory.mktemp("serve") / "trace.jsonl"
    server = Server("-v", "--trace", str(trace), "--noop-interval", "1000")
    server.trace = trace
    yield server
    if server.proc.poll() is None:
        server.stop()


def test_status_shows_shards_chunks_and_a_closed_gate(verbose_server, capsys):
    uri = verbose_server.uri
    with pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000) as client:
        client.admin.command("enableSharding", "shop")
        client.admin.command("shardCollection", "shop.orders", key={"_id": 1})
        client.admin.command("split", "shop.orders", middle={"_id": 100})
        client.admin.command("moveChunk", "shop.orders", find={"_id": 100}, to="shard01")
        with client.shop.orders.watch(max_await_time_ms=100) as stream:
            client.shop.orders.insert_one({"_id": 1})  # on shard00; shard01 and the config server stay idle
            assert stream.try_next() is None  # buffered at the router: the gate waits for their promises
            assert main(["status", "--uri", uri]) == 0
            text = capsys.readouterr().out
            assert main(["status", "--uri", uri, "--json"]) == 0
            doc = json.loads(capsys.readouterr().out)
    assert "shard00" in text and "shard01" in text
    assert 'shop.orders  key {"_id": 1}  chunks: shard00 1, shard01 1' in text
    assert "gate closed: the next event (insert on shard00" in text and "waits for config, shard01" in text, text
    (stream_doc,) = doc["streams"]
    assert stream_doc["ns"] == "shop.orders" and stream_doc["type"] == "collection"
    assert stream_doc["gate"]["state"] == "closed" and stream_doc["gate"]["waitingOn"] == ["config", "shard01"]
    assert {r["shard"]: r["buffered"] for r in stream_doc["remotes"]} == {"config": 0, "shard00": 1, "shard01": 0}
    assert [s["chunks"] for s in doc["shards"]] == [1, 1]


def test_fault_against_a_running_server(verbose_server, capsys):
    assert main(["fault", "shard01", "--delay", "0.01", "--uri", verbose_server.uri]) == 0
    assert capsys.readouterr().out == "shard01: delay\n"
    assert main(["fault", "shard09", "--delay", "0.01", "--uri", verbose_server.uri]) == 1
    err = one_line_error(capsys, "mongosim fault: the server refused mongosimFault: Shard shard09 not found")
    assert "(ShardNotFound, code 70)" in err
    assert main(["fault", "shard01", "--clear", "--uri", verbose_server.uri]) == 0


def test_verbose_logs_each_command_as_json_lines_and_trace_writes_the_merge(verbose_server):
    with pymongo.MongoClient(verbose_server.uri, serverSelectionTimeoutMS=5000, appname="cli-test") as client:
        client.logs.items.insert_one({"_id": 7})
        with pytest.raises(pymongo.errors.OperationFailure):
            client.admin.command("noSuchCommand")
    code, out, err = verbose_server.stop()
    assert code == 0 and out.endswith("mongosim stopped\n")
    lines = [json.loads(line) for line in err.splitlines()]
    assert all(set(ln) >= {"t", "s", "c", "id", "ctx", "msg"} for ln in lines)
    ops = [ln for ln in lines if ln["c"] == "COMMAND" and ln["attr"].get("appName") == "cli-test"]
    insert = next(ln for ln in ops if "insert" in ln["attr"]["command"])
    assert insert["id"] == 51803 and insert["msg"] == "Slow query" and re.fullmatch(r"conn\d+", insert["ctx"])
    assert insert["attr"]["ns"] == "logs.items" and insert["attr"]["command"]["documents"] == [{"_id": 7}]
    assert isinstance(insert["attr"]["durationMillis"], int) and "ok" not in insert["attr"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", insert["t"]["$date"])
    failed = next(ln for ln in ops if "noSuchCommand" in ln["attr"]["command"])
    assert failed["attr"]["ns"] == "admin.$cmd"
    assert (failed["attr"]["ok"], failed["attr"]["errName"], failed["attr"]["errCode"]) == (0, "CommandNotFound", 59)
    # the change stream of the status test, traced: the gate closed on the idle shards
    records = [json.loads(line) for line in verbose_server.trace.read_text().splitlines()]
    steps = {r["step"] for r in records}
    assert {"remote_added", "batch", "gate", "transformed"} <= steps, steps
    gate = next(r for r in records if r["step"] == "gate")
    assert gate["shard"] == "shard00" and {w["shard"] for w in gate["waiting_on"]} == {"config", "shard01"}


# -- --version, --help, python -m ------------------------------------------------------------------------------

def test_version_and_python_m(capsys):
    from mongosim import __version__

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith(f"mongosim {__version__} (Python ")
    proc = run_cli("--version")
    assert proc.returncode == 0 and proc.stdout.startswith(f"mongosim {__version__} ")


@pytest.mark.parametrize("command", ["serve", "status", "fault", "demo", "explain"])
def test_every_command_help_has_examples(capsys, command):
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    examples = out.split("examples:\n", 1)[1]
    assert f"mongosim {command}" in examples


def test_status_of_a_quiet_cluster_and_of_a_replica_set(capsys):
    from mongosim import Cluster

    with Cluster(shards=2) as sharded:
        assert main(["status", "--uri", sharded.uri]) == 0
        out = capsys.readouterr().out
        assert "shards (2):" in out and "sharded collections: none" in out and "open change streams: none" in out
    with Cluster(topology="replset") as replset:
        with pymongo.MongoClient(replset.uri) as client:
            client.shop.orders.insert_one({"_id": 1})
        assert main(["status", "--uri", replset.uri]) == 0
        out = capsys.readouterr().out
        assert out.startswith("mongosim replica set rs0 at ") and "databases:" in out and "shop" in out


def test_serve_a_psa_replica_set_and_kill_its_secondary():
    """`mongosim serve --topology replset --members 2 --arbiters 1`: the driver finds the arbiter;
    `mongosim fault ... --kill --member secondary` stops the commit point (w: "majority" times out)."""
    server = Server("--topology", "replset", "--members", "2", "--arbiters", "1", "--election-timeout-ms", "500")
    try:
        with pymongo.MongoClient(server.uri, serverSelectionTimeoutMS=5000) as client:
            deadline = time.time() + 10
            while not client.arbiters and time.time() < deadline:
                time.sleep(0.05)
            assert len(client.arbiters) == 1 and len(client.nodes) == 3
            assert main(["fault", "rs0", "--uri", server.uri, "--kill", "--member", "secondary"]) == 0
            coll = client.db.c.with_options(write_concern=pymongo.WriteConcern(w="majority", wtimeout=200))
            with pytest.raises(pymongo.errors.WriteConcernError):
                coll.insert_one({"_id": 1})
            client.db.c.insert_one({"_id": 2})  # the implicit default of a PSA set: w: 1
    finally:
        code, _out, err = server.stop()
    assert code == 0, err
