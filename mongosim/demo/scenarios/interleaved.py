"""interleaved: three shards' streams become one, ordered by cluster time.

Five inserts land on three shards (1 s apart) while the client is not
reading.  When it reads, the router asks every shard: each answers with its
own events, in its own order, plus a promise.  The router's heap always
takes the smallest resume token (cluster time first) among the buffered
events — so the client gets 1, 2, 3, 4, 5, interleaved across the shards —
and only once every shard has answered: until then, a missing answer could
still hold something earlier.
"""

from __future__ import annotations

from mongosim.demo.base import Demo, Scenario


async def run(d: Demo) -> None:
    await d.watch("db", "c", read=False)
    d.say("The client does not read yet: the router asks the shards nothing until the client's next getMore.")
    for i, k in enumerate([5, 105, 205, 6, 106], start=1):
        await d.at(float(i))
        await d.insert({"_id": i, "k": k})
    await d.at(6.0)
    d.did("reads the stream (getMore)")
    d.start_reading(d.stream)
    await d.wait_for_events(5, within=30)
    await d.at(7.0)


SCENARIO = Scenario(
    name="interleaved",
    title="Interleaved shards: one stream, ordered by cluster time",
    lesson="The router merges the shards' streams by resume token (cluster time first), and only once every "
           "shard has answered — so events from all shards come out in one global order.",
    setup="3 shards; db.c sharded on k (k < 100 on shard00, 100-199 on shard01, >= 200 on shard02); "
          "--instant-hwm, so that waiting for idle shards is not part of this story (see cold-shard).",
    run=run,
    shards=3,
    options={"instant_hwm": True},
    focus="-reply",
    modules=("router/merge/async_results_merger.py", "router/merge/cluster_change_stream.py"),
)
