"""The Spark change-stream source's CPU per event on the Python side, outside Spark.

    python -m benchmarks.profile_spark_reader [--events N] [--reps R] [--profile] [--top K]

Setup (not timed): ``mongosim serve --shards 4 --instant-hwm --event-cache 0`` in its own process,
``n`` inserts on a hashed collection (``bench_read.load``: the events of ``bench_spark``'s streaming
figure), the events captured as raw BSON by a plain raw ``watch()``.  Then, ``reps`` times each, in
turn, the CPU time of this process per event (``time.process_time``: the read-ahead thread included)
of:

- ``read``: the router-mode reader's ``read`` of the batch that holds the ``n`` events, as Spark's
  Python worker runs it (a ``TokenRange`` from before the inserts to the last event): reading the
  stream and building the Arrow record batches;
- ``stream``: the same read without the rows (``read_batches``: aggregate, getMores, the events'
  bytes cut from the replies, start and end found);
- ``columns``: the record batches built from the captured events (``RowBuilder.event_batches``);
- ``rows``: the same record batches built row by row (``RowBuilder.row`` and ``record_batch``: the
  reference the columns are tested against, and how the reader built them before);
- ``direct``: a pymongo ``watch()`` reading the events as dicts (the client's CPU; ``bench_spark``'s
  reference throughput).

Each figure is the median; the collector's share of ``read`` is timed apart (``gc.callbacks``).
The machine is shared: CPU time per event moves much less than throughput, but it moves; compare
figures of one run.  With ``--profile`` one more ``read`` runs under cProfile (Python code runs ~2x
slower under it: compare shares, not absolute times).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import time
from contextlib import ExitStack

from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument

from benchmarks import harness as H
from benchmarks.bench_read import COLL, DB, load, read_rate


def _schema():
    """The source's default schema as Spark hands it to the reader (parsed without a JVM)."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

    text = StringType()
    pair = {"clusterTime": (("t", LongType()), ("i", LongType())), "ns": (("db", text), ("coll", text))}
    fields = []
    from mongosim.spark.schema import BASE_COLUMNS

    for name, ddl in BASE_COLUMNS:
        if name in pair:
            kind = StructType([StructField(n, t) for n, t in pair[name]])
        else:
            kind = {"STRING": text, "BIGINT": LongType(), "TIMESTAMP": TimestampType()}[ddl]
        fields.append(StructField(name, kind))
    return StructType(fields)


def _cpu(fn) -> float:
    c0 = time.process_time()
    fn()
    return time.process_time() - c0


def run(n: int, reps: int, profile: bool, top: int) -> None:
    from mongosim.spark import offsets as off
    from mongosim.spark.router_reader import TokenRange
    from mongosim.spark.source import MongoChangeStreamDataSource
    from mongosim.spark.streams import event_key

    with ExitStack() as stack:
        srv = stack.enter_context(H.server(H.mongosim_cmd(4, event_cache=0), "mongosim"))
        loaded = load(srv, n, 4)
        raw = loaded.client[DB].get_collection(COLL, codec_options=CodecOptions(document_class=RawBSONDocument))
        raws: list[bytes] = []
        with raw.watch(start_at_operation_time=loaded.start, batch_size=1000) as stream:
            for ev in stream:
                raws.append(ev.raw)
                if len(raws) >= n:
                    break
        schema = _schema()
        start, end = off.optime_offset(loaded.start), off.token_offset(event_key(raws[-1]))
        options = {"uri": srv.uri, "database": DB, "collection": COLL}

        def reader():
            return MongoChangeStreamDataSource(options).streamReader(schema)

        def read() -> None:
            assert sum(b.num_rows for b in reader().read(TokenRange(start, end))) == n

        def stream() -> None:
            assert sum(len(r) for r in reader().read_batches(start, end)) == n

        rb = reader().rows
        chunks = [raws[k:k + 10_000] for k in range(0, n, 10_000)]

        def columns() -> None:
            assert sum(b.num_rows for b in rb.event_batches(chunks)) == n

        def rows() -> None:
            assert sum(b.num_rows for b in rb.batches(rb.row(r) for r in raws)) == n

        def direct() -> None:
            read_rate(loaded.client, loaded.start, n, 1000)

        gc_s = [0.0]
        began = [0.0]

        def on_gc(phase: str, _info: dict) -> None:
            if phase == "start":
                began[0] = time.perf_counter()
            else:
                gc_s[0] += time.perf_counter() - began[0]

        H.say(f"spark reader: {n} insert events ({sum(map(len, raws)) // n} bytes each), 4 shards, {reps} runs each")
        jobs = {"read": read, "stream": stream, "columns": columns, "rows": rows, "direct": direct}
        for fn in jobs.values():  # warm: imports, connections, the server's first renders
            fn()
        got: dict[str, list[float]] = {k: [] for k in jobs}
        gc_share: list[float] = []
        for _ in range(reps):
            for name, fn in jobs.items():
                if name == "read":
                    gc_s[0] = 0.0
                    gc.callbacks.append(on_gc)
                    try:
                        cpu = _cpu(fn)
                    finally:
                        gc.callbacks.remove(on_gc)
                    gc_share.append(gc_s[0] / cpu)
                else:
                    cpu = _cpu(fn)
                got[name].append(1e6 * cpu / n)
        for name, v in got.items():
            H.say(f"  {name:>8}: {H.median(v):6.2f} us/event CPU   runs {[round(x, 2) for x in v]}")
        H.say(f"  collector: {100 * H.median(gc_share):.1f}% of read's CPU")
        if profile:
            pr = cProfile.Profile()
            pr.enable()
            read()
            pr.disable()
            pstats.Stats(pr).sort_stats("tottime").print_stats(top)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.profile_spark_reader")
    p.add_argument("--events", type=int, default=50_000)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--profile", action="store_true")
    p.add_argument("--top", type=int, default=25)
    args = p.parse_args(argv)
    run(args.events, args.reps, args.profile, args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
