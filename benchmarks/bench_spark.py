"""Spark at scale: the distributed merge job on 1 and 2 cores, and change streams read through Spark.

Only with ``python -m benchmarks --only spark`` (it starts several JVMs: minutes, not seconds).

Merge job.  Setup (not timed): an in-process cluster of 4 shards, a collection
sharded on a hashed ``_id``, ``n`` inserts and ``n/4`` updates, the shards'
oplogs dumped (``dump_oplogs``).  Each Spark master (``local[1]``,
``local[2]``) runs in its own process (``python -m benchmarks.bench_spark
merge-worker``), warmed up (each job on the dumps' first entries, then once on
the whole dumps, untimed: a first full run is always slower).  Then, ``reps``
times, each job runs once on each master in turn (side by side: the machine's
other load falls on both alike): the distributed job (``MergeJob``: plan,
shard stages, filters, sort) and the single-partition job
(``merge_dumps_single_partition``), each writing parquet as the job's command line does
(``merge_job.write_parquet``), timed from the job's
creation to the written output; each figure is the median.  The distributed
job cuts the dumps into the same time slices on both masters: as many as
`MergeJob` plans by default at ``local[2]`` (``partitions``, 2: one per core);
it also runs with ``fine_partitions`` (8) slices, reported beside (each slice
is a Spark task, and a Python task costs Spark ~50 ms of CPU of its own, which
on two busy cores is taken from the job).

- spark_merge_scaling = distributed events/s at local[2] / at local[1] (goal >= 1.6)
- spark_merge_scaling_fine = the same with ``fine_partitions`` slices
- spark_merge_vs_single = distributed / single-partition events/s, both at local[2]

Beside them, each master's CPU per distributed run (medians, from /proc: the JVM, and the Python
workers it starts) and the cores it kept busy.  At ``local[1]`` the one task's Python worker is the
critical path and the JVM's side (reading its record batches, writing parquet, the JIT compiling
Spark's planner, which goes on run after run) runs beside it on the other core, so ``local[1]``
already keeps more than one core busy.  ``local[2]`` keeps both busy, so the ratio's ceiling is
about 2 / (the cores ``local[1]`` keeps busy), not 2 (``spark_merge_cores_used_local1``).

Streaming.  Setup: ``mongosim serve --shards 4 --instant-hwm`` in its own
process, ``n`` inserts on a hashed collection.  Timed, alternating, ``reps``
times each: a direct pymongo ``watch()`` reading the ``n`` events (decoded
dicts, batch 1000); a Spark query (this process, ``local[2]``) reading them
with ``Trigger.AvailableNow`` into the ``noop`` sink, in router mode and in
shards mode — the micro-batch that carries them, from its planning to its
commit (Spark's ``triggerExecution``; the query's start to end is printed
beside it: a query's start and stop, ~2 s here, happen once per query, not per
event).  One warm-up query per mode first.

- spark_stream_router_ratio = router-mode events/s / direct pymongo events/s (goal >= 0.5)
- spark_stream_shards_over_router = shards-mode / router-mode events/s, 4 shards (goal > 1)

Where a micro-batch's Python time goes, per event (reading the stream, building the record
batches): ``python -m benchmarks.profile_spark_reader``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from benchmarks import harness as H

DB, COLL = "bench", "events"


# -- the merge job ----------------------------------------------------------------------------
def make_dumps(n: int, directory: Path, warm: Path, warm_entries: int = 2000) -> int:
    """`n` inserts and `n // 4` updates on 4 shards, dumped to `directory` (and the first
    `warm_entries` entries of each dump to `warm`); returns the number of events."""
    import mongosim
    from mongosim.spark.oplog_source import dump_oplogs, iter_dump, write_dump

    with mongosim.Cluster(shards=4, port=0) as cluster:
        c = H.client(cluster.uri)
        H.shard_hashed(c, DB, COLL)
        coll = c[DB][COLL]
        for k in range(0, n, 1000):
            coll.insert_many(H.make_docs(k, min(1000, n - k)), ordered=False)
        for k in range(0, n // 4, 1000):
            coll.update_many({"_id": {"$gte": k, "$lt": min(k + 1000, n // 4)}}, {"$set": {"status": "paid"}})
        c.close()
        paths = dump_oplogs(cluster, directory)
    warm.mkdir(parents=True, exist_ok=True)
    for name, path in paths.items():
        raws = []
        for raw in iter_dump(path):
            raws.append(raw)
            if len(raws) >= warm_entries:
                break
        write_dump(raws, warm / f"{name}.bson")
    return n + n // 4


def merge_worker(master: str, dumps: str, warm: str, partitions: int) -> None:
    """In its own process, one Spark master: warm up, print "ready", then run the job each line of stdin
    names ("distributed" or "single") once, printing `{"job", "events", "seconds", "jvm_cpu_s", "python_cpu_s"}`."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from mongosim.spark.merge_job import MergeJob, merge_dumps_single_partition, write_parquet

    spark = (SparkSession.builder.master(master).appName(f"bench-merge-{master}")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "2g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    out = tempfile.mkdtemp(prefix="bench-merge-")

    def timed(run: Any) -> tuple[float, dict[str, float]]:
        """Seconds of `run()`, and the CPU seconds of the JVM and of the Python workers meanwhile."""
        cpu0, t0 = H.descendants_cpu_s(os.getpid()), time.perf_counter()
        run()
        t, cpu1 = time.perf_counter() - t0, H.descendants_cpu_s(os.getpid())
        return t, {k: cpu1[k] - cpu0[k] for k in cpu0}

    def distributed(path: str, slices: int = partitions) -> tuple[int, float, dict[str, float]]:
        job = None

        def run() -> None:
            nonlocal job
            job = MergeJob(spark, path, partitions=slices, output_partitions=slices)
            write_parquet(job.dataframe(), f"{out}/d")

        t, cpu = timed(run)
        job.close()
        return spark.read.parquet(f"{out}/d").count(), t, cpu

    def single(path: str) -> tuple[int, float, dict[str, float]]:
        t, cpu = timed(lambda: write_parquet(merge_dumps_single_partition(spark, path), f"{out}/s"))
        return spark.read.parquet(f"{out}/s").count(), t, cpu

    jobs = {"distributed": distributed, "single": single}
    for fn in jobs.values():
        fn(warm)  # Spark starts its Python workers
        fn(dumps)  # and once on the whole dumps, untimed: the first full run is always slower
    print("ready", flush=True)
    for line in sys.stdin:
        name, _, slices = line.strip().partition(":")  # "distributed:N": N slices instead of --partitions
        if name not in jobs:
            break
        n, t, cpu = jobs[name](dumps, int(slices)) if slices else jobs[name](dumps)
        print(json.dumps({"job": line.strip(), "events": n, "seconds": t,
                          **{f"{k}_cpu_s": v for k, v in cpu.items()}}), flush=True)
    spark.stop()


class _Worker:
    """A `merge-worker` process and its pipes."""

    def __init__(self, master: str, dumps: Path, warm: Path, partitions: int) -> None:
        self.master = master
        self.proc = subprocess.Popen(
            [H.PYTHON, "-m", "benchmarks.bench_spark", "merge-worker", "--master", master, "--dumps", str(dumps),
             "--warm", str(warm), "--partitions", str(partitions)],
            cwd=H.ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env={**os.environ, "PYTHONPATH": str(H.ROOT)})

    def _line(self) -> str:
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"merge-worker {self.master} exited ({self.proc.wait()})")
            if line.startswith("{") or line.strip() == "ready":
                return line

    def wait_ready(self) -> None:
        assert self._line().strip() == "ready"

    def run(self, job: str) -> dict:
        self.proc.stdin.write(job + "\n")
        self.proc.stdin.flush()
        return json.loads(self._line())

    def close(self) -> None:
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
            self.proc.wait(120)
        except Exception:  # noqa: BLE001
            self.proc.kill()


