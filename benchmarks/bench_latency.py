"""latency: insert acknowledged -> event received by a waiting watcher.

A watcher thread sits in ``watch()`` on a collection of 4 shards (range-sharded
on ``s``: chunk i on shard i, so a probe ``{s: i}`` lands on shard i).  The
main thread inserts one probe at a time with ``insert_one`` and notes when it
is acknowledged; the watcher notes when the probe's event comes out of
``next()``.  The next probe is sent only after the event came back and a short
pause, so the watcher is always waiting (in a getMore) when the write lands.
Latency = received - acknowledged (an event that beats its own ack counts 0).

Scenarios, each on its own cluster:

- active: probes rotate over the 4 shards, ``--instant-hwm``;
- cold, instant HWM: probes rotate over shards 0-2, shard 3 never written;
- cold, faithful: the same without ``--instant-hwm``, with a short noop
  interval: an event is held until every other shard has promised past it,
  i.e. until their next periodic noop write — bounded by the noop interval as
  in a real cluster (figure: p99 / noop interval; up to 2, since a shard
  written during an interval skips its next noop, as the server's NoopWriter does).  Probes are sent after a
  random pause of up to one interval, so that they do not fall in step with
  the noops (the wait is then spread over the interval, as in a real cluster).
"""

from __future__ import annotations

import random
import threading
import time

from benchmarks import harness as H

DB, COLL = "bench", "latency"
SHARDS = 4
PAUSE_S = 0.002


def measure(uri: str, probes: int, active: int, budget_s: float, *, warmup: int = 3,
            timeout_s: float = 30.0, max_pause_s: float = PAUSE_S) -> list[float]:
    """Latencies (seconds) of up to `probes` probes sent round-robin to shards 0..active-1.

    Stops early once `budget_s` seconds went by (with at least 5 probes measured): a slow path
    must not make the suite run for hours; the probe count is printed beside the figures.
    Before each probe the main thread pauses PAUSE_S, or a random time up to `max_pause_s`
    (seeded) when that is longer, so that probes do not fall in step with periodic noops.
    """
    rng = random.Random(10)
    c = H.client(uri)
    watcher_client = H.client(uri)
    H.shard_ranges(c, DB, COLL, SHARDS)
    coll = c[DB][COLL]
    received: dict[int, float] = {}
    arrived = threading.Event()
    ready = threading.Event()
    stop = threading.Event()
    errors: list[BaseException] = []

    def watch() -> None:
        try:
            with watcher_client[DB][COLL].watch() as stream:  # pymongo's default await (the server's, 1 s)
                ready.set()
                while not stop.is_set():
                    ev = stream.try_next()
                    if ev is None:
                        continue
                    t = time.perf_counter()
                    received[ev["fullDocument"]["i"]] = t
                    arrived.set()
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
            arrived.set()

    th = threading.Thread(target=watch, daemon=True)
    th.start()
    ready.wait(30)
    lat: list[float] = []
    t_end = time.perf_counter() + budget_s
    try:
        for i in range(warmup + probes):
            if len(lat) >= 5 and time.perf_counter() > t_end:
                break
            time.sleep(max(PAUSE_S, rng.uniform(0, max_pause_s)))
            arrived.clear()
            coll.insert_one({"s": i % active, "i": i})
            t_ack = time.perf_counter()
            deadline = t_ack + timeout_s
            while i not in received:
                if errors:
                    raise errors[0]
                if not arrived.wait(max(0.0, deadline - time.perf_counter())):
                    raise TimeoutError(f"probe {i} not received after {timeout_s}s")
                arrived.clear()
            if i >= warmup:
                lat.append(max(0.0, received[i] - t_ack))
    finally:
        stop.set()
        th.join(10)
        c.close()
        watcher_client.close()
    return lat


def _report(tag: str, lat: list[float]) -> tuple[float, float]:
    p50, p99 = H.percentile(lat, 50) * 1000, H.percentile(lat, 99) * 1000
    H.say(f"  {tag:<22} p50 {p50:8.2f} ms   p99 {p99:8.2f} ms   max {max(lat) * 1000:8.2f} ms   ({len(lat)} probes)")
    return p50, p99


def run_latency(probes: int, budget_s: float, noop_interval: float, results: dict) -> None:
    H.say(f"latency: insert acknowledged -> event out of watch(), {SHARDS} shards,"
          f" up to {probes} probes or {budget_s:.0f}s per scenario")
    with H.server(H.mongosim_cmd(SHARDS), "mongosim-active") as srv:
        p50, p99 = _report("4 active (instant HWM)", measure(srv.uri, probes, SHARDS, budget_s))
    results["latency_p50_ms"], results["latency_p99_ms"] = round(p50, 3), round(p99, 3)
    H.say("    goal: p50 <= 1 ms, p99 <= 5 ms")
    with H.server(H.mongosim_cmd(SHARDS), "mongosim-cold") as srv:
        p50, p99 = _report("1 cold, instant HWM", measure(srv.uri, probes, SHARDS - 1, budget_s))
    results["cold_instant_p50_ms"], results["cold_instant_p99_ms"] = round(p50, 3), round(p99, 3)
    H.say("    goal: p99 <= 5 ms")
    with H.server(H.mongosim_cmd(SHARDS, instant_hwm=False, noop_interval=noop_interval), "mongosim-faithful") as srv:
        p50, p99 = _report("1 cold, faithful", measure(srv.uri, probes, SHARDS - 1, budget_s, warmup=1,
                                                        timeout_s=4 * noop_interval + 10,
                                                        max_pause_s=noop_interval))
    results["cold_faithful_p50_ms"], results["cold_faithful_p99_ms"] = round(p50, 3), round(p99, 3)
    results["cold_faithful_noop_interval_s"] = noop_interval
    results["cold_faithful_p99_over_noop"] = round(p99 / 1000 / noop_interval, 3)
    H.say(f"    noop interval {noop_interval * 1000:.0f} ms: p99 / interval = {p99 / 1000 / noop_interval:.2f}"
          " (a real cluster: within 2 intervals, since a shard written during an interval skips its next noop)")
