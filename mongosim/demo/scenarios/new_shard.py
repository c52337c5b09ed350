"""new-shard: a shard added while the stream runs joins the merge from the right point.

The router's stream also watches `config.shards` on the config server.  When
`addShard` inserts the new shard there, that insert travels through the merge
like any event; when it reaches the head, the merge part's
handle-topology-change stage opens a cursor on the new shard starting just
after the insert's cluster time, and swallows the config event.  A chunk then
moves to the new shard and a document lands there: the client sees it in
order, as if the shard had always been there.
"""

from __future__ import annotations

from mongosim.demo.base import Demo, Scenario


async def run(d: Demo) -> None:
    await d.watch("db", "c")
    await d.at(1.0)
    await d.insert({"_id": 1, "k": 5})
    await d.at(2.0)
    d.did("adds a shard: addShard shard02")
    await d.client.admin({"addShard": "shard02"})
    await d.at(3.0)
    d.did("splits db.c at k: 200 and moves the chunk k >= 200 to shard02 (moveChunk)")
    await d.client.admin({"split": "db.c", "middle": {"k": 200}})
    await d.client.admin({"moveChunk": "db.c", "find": {"k": 200}, "to": "shard02"})
    await d.at(4.0)
    await d.insert({"_id": 2, "k": 250})
    await d.at(5.0)
    await d.insert({"_id": 3, "k": 105})
    await d.wait_for_events(3, within=30)
    await d.at(6.0)


SCENARIO = Scenario(
    name="new-shard",
    title="A shard added mid-stream",
    lesson="The router learns of a new shard from its own stream on config.shards, and opens a cursor on it "
           "that starts right after the shard was added — so no event on the new shard is missed or misordered.",
    setup="2 shards, then shard02 is added at 2 s; db.c sharded on k (k < 100 on shard00, k >= 100 on shard01, "
          "then k >= 200 moves to shard02); --instant-hwm (see cold-shard).",
    run=run,
    options={"instant_hwm": True},
    focus="new_shard",
    modules=("router/merge/handle_topology_change.py", "router/merge/cluster_change_stream.py",
             "router/sharding.py"),
)