def run_merge_job(n: int, reps: int, partitions: int, results: dict, fine_partitions: int = 8) -> None:
    H.say(f"spark merge job: 4 shards, {n} inserts + {n // 4} updates dumped, {partitions} time slices"
          f" (and {fine_partitions}), local[1] vs local[2], {reps} runs each, alternating")
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        dumps, warm = Path(tmp) / "dumps", Path(tmp) / "warm"
        events = make_dumps(n, dumps, warm)
        H.say(f"  {events} events dumped in {time.perf_counter() - t:.1f}s"
              f" ({sum(p.stat().st_size for p in dumps.iterdir()) >> 20} MiB)")
        t = time.perf_counter()
        workers: dict[str, _Worker] = {}
        try:
            for master in ("local[1]", "local[2]"):  # warmed up one after the other
                workers[master] = _Worker(master, dumps, warm, partitions)
                workers[master].wait_ready()
            runs: dict[tuple[str, str], list[float]] = {}
            cpus: dict[str, list[tuple[float, float, float]]] = {}  # master -> (jvm, python, wall) per distributed run
            H.say(f"  both masters up and warm in {time.perf_counter() - t:.1f}s")
            n_events = 0
            for _ in range(reps):  # side by side: one run of each job on each master in turn
                for job in ("distributed", "single", f"distributed:{fine_partitions}"):
                    for master, w in workers.items():
                        r = w.run(job)
                        n_events = r["events"]
                        runs.setdefault((master, job), []).append(r["events"] / r["seconds"])
                        if job == "distributed":
                            cpus.setdefault(master, []).append((r["jvm_cpu_s"], r["python_cpu_s"], r["seconds"]))
        finally:
            for w in workers.values():
                w.close()
    med = {k: H.median(v) for k, v in runs.items()}
    for master in workers:
        H.say(f"  {master}: distributed {med[(master, 'distributed')]:>7.0f} ev/s"
              f" (runs {[round(x) for x in runs[(master, 'distributed')]]}), single-partition"
              f" {med[(master, 'single')]:>7.0f} ev/s (runs {[round(x) for x in runs[(master, 'single')]]})")
    for master, rows in cpus.items():
        jvm, py, wall = (H.median([r[k] for r in rows]) for k in range(3))
        key = master.replace("[", "").replace("]", "")
        results.update({f"spark_merge_jvm_cpu_s_{key}": round(jvm, 2), f"spark_merge_python_cpu_s_{key}": round(py, 2),
                        f"spark_merge_cores_used_{key}": round((jvm + py) / wall, 2)})
        H.say(f"  {master}: distributed job CPU (medians): JVM {jvm:.2f} s, Python workers {py:.2f} s,"
              f" {(jvm + py) / wall:.2f} cores busy over {wall:.2f} s")
    d1, d2 = med[("local[1]", "distributed")], med[("local[2]", "distributed")]
    f1, f2 = med[("local[1]", f"distributed:{fine_partitions}")], med[("local[2]", f"distributed:{fine_partitions}")]
    H.say(f"  with {fine_partitions} slices: local[1] {f1:.0f}, local[2] {f2:.0f} ev/s, scaling {f2 / f1:.3f}")
    s2 = med[("local[2]", "single")]
    results.update({
        "spark_merge_events": n_events,
        "spark_merge_events_per_s_local1": round(d1), "spark_merge_events_per_s_local2": round(d2),
        "spark_merge_single_events_per_s_local1": round(med[("local[1]", "single")]),
        "spark_merge_single_events_per_s_local2": round(s2),
        "spark_merge_partitions": partitions,
        "spark_merge_scaling": round(d2 / d1, 3),
        "spark_merge_fine_partitions": fine_partitions,
        "spark_merge_fine_events_per_s_local1": round(f1), "spark_merge_fine_events_per_s_local2": round(f2),
        "spark_merge_scaling_fine": round(f2 / f1, 3),
        "spark_merge_vs_single": round(d2 / s2, 3),
    })
    H.say(f"  spark_merge_scaling {d2 / d1:.3f} (goal >= 1.6); distributed / single-partition at local[2]:"
          f" {d2 / s2:.3f}")


