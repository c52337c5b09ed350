"""invalidate: dropping the collection ends a collection stream.

Every shard that has the collection logs a `drop`, but only the database's
primary shard logs a user-visible one: the others' are `fromMigrate` and the
oplog filter skips them.  On the primary, the check-invalidate stage emits
the drop event, then an `invalidate` event (the drop's token with
fromInvalidate), and its cursor ends.  The router releases both in order —
the drop still waits for the other remotes' promises — and closes the stream.
`resumeAfter` the invalidate token is refused; `startAfter` it opens a new
stream that begins after the invalidation.
"""

from __future__ import annotations

from mongosim.demo.base import Demo, Scenario


async def run(d: Demo) -> None:
    await d.watch("db", "c")
    await d.at(1.0)
    await d.insert({"_id": 1, "k": 5})
    await d.at(2.0)
    await d.insert({"_id": 2, "k": 105})
    await d.at(3.0)
    d.did("drops the collection db.c")
    await d.client.command("db", {"drop": "c"})
    events = await d.wait_for_events(4, within=30)
    await d.at(4.0)
    invalidates = [e for e in events if e["operationType"] == "invalidate"]
    d.facts["invalidate_token"] = invalidates[0]["_id"] if invalidates else None
    d.facts["stream_closed"] = d.stream is not None and d.stream.cursor_id == 0
    if not invalidates:
        return
    token = invalidates[0]["_id"]
    d.did("tries to resume after the invalidate token (resumeAfter)")
    err = await d.expect_error(d.client.command("db", {"aggregate": "c", "pipeline": [
        {"$changeStream": {"resumeAfter": token}}], "cursor": {}}))
    d.facts["resume_after_error"] = err.code_name if err else None
    if err is not None:
        d.did(f"is refused: {err.code_name} ({err.code}) — an invalidate token cannot be resumed after",
              who="router")
    await d.at(5.0)
    await d.stop_reading()
    await d.watch("db", "c", startAfter=token)
    await d.at(6.0)
    await d.insert({"_id": 3, "k": 5})
    await d.wait_for_events(len(events) + 1, within=30)
    await d.at(7.0)


SCENARIO = Scenario(
    name="invalidate",
    title="An invalidate ends the stream",
    lesson="Dropping the collection: the primary shard emits drop then invalidate (the other shards' drops are "
           "internal); the router releases them in order and closes the stream; startAfter the token reopens it.",
    setup="2 shards; db.c sharded on k (k < 100 on shard00, k >= 100 on shard01); a collection stream on db.c; "
          "--instant-hwm (see cold-shard).",
    run=run,
    options={"instant_hwm": True},
    modules=("shardsim/changestream/check_invalidate.py", "router/merge/cluster_change_stream.py"),
)
