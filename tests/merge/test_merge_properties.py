"""The router's merge under random schedules, delays and clock skews (virtual time).

Claims (issue 5): the merged stream is sorted by `_data`, has no duplicates and
equals the union of the shard streams; every postBatchResumeToken is monotone
and never exceeds a later event's token; resuming from any returned token or
PBRT yields exactly the remaining suffix.
"""

from __future__ import annotations

import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from mongosim.core import open_cluster
from mongosim.testing import AsyncClient
from mongosim.router.replset import ReplSetFrontend
from mongosim.router.sharding import add_shard
from mongosim.oplog.bsonutil import plain

EPOCH = 1_700_000_000


async def shard_coll(c: AsyncClient, shards: list[str]) -> None:
    """`db.c` sharded on {k: 1}; shard i owns k in [100*i, 100*(i+1))."""
    await c.admin({"enableSharding": "db", "primaryShard": shards[0]})
    await c.admin({"shardCollection": "db.c", "key": {"k": 1}})
    for i, s in enumerate(shards[1:], start=1):
        await c.admin({"split": "db.c", "middle": {"k": 100 * i}})
        await c.admin({"moveChunk": "db.c", "find": {"k": 100 * i}, "to": s})


ops = st.lists(
    st.tuples(
        st.sampled_from(["insert", "update", "delete", "insert", "update", "addShard"]),
        st.integers(0, 7),  # document number
        st.integers(0, 399),  # shard-key region (k // 100 is the shard)
        st.floats(0, 2.0),  # virtual seconds before the write
    ),
    min_size=1,
    max_size=25,
)


async def collect_shard_streams(core, start) -> list[str]:
    """Each shard's own stream (replica-set style, straight from the node), merged."""
    keys: list[str] = []
    for node in core.shards.values():
        c = AsyncClient(ReplSetFrontend(node, core.router.identity))
        reply = await c.command("db", {"aggregate": "c", "pipeline": [{"$changeStream": {"startAtOperationTime": start}}],
                                       "cursor": {"batchSize": 10_000}})
        keys.extend(plain(d)["_id"]["_data"] for d in reply["cursor"]["firstBatch"])
    return sorted(keys)


async def scenario(n_shards, schedule, delays, skews, instant, batch_size, await_ms):
    opts = dict(shards=n_shards, listen=False, epoch=EPOCH, instant_hwm=instant, noop_interval=1.0,
                skews={f"shard{i:02d}": s for i, s in enumerate(skews)})
    async with open_cluster(**opts) as core:
        c = AsyncClient(core.router)
        names = sorted(core.shards)
        await shard_coll(c, names)
        for i, d in enumerate(delays):
            core.router.shard(names[i]).set_delay(d)
        live: dict[int, int] = {}  # doc number -> k
        expected = 0
        cs = c.watch("db", "c", batch_size=batch_size, max_await_time_ms=await_ms)
        await cs.open()
        start = cs.initial_operation_time
        received: list[dict] = []
        tokens: list[tuple[str, str]] = []  # ("event"|"pbrt", _data) in the order the client saw them

        added = 0

        async def writer():
            nonlocal expected, added
            for op, n, k, wait in schedule:
                await trio.sleep(wait)
                if op == "addShard" and added < 2:
                    # a new shard joins mid-stream and takes the chunk [1000*(j+1), +inf)
                    added += 1
                    name = f"new{added}"
                    await add_shard(core.router, name)
                    await c.admin({"split": "db.c", "middle": {"k": 1000 * added}})
                    await c.admin({"moveChunk": "db.c", "find": {"k": 1000 * added}, "to": name})
                    continue
                if op == "insert" and n not in live:
                    if added and n % 2:
                        k = 1000 * added + k  # lands on the newest shard
                    await c.insert("db", "c", [{"_id": n, "k": k}])
                    live[n] = k
                    expected += 1
                    continue
                    pass
                elif op == "update" and n in live:
                    await c.update("db", "c", {"_id": n, "k": live[n]}, {"$inc": {"v": 1}})
                elif op == "delete" and n in live:
                    await c.delete("db", "c", {"_id": n, "k": live.pop(n)}, limit=1)
                else:
                    continue
                expected += 1

        async with trio.open_nursery() as nursery:
            done = trio.Event()

            async def run_writer():
                await writer()
                done.set()

            nursery.start_soon(run_writer)
            while not (done.is_set() and len(received) == expected):
                ev = await cs.try_next()
                if ev is not None:
                    received.append(ev)
                    tokens.append(("event", ev["_id"]["_data"]))
                elif cs.resume_token is not None:
                    tokens.append(("pbrt", cs.resume_token["_data"]))
                assert trio.current_time() < 600, "stream stalled"
        keys = [e["_id"]["_data"] for e in received]
        assert keys == sorted(keys), "merged stream out of order"
        assert len(set(keys)) == len(keys), "duplicate events"
        assert keys == await collect_shard_streams(core, start), "merged stream != union of shard streams"
        # PBRTs are monotone and never exceed a later event's token
        seen = [t for _kind, t in tokens]
        assert seen == sorted(seen), "resume token went backwards"
        # resuming from any token or PBRT yields exactly the suffix
        for _kind, tok in tokens[:: max(1, len(tokens) // 6)]:
            suffix = [k for k in keys if k > tok]
            r = c.watch("db", "c", resumeAfter={"_data": tok}, batch_size=1000, max_await_time_ms=await_ms)
            await r.open()
            got: list[str] = []
            while len(got) < len(suffix):
                ev = await r.try_next()
                if ev is not None:
                    got.append(ev["_id"]["_data"])
                assert trio.current_time() < 1200, "resumed stream stalled"
            assert got == suffix
            await r.close()
        await cs.close()


@given(
    n_shards=st.integers(1, 4),
    schedule=ops,
    delays=st.lists(st.sampled_from([0.0, 0.0, 0.05, 0.7]), min_size=4, max_size=4),
    skews=st.lists(st.integers(-20, 20), min_size=4, max_size=4),
    instant=st.booleans(),
    batch_size=st.sampled_from([None, 1, 2, 5]),
    await_ms=st.sampled_from([100, 500, 1000]),
)
@settings(max_examples=int(__import__("os").environ.get("MERGE_EXAMPLES", "100")))
def test_merged_stream_properties(n_shards, schedule, delays, skews, instant, batch_size, await_ms):
    trio.run(scenario, n_shards, schedule, delays[:n_shards], skews[:n_shards], instant, batch_size, await_ms,
             clock=trio.testing.MockClock(autojump_threshold=0))
