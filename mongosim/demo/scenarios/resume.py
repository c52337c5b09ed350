"""resume: from an event's resume token, and from a postBatchResumeToken (a high-water mark).

An event token names one event: every shard restarts its oplog scan at the
event's cluster time; the shard that produced it finds it again and hands it
over (check-resumability), and the router's ensure-resume-token-present stage
checks it is in the stream and drops it — the client gets exactly the events
after it.  A high-water-mark token is a point in time, not an event: every
shard starts there and there is nothing to find.
"""

from __future__ import annotations

from mongosim.demo.base import Demo, Scenario
from mongosim.demo.fmt import key_label


async def run(d: Demo) -> None:
    stream = await d.watch("db", "c")
    for i, k in enumerate([5, 105, 6], start=1):
        await d.at(float(i))
        await d.insert({"_id": i, "k": k})
    events = await d.wait_for_events(3, within=30)
    token = events[1]["_id"]
    d.facts["event_token"] = token
    zero = int(round(d.trace.cluster_zero))
    d.say(f"The client keeps the resume token of the 2nd event, {key_label(token['_data'], zero)}.")
    await d.at(5.5)
    pbrt = stream.resume_token
    d.facts["pbrt_token"] = pbrt
    d.say(f"Nothing happened since 3 s; the client's resume token is now the postBatchResumeToken "
          f"{key_label(pbrt['_data'], zero)} — a high-water mark, not an event.")
    await d.stop_reading()
    d.did("closes the stream (say, the application restarts)")
    await d.at(6.0)
    await d.insert({"_id": 4, "k": 106})
    await d.at(7.0)
    n = len(d.received)
    await d.watch("db", "c", resumeAfter=token)
    await d.wait_for_events(n + 2, within=30)
    d.facts["after_event_token"] = [e["_id"]["_data"] for _t, e in d.received[n:]]
    await d.at(8.0)
    await d.stop_reading()
    n = len(d.received)
    await d.watch("db", "c", resumeAfter=pbrt)
    await d.wait_for_events(n + 1, within=30)
    d.facts["after_pbrt"] = [e["_id"]["_data"] for _t, e in d.received[n:]]
    await d.at(9.0)


SCENARIO = Scenario(
    name="resume",
    title="Resuming from an event token and from a postBatchResumeToken",
    lesson="Resume from an event's token: the shards replay from its cluster time and the router drops that "
           "event after checking it is there; resume from a PBRT: a point in time, every shard simply starts there.",
    setup="2 shards; db.c sharded on k (k < 100 on shard00, k >= 100 on shard01); --instant-hwm (see cold-shard).",
    run=run,
    options={"instant_hwm": True},
    modules=("shardsim/changestream/check_resumability.py", "router/merge/ensure_resume_token_present.py",
             "mongosim/testing/client.py"),
)
