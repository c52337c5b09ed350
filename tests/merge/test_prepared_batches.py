"""Preparing the next batch between getMores (ClusterChangeStreamCursor._prepare) changes no reply.

The router releases, while the client decodes a batch, the runs the gate
already allows into the next one.  Claim: every getMore returns the same events
and the same postBatchResumeToken as a router that releases only inside the
getMore — whatever the shards, the writes between getMores, and the batch
sizes (a getMore may ask for fewer events than its predecessor: the prepared
events it does not take wait for the next one, and the token never passes them).
"""

from __future__ import annotations

import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from mongosim.core import open_cluster
from mongosim.oplog.bsonutil import plain
from mongosim.router.merge.cluster_change_stream import ClusterChangeStreamCursor
from mongosim.testing import AsyncClient
from tests.merge.test_merge_properties import shard_coll

EPOCH = 1_700_000_000

steps = st.lists(
    st.tuples(
        st.lists(st.integers(0, 399), max_size=12),  # writes before this getMore (shard-key values)
        st.sampled_from([None, 1, 2, 3, 5, 8, 20]),  # its batchSize
    ),
    min_size=1,
    max_size=12,
)


async def _replies(n_shards: int, upfront: list[int], plan: list, first_batch: int, prepare: bool) -> list:
    """(events' _data, PBRT) of every reply of one stream read with `plan`."""
    async with open_cluster(shards=n_shards, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await shard_coll(c, sorted(core.shards))
        serial = iter(range(10**6))
        opened = await c.command("db", {"aggregate": "c", "pipeline": [{"$changeStream": {}}],
                                        "cursor": {"batchSize": first_batch}})
        cid = opened["cursor"]["id"]
        cur = core.router.cursors._cursors[cid]
        assert isinstance(cur, ClusterChangeStreamCursor)
        if not prepare:
            cur._prepare = lambda: None
        replies = [([plain(d)["_id"]["_data"] for d in opened["cursor"]["firstBatch"]],
                    opened["cursor"]["postBatchResumeToken"]["_data"])]
        if upfront:
            await c.insert("db", "c", [{"_id": next(serial), "k": k} for k in upfront])
        replies += await play(c, cid, plan, serial)
        uuid = await collection_uuid(c)
        return [([k.replace(uuid, "UUID") for k in batch], pbrt.replace(uuid, "UUID")) for batch, pbrt in replies]


async def play(c: AsyncClient, cid: int, plan: list, serial) -> list:
    """Each step of `plan`: its writes (shard-key values; `_id`s from `serial`), then a getMore of its
    batchSize, once the read-ahead has run; every reply as (events' _data, PBRT)."""
    replies = []
    for writes, batch_size in plan:
        await trio.testing.wait_all_tasks_blocked()  # the read-ahead (and the preparing) has run
        if writes:
            await c.insert("db", "c", [{"_id": next(serial), "k": k} for k in writes])
        gm = {"getMore": cid, "collection": "c", "maxTimeMS": 10}
        if batch_size is not None:
            gm["batchSize"] = batch_size
        cursor = (await c.command("db", gm))["cursor"]
        replies.append(([plain(d)["_id"]["_data"] for d in cursor["nextBatch"]], cursor["postBatchResumeToken"]["_data"]))
    return replies


async def collection_uuid(c: AsyncClient) -> str:
    """db.c's UUID as the hex in its tokens (random: tests name it alike in both runs)."""
    info = await c.command("db", {"listCollections": 1, "filter": {"name": "c"}})
    return info["cursor"]["firstBatch"][0]["info"]["uuid"].hex().upper()


@given(n_shards=st.integers(1, 4), upfront=st.lists(st.integers(0, 399), max_size=40), plan=steps,
       first_batch=st.sampled_from([1, 2, 5, 10]))
@settings(max_examples=int(__import__("os").environ.get("MERGE_EXAMPLES", "60")), deadline=None)
def test_prepared_batches_are_the_batches_the_getmores_would_release(n_shards, upfront, plan, first_batch):
    def run(prepare: bool) -> list:
        return trio.run(_replies, n_shards, upfront, plan, first_batch, prepare,
                        clock=trio.testing.MockClock(autojump_threshold=0))

    with_prepare, without = run(True), run(False)
    assert with_prepare == without
    keys = [k for batch, _ in with_prepare for k in batch]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    returned = 0
    for (batch, pbrt), (_, size) in zip(with_prepare[1:], plan):
        assert size is None or len(batch) <= size
        returned += len(batch)
        if batch:
            assert pbrt >= batch[-1]
        assert all(pbrt < k for k in keys[returned:]), "the token passed an event not yet returned"
