"""failover: shard00's primary is cut off, takes a w:1 write no majority holds, and rolls it back.

Every shard is a 3-member replica set.  A change stream through the router
reads each shard's primary, which returns only majority-committed events: it
reads its oplog up to the commit point it knows, and its promise (the
postBatchResumeToken) never passes it.  shard00's primary is partitioned from
its secondaries; for an election timeout it still believes it is primary and
acknowledges a `w: 1` insert that only it holds.  The commit point cannot
move, so the stream never shows that insert.  After the election timeout the
two secondaries elect a new primary (a new term) and the old one steps down.
The router sends the next writes to the new primary; the stream's cursor on
shard00 fails resumably and the client resumes from its last token, now on
the new primary.  When the partition heals the old primary finds it has
entries the new primary lacks: it rolls back to the common point, and the
insert is gone.  The client got every majority-acknowledged write exactly
once, in order, and never the rolled-back one.
"""

from __future__ import annotations

import trio

from mongosim.demo.base import Demo, Scenario


async def run(d: Demo) -> None:
    rs = d.core.replica_sets["shard00"]
    await d.watch("db", "c")
    await d.at(1.0)
    await d.insert({"_id": 1, "k": 5})
    await d.at(2.0)
    await d.insert({"_id": 2, "k": 150})
    await d.wait_for_events(2, within=30)
    await d.at(3.0)
    old = d.core.faults.partition("shard00", "primary")
    d.did(f"cuts shard00's primary {old} off from its two secondaries (a network partition)", who="scenario")
    d.facts["old_primary"] = old
    await d.at(4.0)
    reply = await d.insert({"_id": 3, "k": 6}, writeConcern={"w": 1})
    d.facts["w1_acknowledged"] = reply.get("ok") == 1 and reply.get("n") == 1 and "writeConcernError" not in reply
    op = reply["operationTime"]
    d.facts["w1_ts"] = (op.time << 32) | op.inc
    d.say("w: 1 — the cut-off primary acknowledges the insert; no secondary has it, so the majority commit "
          "point stays before it and no change stream may show it.")
    await d.wait_for_events(3, within=10)
    d.facts["seen_before_election"] = [e["documentKey"]["_id"] for _t, e in d.received]
    while rs.primary is None or rs.primary.host == old:
        await rs.changed.park()
    new = rs.primary.host
    d.facts["new_primary"] = new
    d.facts["elected_at"] = trio.current_time()
    d.say(f"After the election timeout (10 s) the secondaries elect {new} (term {rs.term}); {old}, alone, "
          f"steps down. The router now sends shard00's writes to {new}; the stream's shard00 cursor is still on "
          f"{old}, whose promise stays at the last commit point it knew — so the gate holds shard01's events.")
    await d.at(16.0)
    await d.insert({"_id": 4, "k": 7})
    await d.at(17.0)
    await d.insert({"_id": 5, "k": 160})
    await d.at(18.0)
    d.core.faults.heal("shard00")
    d.did(f"heals the partition: {old} rejoins as a secondary", who="scenario")
    while not rs.rollbacks:
        await rs.changed.park()
    removed = [e.get("o", {}).get("_id") for e in rs.rollbacks[-1]["removed"] if e["op"] == "i"]
    d.facts["rolled_back"] = removed
    d.say(f"{old} has an entry the new primary lacks: it rolls back to their common point (insert _id:3 is "
          f"gone) and closes its connections. The router's cursor there fails resumably; the client resumes from "
          f"its resume token, and shard00's new cursor reads from {new}.")
    await d.wait_for_events(4, within=30)
    await d.at(24.0)
    d.facts["received"] = [e["documentKey"]["_id"] for _t, e in d.received]
    d.facts["resumes"] = d.stream.resumes if d.stream is not None else 0
    docs = await d.client.find("db", "c", {})
    d.facts["documents"] = sorted(doc["_id"] for doc in docs)
    d.say("The client received every majority-acknowledged write once, in order — never the rolled-back one.")


SCENARIO = Scenario(
    name="failover",
    title="A primary is cut off, a new one is elected, a w:1 write rolls back",
    lesson="A change stream shows only majority-committed events, so a write the cut-off primary acknowledged "
           "with w: 1 never appears; the stream resumes on the newly elected primary and the old one rolls the "
           "write back when it rejoins.",
    setup="2 shards, each a 3-member replica set; db.c sharded on k (k < 100 on shard00, k >= 100 on shard01); "
          "election timeout 10 s; --instant-hwm (see cold-shard).",
    run=run,
    options={"members": 3, "instant_hwm": True},
    modules=("shardsim/replica_set.py", "shardsim/topology_coordinator.py", "shardsim/rollback.py",
             "shardsim/changestream/cursor.py", "mongosim/testing/client.py"),
)
