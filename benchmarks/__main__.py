"""Run every benchmark and print each figure beside its reference: ``python -m benchmarks``.

    python -m benchmarks [--quick] [--json FILE] [--only read,merge,...] [--check]
    python -m benchmarks --only spark   # Spark at scale (bench_spark.py): not in the default run

``--quick`` takes about two minutes, the full run about ten.  ``--json`` writes
the figures (``read_ratio``, ``merge_scaling``, ``write_ratio``, ``ops_ratio``, ``mongomock_insert_ratio``,
``latency_p50_ms``, ``latency_p99_ms``, ``cold_instant_p99_ms``, ``startup_s``,
``memory_ratio``, ``index_point_ratio``, ``index_scaling``, ``members_write_ratio``,
``members_read_ratio``, ``failover_s`` and the raw rates behind them) with the machine they were
measured on.  ``--check`` exits 1 when a goal is missed (the default only fails
when a benchmark could not run).

The machine is shared: the run measures how much CPU other processes took
meanwhile and says so, since the ratios assume two free cores.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable

import pymongo

from benchmarks import (
    bench_breakdown,
    bench_fixtures,
    bench_index,
    bench_latency,
    bench_memory,
    bench_mongomock,
    bench_ops,
    bench_read,
    bench_replset,
    bench_spark,
    bench_startup,
    bench_write,
)
from benchmarks import harness as H


@dataclass(frozen=True)
class Settings:
    read_events: int
    batch_sizes: tuple[int, ...]
    read_reps: int
    merge_events: int
    merge_shards: tuple[int, ...]
    merge_reps: int
    write_seconds: float
    write_reps: int
    write_ordered: bool
    latency_probes: int
    latency_budget_s: float
    noop_interval_s: float
    startup_runs: int
    memory_entries: int
    ops_seconds: float
    ops_reps: int
    mongomock_sizes: tuple[int, ...]
    mongomock_seconds: float
    reset_rounds: int
    spark_merge_events: int
    spark_stream_events: int
    spark_reps: int
    spark_partitions: int
    index_docs: int = 100_000
    index_seconds: float = 1.0
    index_reps: int = 3
    replset_seconds: float = 1.0
    replset_events: int = 50_000
    replset_reps: int = 3


QUICK = Settings(read_events=20_000, batch_sizes=(100, 1000), read_reps=2,
                 merge_events=16_000, merge_shards=(1, 4, 16, 64), merge_reps=2,
                 write_seconds=1.0, write_reps=2, write_ordered=False,
                 latency_probes=300, latency_budget_s=8.0, noop_interval_s=2.0,
                 startup_runs=3, memory_entries=250_000, ops_seconds=0.5, ops_reps=2,
                 mongomock_sizes=(20_000,), mongomock_seconds=0.5,
                 reset_rounds=20,
                 spark_merge_events=40_000, spark_stream_events=20_000, spark_reps=2, spark_partitions=2,
                 index_docs=50_000, index_seconds=0.5, index_reps=2,
                 replset_seconds=0.5, replset_events=10_000, replset_reps=2)
# (five alternating runs of the read, merge and replica-set figures: on a shared 2-vCPU machine one run of
# the same read can be 30% off its neighbours; the median of five moves far less than the median of three)
FULL = Settings(read_events=50_000, batch_sizes=(100, 1000), read_reps=5,
                merge_events=32_000, merge_shards=(1, 4, 16, 64), merge_reps=5,
                write_seconds=3.0, write_reps=3, write_ordered=True,
                latency_probes=1000, latency_budget_s=45.0, noop_interval_s=2.0,
                startup_runs=5, memory_entries=1_000_000, ops_seconds=1.5, ops_reps=3,
                mongomock_sizes=(20_000, 100_000), mongomock_seconds=1.0,
                reset_rounds=50,
                spark_merge_events=120_000, spark_stream_events=50_000, spark_reps=5, spark_partitions=2,
                replset_reps=5)

# figure -> (goal text, passes?)
GOALS: dict[str, tuple[str, Callable[[float], bool]]] = {
    "read_ratio": (">= 0.8", lambda v: v >= 0.8),
    "merge_scaling": (">= 0.8", lambda v: v >= 0.8),
    "write_ratio": (">= 0.5", lambda v: v >= 0.5),
    "ops_ratio": (">= 0.5", lambda v: v >= 0.5),
    "mongomock_insert_ratio": (">= 1", lambda v: v >= 1.0),
    "latency_p50_ms": ("<= 1 ms", lambda v: v <= 1.0),
    "latency_p99_ms": ("<= 5 ms", lambda v: v <= 5.0),
    "cold_instant_p99_ms": ("<= 5 ms", lambda v: v <= 5.0),
    # a shard written during the last interval skips its next noop (as the server's NoopWriter does),
    # so an event may wait up to two intervals for it: "bounded by the noop interval" within 2x
    "cold_faithful_p99_over_noop": ("<= 2 x noop", lambda v: v <= 2.0),
    "startup_s": ("<= 0.5 s", lambda v: v <= 0.5),
    "memory_ratio": ("<= 2.0", lambda v: v <= 2.0),
    "reset_ms": ("<= 20 ms", lambda v: v <= 20.0),
    "plugin_four_tests_s": ("<= 2 s", lambda v: v <= 2.0),
    "index_point_ratio": (">= 0.8", lambda v: v >= 0.8),
    "index_scaling": (">= 0.8", lambda v: v >= 0.8),
    "members_write_ratio": (">= 0.5", lambda v: v >= 0.5),
    "members_read_ratio": (">= 0.9", lambda v: v >= 0.9),
    "failover_s": ("< 1 s", lambda v: v < 1.0),
    "spark_merge_scaling": (">= 1.6", lambda v: v >= 1.6),
    "spark_stream_router_ratio": (">= 0.5", lambda v: v >= 0.5),
    "spark_stream_shards_over_router": ("> 1", lambda v: v > 1.0),
}
OPT_IN = {"spark"}  # benchmarks that run only when named in --only


def _raw_text(name: str, r: dict) -> str:
    """The raw figures behind a ratio, for the table."""
    if name == "read_ratio" and "read_events_per_s" in r:
        b = r['read_batch_size']
        return (f"{r['read_events_per_s']} / {r['ceiling_events_per_s']} ev/s at batch {b}"
                f" (b100 {r.get('read_ratio_b100', '-')}, b1000 {r.get('read_ratio_b1000', '-')}); server"
                f" {r.get(f'read_server_cpu_us_per_event_b{b}', '?')} us/event")
    if name == "merge_scaling":
        ks = sorted(int(k.rsplit("_", 1)[1]) for k in r if k.startswith("merge_events_per_s_"))
        return ", ".join(f"{k}: {r[f'merge_events_per_s_{k}']}" for k in ks) + " ev/s"
    if name == "write_ratio" and "write_docs_per_s" in r:
        return f"{r['write_docs_per_s']} / {r['ack_docs_per_s']} docs/s"
    if name == "ops_ratio" and "ops_worst" in r:
        return ", ".join(f"{op} {r[f'{op}_ratio']} ({r[f'{op}_ops_per_s']} / {r[f'{op}_ack_ops_per_s']} ops/s)"
                         for op in bench_ops.OPS)
    if name == "mongomock_insert_ratio" and "mongomock_insert_many_ratio" in r:
        others = ", ".join(f"{op} {r[f'mongomock_{op}_ratio']}" for op in ("find_all", "update_one", "indexed_find_one")
                           if f"mongomock_{op}_ratio" in r)
        return f"insert_many, mongosim / mongomock (worst size); also {others}"
    if name == "latency_p99_ms" and "latency_p50_ms" in r:
        return "4 shards, instant HWM"
    if name == "cold_instant_p99_ms" and "cold_instant_p50_ms" in r:
        return f"p50 {r['cold_instant_p50_ms']} ms"
    if name == "cold_faithful_p99_over_noop" and "cold_faithful_p99_ms" in r:
        return f"p50 {r['cold_faithful_p50_ms']} ms, p99 {r['cold_faithful_p99_ms']} ms, noop every" \
               f" {r['cold_faithful_noop_interval_s']} s"
    if name == "startup_s" and "startup_import_s" in r:
        return f"+ {r['startup_import_s']} s of imports before it"
    if name == "index_point_ratio" and "index_name_point_per_s" in r:
        return f"{r['index_name_point_per_s']} / {r['index_id_point_per_s']} find_one/s (name / _id), {r['index_docs']} docs"
    if name == "index_scaling" and "index_name_point_small_per_s" in r:
        return f"{r['index_name_point_per_s']} / {r['index_name_point_small_per_s']} find_one/s ({r['index_docs']} / 1000 docs)"
    if name == "memory_ratio" and "memory_rss_bytes_per_entry" in r:
        return f"{r['memory_rss_bytes_per_entry']} B RSS / {r['memory_bson_bytes_per_entry']} B BSON per entry," \
               f" {r['memory_entries']} entries"
    if name == "reset_ms" and "reset_p95_ms" in r:
        return f"p95 {r['reset_p95_ms']} ms; the pytest fixtures' reset between tests"
    if name == "plugin_four_tests_s" and "plugin_four_tests_wall_s" in r:
        return f"pytest's session time, cluster start included; {r['plugin_four_tests_wall_s']} s for the process"
    if name == "members_write_ratio" and "members3_write_docs_per_s" in r:
        return f"{r['members3_write_docs_per_s']} / {r['members1_write_docs_per_s']} docs/s (--members 3 / 1, 2 shards)"
    if name == "members_read_ratio" and "members3_read_events_per_s" in r:
        return f"{r['members3_read_events_per_s']} / {r['members1_read_events_per_s']} ev/s (--members 3 / 1, 2 shards)"
    if name == "failover_s" and "failover_kill_s" in r:
        return (f"replSetStepDown to the first write through the router, runs {r['failover_runs_s']} s; kill"
                f" {r['failover_kill_s']} s (election timeout {r['failover_election_timeout_ms']} ms)")
    if name == "spark_merge_scaling" and "spark_merge_events_per_s_local1" in r:
        return (f"{r['spark_merge_events_per_s_local2']} / {r['spark_merge_events_per_s_local1']} ev/s,"
                f" {r['spark_merge_events']} events, {r.get('spark_merge_partitions', '?')} slices; with"
                f" {r.get('spark_merge_fine_partitions', '?')} slices {r.get('spark_merge_scaling_fine', '?')}"
                f" ({r.get('spark_merge_fine_events_per_s_local2', '?')} / {r.get('spark_merge_fine_events_per_s_local1', '?')});"
                f" single-partition job at local[2] {r['spark_merge_single_events_per_s_local2']} ev/s"
                f" (distributed / single {r['spark_merge_vs_single']})")
    if name == "spark_stream_router_ratio" and "spark_stream_direct_events_per_s" in r:
        return (f"{r['spark_stream_router_events_per_s']} / {r['spark_stream_direct_events_per_s']} ev/s"
                f" (pymongo watch()), {r['spark_stream_events']} events, 4 shards")
    if name == "spark_stream_shards_over_router" and "spark_stream_shards_events_per_s" in r:
        limited = ""
        if "spark_stream_limited_shards_events_per_s" in r:
            limited = (f"; with maxEventsPerBatch {r['spark_stream_events'] // 5}:"
                       f" {r['spark_stream_limited_shards_events_per_s']} / {r['spark_stream_limited_router_events_per_s']}")
        return f"{r['spark_stream_shards_events_per_s']} / {r['spark_stream_router_events_per_s']} ev/s{limited}"
    return ""


def markdown(results: dict, info: dict, noise: dict[str, float], mode: str) -> str:
    """The README's table of the latest figures."""
    rows = ["| figure | value | goal | met | raw |", "| --- | ---: | --- | --- | --- |"]
    for name, (goal, ok) in GOALS.items():
        if name in results:
            v = results[name]
            rows.append(f"| `{name}` | {v} | {goal} | {'ok' if ok(v) else '**miss**'} | {_raw_text(name, results)} |")
    if "read_warm_ratio" in results:
        rows.append(f"| read, warm event cache | {results['read_warm_ratio']} | (diagnostic) | |"
                    f" {results['read_warm_events_per_s']} ev/s at batch {results['read_warm_batch_size']};"
                    " `read_ratio` is measured with `--event-cache 0` |")
    if "breakdown_server_us_per_event" in results:
        rows.append(f"| server CPU per event | {results['breakdown_server_us_per_event']} us | | |"
                    f" shards {results['breakdown_shards_us_per_event']} + router {results['breakdown_merge_us_per_event']}"
                    f" + encoding {results['breakdown_encode_us_per_event']} us; pymongo consumer"
                    f" {results.get('ceiling_client_cpu_us_per_event_b1000', '?')} us |")
    if "oplog_depth_ratio" in results:
        rows.append(f"| `oplog_depth_ratio` | {results['oplog_depth_ratio']} | 1.0 ideal | | events/s reading n events"
                    " / reading the last n/4, 1 shard |")
    others = max(noise.values()) if noise else 0.0
    head = (f"Measured {info['date']} ({mode} run, commit {info['commit']}) on {info['cpu']}, {info['cores']} cores,"
            f" {info['memory_gib']} GiB, Linux {info['kernel']}, Python {info['python']}, pymongo {info['pymongo']}"
            f" (C bson: {info['bson_c_extension']}); other processes used up to {others:.2f} cores meanwhile.")
    return head + "\n\n" + "\n".join(rows) + "\n"


