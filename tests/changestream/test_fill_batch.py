"""A shard's large getMore is pulled in slices with checkpoints between them (ChangeStreamCursor.fill_batch).

The batch is the same as one pulled in a single go; other tasks (another client's
command, the router answering from its buffers) run between the slices.
"""

from __future__ import annotations

import trio

from mongosim.core import open_cluster
from mongosim.shardsim.changestream import cursor as cursor_mod

N = 1000


async def _stream(node, start) -> int:
    reply = await node.run_command("db", {"aggregate": "c", "pipeline": [{"$changeStream": {"startAtOperationTime": start}}],
                                          "cursor": {"batchSize": 0}})
    return reply["cursor"]["id"]


async def _loaded(core):
    node = next(iter(core.shards.values()))
    start = node.operation_time()
    await node.run_command("db", {"insert": "c", "documents": [{"_id": i} for i in range(N)]})
    return node, start


async def test_a_large_batch_lets_other_tasks_run_and_is_unchanged(autojump_clock, monkeypatch):
    async with open_cluster(shards=1, listen=False, epoch=1_700_000_000, event_cache=0) as core:
        node, start = await _loaded(core)
        sliced, whole = await _stream(node, start), await _stream(node, start)
        started, ran_meanwhile, done = trio.Event(), [], []

        async def get_more():
            started.set()
            reply = await node.run_command("db", {"getMore": sliced, "collection": "c", "batchSize": N})
            done.append(reply["cursor"]["nextBatch"])

        async def other():
            await started.wait()
            while not done:
                ran_meanwhile.append(len(done))
                await trio.lowlevel.checkpoint()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(other)
            nursery.start_soon(get_more)
        assert len(ran_meanwhile) >= N // cursor_mod.SLICE - 1  # once per slice, at least

        monkeypatch.setattr(cursor_mod, "SLICE", 10**9)  # the same read in one go
        one_go = await node.run_command("db", {"getMore": whole, "collection": "c", "batchSize": N})
        assert [bytes(r) for r in done[0]] == [bytes(r) for r in one_go["cursor"]["nextBatch"]]
        assert len(done[0]) == N


async def test_slices_stop_at_the_end_of_the_oplog(autojump_clock):
    async with open_cluster(shards=1, listen=False, epoch=1_700_000_000) as core:
        node, start = await _loaded(core)
        cid = await _stream(node, start)
        reply = await node.run_command("db", {"getMore": cid, "collection": "c", "batchSize": 5 * N, "maxTimeMS": 10})
        assert len(reply["cursor"]["nextBatch"]) == N  # no wait for a full batch: the oplog ends
