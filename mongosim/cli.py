"""`mongosim` command line: `mongosim serve [--host H] [--port P] [--shards N] ...`."""

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
    p.add_argument("--topology", choices=["sharded", "replset"], default="sharded")
    p.add_argument("--noop-interval", type=float, default=10.0,
                   help="seconds between periodic noop writes on idle nodes (periodicNoopIntervalSecs, default 10)")
    p.add_argument("--instant-hwm", action="store_true",
                   help="idle shards promise their current clock at once (no cold-shard latency; see README)")
    p.add_argument("--oplog-size-mb", type=float, default=None, help="cap each oplog at this many MiB (like --oplogSize)")
    p.add_argument("--auth", action="store_true", help="require authentication (SCRAM-SHA-256/SHA-1)")
    p.add_argument("--users", dest="users_file", default=None, help="JSON file of users to create at start-up")
    p.add_argument("--tls-cert-file", default=None, help="PEM certificate (and key) to serve TLS")
    p.add_argument("--tls-key-file", default=None, help="PEM key, if not in the certificate file")
    p.add_argument("--data-dir", default=None, help="persist oplogs, documents and config here")
    p.add_argument("-v", "--verbose", action="store_true")


async def _serve(opts: ClusterOptions) -> None:
    async with open_cluster(options=opts) as core:
        print(f"mongosim {opts.topology} cluster ready: {core.uri}", flush=True)
        # SIGTERM (kill, docker stop) shuts down as cleanly as Ctrl-C: with --data-dir, a final snapshot
        with trio.open_signal_receiver(signal.SIGTERM) as signals:
            async for _ in signals:
                break


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mongosim", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    _serve_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "serve":
        logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
        opts = ClusterOptions(
            shards=args.shards, topology=args.topology, host=args.host, port=args.port,
            noop_interval=args.noop_interval, instant_hwm=args.instant_hwm, oplog_size_mb=args.oplog_size_mb,
            auth=args.auth, users_file=args.users_file, tls_cert_file=args.tls_cert_file,
            tls_key_file=args.tls_key_file, data_dir=args.data_dir,
        )
        try:
            trio.run(_serve, opts)
        except KeyboardInterrupt:
            print("mongosim stopped", flush=True)
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