class CpuMeter:
    """CPU time used by other processes while a section ran (system busy time minus ours).

    "Ours" is this process and every process it started, at any depth: the servers, the Spark
    drivers' JVMs and their Python workers (grandchildren: `os.times()` only counts children this
    process waited for, so they used to count as "other processes").  A thread samples the process
    tree every `EVERY` s and keeps each descendant's last CPU time; a descendant that lives less than
    that between two samples is missed (and counted as other)."""

    HZ = os.sysconf("SC_CLK_TCK")
    EVERY = 0.25

    @staticmethod
    def _busy() -> float:
        with open("/proc/stat") as f:
            vals = [int(x) for x in f.readline().split()[1:]]
        idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
        return (sum(vals[:8]) - idle) / CpuMeter.HZ

    @staticmethod
    def _descendants(root: int) -> dict[tuple[int, int], float]:
        """(pid, start time) -> user + system seconds, for every process below `root`."""
        children: dict[int, list[tuple[int, int, float]]] = {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            children.setdefault(int(fields[1]), []).append(
                (int(name), int(fields[19]), (int(fields[11]) + int(fields[12])) / CpuMeter.HZ))
        out, todo = {}, [root]
        while todo:
            for pid, start, cpu in children.get(todo.pop(), ()):
                out[(pid, start)] = cpu
                todo.append(pid)
        return out

    def _sample(self) -> None:
        for k, v in self._descendants(os.getpid()).items():
            self.seen[k] = v

    def _watch(self) -> None:
        while not self.stop.wait(self.EVERY):
            self._sample()

    def _ours(self) -> float:
        t = os.times()
        return t.user + t.system + sum(v - self.base.get(k, 0.0) for k, v in self.seen.items())

    def __enter__(self) -> "CpuMeter":
        import threading

        self.seen: dict[tuple[int, int], float] = {}
        self.base = self._descendants(os.getpid())
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="cpu-meter", daemon=True)
        self.t0, self.busy0, self.ours0 = time.monotonic(), self._busy(), self._ours()
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        self._sample()
        self.wall = time.monotonic() - self.t0
        self.ours = self._ours() - self.ours0
        self.others = max(0.0, (self._busy() - self.busy0) - self.ours)

    @property
    def other_cores(self) -> float:
        return self.others / max(self.wall, 1e-9)


