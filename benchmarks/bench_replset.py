"""replset: what replica-set shards cost (writes, change streams) and how fast a shard fails over.

Two clusters side by side, each ``mongosim serve --shards 2`` in its own process:
one with ``--members 3`` (every shard and the config server a 3-member replica
set, ``--election-timeout-ms`` scaled down to 500), one with ``--members 1``.

- members_write_ratio: ``insert_many`` documents/s into a collection sharded on a
  hashed ``_id``, 3 members / 1 member (bench_write's runs, alternating).
- members_read_ratio: change events/s through pymongo ``watch()`` over events
  already in the oplogs, 3 members / 1 member (bench_read's load and reads,
  alternating; ``--event-cache 0`` on both, as read_ratio: every read renders its events).
- failover_s: real time from ``replSetStepDown`` sent by pymongo to a shard's
  replica-set URI (the one ``mongosim serve`` prints) to the first insert
  targeting that shard acknowledged through the router (the slowest of the runs).
- failover_kill_s (raw): the same from ``{mongosimFault: <shard>, kill: true}``
  (the primary's process dies): no handoff, so the election waits for the
  election timeout; bounded by it plus the time to notice.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from itertools import count

import pymongo
from pymongo.errors import PyMongoError

from benchmarks import bench_read, bench_write
from benchmarks import harness as H

SHARDS = 2
ELECTION_TIMEOUT_MS = 500
FAILOVER_DB, FAILOVER_COLL = "bench", "failover"
FAILOVER_DEADLINE_S = 30.0


def first_ack_after(router: pymongo.MongoClient, shard_key: int, t0: float) -> tuple[float, int]:
    """Insert into the chunk of `shard_key` until one is acknowledged: seconds since `t0`, failed tries."""
    coll = router[FAILOVER_DB][FAILOVER_COLL]
    failed = 0
    while True:
        try:
            coll.insert_one({"s": shard_key, "at": failed})
            return time.perf_counter() - t0, failed
        except PyMongoError:
            failed += 1
            if time.perf_counter() - t0 > FAILOVER_DEADLINE_S:
                raise


def new_primary(rs: pymongo.MongoClient, old: str, t0: float) -> str | None:
    """The primary a member names once it is not `old` (a hello's `primary`, not its `me`: the member
    pymongo still takes for the primary may be the one that just stepped down)."""
    while True:
        try:
            primary = rs.admin.command("hello").get("primary")
        except PyMongoError:  # (the member it asked is the one just killed: pymongo selects again)
            primary = None
        if primary not in (None, old) or time.perf_counter() - t0 > FAILOVER_DEADLINE_S:
            return primary
        time.sleep(0.01)  # (a benchmark's poll of another process, after the figure was taken)


def failover(router: pymongo.MongoClient, rs_uri: str, shard: str, shard_key: int, *, kill: bool) -> float:
    """One failover of `shard` (stepdown, or kill), timed to the first write acknowledged through the router."""
    rs = H.client(rs_uri)
    try:
        old = rs.admin.command("hello")["me"]  # run on the primary (pymongo selects it)
        router[FAILOVER_DB][FAILOVER_COLL].insert_one({"s": shard_key, "warm": True})
        t0 = time.perf_counter()
        if kill:
            router.admin.command("mongosimFault", shard, kill=True)
        else:
            try:
                rs.admin.command("replSetStepDown", 60, secondaryCatchUpPeriodSecs=10)
            except pymongo.errors.AutoReconnect:
                pass  # a server may close its connections as it steps down
        took, failed = first_ack_after(router, shard_key, t0)
        new = new_primary(rs, old, t0)
        assert new != old, f"{shard}: primary {old} -> {new}"
        H.say(f"  {'kill' if kill else 'stepDown'} {shard}: {old} -> {new},"
              f" first write acknowledged after {took * 1000:.0f} ms ({failed} failed tries)")
        return took
    finally:
        rs.close()


def run_replset(seconds: float, events: int, reps: int, batch: int, results: dict) -> None:
    H.say(f"replset: {SHARDS} shards, --members 3 (election timeout {ELECTION_TIMEOUT_MS} ms) beside --members 1;"
          f" insert_many of {batch}, {reps} runs of ~{seconds}s; watch() over {events} events, {reps} runs")
    with ExitStack() as stack:
        rs3 = stack.enter_context(H.server(
            H.mongosim_cmd(SHARDS, members=3, election_timeout_ms=ELECTION_TIMEOUT_MS, event_cache=0), "mongosim-members3"))
        rs1 = stack.enter_context(H.server(H.mongosim_cmd(SHARDS, event_cache=0), "mongosim-members1"))
        # reads first: bench_read.load counts every chunk of the cluster, so its collection is the first sharded
        loaded = {label: bench_read.load(srv, events, SHARDS) for label, srv in (("3", rs3), ("1", rs1))}
        for lo in loaded.values():
            bench_read.read_rate(lo.client, lo.start, min(events, 2000), batch)  # warm
        reads: dict[str, list[float]] = {"3": [], "1": []}
        for _ in range(reps):
            for label, lo in loaded.items():
                reads[label].append(bench_read.read_rate(lo.client, lo.start, events, batch))
        r3, r1 = H.median(reads["3"]), H.median(reads["1"])
        results.update(members_read_ratio=round(r3 / r1, 3), members3_read_events_per_s=round(r3),
                       members1_read_events_per_s=round(r1))
        H.say(f"  watch(): 3 members {r3:>8.0f} ev/s   1 member {r1:>8.0f} ev/s   ratio {r3 / r1:.3f}   (goal >= 0.9)"
              f"   runs {[round(x) for x in reads['3']]} / {[round(x) for x in reads['1']]}")

        for lo in loaded.values():
            H.shard_hashed(lo.client, bench_write.DB, bench_write.COLL)
        writes = bench_write.side_by_side({"3": (loaded["3"].client, count()), "1": (loaded["1"].client, count())},
                                          seconds, batch, reps)
        w3, w1 = H.median(writes[("3", False)]), H.median(writes[("1", False)])
        results.update(members_write_ratio=round(w3 / w1, 3), members3_write_docs_per_s=round(w3),
                       members1_write_docs_per_s=round(w1))
        H.say(f"  insert_many: 3 members {w3:>8.0f} docs/s   1 member {w1:>8.0f} docs/s   ratio {w3 / w1:.3f}"
              f"   (goal >= 0.5)   runs {[round(x) for x in writes[('3', False)]]} /"
              f" {[round(x) for x in writes[('1', False)]]}")

        # failover: chunk s=i on shard i; each shard steps down at most twice (a stepped-down member
        # stays unelectable for the 60 s stepdown period), then shard01's primary is killed once
        router = loaded["3"].client
        H.shard_ranges(router, FAILOVER_DB, FAILOVER_COLL, SHARDS)
        names = sorted(s["_id"] for s in router.config.shards.find())
        uris = {name: H.replica_set_uri(rs3, name) for name in names}
        plan = [(names[0], 0), (names[1], 1), (names[0], 0)][: max(1, min(reps, 3))]
        downs = [failover(router, uris[name], name, key, kill=False) for name, key in plan]
        killed = failover(router, uris[names[1]], names[1], 1, kill=True)
        results.update(failover_s=round(max(downs), 3), failover_runs_s=[round(x, 3) for x in downs],
                       failover_kill_s=round(killed, 3), failover_election_timeout_ms=ELECTION_TIMEOUT_MS)
        H.say(f"  failover_s {max(downs):.3f} (slowest of {len(downs)} stepdowns; goal < 1 s);"
              f" kill {killed:.3f} s (election timeout {ELECTION_TIMEOUT_MS} ms)")