# -- streaming ----------------------------------------------------------------------------------
def _spark_session():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("bench-stream")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def spark_read(spark, uri: str, start, mode: str, n: int | None, ck: str,
               limit: int | None = None) -> tuple[float, float]:
    """(events/s of the micro-batches, events/s from the query's start to its end) of an availableNow
    query reading the `n` events after `start` into the noop sink (`limit`: with maxEventsPerBatch).
    The first is the figure: the stream's throughput once it runs (its batches from their planning to
    their commit, Spark's `triggerExecution`); the query's start and stop (a Python worker started for
    its planning, the first offset) happen once per query, not per event."""
    t0 = time.perf_counter()
    reader = (spark.readStream.format("mongodb-changestream").option("uri", uri).option("database", DB)
              .option("collection", COLL).option("startAtOperationTime", f"{start.time},{start.inc}")
              .option("mode", mode))
    if limit is not None:
        reader = reader.option("maxEventsPerBatch", str(limit))
    df = reader.load()
    q = df.writeStream.format("noop").option("checkpointLocation", ck).trigger(availableNow=True).start()
    q.awaitTermination()
    t = time.perf_counter() - t0
    if q.exception() is not None:
        raise RuntimeError(f"{mode}: {q.exception()}")
    batches = [p for p in q.recentProgress if p["numInputRows"]]
    got = sum(p["numInputRows"] for p in batches)
    assert n is None or got == n, (mode, got, n)
    return got / (sum(p["durationMs"]["triggerExecution"] for p in batches) / 1000.0), got / t