def machine() -> dict:
    model = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=H.ROOT, capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=H.ROOT,
                                capture_output=True, text=True).stdout.strip())
    return {
        "cpu": model, "cores": os.cpu_count(), "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "kernel": platform.release(), "python": platform.python_version(), "pymongo": pymongo.version,
        "bson_c_extension": pymongo.has_c(), "commit": commit + ("+dirty" if dirty else ""),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "loadavg_at_start": os.getloadavg()[0],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="a run of about two minutes")
    p.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    p.add_argument("--only", default="", help="comma-separated: startup,read,breakdown,merge,write,ops,mongomock,"
                                              "latency,memory,fixtures,index,replset; spark (only when named)")
    p.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    p.add_argument("--markdown", metavar="FILE", help="write the table of figures as Markdown (for the README)")
    args = p.parse_args(argv)
    st = QUICK if args.quick else FULL
    benches: dict[str, Callable[[dict], None]] = {
        "startup": lambda r: bench_startup.run_startup(st.startup_runs, r),
        "read": lambda r: bench_read.run_read(st.read_events, list(st.batch_sizes), st.read_reps, r),
        "breakdown": lambda r: bench_breakdown.run_breakdown(st.read_events, r),
        "merge": lambda r: bench_read.run_merge(st.merge_events, list(st.merge_shards), st.merge_reps, 1000, r),
        "write": lambda r: bench_write.run_write(st.write_seconds, 1000, st.write_reps, r, also_ordered=st.write_ordered),
        "ops": lambda r: bench_ops.run_ops(st.ops_seconds, st.ops_reps, 1000, r),
        "mongomock": lambda r: bench_mongomock.run_mongomock(list(st.mongomock_sizes), st.mongomock_seconds, r),
        "latency": lambda r: bench_latency.run_latency(st.latency_probes, st.latency_budget_s, st.noop_interval_s, r),
        "memory": lambda r: bench_memory.run_memory(st.memory_entries, r),
        "fixtures": lambda r: bench_fixtures.run_fixtures(st.reset_rounds, r),
        "index": lambda r: bench_index.run_index(st.index_docs, st.index_seconds, st.index_reps, r),
        "replset": lambda r: bench_replset.run_replset(st.replset_seconds, st.replset_events, st.replset_reps, 1000, r),
        "spark": lambda r: bench_spark.run_spark(st.spark_merge_events, st.spark_stream_events, st.spark_reps,
                                                 st.spark_partitions, r),
    }
    only = [x.strip() for x in args.only.split(",") if x.strip()]
    unknown = set(only) - set(benches)
    if unknown:
        p.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
    info = machine()
    H.say(f"mongosim benchmarks ({'quick' if args.quick else 'full'}) on {info['cpu']}, {info['cores']} cores,"
          f" Python {info['python']}, pymongo {info['pymongo']}, commit {info['commit']}, {info['date']}")
    results: dict = {}
    noise: dict[str, float] = {}
    failed: list[str] = []
    t_all = time.monotonic()
    for name, fn in benches.items():
        if (only and name not in only) or (not only and name in OPT_IN):
            continue
        H.say("")
        try:
            with CpuMeter() as m:
                fn(results)
        except Exception:
            failed.append(name)
            H.say(f"  {name} FAILED:\n{traceback.format_exc()}")
            continue
        noise[name] = round(m.other_cores, 2)
        H.say(f"  ({m.wall:.0f}s; other processes used {m.other_cores:.2f} cores meanwhile)")
    total = time.monotonic() - t_all

    H.say("")
    H.say(f"{'figure':<28} {'value':>10}  {'goal':<14} {'':<4} raw")
    missed = []
    for name, (goal, ok) in GOALS.items():
        if name not in results:
            continue
        v = results[name]
        mark = "ok" if ok(v) else "MISS"
        if mark == "MISS":
            missed.append(name)
        H.say(f"{name:<28} {v:>10}  {goal:<14} {mark:<4} {_raw_text(name, results)}")
    if "read_warm_ratio" in results:
        H.say(f"{'read_warm_ratio':<28} {results['read_warm_ratio']:>10}  {'':<14} {'':<4}"
              f" diagnostic: {results['read_warm_events_per_s']} ev/s, events already rendered (event cache);"
              " read_ratio is measured with --event-cache 0")
    if "breakdown_server_us_per_event" in results:
        H.say(f"{'server_us_per_event':<28} {results['breakdown_server_us_per_event']:>10}  {'':<14} {'':<4}"
              f" diagnostic: shards {results['breakdown_shards_us_per_event']} + merge"
              f" {results['breakdown_merge_us_per_event']} + encoding {results['breakdown_encode_us_per_event']} us;"
              f" pymongo consumer {results.get('ceiling_client_cpu_us_per_event_b1000', '?')} us")
    if "oplog_depth_ratio" in results:
        H.say(f"{'oplog_depth_ratio':<28} {results['oplog_depth_ratio']:>10}  {'(1.0 ideal)':<14} {'':<4}"
              " diagnostic: events/s reading n events / reading the last n/4 (1 shard)")
        if results["oplog_depth_ratio"] < 0.9 and "merge_scaling" in results:
            H.say(f"{'':<56}(below 1: an event costs more the longer the oplog after it, which slows the"
                  " 1-shard read most and inflates merge_scaling)")
    busy = {k: v for k, v in noise.items() if v > 0.25}
    H.say(f"total {total:.0f}s" + (f"; WARNING: other processes were busy during {busy} (cores used):"
                                     " the ratios assume two free cores" if busy else ""))
    if args.json:
        out = {**results, "machine": info, "mode": "quick" if args.quick else "full",
               "settings": st.__dict__, "other_process_cores": noise, "failed": failed, "total_s": round(total, 1)}
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2, default=list)
        H.say(f"wrote {args.json}")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(results, info, noise, "quick" if args.quick else "full"))
        H.say(f"wrote {args.markdown}")
    if failed:
        H.say(f"failed: {', '.join(failed)}")
        return 1
    return 1 if (args.check and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
