"""A `$_passthroughToShard` change stream reads ahead (router/store_possible_cursor.py).

Once a batch carrying events has left, the router asks the shard for the next
one without awaiting; the next getMore answers from it.  Claims, whatever the
writes between getMores and the batch sizes (a getMore may ask for fewer events
than the one before): the events are the shard's stream, in order, once each;
no batch is larger than its batchSize; every postBatchResumeToken is at or past
its batch's last event and before every event not yet returned; and the stream
is the same as read with no read-ahead.
"""

from __future__ import annotations

import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from mongosim.core import open_cluster
from mongosim.oplog.bsonutil import plain
from mongosim.router.store_possible_cursor import ShardPassthroughCursor
from mongosim.testing import AsyncClient
from tests.merge.test_merge_properties import shard_coll
from tests.merge.test_prepared_batches import collection_uuid, play

EPOCH = 1_700_000_000

steps = st.lists(
    st.tuples(st.lists(st.integers(0, 199), max_size=12),  # writes before this getMore (k < 200: shard00 or 01)
              st.sampled_from([None, 1, 2, 3, 5, 8, 20])),  # its batchSize
    min_size=1, max_size=12)


async def _read(upfront: list[int], plan: list, ahead: bool) -> tuple[list, list]:
    """(every reply's (events' _data, PBRT), the shard's own stream) for one per-shard stream on shard00."""
    async with open_cluster(shards=2, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await shard_coll(c, sorted(core.shards))
        serial = iter(range(10**6))
        opened = await c.command("db", {"aggregate": "c", "pipeline": [{"$changeStream": {}}], "cursor": {},
                                        "$_passthroughToShard": {"shard": "shard00"}})
        cid = opened["cursor"]["id"]
        cur = core.router.cursors._cursors[cid]
        assert isinstance(cur, ShardPassthroughCursor) and cur.nursery is not None
        if not ahead:
            cur.nursery = None
        start = opened["cursor"]["postBatchResumeToken"]
        if upfront:
            await c.insert("db", "c", [{"_id": next(serial), "k": k} for k in upfront])
        replies = await play(c, cid, plan, serial)
        whole = await c.command("db", {"aggregate": "c", "pipeline": [{"$changeStream": {"resumeAfter": start}}],
                                       "cursor": {"batchSize": 10_000}, "$_passthroughToShard": {"shard": "shard00"}})
        stream = [plain(d)["_id"]["_data"] for d in whole["cursor"]["firstBatch"]]
        if not stream:
            gm = await c.command("db", {"getMore": whole["cursor"]["id"], "collection": "c", "maxTimeMS": 10})
            stream = [plain(d)["_id"]["_data"] for d in gm["cursor"]["nextBatch"]]
        uuid = await collection_uuid(c)
        norm = lambda k: k.replace(uuid, "UUID")  # noqa: E731
        return [([norm(k) for k in b], norm(p)) for b, p in replies], [norm(k) for k in stream]


@given(upfront=st.lists(st.integers(0, 199), max_size=40), plan=steps)
@settings(max_examples=int(__import__("os").environ.get("MERGE_EXAMPLES", "60")), deadline=None)
def test_a_per_shard_stream_read_ahead_is_the_shards_stream(upfront, plan):
    def run(ahead: bool):
        return trio.run(_read, upfront, plan, ahead, clock=trio.testing.MockClock(autojump_threshold=0))

    (replies, stream), (plain_replies, _) = run(True), run(False)
    got = [k for batch, _ in replies for k in batch]
    assert got == stream[:len(got)]  # in order, once each
    without = [k for batch, _ in plain_replies for k in batch]
    assert without == stream[:len(without)]  # (the same stream: only where the batches end may differ)
    returned = 0
    for (batch, pbrt), (_, size) in zip(replies, plan):
        assert size is None or len(batch) <= size
        returned += len(batch)
        if batch:
            assert pbrt >= batch[-1]
        assert all(pbrt < k for k in stream[returned:]), "the token passed an event not yet returned"
