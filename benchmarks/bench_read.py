"""read and merge scaling: events/s through pymongo ``watch()`` over events already in the oplogs.

Setup (not timed): a mongosim cluster of N shards in its own process, a
collection sharded on a hashed ``_id`` (one chunk per shard), ``n`` documents
inserted with ``insert_many``.  Timed: ``watch(start_at_operation_time=<before
the inserts>, batch_size=b)`` from the call to the ``n``-th event received,
decoded as ordinary dicts.

The ceiling: the same events, captured byte for byte from the same cluster
(a raw watch, not timed), replayed by ``wire_stub --mode ceiling`` with the same
batch size.  Runs of mongosim and of the ceiling alternate, repeated; each
figure is the median of its runs.

- read_ratio = mongosim events/s over 4 shards / ceiling events/s (worst batch size)
- merge_scaling = events/s over 64 shards / events/s over 1 shard (batch 1000);
  printed beside each shard count: the server's and the client's CPU per event
  (medians; ``merge_server_cpu_us_per_event_<s>``, ``merge_client_cpu_us_per_event_<s>``) and the
  time from ``watch()`` to the first event (``merge_first_event_s_<s>``: opening a cursor on every
  shard, and the first batch, which waits for every shard's first reply).
  Server and client each have a core, and the server merges ahead while the
  client decodes: while the server's CPU per event stays below the client's, the
  read is client-bound at any shard count, and the ratio moves with what else
  runs on the machine.
- oplog_depth_ratio (a diagnostic): on the 1-shard cluster, events/s reading all
  ``n`` events / events/s reading only the last ``n/4``; below 1.0 the cost of
  an event grows with the length of the oplog after it.
"""

from __future__ import annotations

import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pymongo
from bson import Timestamp
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument

from benchmarks import harness as H

DB, COLL = "bench", "events"
NS = f"{DB}.{COLL}"
INSERT_CHUNK = 1000


@dataclass
class Loaded:
    """A cluster holding `n` insert events from `start` on."""

    server: H.Server
    client: pymongo.MongoClient
    start: Timestamp
    n: int
    shards: int
    last_quarter: Timestamp  # before the last n // 4 inserts


def load(server: H.Server, n: int, shards: int) -> Loaded:
    c = H.client(server.uri)
    H.shard_hashed(c, DB, COLL)
    coll = c[DB][COLL]
    start = last_quarter = c.admin.command("ping")["operationTime"]
    quarter = n - n // 4
    for k in range(0, n, INSERT_CHUNK):
        if k == quarter:
            last_quarter = c.admin.command("ping")["operationTime"]
        coll.insert_many(H.make_docs(k, min(INSERT_CHUNK, n - k)), ordered=False)
    chunks = list(c.config.chunks.find({}, {"shard": 1}))
    assert len(chunks) == shards, f"expected {shards} chunks, got {len(chunks)}"
    return Loaded(server, c, start, n, shards, last_quarter)


@dataclass
class ReadRun:
    rate: float  # events/s
    first_s: float  # from the watch() call to the first event
    max_gap_s: float  # the longest wait between two events (a getMore, as the consumer sees it)
    client_cpu_s: float
    server_cpu_s: float | None  # CPU time of the server process during the read (if its pid was given)


def read(c: pymongo.MongoClient, start: Timestamp | None, n: int, batch: int, server_pid: int | None = None) -> ReadRun:
    """One `watch()` reading `n` events (dicts), timed from the call to the n-th event."""
    coll = c[DB][COLL]
    got = 0
    max_gap = 0.0
    srv0 = H.process_cpu_s(server_pid) if server_pid else None
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    first = last = t0
    with coll.watch(start_at_operation_time=start, batch_size=batch) as stream:
        for _ev in stream:
            now = time.perf_counter()
            if now - last > max_gap:
                max_gap = now - last
            if not got:
                first = now
            last = now
            got += 1
            if got >= n:
                break
        t1 = time.perf_counter()
    cpu = time.process_time() - cpu0
    srv = H.process_cpu_s(server_pid) - srv0 if server_pid else None
    assert got == n
    return ReadRun(n / (t1 - t0), first - t0, max_gap, cpu, srv)


