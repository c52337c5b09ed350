"""`mongosim` command line (also `python -m mongosim`).

    mongosim serve [--port P] [--shards N] [-v] ...   run an emulated cluster until Ctrl-C
    mongosim status [--uri URI]                       its shards, chunks per collection, open change streams
    mongosim fault SHARD [--delay S] [--fail CODE]    inject a fault into a running cluster
    mongosim demo [SCENARIO] [--html FILE] ...        watch how mongos merges change streams
    mongosim explain [NS] [--pipeline JSON] ...       the shard part and merge part of a watch()

Every error is one line on stderr that names its cause: exit status 2 for bad arguments, 1 for a
failure at run time (a port in use, no server to talk to, ...), 0 otherwise — Ctrl-C on `serve`
included ("mongosim stopped"). `MONGOSIM_DEBUG=1` adds the traceback of an unexpected error.
"""

from __future__ import annotations

import argparse
import errno
import os
import signal
import socket
import sys
from typing import Any, NoReturn

import trio

from mongosim import __version__
from mongosim.core import ClusterOptions, open_cluster

DEFAULT_URI = "mongodb://127.0.0.1:27017/"


class CliError(Exception):
    """A one-line error for the user; `status` 2 for bad arguments, 1 at run time."""

    def __init__(self, message: str, status: int = 1, prog: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.prog = prog


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as one line (argparse prints the usage first) and exit status 2."""

    def error(self, message: str) -> NoReturn:
        raise CliError(f"{message} (see '{self.prog} --help')", 2, self.prog)


def _examples(*lines: str) -> str:
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def _command(sub: Any, name: str, help: str, description: str, *examples: str) -> argparse.ArgumentParser:
    """A subcommand whose --help ends with its examples (kept as written)."""
    return sub.add_parser(name, help=help, description=description, epilog=_examples(*examples),
                          formatter_class=argparse.RawDescriptionHelpFormatter)


# -- argument types: a bad value is refused with the reason -----------------------------------------


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535)") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is out of range: a port is 0-65535 (0 picks a free one)")
    return port


def _at_least(low: int):
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if n < low:
            raise argparse.ArgumentTypeError(f"{n} is too small: it must be >= {low}")
        return n
    return parse


def _positive(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not x > 0 or x == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} must be a positive number")
    return x


def _readable_file(text: str) -> str:
    if not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"no such file: {text}")
    if not os.path.isfile(text):
        raise argparse.ArgumentTypeError(f"not a file: {text}")
    if not os.access(text, os.R_OK):
        raise argparse.ArgumentTypeError(f"cannot read {text}: permission denied")
    return text


# -- serve ------------------------------------------------------------------------------------------


def _serve_parser(sub: Any) -> argparse.ArgumentParser:
    p = _command(sub, "serve", "run an emulated cluster until Ctrl-C",
                 "Run an emulated sharded cluster (or replica set) that drivers, mongosh and Spark connect to. "
                 "Ctrl-C (or SIGTERM) stops it cleanly.",
                 "mongosim serve                                  # 2 shards on 127.0.0.1:27017",
                 "mongosim serve --shards 3 --port 27018 --instant-hwm",
                 "mongosim serve --shards 3 --routers 2           # two mongos: 27017 and 27018",
                 "mongosim serve --topology replset               # one node, a replica-set primary",
                 "mongosim serve --shards 2 --members 3           # each shard a 3-member replica set",
                 "mongosim serve --members 2 --arbiters 1         # each shard primary-secondary-arbiter (PSA)",
                 "mongosim serve -v                               # log every command (JSON lines)",
                 "mongosim serve --trace merge.jsonl              # the merge trace of every stream",
                 "mongosim serve --auth --users users.json        # SCRAM users (see README)",
                 "mongosim serve --data-dir ./data                # survive restarts")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=_port, default=27017, help="port to listen on, 0-65535 (default 27017; 0 = any free port)")
    p.add_argument("--shards", type=_at_least(1), default=2, help="number of shards, >= 1 (default 2)")
    p.add_argument("--routers", type=_at_least(1), default=1,
                   help="number of mongos routers, on consecutive ports from --port, >= 1 (default 1)")
    p.add_argument("--members", type=_at_least(1), default=1,
                   help="members of every replica set (each shard, the config server; the replset topology's "
                        "set), each on its own port, >= 1 (default 1)")
    p.add_argument("--arbiters", type=_at_least(0), default=0,
                   help="arbiters of every shard's replica set (the replset topology's set), after the members, "
                        "each on its own port (default 0; --members 2 --arbiters 1 is PSA; the config server "
                        "has none)")
    p.add_argument("--election-timeout-ms", type=_at_least(1), default=10_000,
                   help="electionTimeoutMillis of every replica set (default 10000, the server's)")
    p.add_argument("--topology", choices=["sharded", "replset"], default="sharded")
    p.add_argument("--noop-interval", type=_positive, default=10.0,
                   help="seconds between periodic noop writes on idle nodes (periodicNoopIntervalSecs, default 10)")
    p.add_argument("--instant-hwm", action="store_true",
                   help="idle shards promise their current clock at once (no cold-shard latency; see README)")
    p.add_argument("--oplog-size-mb", type=_positive, default=None, help="cap each oplog at this many MiB (like --oplogSize)")
    p.add_argument("--event-cache", type=_at_least(0), default=16_384,
                   help="change events rendered once and shared by all streams, per node (default 16384; 0: off)")
    p.add_argument("--auth", action="store_true", help="require authentication (SCRAM-SHA-256/SHA-1)")
    p.add_argument("--users", dest="users_file", metavar="FILE", type=_readable_file, default=None,
                   help="JSON file of users to create at start-up (format: README, 'Users file')")
    p.add_argument("--tls-cert-file", metavar="PEM", type=_readable_file, default=None, help="PEM certificate (and key) to serve TLS")
    p.add_argument("--tls-key-file", metavar="PEM", type=_readable_file, default=None, help="PEM key, if not in the certificate file")
    p.add_argument("--data-dir", metavar="DIR", default=None, help="persist oplogs, documents and config here")
    p.add_argument("--noscripting", action="store_true",
                   help="no server-side JavaScript, as mongod --noscripting ($where, mapReduce, $function fail)")
    p.add_argument("--trace", metavar="FILE", default=None,
                   help="write the merge trace of every change stream to FILE as JSON lines (mongosim/trace.py)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="log every command as a JSON line on stderr, as mongod -v does (time, connection, "
                        "command, namespace, duration, result code)")
    return p


def _tls_problem(cert: str, key: str | None) -> str | None:
    """Why the certificate/key cannot serve TLS (the same load the server does), or None."""
    import ssl

    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key)
    except ssl.SSLError as err:
        return f"cannot serve TLS with --tls-cert-file {cert}{f' and --tls-key-file {key}' if key else ''}: " \
               f"{err.reason or err} (a PEM certificate and its private key are needed)"
    except OSError as err:
        return f"cannot read {err.filename or cert}: {err.strerror or err}"
    return None


def _serve_error(exc: BaseException, opts: ClusterOptions) -> str:
    """One line naming why `serve` could not run."""
    from mongosim.oplog.errors import MongoError

    if isinstance(exc, OSError) and exc.errno == errno.EADDRINUSE:
        return (f"port {opts.port} on {opts.host} is already in use (another mongod or mongosim?); "
                f"choose another with --port, or --port 0 for any free port")
    if isinstance(exc, OSError) and exc.errno == errno.EACCES and opts.listen:
        return f"cannot listen on {opts.host}:{opts.port}: permission denied (ports below 1024 need root)"
    if isinstance(exc, OSError) and exc.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
        return f"cannot listen on {opts.host}:{opts.port}: {exc.strerror} (is --host an address of this machine?)"
    if isinstance(exc, socket.gaierror):
        return f"cannot listen on {opts.host}: unknown host ({exc.strerror})"
    if isinstance(exc, MongoError) and opts.users_file and exc.errmsg.startswith(os.fspath(opts.users_file)):
        return f"bad --users file: {exc}"  # the user store names the file (and the entry) in its errors
    if isinstance(exc, MongoError):
        return str(exc)
    if type(exc).__name__ == "PersistenceError":
        return f"--data-dir {opts.data_dir}: {exc}"
    if isinstance(exc, OSError):
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror or exc}{where}"
    return _unexpected(exc)


async def _serve(opts: ClusterOptions, trace_out: Any) -> None:
    # Ctrl-C and SIGTERM (kill, docker stop) end the loop below: the cluster then shuts down in its own
    # time (with --data-dir, a final snapshot) instead of being torn down by KeyboardInterrupt.
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with open_cluster(options=opts) as core:
            if trace_out is not None:
                from mongosim.trace import Trace

                Trace(out=trace_out, keep=False).attach(core)
            _print_routers(core)  # (before the ready line, which scripts wait for)
            print(f"mongosim {opts.topology} cluster ready: {core.uri}  (Ctrl-C stops it)", flush=True)
            _print_replica_sets(core)
            if opts.topology == "sharded" and not opts.instant_hwm:
                print(f"  note: as on a real cluster, an idle shard delays change events by up to its noop interval "
                      f"({opts.noop_interval:g} s); --instant-hwm removes that latency", flush=True)
            async for _ in signals:
                break


def _print_routers(core: Any) -> None:
    """Every router's endpoint (with several routers; `mongosim fault routerNN --restart` acts on one)."""
    if len(core.mongos) > 1:
        for proc, uri in zip(core.mongos, core.router_uris):
            print(f"  {proc.name}: {uri}", flush=True)


def _print_replica_sets(core: Any) -> None:
    """Every replica set's members (each shard's, the config server's), as a connection string."""
    if core.opts.listen and (core.opts.members > 1 or core.opts.arbiters or core.opts.topology == "sharded"):
        for name, rs in core.replica_sets.items():
            print(f"  {rs.name}: {core.replica_set_uri(name)}", flush=True)


def _run_serve(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if args.tls_key_file and not args.tls_cert_file:
        parser.error("--tls-key-file needs --tls-cert-file")
    if args.data_dir and os.path.exists(args.data_dir) and not os.path.isdir(args.data_dir):
        parser.error(f"argument --data-dir: not a directory: {args.data_dir}")
    if args.tls_cert_file:
        problem = _tls_problem(args.tls_cert_file, args.tls_key_file)
        if problem:
            raise CliError(problem, 1)
    trace_out = None
    if args.trace:
        try:
            trace_out = open(args.trace, "w", encoding="utf-8", buffering=1)  # line-buffered: `tail -f` works
        except OSError as err:
            parser.error(f"argument --trace: cannot write {args.trace}: {err.strerror}")
    from mongosim import command_log  # noqa: I001 (a submodule)
    from mongosim.gc_tuning import collect_less_often
    from mongosim.malloc_tuning import keep_freed_memory

    keep_freed_memory()
    collect_less_often()
    if args.noscripting:  # security.javascriptEnabled: false (the process serves one cluster)
        from mongosim.shardsim.javascript import engine as js_engine

        js_engine.ENABLED = False
    command_log.configure(args.verbose)
    opts = ClusterOptions(
        shards=args.shards, routers=args.routers, topology=args.topology, host=args.host, port=args.port,
        noop_interval=args.noop_interval, instant_hwm=args.instant_hwm, oplog_size_mb=args.oplog_size_mb,
        auth=args.auth, users_file=args.users_file, tls_cert_file=args.tls_cert_file,
        tls_key_file=args.tls_key_file, data_dir=args.data_dir, event_cache=args.event_cache,
        members=args.members, arbiters=args.arbiters, election_timeout=args.election_timeout_ms / 1000.0,
    )
    try:
        trio.run(_serve, opts, trace_out)
    except BaseException as exc:  # noqa: BLE001 - every failure becomes one line
        cause = _cause(exc)
        if not isinstance(cause, KeyboardInterrupt):  # a second Ctrl-C during shutdown: stopped all the same
            if os.environ.get("MONGOSIM_DEBUG"):
                raise
            raise CliError(_serve_error(cause, opts), 1) from None
    finally:
        if trace_out is not None:
            trace_out.close()
    print("mongosim stopped", flush=True)
    return 0


# -- talking to a running server: status, fault ----------------------------------------------------------


class _Server:
    """A pymongo client to a running mongosim, with every failure as one line."""

    def __init__(self, uri: str, command: str) -> None:
        import pymongo
        from pymongo import uri_parser
        from pymongo.errors import ConfigurationError, InvalidURI

        self.command = command
        try:
            parsed = uri_parser.parse_uri(uri)
        except (InvalidURI, ConfigurationError, ValueError) as err:
            raise CliError(f"argument --uri: {uri!r} is not a MongoDB URI: {err}", 2) from None
        self.host, self.port = parsed["nodelist"][0]
        # Fail at once when nothing listens (pymongo would retry until its server selection timeout).
        try:
            socket.create_connection((self.host, self.port), timeout=3).close()
        except OSError as err:
            reason = err.strerror or str(err) or type(err).__name__
            raise CliError(f"no server at {self.host}:{self.port} ({reason.lower()}); start one with "
                           f"'mongosim serve' or give its address with --uri", 1) from None
        self.client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000, connectTimeoutMS=3000,
                                          appname=f"mongosim {command}")

    def __enter__(self) -> "_Server":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.client.close()

    def run(self, cmd: dict) -> dict:
        from pymongo.errors import OperationFailure, PyMongoError

        try:
            return self.client.admin.command(cmd)
        except OperationFailure as err:
            details = err.details or {}
            raise CliError(f"the server refused {next(iter(cmd))}: {details.get('errmsg', err)} "
                           f"({details.get('codeName', 'error')}, code {err.code})", 1) from None
        except PyMongoError as err:
            first = str(err).split(", Timeout:")[0].splitlines()[0]
            raise CliError(f"cannot talk to the server at {self.host}:{self.port}: {first}", 1) from None


def _fault_parser(sub: Any) -> argparse.ArgumentParser:
    p = _command(sub, "fault", "inject a fault into a running mongosim cluster",
                 "Inject a fault on one shard of a running `mongosim serve`, or stop, start or restart one of its "
                 "routers (the mongosimFault test command).",
                 "mongosim fault shard01 --delay 0.5            # every command to shard01 waits 0.5 s",
                 "mongosim fault shard01 --fail 6 --times 2     # its next 2 commands fail (HostUnreachable)",
                 "mongosim fault shard00 --restart              # its cursors are lost",
                 "mongosim fault shard01 --pause-noop           # a cold shard stays cold",
                 "mongosim fault shard01 --clear",
                 "mongosim fault router01 --restart             # a mongos restarts: its connections and cursors die",
                 "mongosim fault shard00 --step-down            # replSetStepDown: a secondary is elected",
                 "mongosim fault shard00 --kill                 # the primary dies (--member 1: another)",
                 "mongosim fault shard00 --restart-member 0     # a killed member comes back",
                 "mongosim fault shard00 --stop-replication     # w: majority waits, streams stop at the commit point",
                 "mongosim fault shard01 --drop --uri mongodb://127.0.0.1:27018/")
    p.add_argument("shard", help="the shard, e.g. shard01, or a router, e.g. router01 (--restart, --stop, --start)")
    p.add_argument("--uri", default=DEFAULT_URI, help=f"the cluster (default {DEFAULT_URI})")
    p.add_argument("--delay", type=float, help="seconds every command to the shard waits")
    p.add_argument("--fail", type=int, metavar="CODE", help="fail the shard's next command(s) with this error code")
    p.add_argument("--times", type=_at_least(1), default=1, help="how many commands --fail / --drop affect")
    p.add_argument("--drop", action="store_true", help="drop the router's connection to the shard")
    p.add_argument("--restart", action="store_true", help="restart the shard or router (its cursors are lost)")
    p.add_argument("--stop", action="store_true", help="stop a router (its port closes)")
    p.add_argument("--start", action="store_true", help="start a stopped router again")
    p.add_argument("--pause-noop", action="store_true", help="stop the shard's periodic noop writer")
    p.add_argument("--resume-noop", action="store_true", help="restart the shard's periodic noop writer")
    p.add_argument("--skew", type=float, help="seconds the shard's wall clock runs ahead (negative: behind)")
    p.add_argument("--clear", action="store_true", help="remove the shard's faults")
    p.add_argument("--step-down", type=float, nargs="?", const=60.0, metavar="SECS",
                   help="replSetStepDown on the shard's primary (a caught-up secondary is elected)")
    p.add_argument("--kill", action="store_true", help="kill a member's process (default: the primary)")
    p.add_argument("--restart-member", metavar="MEMBER", help="restart a member (its _id or host)")
    p.add_argument("--partition", action="store_true", help="cut a member off from the others (default: the primary)")
    p.add_argument("--heal", action="store_true", help="end the set's partitions")
    p.add_argument("--lag", type=float, metavar="SECS", help="secondaries apply entries this long after they appear")
    p.add_argument("--stop-replication", action="store_true", help="secondaries stop fetching (stopReplProducer)")
    p.add_argument("--start-replication", action="store_true", help="secondaries fetch again")
    p.add_argument("--member", help="the member --kill, --partition, --lag, --*-replication act on (_id or host)")
    return p


def _run_fault(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    cmd: dict = {"mongosimFault": args.shard}
    if args.delay is not None:
        if args.delay < 0:
            parser.error(f"argument --delay: {args.delay:g} is negative")
        cmd["delay"] = args.delay
    if args.fail is not None:
        cmd["fail"] = {"code": args.fail, "times": args.times}
    if args.drop:
        cmd["drop"] = args.times
    if args.restart:
        cmd["restart"] = True
    if args.stop:
        cmd["stop"] = True
    if args.start:
        cmd["start"] = True
    if args.pause_noop and args.resume_noop:
        parser.error("--pause-noop and --resume-noop contradict each other")
    if args.pause_noop or args.resume_noop:
        cmd["pauseNoop"] = bool(args.pause_noop)
    if args.skew is not None:
        cmd["skew"] = args.skew
    if args.clear:
        cmd["clear"] = True
    if args.step_down is not None:
        cmd["stepDown"] = args.step_down
    for flag, key in ((args.kill, "kill"), (args.partition, "partition"), (args.heal, "heal"),
                      (args.stop_replication, "stopReplication"), (args.start_replication, "startReplication")):
        if flag:
            cmd[key] = True
    if args.restart_member is not None:
        cmd["restartMember"] = int(args.restart_member) if args.restart_member.isdigit() else args.restart_member
    if args.lag is not None:
        if args.lag < 0:
            parser.error(f"argument --lag: {args.lag:g} is negative")
        cmd["lag"] = args.lag
    if args.member is not None:
        cmd["member"] = int(args.member) if args.member.isdigit() else args.member
    if len(cmd) == 1:
        parser.error("nothing to do: give --delay, --fail, --drop, --restart, --stop, --start, --pause-noop, "
                     "--resume-noop, --skew, --clear, --step-down, --kill, --restart-member, --partition, --heal, "
                     "--lag, --stop-replication or --start-replication")
    with _Server(args.uri, "fault") as server:
        reply = server.run(cmd)
    print(f"{args.shard}: {', '.join(reply['applied'])}")
    return 0


def _status_parser(sub: Any) -> argparse.ArgumentParser:
    p = _command(sub, "status", "show a running cluster: shards, chunks per collection, open change streams and their gates",
                 "Ask a running `mongosim serve` what it holds: its shards, the chunks of each sharded collection "
                 "per shard, and every open change stream with its remotes' buffers and promises and its gate "
                 "(whom the merge waits on).",
                 "mongosim status", "mongosim status --uri mongodb://127.0.0.1:27018/",
                 "mongosim status --json")
    p.add_argument("--uri", default=DEFAULT_URI, help=f"the cluster (default {DEFAULT_URI})")
    p.add_argument("--json", action="store_true", help="print the status document (extended JSON)")
    return p


def _ts(ts: Any) -> str:
    return f"Timestamp({ts.time}, {ts.inc})" if ts is not None else "none yet"


def _behind(ts: Any, now: Any) -> str:
    if ts is None or now is None:
        return ""
    lag = now.time - ts.time
    return f" ({lag} s behind)" if lag >= 1 else ""


def render_status(doc: dict, uri: str) -> str:
    """The status document as text (see mongosim/status.py)."""
    from bson import json_util

    now = doc.get("clusterTime")
    out = [f"mongosim sharded cluster at {uri}  (cluster time {_ts(now)})", f"shards ({len(doc['shards'])}):"]
    for s in doc["shards"]:
        out.append(f"  {s['name']:<10} {s['host']:<28} {s['chunks']} chunk{'s' if s['chunks'] != 1 else ''}")
    out.append(f"sharded collections ({len(doc['collections'])}):" if doc["collections"] else "sharded collections: none")
    for c in doc["collections"]:
        chunks = ", ".join(f"{shard} {n}" for shard, n in c["chunks"].items())
        key = json_util.dumps(c["key"])
        out.append(f"  {c['ns']}  key {key}{'  unique' if c.get('unique') else ''}  chunks: {chunks}")
    if doc.get("databases"):
        out.append("databases: " + ", ".join(f"{d['name']} (primary {d['primary']})" for d in doc["databases"]))
    streams = doc["streams"]
    out.append(f"open change streams ({len(streams)}):" if streams else "open change streams: none")
    for st in streams:
        gate = st["gate"]
        if gate["state"] == "empty":
            g = "gate: nothing buffered"
        else:
            nxt = gate["next"]
            what = f"the next event ({nxt['operationType']} on {nxt['shard']} at {_ts(nxt['clusterTime'])})"
            g = (f"gate closed: {what} waits for {', '.join(gate['waitingOn'])}" if gate["state"] == "closed"
                 else f"gate open: {what} can be released")
        out.append(f"  cursor {st['id']}  {st['ns']} ({st['type']} stream)  {g}")
        for r in st["remotes"]:
            flight = "  getMore in flight" if r["inFlight"] else ""
            out.append(f"    {r['shard']:<10} {r['buffered']:>5} buffered  promised {_ts(r['promise'])}"
                       f"{_behind(r['promise'], now)}{flight}")
    return "\n".join(out)


def _run_status(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from bson import json_util

    with _Server(args.uri, "status") as server:
        hello = server.run({"hello": 1})
        if hello.get("msg") != "isdbgrid":
            doc = {"topology": "replset", "setName": hello.get("setName"), "primary": hello.get("primary"),
                   "databases": [d["name"] for d in server.run({"listDatabases": 1, "nameOnly": True})["databases"]]}
            if args.json:
                print(json_util.dumps(doc, indent=2, json_options=json_util.RELAXED_JSON_OPTIONS))
            else:
                print(f"mongosim replica set {doc['setName']} at {args.uri}: one node ({doc['primary']}), "
                      f"no shards or merged streams; databases: {', '.join(doc['databases']) or 'none'}")
            return 0
        doc = server.run({"mongosimStatus": 1})
    doc.pop("ok", None)
    for k in ("$clusterTime", "operationTime"):
        doc.pop(k, None)
    if args.json:
        print(json_util.dumps(doc, indent=2, json_options=json_util.RELAXED_JSON_OPTIONS))
    else:
        print(render_status(doc, args.uri))
    return 0


# -- demo, explain ----------------------------------------------------------------------------------------


def _demo_parser(sub: Any) -> argparse.ArgumentParser:
    p = _command(sub, "demo", "run a scenario that shows how mongos merges change streams",
                 "Run a deterministic scenario (virtual time) and tell, step by step, what the "
                 "shards and the router's merge do. Without SCENARIO: list the scenarios.",
                 "mongosim demo                                   # the scenarios",
                 "mongosim demo cold-shard                        # the story in the terminal",
                 "mongosim demo cold-shard --html cold-shard.html # the timeline page",
                 "mongosim demo new-shard --trace new-shard.jsonl # the raw trace")
    p.add_argument("scenario", nargs="?", help="the scenario to run (see the list)")
    p.add_argument("--list", action="store_true", help="list the scenarios and their lessons")
    p.add_argument("--html", metavar="FILE", help="also write the timeline page (self-contained HTML)")
    p.add_argument("--svg", metavar="FILE", help="also write the timeline picture (SVG, at the scenario's key step)")
    p.add_argument("--png", metavar="FILE", help="also write a screenshot of the page (needs chromium + chromedriver)")
    p.add_argument("--trace", metavar="FILE", help="also write the raw trace (JSON lines, see mongosim/trace.py)")
    p.add_argument("--width", type=_at_least(40), default=None, help="terminal width for the account")
    p.add_argument("--pictures", metavar="DIR", help="write every scenario's timeline picture to DIR/<name>.svg "
                                                     "(how docs/img is made) and stop")
    return p


def _write(path: str, data: str | bytes, what: str) -> None:
    try:
        if isinstance(data, bytes):
            with open(path, "wb") as f:
                f.write(data)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(data)
    except OSError as err:
        raise CliError(f"cannot write the {what} to {path}: {err.strerror}", 1) from None


def _run_demo(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from rich.console import Console
    from rich.table import Table

    from mongosim.demo import SCENARIOS, run_scenario

    console = Console(width=args.width) if args.width else Console()
    if args.pictures:
        from mongosim.demo.timeline import render_svg

        try:
            os.makedirs(args.pictures, exist_ok=True)
        except OSError as err:
            raise CliError(f"cannot create {args.pictures}: {err.strerror}", 1) from None
        for name, sc in SCENARIOS.items():
            path = os.path.join(args.pictures, f"{name}.svg")
            _write(path, render_svg(run_scenario(sc)), "picture")
            console.print(f"{name}: {path}")
        return 0
    if args.list or not args.scenario:
        t = Table(title="mongosim demo SCENARIO", title_justify="left", show_lines=False)
        t.add_column("scenario", style="bold", no_wrap=True)
        t.add_column("what it teaches")
        for sc in SCENARIOS.values():
            t.add_row(sc.name, sc.lesson)
        console.print(t)
        console.print("Run one, e.g.:  mongosim demo cold-shard --html cold-shard.html", style="dim")
        return 0
    if args.scenario not in SCENARIOS:
        parser.error(f"no scenario {args.scenario!r}; one of: {', '.join(SCENARIOS)}")
    from mongosim.demo.terminal import render

    result = run_scenario(SCENARIOS[args.scenario])
    render(result, console)
    if args.html:
        from mongosim.demo.timeline import render_html

        _write(args.html, render_html(result), "timeline page")
        console.print(f"timeline written to {args.html}", style="dim")
    if args.svg:
        from mongosim.demo.timeline import render_svg

        _write(args.svg, render_svg(result), "picture")
        console.print(f"picture written to {args.svg}", style="dim")
    if args.trace:
        _write(args.trace, result.trace.to_json_lines(), "trace")
        console.print(f"trace written to {args.trace}", style="dim")
    if args.png:
        import tempfile

        from mongosim.demo.browser import Browser, BrowserMissing
        from mongosim.demo.timeline import render_html

        try:
            with tempfile.TemporaryDirectory() as tmp:
                page = os.path.join(tmp, "timeline.html")
                with open(page, "w", encoding="utf-8") as f:
                    f.write(render_html(result))
                with Browser() as browser:
                    browser.open("file://" + page)
                    png = browser.full_page_screenshot()
        except BrowserMissing as err:
            raise CliError(f"--png: {err}", 1) from None
        _write(args.png, png, "screenshot")
        console.print(f"screenshot written to {args.png}", style="dim")
    return 0


def _explain_parser(sub: Any) -> argparse.ArgumentParser:
    p = _command(sub, "explain", "show the shard pipeline and merge pipeline of a watch()",
                 "Explain a change stream on an in-process sharded cluster: which stages run on "
                 "every shard and which on mongos.",
                 "mongosim explain shop.orders                    # a collection stream",
                 "mongosim explain shop                           # a database stream",
                 "mongosim explain                                # the whole cluster",
                 "mongosim explain shop.orders --pipeline '[{\"$match\": {\"operationType\": \"insert\"}}]'",
                 "mongosim explain shop.orders --full-document updateLookup --json")
    p.add_argument("ns", nargs="?", default=None,
                   help="db.collection (collection stream), db (database stream), or nothing (the whole cluster)")
    p.add_argument("--pipeline", help='stages after $changeStream, as JSON, e.g. \'[{"$match": {"operationType": "insert"}}]\'')
    p.add_argument("--options", help='more $changeStream options as (extended) JSON, e.g. \'{"showExpandedEvents": true}\'')
    p.add_argument("--full-document", choices=["default", "updateLookup", "whenAvailable", "required"])
    p.add_argument("--full-document-before-change", choices=["off", "whenAvailable", "required"])
    p.add_argument("--show-expanded-events", action="store_true")
    p.add_argument("--resume-after", metavar="TOKEN", help="a resume token's _data (hex)")
    p.add_argument("--shards", type=_at_least(1), default=2, help="number of shards, >= 1 (default 2)")
    p.add_argument("--json", action="store_true", help="print the router's explain document instead")
    return p


def _json_arg(parser: argparse.ArgumentParser, text: str | None, flag: str, kind: type) -> Any:
    from bson import json_util

    if not text:
        return kind()
    try:
        value = json_util.loads(text)
    except (ValueError, TypeError) as err:
        parser.error(f"argument {flag}: not valid (extended) JSON: {err}")
    if not isinstance(value, kind):
        parser.error(f"argument {flag}: must be a JSON {'array' if kind is list else 'object'}")
    return value


def _run_explain(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from mongosim import explain as ex
    from mongosim.testing.client import CommandError

    pipeline = _json_arg(parser, args.pipeline, "--pipeline", list)
    options = _json_arg(parser, args.options, "--options", dict)
    if args.full_document:
        options["fullDocument"] = args.full_document
    if args.full_document_before_change:
        options["fullDocumentBeforeChange"] = args.full_document_before_change
    if args.show_expanded_events:
        options["showExpandedEvents"] = True
    if args.resume_after:
        options["resumeAfter"] = {"_data": args.resume_after}
    try:
        result = ex.explain_watch(args.ns, pipeline, options, shards=args.shards)
    except BaseException as exc:  # noqa: BLE001 - trio wraps it in an exception group
        cause = _cause(exc)
        if isinstance(cause, CommandError):  # the router refused the watch() these arguments describe
            raise CliError(f"the router refused this watch(): {cause}", 2) from None
        raise
    if args.json:
        print(ex.render_json(result))
    else:
        ex.render(args.ns, pipeline, options, result)
    return 0


# -- main ---------------------------------------------------------------------------------------------------


def _cause(exc: BaseException) -> BaseException:
    """The error inside trio's exception groups (the first that is not a cancellation)."""
    while isinstance(exc, BaseExceptionGroup):
        leaves = [e for e in exc.exceptions if not isinstance(e, trio.Cancelled)]
        exc = (leaves or list(exc.exceptions))[0]
    return exc


def _unexpected(exc: BaseException) -> str:
    return f"internal error: {type(exc).__name__}: {exc} (MONGOSIM_DEBUG=1 shows the traceback)"


def build_parser() -> _Parser:
    parser = _Parser(prog="mongosim", description="mongosim: an emulated sharded MongoDB cluster, for change streams.",
                     epilog=_examples("mongosim serve --shards 3 --instant-hwm", "mongosim status",
                                      "mongosim fault shard01 --delay 0.5", "mongosim demo cold-shard",
                                      "mongosim explain shop.orders", "mongosim serve --help"),
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    parser.commands = {name: make(sub) for name, make in (  # type: ignore[attr-defined]
        ("serve", _serve_parser), ("status", _status_parser), ("fault", _fault_parser), ("demo", _demo_parser),
        ("explain", _explain_parser))}
    return parser


def _version() -> str:
    import platform

    import pymongo

    return (f"mongosim {__version__} (Python {platform.python_version()}, pymongo {pymongo.version}, "
            f"trio {trio.__version__})")


RUNNERS = {"serve": _run_serve, "status": _run_status, "fault": _run_fault, "demo": _run_demo,
           "explain": _run_explain}


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    prog = "mongosim"
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as done:  # --help, --version
            return int(done.code or 0)
        prog = f"mongosim {args.command}"
        return RUNNERS[args.command](args, parser.commands[args.command])  # type: ignore[attr-defined]
    except CliError as err:
        print(f"{err.prog or prog}: {err}", file=sys.stderr, flush=True)
        return err.status
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr, flush=True)
        return 1
    except BaseException as exc:  # noqa: BLE001 - an unexpected error is one line too (unless debugging)
        if os.environ.get("MONGOSIM_DEBUG") or isinstance(exc, SystemExit):
            raise
        print(f"{prog}: {_unexpected(_cause(exc))}", file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
