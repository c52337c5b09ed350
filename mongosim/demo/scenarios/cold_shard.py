"""cold-shard and instant-hwm: an idle shard holds the merged stream back until its periodic noop.

One insert on shard00 at 1 s.  shard01 and the config server write nothing:
their promises (postBatchResumeTokens) stay at the last entry in their oplogs,
so the router cannot release the insert — for all it knows, shard01 could
still send something earlier.  Every 10 s a node's noop writer writes a
"periodic noop" if nothing else was written during the interval; that entry
is what finally moves shard01's promise past the insert.  Then, with nothing
happening at all, the next noops move the client's resume token (the
high-water mark).

instant-hwm: the same writes with `--instant-hwm`; an idle node promises its
current clock at once, and the insert leaves at 1 s.
"""

from __future__ import annotations

from mongosim.demo.base import Demo, Scenario


async def cold(d: Demo) -> None:
    await d.watch("db", "c")
    await d.at(1.0)
    await d.insert({"_id": 1, "k": 5})
    await d.wait_for_events(1, within=60)
    d.say("Nothing else is written anywhere; the client keeps waiting for events.")
    await d.at(34.0)  # two await cycles after the 30 s noops: the resume token moves again


async def instant(d: Demo) -> None:
    await d.watch("db", "c")
    await d.at(1.0)
    await d.insert({"_id": 1, "k": 5})
    await d.wait_for_events(1, within=60)
    await d.at(3.0)


COLD = Scenario(
    name="cold-shard",
    title="A cold shard holds the stream back until its periodic noop",
    lesson="An event leaves the router only when every remote (each shard, and the config server) has promised "
           "that nothing earlier is coming; an idle node's promise moves only when its periodic noop is written.",
    setup="2 shards; db.c sharded on k (k < 100 on shard00, k >= 100 on shard01); periodic noop every 10 s "
          "(the server's default periodicNoopIntervalSecs).",
    run=cold,
    options={"noop_interval": 10.0},
    focus="gate",
    modules=("router/merge/async_results_merger.py", "shardsim/changestream/cursor.py", "shardsim/node.py"),
)

INSTANT = Scenario(
    name="instant-hwm",
    title="--instant-hwm: an idle shard promises its clock at once",
    lesson="With --instant-hwm an idle shard promises its current cluster time at once, so the same insert "
           "leaves the router immediately (a real mongod only promises what its oplog holds).",
    setup="As cold-shard (2 shards, noop every 10 s), with --instant-hwm.",
    run=instant,
    options={"noop_interval": 10.0, "instant_hwm": True},
    modules=("shardsim/changestream/cursor.py", "router/merge/async_results_merger.py"),
)