def read_rate(c: pymongo.MongoClient, start: Timestamp | None, n: int, batch: int) -> float:
    return read(c, start, n, batch).rate


def capture(loaded: Loaded, path: Path) -> int:
    """Write the cluster's `n` events, as the bytes pymongo receives, to `path`; return the mean size."""
    raw = loaded.client[DB].get_collection(COLL, codec_options=CodecOptions(document_class=RawBSONDocument))
    total = got = 0
    with open(path, "wb") as f, raw.watch(start_at_operation_time=loaded.start, batch_size=1000) as stream:
        for ev in stream:
            assert ev["operationType"] == "insert", ev["operationType"]
            f.write(ev.raw)
            total += len(ev.raw)
            got += 1
            if got >= loaded.n:
                break
    return total // got


def run_read(n: int, batch_sizes: list[int], reps: int, results: dict) -> None:
    H.say(f"read: 4 shards, {n} insert events of a 200-byte document, batch sizes {batch_sizes}, {reps} runs each")
    H.say("  (--event-cache 0: every read renders its events, the cost of a first read; the warm figure is below)")
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        ms = stack.enter_context(H.server(H.mongosim_cmd(4, event_cache=0), "mongosim"))
        t = time.perf_counter()
        loaded = load(ms, n, 4)
        H.say(f"  loaded {n} events in {time.perf_counter() - t:.1f}s")
        events = Path(tmp) / "events.bson"
        size = capture(loaded, events)
        H.say(f"  captured the events: {size} bytes each")
        ceiling = stack.enter_context(H.server(
            H.stub_cmd("ceiling", "--events", str(events), "--ns", NS,
                       "--batch-sizes", ",".join(map(str, batch_sizes))), "ceiling"))
        cc = H.client(ceiling.uri)
        runs: dict[tuple[str, int], list[ReadRun]] = {}
        read_rate(loaded.client, loaded.start, min(n, 2000), batch_sizes[0])  # warm both paths once
        read_rate(cc, None, min(n, 2000), batch_sizes[0])
        for _ in range(reps):
            for b in batch_sizes:
                runs.setdefault(("mongosim", b), []).append(read(loaded.client, loaded.start, n, b, ms.pid))
                runs.setdefault(("ceiling", b), []).append(read(cc, None, n, b, ceiling.pid))
        ratios = {}
        for b in batch_sizes:
            mr, cr = runs[("mongosim", b)], runs[("ceiling", b)]
            m, c = H.median([r.rate for r in mr]), H.median([r.rate for r in cr])
            ratios[b] = m / c
            results[f"read_events_per_s_b{b}"] = round(m)
            results[f"ceiling_events_per_s_b{b}"] = round(c)
            results[f"read_ratio_b{b}"] = round(m / c, 3)
            H.say(f"  batch {b:>5}: mongosim {m:>8.0f} ev/s   ceiling {c:>8.0f} ev/s   ratio {m / c:.3f}   (goal >= 0.8)"
                  f"   runs {[round(r.rate) for r in mr]} / {[round(r.rate) for r in cr]}")
            # where the time goes: CPU per event on each side, and the stalls the consumer sees
            us = {k: 1e6 * H.median([getattr(r, k) for r in rs]) / n
                  for k, rs in (("server_cpu_s", mr), ("client_cpu_s", cr))}
            ceiling_srv = 1e6 * H.median([r.server_cpu_s for r in cr]) / n
            first = H.median([r.first_s for r in mr])
            gap = H.median([r.max_gap_s for r in mr])
            results[f"read_server_cpu_us_per_event_b{b}"] = round(us["server_cpu_s"], 1)
            results[f"ceiling_client_cpu_us_per_event_b{b}"] = round(us["client_cpu_s"], 1)
            results[f"read_first_event_s_b{b}"] = round(first, 3)
            results[f"read_max_gap_s_b{b}"] = round(gap, 3)
            H.say(f"           CPU per event: mongosim server {us['server_cpu_s']:.1f} us, ceiling server"
                  f" {ceiling_srv:.1f} us, pymongo consumer {us['client_cpu_s']:.1f} us;"
                  f" mongosim: first event after {first * 1000:.0f} ms, longest wait between events"
                  f" {gap * 1000:.0f} ms")
        # the same read against a server with the event cache: the events rendered once are reused
        warm_srv = stack.enter_context(H.server(H.mongosim_cmd(4), "mongosim-cached"))
        warm = load(warm_srv, n, 4)
        b = batch_sizes[-1]
        read_rate(warm.client, warm.start, n, b)  # renders (and caches) the events
        w = H.median([read_rate(warm.client, warm.start, n, b) for _ in range(reps)])
        c = H.median([r.rate for r in runs[("ceiling", b)]])
        results["read_warm_events_per_s"] = round(w)
        results["read_warm_ratio"] = round(w / c, 3)
        results["read_warm_batch_size"] = b
        H.say(f"  warm (events already rendered by an earlier read, batch {b}): {w:.0f} ev/s, ratio {w / c:.3f}")
        worst = min(ratios, key=ratios.get)
        results["read_ratio"] = round(ratios[worst], 3)
        results["read_events_per_s"] = results[f"read_events_per_s_b{worst}"]
        results["ceiling_events_per_s"] = results[f"ceiling_events_per_s_b{worst}"]
        results["read_batch_size"] = worst
        results["event_bytes"] = size
        H.say(f"  read_ratio {ratios[worst]:.3f} (worst batch size, {worst})")


