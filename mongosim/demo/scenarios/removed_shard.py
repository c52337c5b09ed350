"""removed-shard: a shard drains and leaves while the stream runs, and the stream loses nothing.

`removeShard shard02` marks it draining; the balancer moves its chunk to
another shard (a migration: the copies are `fromMigrate` writes, which the
shards' own pipelines drop, so the client sees no event of the move) and
`movePrimary` would move a database whose primary it is.  The next
`removeShard` completes: shard02's document leaves `config.shards`.  The
router's stream on `config.shards` sees that delete reach the head of the
merge and, like the server's handle-topology-change stage, only swallows it:
shard02's cursor stays in the merge (a removed shard's mongod keeps running),
so every event it wrote before leaving is merged in order, and the writes
after the move arrive from the chunk's new owner.
"""

from __future__ import annotations

from mongosim.demo.base import Demo, Scenario


async def run(d: Demo) -> None:
    await d.watch("db", "c")
    await d.at(1.0)
    await d.insert({"_id": 1, "k": 250})
    await d.at(2.0)
    await d.insert({"_id": 2, "k": 5})
    await d.at(3.0)
    d.did("removeShard shard02: it starts draining (draining: true in config.shards); the balancer wakes")
    reply = await d.client.admin({"removeShard": "shard02"})
    d.facts["started"] = reply["state"]
    await d.at(5.0)
    reply = await d.client.admin({"removeShard": "shard02"})
    d.did(f"removeShard shard02 again: {reply['msg']} — its chunk moved (the balancer's migration)")
    d.facts["completed"] = reply["state"]
    await d.at(6.0)
    await d.insert({"_id": 3, "k": 260})
    await d.at(7.0)
    await d.insert({"_id": 4, "k": 150})
    await d.wait_for_events(4, within=30)
    await d.at(8.0)
    listed = (await d.client.admin({"listShards": 1}))["shards"]
    d.facts["shards"] = [s["_id"] for s in listed]
    d.say(f"listShards now names {', '.join(d.facts['shards'])}; the client received every event, in order.")


SCENARIO = Scenario(
    name="removed-shard",
    title="A shard drains and leaves mid-stream",
    lesson="A shard's departure takes nothing from a running stream: its chunks move with writes the streams "
           "never show, the router sees it leave config.shards and only swallows that event, and the removed "
           "shard's cursor stays in the merge (its mongod keeps running).",
    setup="3 shards; db.c sharded on k (k < 100 on shard00, k < 200 on shard01, k >= 200 on shard02); "
          "shard02 is removed at 3–5 s; --instant-hwm (see cold-shard).",
    run=run,
    shards=3,
    options={"instant_hwm": True},
    focus="swallowed",
    modules=("router/remove_shard.py", "router/balancer.py", "router/merge/handle_topology_change.py",
             "router/shard_registry.py"),
)
