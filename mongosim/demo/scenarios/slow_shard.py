"""slow-shard: a slow shard gates the whole stream, even when it has nothing to say.

Every request from the router to shard01 takes 2.5 s to arrive (a slow
network or a busy node: `router.shard("shard01").set_delay(2.5)`).  Two
inserts on shard00 reach the router at once, but the router cannot release
either before shard01 has promised that nothing earlier is coming — and that
promise travels with shard01's next reply.
"""

from __future__ import annotations

from mongosim.demo.base import Demo, Scenario

DELAY = 2.5


async def run(d: Demo) -> None:
    await d.watch("db", "c")
    d.router.shard("shard01").set_delay(DELAY)
    d.did(f"makes shard01 slow: every request to it now takes {DELAY} s to arrive", who="scenario")
    await d.at(1.0)
    await d.insert({"_id": 1, "k": 5})
    await d.wait_for_events(1, within=30)
    await d.at(4.0)
    await d.insert({"_id": 2, "k": 6})
    await d.wait_for_events(2, within=30)
    await d.at(7.0)


SCENARIO = Scenario(
    name="slow-shard",
    title="A slow shard gates the stream",
    lesson="Every event waits for the slowest shard's next answer: the router may release nothing that shard "
           "has not promised past, even if that shard has nothing to send.",
    setup="2 shards; db.c sharded on k (k < 100 on shard00, k >= 100 on shard01); every request to shard01 "
          f"takes {DELAY} s; --instant-hwm, so that idle shards answer with a current promise (see cold-shard).",
    run=run,
    options={"instant_hwm": True},
    focus="gate",
    modules=("router/merge/async_results_merger.py", "router/merge/cluster_change_stream.py", "router/remote.py"),
)
