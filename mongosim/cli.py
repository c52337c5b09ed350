"""`mongosim` command line.

    mongosim serve [--host H] [--port P] [--shards N] ...   run an emulated cluster
    mongosim demo [SCENARIO] [--html FILE] [--svg FILE] ...  watch how mongos merges change streams
    mongosim explain [NS] [--pipeline JSON] ...              the shard part and merge part of a watch()
    mongosim fault SHARD [--delay S] [--fail CODE] ...       inject a fault into a running cluster
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys

import trio

from mongosim.core import ClusterOptions, open_cluster


def _serve_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="run an emulated cluster until Ctrl-C")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=27017, help="port to listen on (default 27017; 0 = any free port)")
    p.add_argument("--shards", type=int, default=2, help="number of shards (default 2)")
    p.add_argument("--members", type=int, default=1,
                   help="members of every replica set: each shard, the config server (default 1)")
    p.add_argument("--election-timeout-ms", type=int, default=10_000,
                   help="electionTimeoutMillis of every replica set (default 10000, the server's)")
    p.add_argument("--topology", choices=["sharded", "replset"], default="sharded")
    p.add_argument("--noop-interval", type=float, default=10.0,
                   help="seconds between periodic noop writes on idle nodes (periodicNoopIntervalSecs, default 10)")
    p.add_argument("--instant-hwm", action="store_true",
                   help="idle shards promise their current clock at once (no cold-shard latency; see README)")
    p.add_argument("--oplog-size-mb", type=float, default=None, help="cap each oplog at this many MiB (like --oplogSize)")
    p.add_argument("--event-cache", type=int, default=16_384,
                   help="change events rendered once and shared by all streams, per node (default 16384; 0: off)")
    p.add_argument("--auth", action="store_true", help="require authentication (SCRAM-SHA-256/SHA-1)")
    p.add_argument("--users", dest="users_file", default=None, help="JSON file of users to create at start-up")
    p.add_argument("--tls-cert-file", default=None, help="PEM certificate (and key) to serve TLS")
    p.add_argument("--tls-key-file", default=None, help="PEM key, if not in the certificate file")
    p.add_argument("--data-dir", default=None, help="persist oplogs, documents and config here")
    p.add_argument("-v", "--verbose", action="store_true")


def _demo_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run a scenario that shows how mongos merges change streams",
                       description="Run a deterministic scenario (virtual time) and tell, step by step, what the "
                                   "shards and the router's merge do. Without SCENARIO: list the scenarios.")
    p.add_argument("scenario", nargs="?", help="the scenario to run (see the list)")
    p.add_argument("--list", action="store_true", help="list the scenarios and their lessons")
    p.add_argument("--html", metavar="FILE", help="also write the timeline page (self-contained HTML)")
    p.add_argument("--svg", metavar="FILE", help="also write the timeline picture (SVG, at the scenario's key step)")
    p.add_argument("--png", metavar="FILE", help="also write a screenshot of the page (needs chromium + chromedriver)")
    p.add_argument("--trace", metavar="FILE", help="also write the raw trace (JSON lines, see mongosim/trace.py)")
    p.add_argument("--width", type=int, default=None, help="terminal width for the account")
    p.add_argument("--pictures", metavar="DIR", help="write every scenario's timeline picture to DIR/<name>.svg "
                                                     "(how docs/img is made) and stop")


def _explain_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("explain", help="show the shard pipeline and merge pipeline of a watch()",
                       description="Explain a change stream on an in-process sharded cluster: which stages run on "
                                   "every shard and which on mongos.")
    p.add_argument("ns", nargs="?", default=None,
                   help="db.collection (collection stream), db (database stream), or nothing (the whole cluster)")
    p.add_argument("--pipeline", help='stages after $changeStream, as JSON, e.g. \'[{"$match": {"operationType": "insert"}}]\'')
    p.add_argument("--options", help='more $changeStream options as (extended) JSON, e.g. \'{"showExpandedEvents": true}\'')
    p.add_argument("--full-document", choices=["default", "updateLookup", "whenAvailable", "required"])
    p.add_argument("--full-document-before-change", choices=["off", "whenAvailable", "required"])
    p.add_argument("--show-expanded-events", action="store_true")
    p.add_argument("--resume-after", metavar="TOKEN", help="a resume token's _data (hex)")
    p.add_argument("--shards", type=int, default=2, help="number of shards (default 2)")
    p.add_argument("--json", action="store_true", help="print the router's explain document instead")


def _run_demo(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from mongosim.demo import SCENARIOS, run_scenario

    console = Console(width=args.width) if args.width else Console()
    if args.pictures:
        import os

        from mongosim.demo.timeline import render_svg

        os.makedirs(args.pictures, exist_ok=True)
        for name, sc in SCENARIOS.items():
            result = run_scenario(sc)
            path = os.path.join(args.pictures, f"{name}.svg")
            with open(path, "w", encoding="utf-8") as f:
                f.write(render_svg(result))
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
        return 0 if args.list or not args.scenario else 2
    if args.scenario not in SCENARIOS:
        console.print(f"mongosim demo: no scenario {args.scenario!r}; one of: {', '.join(SCENARIOS)}", style="red")
        return 2
    from mongosim.demo.terminal import render

    result = run_scenario(SCENARIOS[args.scenario])
    render(result, console)
    if args.html:
        from mongosim.demo.timeline import render_html

        with open(args.html, "w", encoding="utf-8") as f:
            f.write(render_html(result))
        console.print(f"timeline written to {args.html}", style="dim")
    if args.svg:
        from mongosim.demo.timeline import render_svg

        with open(args.svg, "w", encoding="utf-8") as f:
            f.write(render_svg(result))
        console.print(f"picture written to {args.svg}", style="dim")
    if args.trace:
        with open(args.trace, "w", encoding="utf-8") as f:
            f.write(result.trace.to_json_lines())
        console.print(f"trace written to {args.trace}", style="dim")
    if args.png:
        import os
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
            console.print(f"mongosim demo --png: {err}", style="red")
            return 1
        with open(args.png, "wb") as f:
            f.write(png)
        console.print(f"screenshot written to {args.png}", style="dim")
    return 0


def _run_explain(args: argparse.Namespace) -> int:
    from mongosim import explain as ex

    pipeline = ex.parse_json_arg(args.pipeline, "--pipeline") or []
    options = ex.parse_json_arg(args.options, "--options") or {}
    if not isinstance(pipeline, list) or not isinstance(options, dict):
        print("mongosim explain: --pipeline must be a JSON array and --options a JSON object", file=sys.stderr)
        return 2
    if args.full_document:
        options["fullDocument"] = args.full_document
    if args.full_document_before_change:
        options["fullDocumentBeforeChange"] = args.full_document_before_change
    if args.show_expanded_events:
        options["showExpandedEvents"] = True
    if args.resume_after:
        options["resumeAfter"] = {"_data": args.resume_after}
    from mongosim.testing.client import CommandError

    try:
        result = ex.explain_watch(args.ns, pipeline, options, shards=args.shards)
    except CommandError as err:
        print(f"mongosim explain: the router refused this watch(): {err}", file=sys.stderr)
        return 1
    if args.json:
        print(ex.render_json(result))
    else:
        ex.render(args.ns, pipeline, options, result)
    return 0


def _fault_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fault", help="inject a fault into a running mongosim cluster")
    p.add_argument("shard", help="the shard, e.g. shard01")
    p.add_argument("--uri", default="mongodb://127.0.0.1:27017/", help="the cluster (default mongodb://127.0.0.1:27017/)")
    p.add_argument("--delay", type=float, help="seconds every command to the shard waits")
    p.add_argument("--fail", type=int, metavar="CODE", help="fail the shard's next command(s) with this error code")
    p.add_argument("--times", type=int, default=1, help="how many commands --fail / --drop affect")
    p.add_argument("--drop", action="store_true", help="drop the router's connection to the shard")
    p.add_argument("--restart", action="store_true", help="restart the shard (its cursors are lost)")
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
    p.add_argument("--member", help="the member --kill/--partition/--lag/--*-replication act on (_id or host)")


def _fault(args: argparse.Namespace) -> int:
    import pymongo

    cmd: dict = {"mongosimFault": args.shard}
    if args.delay is not None:
        cmd["delay"] = args.delay
    if args.fail is not None:
        cmd["fail"] = {"code": args.fail, "times": args.times}
    if args.drop:
        cmd["drop"] = args.times
    if args.restart:
        cmd["restart"] = True
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
        cmd["lag"] = args.lag
    if args.member is not None:
        cmd["member"] = int(args.member) if args.member.isdigit() else args.member
    with pymongo.MongoClient(args.uri, serverSelectionTimeoutMS=5000) as client:
        reply = client.admin.command(cmd)
    print(f"{args.shard}: {', '.join(reply['applied']) or 'nothing to do'}")
    return 0


def _print_endpoints(core) -> None:
    """Every endpoint: the router, and each replica set's members (their connection strings)."""
    for name, rs in core.replica_sets.items():
        print(f"  {rs.name}: {core.replica_set_uri(name)}", flush=True)


