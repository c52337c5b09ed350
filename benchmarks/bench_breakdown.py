"""read breakdown (a diagnostic): CPU microseconds per event in each layer of the read path.

In a fresh process with the allocator settings of ``mongosim serve``
(`mongosim.malloc_tuning`), no sockets: a 4-shard cluster (``open_cluster(listen=False,
instant_hwm=True, event_cache=0)``: every read renders its events, as the
read benchmark's) holding ``n`` insert events, read twice with ``batchSize`` 1000:

1. shards alone: each shard's own ``$changeStream`` cursor (the shard part the
   router opens: ``$_needsMerge``), drained with getMores of 1000 on the node;
2. through the router: ``aggregate`` + ``getMore`` on the ``Router``, each
   reply then encoded as the wire layer does (``decorate`` + BSON + OP_MSG).
   CPU time spent inside the shard remotes is the shards' share, around the
   encoding the encoding's, and the rest the router's (merge, cursors).

Beside the pymongo consumer's cost per event (the ceiling's client CPU, from
the read benchmark) they show the budget: a server that overlaps its work with the
consumer's needs its whole path under the consumer's cost per event to reach
a ratio of 0.8 (and under a quarter of it if it does not overlap).
"""

from __future__ import annotations

import json
import subprocess
import time

import trio

from benchmarks import harness as H
from mongosim.core import open_cluster
from mongosim.oplog.clock import key_ts
from mongosim.malloc_tuning import keep_freed_memory
from mongosim.router.server import ConnState, _encode_reply, run_after_reply
from mongosim.shardsim.changestream.cursor import ChangeStreamCursor

DB, COLL = "bench", "events"
BATCH = 1000


async def _measure(n: int) -> dict:
    async with open_cluster(shards=4, instant_hwm=True, listen=False, event_cache=0) as core:
        router = core.router
        conn = ConnState(1, "bench")

        async def run(db: str, cmd: dict) -> dict:
            reply = await router.run_command(db, cmd, conn)
            run_after_reply(conn)  # (as the server does once the reply is sent: the router reads ahead)
            return reply

        await run("admin", {"enableSharding": DB})
        await run("admin", {"shardCollection": f"{DB}.{COLL}", "key": {"_id": "hashed"}})
        start = key_ts(router.clock.key)
        for k in range(0, n, BATCH):
            await run(DB, {"insert": COLL, "documents": H.make_docs(k, min(BATCH, n - k)), "ordered": False})

        # 1. the shards alone
        t = time.process_time()
        shard_events = 0
        for node in core.shards.values():
            r = await node.run_command(DB, {"aggregate": COLL, "pipeline": [{"$changeStream": {"startAtOperationTime": start}}],
                                            "cursor": {"batchSize": 0}, "$_needsMerge": True}, from_router=True)
            cid = r["cursor"]["id"]
            while True:
                r = await node.run_command(DB, {"getMore": cid, "collection": COLL, "batchSize": BATCH, "maxTimeMS": 0},
                                           from_router=True)
                got = len(r["cursor"]["nextBatch"])
                shard_events += got
                if not got:
                    break
            await node.run_command(DB, {"killCursors": COLL, "cursors": [cid]})
        shards_s = time.process_time() - t
        assert shard_events == n, (shard_events, n)

        # 2. + 3. through the router: CPU inside the shards' cursors is the shards' share, CPU around
        # the reply encoding the wire layer's, the rest the router's (merge, cursor, command dispatch).
        # The shards' part is timed in their synchronous steps (pulling events, building the reply):
        # a shard's getMore yields between slices, so timing across its awaits would also count
        # whatever ran meanwhile.
        inside = [0.0]

        def timed(method):
            def wrapper(*a, **kw):
                t = time.process_time()
                try:
                    return method(*a, **kw)
                finally:
                    inside[0] += time.process_time() - t
            wrapper.__wrapped__ = method
            return wrapper

        for name in ("_pull", "finish", "reply_fields"):
            setattr(ChangeStreamCursor, name, timed(getattr(ChangeStreamCursor, name)))
        t = time.process_time()
        encode_s = 0.0
        r = await run(DB, {"aggregate": COLL, "pipeline": [{"$changeStream": {"startAtOperationTime": start}}],
                           "cursor": {"batchSize": BATCH}})
        cid, got = r["cursor"]["id"], len(r["cursor"]["firstBatch"])
        while got < n:
            r = await run(DB, {"getMore": cid, "collection": COLL, "batchSize": BATCH, "maxTimeMS": 1000})
            got += len(r["cursor"]["nextBatch"])
            t_enc = time.process_time()
            _encode_reply(router.decorate(r, DB, {}, conn), 1)
            encode_s += time.process_time() - t_enc
        total_s = time.process_time() - t
        for name in ("_pull", "finish", "reply_fields"):
            setattr(ChangeStreamCursor, name, getattr(ChangeStreamCursor, name).__wrapped__)
        await run(DB, {"killCursors": COLL, "cursors": [cid]})
        return {"shards_alone": shards_s, "shards": inside[0], "router": total_s - encode_s - inside[0],
                "encode": encode_s, "total": total_s}


def _child(n: int) -> None:
    keep_freed_memory()  # as `mongosim serve` does: reply buffers reuse freed pages
    print(json.dumps(trio.run(_measure, n)), flush=True)


def run_breakdown(n: int, results: dict) -> None:
    H.say(f"read breakdown: CPU per event, 4 shards in one process (no sockets), {n} events, batch {BATCH}")
    out = subprocess.run([H.PYTHON, "-c", f"from benchmarks.bench_breakdown import _child; _child({n})"], cwd=H.ROOT,
                         capture_output=True, text=True, timeout=1800, env={"PYTHONPATH": str(H.ROOT), "PATH": "/usr/bin:/bin"},
                         check=False)
    if out.returncode:
        raise RuntimeError(f"breakdown child failed:\n{out.stderr}")
    r = json.loads(out.stdout.strip().splitlines()[-1])
    us = {k: 1e6 * v / n for k, v in r.items()}
    consumer = next((results[k] for k in ("ceiling_client_cpu_us_per_event_b1000",) if k in results), None)
    H.say(f"  shard pipelines         {us['shards']:7.1f} us/event   (drained alone: {us['shards_alone']:.1f})")
    H.say(f"  router (merge, cursors) {us['router']:7.1f} us/event")
    H.say(f"  reply encoding          {us['encode']:7.1f} us/event")
    H.say(f"  server total            {us['total']:7.1f} us/event")
    if consumer:
        H.say(f"  pymongo consumer        {consumer:7.1f} us/event   (from the read benchmark's ceiling runs)")
    results["breakdown_shards_us_per_event"] = round(us["shards"], 1)
    results["breakdown_merge_us_per_event"] = round(us["router"], 1)
    results["breakdown_encode_us_per_event"] = round(us["encode"], 1)
    results["breakdown_server_us_per_event"] = round(us["total"], 1)