def run_streaming(n: int, reps: int, results: dict) -> None:
    from benchmarks.bench_read import load, read_rate

    H.say(f"spark streaming: 4 shards, {n} insert events; direct pymongo watch() vs Spark router and shards"
          f" modes (local[2], availableNow, noop sink), {reps} runs each")
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        srv = stack.enter_context(H.server(H.mongosim_cmd(4, event_cache=0), "mongosim"))
        t = time.perf_counter()
        loaded = load(srv, n, 4)
        H.say(f"  loaded {n} events in {time.perf_counter() - t:.1f}s")
        t = time.perf_counter()
        spark = _spark_session()
        H.say(f"  spark session in {time.perf_counter() - t:.1f}s")
        warm_n = min(n, 2000)
        read_rate(loaded.client, loaded.start, warm_n, 1000)
        k = [0]

        def ck() -> str:
            k[0] += 1
            return f"{tmp}/ck{k[0]}"

        t = time.perf_counter()
        for mode in ("router", "shards"):  # warm: Spark starts its Python workers
            spark_read(spark, srv.uri, loaded.last_quarter, mode, None, ck())
        H.say(f"  warm-up queries in {time.perf_counter() - t:.1f}s")
        runs: dict[str, list[float]] = {"direct": [], "router": [], "shards": []}
        whole: dict[str, list[float]] = {"router": [], "shards": []}
        limited: dict[str, list[float]] = {"router": [], "shards": []}
        for _ in range(reps):
            runs["direct"].append(read_rate(loaded.client, loaded.start, n, 1000))
            for mode in ("router", "shards"):
                batch_rate, query_rate = spark_read(spark, srv.uri, loaded.start, mode, n, ck())
                runs[mode].append(batch_rate)
                whole[mode].append(query_rate)
            for mode in ("router", "shards"):  # admission control: batches of n/5, each planned by probes
                limited[mode].append(spark_read(spark, srv.uri, loaded.start, mode, n, ck(), limit=n // 5)[0])
        spark.stop()
    med = {k: H.median(v) for k, v in runs.items()}
    for k, v in runs.items():
        extra = f"   start to end of the query: {H.median(whole[k]):.0f} ev/s" if k in whole else ""
        H.say(f"  {k:>7}: {med[k]:>8.0f} ev/s   runs {[round(x) for x in v]}{extra}")
    for k, v in limited.items():
        H.say(f"  {k:>7} with maxEventsPerBatch {n // 5}: {H.median(v):>8.0f} ev/s   runs {[round(x) for x in v]}")
    results.update({
        "spark_stream_limited_router_events_per_s": round(H.median(limited["router"])),
        "spark_stream_limited_shards_events_per_s": round(H.median(limited["shards"])),
        "spark_stream_events": n,
        "spark_stream_direct_events_per_s": round(med["direct"]),
        "spark_stream_router_events_per_s": round(med["router"]),
        "spark_stream_shards_events_per_s": round(med["shards"]),
        "spark_stream_router_query_events_per_s": round(H.median(whole["router"])),
        "spark_stream_shards_query_events_per_s": round(H.median(whole["shards"])),
        "spark_stream_router_ratio": round(med["router"] / med["direct"], 3),
        "spark_stream_shards_over_router": round(med["shards"] / med["router"], 3),
    })
    H.say(f"  spark_stream_router_ratio {med['router'] / med['direct']:.3f} (goal >= 0.5),"
          f" spark_stream_shards_over_router {med['shards'] / med['router']:.3f} (goal > 1)")


def run_spark(merge_events: int, stream_events: int, reps: int, partitions: int, results: dict) -> None:
    run_merge_job(merge_events, reps, partitions, results)
    H.say("")
    run_streaming(stream_events, reps, results)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.bench_spark")
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("merge-worker", help="(internal) one master's merge-job runs, one per line of stdin")
    m.add_argument("--master", required=True)
    m.add_argument("--dumps", required=True)
    m.add_argument("--warm", required=True)
    m.add_argument("--partitions", type=int, required=True)
    args = p.parse_args(argv)
    merge_worker(args.master, args.dumps, args.warm, args.partitions)
    return 0


if __name__ == "__main__":
    sys.exit(main())
