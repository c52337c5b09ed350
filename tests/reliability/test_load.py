"""Load: concurrent watchers (collection, database and cluster level) and writers on 4 shards.

CI profile (default): 20 watchers, 4 writers, 5 s of writes.  Long profile
(the issue's): 200 watchers for 60 s --

    MONGOSIM_LOAD_WATCHERS=200 MONGOSIM_LOAD_SECONDS=60 python -m pytest tests/reliability/test_load.py -q -s

The server runs as `mongosim serve` in its own process (its RSS is sampled);
the clients are trio tasks speaking the wire protocol, one connection each.
Every watcher must get exactly the events of its namespaces (no loss, no
duplicate, strictly increasing tokens, each writer's operations in order),
including slow consumers and one that reads nothing until the writers stop.
"""

from __future__ import annotations

import os

import trio

from tests.reliability.loadgen import LoadConfig, run_load
from tests.reliability.proc import ServerProcess

MB = 1024 * 1024


def _config() -> LoadConfig:
    return LoadConfig(
        watchers=int(os.environ.get("MONGOSIM_LOAD_WATCHERS", "20")),
        writers=int(os.environ.get("MONGOSIM_LOAD_WRITERS", "4")),
        seconds=float(os.environ.get("MONGOSIM_LOAD_SECONDS", "5")),
        write_rate=float(os.environ.get("MONGOSIM_LOAD_RATE", "200")),
    )


def test_watchers_and_writers_lose_nothing_and_memory_stays_bounded():
    cfg = _config()
    with ServerProcess("--shards", str(cfg.shards), "--instant-hwm") as srv:
        baseline = srv.rss_bytes()
        result = trio.run(run_load, "127.0.0.1", srv.port, cfg, srv.rss_bytes)
        end_rss = srv.rss_bytes()
    peak = max((b for _t, b in result.rss), default=end_rss)
    n_events = sum(len(w.events) for w in result.watchers)
    print(f"\nload: {cfg.watchers} watchers, {cfg.writers} writers, {len(result.ops)} operations in "
          f"{result.write_seconds:.1f} s, {n_events} events delivered, drained in {result.drain_seconds:.1f} s; "
          f"server RSS {baseline / MB:.0f} MB at start, peak {peak / MB:.0f} MB, end {end_rss / MB:.0f} MB")
    assert not result.problems, "\n".join(result.problems[:10])
    assert len(result.ops) > cfg.seconds * 10
    # memory: what the run adds is the oplog and documents plus per-cursor state, not event backlogs
    assert peak - baseline < 150 * MB + cfg.watchers * 1 * MB, (baseline, peak)