def run_merge(n: int, shard_counts: list[int], reps: int, batch: int, results: dict) -> None:
    H.say(f"merge scaling: {n} events over {shard_counts} shards, batch {batch}, {reps} runs each")
    with ExitStack() as stack:
        clusters: dict[int, Loaded] = {}
        for s in shard_counts:
            t = time.perf_counter()
            srv = stack.enter_context(H.server(H.mongosim_cmd(s, event_cache=0), f"mongosim-{s}"))
            clusters[s] = load(srv, n, s)
            H.say(f"  {s:>2} shards: started and loaded in {time.perf_counter() - t:.1f}s")
        runs: dict[int, list[ReadRun]] = {s: [] for s in shard_counts}
        for s in shard_counts:
            read_rate(clusters[s].client, clusters[s].start, min(n, 2000), batch)
        for _ in range(reps):
            for s in shard_counts:
                loaded = clusters[s]
                runs[s].append(read(loaded.client, loaded.start, n, batch, loaded.server.pid))
        one = clusters[min(shard_counts)]
        quarter = [read_rate(one.client, one.last_quarter, one.n // 4, batch) for _ in range(reps)]
        rates = {s: [r.rate for r in rs] for s, rs in runs.items()}
        for s in shard_counts:
            m = H.median(rates[s])
            srv = 1e6 * H.median([r.server_cpu_s for r in runs[s]]) / n
            cli = 1e6 * H.median([r.client_cpu_s for r in runs[s]]) / n
            first = H.median([r.first_s for r in runs[s]])
            results[f"merge_events_per_s_{s}"] = round(m)
            results[f"merge_server_cpu_us_per_event_{s}"] = round(srv, 1)
            results[f"merge_client_cpu_us_per_event_{s}"] = round(cli, 1)
            results[f"merge_first_event_s_{s}"] = round(first, 4)
            H.say(f"  {s:>2} shards: {m:>8.0f} ev/s   runs {[round(x) for x in rates[s]]}"
                  f"   CPU per event: server {srv:.1f} us, client {cli:.1f} us; first event after {first * 1000:.1f} ms")
        lo, hi = min(shard_counts), max(shard_counts)
        ratio = H.median(rates[hi]) / H.median(rates[lo])
        results["merge_scaling"] = round(ratio, 3)
        H.say(f"  merge_scaling {hi}/{lo}: {ratio:.3f} (goal >= 0.8)")
        depth = H.median(rates[lo]) / H.median(quarter)
        results["oplog_depth_ratio"] = round(depth, 3)
        H.say(f"  oplog depth, {lo} shard: reading all {n} events {H.median(rates[lo]):.0f} ev/s, only the last"
              f" {n // 4} {H.median(quarter):.0f} ev/s: ratio {depth:.3f} (1.0 = the cost of an event does not"
              " grow with the oplog after it)")