async def _serve(opts: ClusterOptions) -> None:
    async with open_cluster(options=opts) as core:
        print(f"mongosim {opts.topology} cluster ready: {core.uri}", flush=True)
        _print_endpoints(core)
        if opts.topology == "sharded" and not opts.instant_hwm:
            print(f"  note: as on a real cluster, an idle shard delays change events by up to its noop interval "
                  f"({opts.noop_interval:g} s); --instant-hwm removes that latency", flush=True)
        # SIGTERM (kill, docker stop) shuts down as cleanly as Ctrl-C: with --data-dir, a final snapshot
        with trio.open_signal_receiver(signal.SIGTERM) as signals:
            async for _ in signals:
                break


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mongosim", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    _serve_parser(sub)
    _demo_parser(sub)
    _explain_parser(sub)
    _fault_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "demo":
        return _run_demo(args)
    if args.command == "explain":
        return _run_explain(args)
    if args.command == "fault":
        return _fault(args)
    if args.command == "serve":
        from mongosim.malloc_tuning import keep_freed_memory

        keep_freed_memory()
        logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
        opts = ClusterOptions(
            shards=args.shards, topology=args.topology, host=args.host, port=args.port,
            noop_interval=args.noop_interval, instant_hwm=args.instant_hwm, oplog_size_mb=args.oplog_size_mb,
            auth=args.auth, users_file=args.users_file, tls_cert_file=args.tls_cert_file,
            tls_key_file=args.tls_key_file, data_dir=args.data_dir, event_cache=args.event_cache,
            members=args.members, election_timeout=args.election_timeout_ms / 1000.0,
        )
        try:
            trio.run(_serve, opts)
        except KeyboardInterrupt:
            print("mongosim stopped", flush=True)
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
