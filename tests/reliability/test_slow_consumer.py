"""A slow consumer does not grow the router without bound.

The router fetches from a shard only when the client asks (getMore) and only
for shards whose buffer is empty, so while a consumer does not read, the
router buffers nothing: the backlog stays in the shards' oplogs (bounded by
--oplog-size-mb).  When it reads, the router holds at most one shard batch per
shard (<= 16 MB, and <= the client's batchSize events), and every reply stops
short of 16 MB, as the server's batches do.
"""

from __future__ import annotations

import time

import pymongo
import trio
import trio.testing

from mongosim.core import open_cluster
from mongosim.testing import AsyncClient
from mongosim.oplog import bsonutil
from mongosim.router.merge.cluster_change_stream import _nbytes
from mongosim.router.server import _encode_reply
from mongosim.shardsim.changestream.cursor import BATCH_BYTES
from tests.reliability.proc import ServerProcess

EPOCH = 1_700_000_000
MB = 1024 * 1024
PAD = "x" * 10_000


async def _four_shards(client: AsyncClient, ns: str = "b.c") -> None:
    db = ns.split(".")[0]
    await client.admin({"enableSharding": db, "primaryShard": "shard00"})
    await client.admin({"shardCollection": ns, "key": {"k": 1}})
    for i in range(1, 4):
        await client.admin({"split": ns, "middle": {"k": 1000 * i}})
        await client.admin({"moveChunk": ns, "find": {"k": 1000 * i}, "to": f"shard0{i}"})


def _doc(d) -> dict:
    return bsonutil.decode(d) if isinstance(d, (bytes, bytearray)) else bsonutil.decode(d.raw)


def _buffered(core, cursor_id: int) -> tuple[int, int]:
    cur = core.router.cursors._cursors.get(cursor_id)
    if cur is None:
        return 0, 0
    events = [r for rc in cur.arm.remotes for r in rc.buffer]
    return len(events), sum(_nbytes(r[2]) for r in events)


def test_router_buffers_are_bounded_for_a_slow_consumer():
    async def main() -> None:
        async with open_cluster(shards=4, listen=False, epoch=EPOCH, instant_hwm=True) as core:
            client = AsyncClient(core.router)
            await _four_shards(client)
            for batch_size in (None, 50):
                cmd = {"aggregate": "c", "pipeline": [{"$changeStream": {}}], "cursor": {}}
                cid = (await client.command("b", cmd))["cursor"]["id"]
                start = len(await client.find("b", "c")) if batch_size is None else 10_000
                for i in range(4000):  # ~40 MB of events while the consumer reads nothing
                    await client.insert("b", "c", [{"k": (i % 4) * 1000 + i // 4, "i": start + i, "pad": PAD}])
                assert _buffered(core, cid) == (0, 0)  # nothing fetched for it meanwhile
                seen = []
                peak_events = peak_bytes = 0
                while len(seen) < 4000:
                    gm = {"getMore": cid, "collection": "c"}
                    if batch_size:
                        gm["batchSize"] = batch_size
                    reply = await client.command("b", gm)
                    wire_reply = _encode_reply(dict(reply), 1)
                    assert len(wire_reply) < 16 * MB + 16 * 1024, "the reply would not fit in one message"
                    docs = reply["cursor"]["nextBatch"]
                    assert sum(_nbytes(d) for d in docs) <= BATCH_BYTES
                    seen += [_doc(d)["fullDocument"]["i"] for d in docs]
                    n, b = _buffered(core, cid)
                    peak_events, peak_bytes = max(peak_events, n), max(peak_bytes, b)
                assert seen == list(range(start, start + 4000))
                if batch_size:
                    # a remote is asked only while it holds less than its ask, and for at most its ask,
                    # which is at most the client's batch: two client batches per remote at most
                    assert peak_events <= 2 * batch_size * 4
                assert peak_bytes <= 4 * BATCH_BYTES
                print(f"\nslow consumer (batchSize={batch_size}): router buffer peak {peak_events} events, "
                      f"{peak_bytes / MB:.1f} MB")
                await client.command("b", {"killCursors": "c", "cursors": [cid]})

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def _rss(srv: ServerProcess) -> float:
    return srv.rss_bytes() / MB


def test_pymongo_consumer_40mb_behind_reads_everything_and_rss_stays_bounded():
    with ServerProcess("--shards", "4", "--instant-hwm") as srv:
        client = pymongo.MongoClient(srv.uri, serverSelectionTimeoutMS=10000)
        client.admin.command("enableSharding", "b", primaryShard="shard00")
        client.admin.command("shardCollection", "b.c", key={"k": 1})
        for i in range(1, 4):
            client.admin.command("split", "b.c", middle={"k": 1000 * i})
            client.admin.command("moveChunk", "b.c", find={"k": 1000 * i}, to=f"shard0{i}")
        rss0 = _rss(srv)
        with client.b.c.watch() as stream:
            for j in range(40):
                client.b.c.insert_many([{"k": (i % 4) * 1000 + i // 4, "i": j * 100 + i, "pad": PAD}
                                        for i in range(100)])
            rss_written = _rss(srv)
            got = []
            peak = rss_written
            t0 = time.time()
            while len(got) < 4000 and time.time() - t0 < 120:
                ev = stream.try_next()
                if ev is not None:
                    got.append(ev["fullDocument"]["i"])
                if len(got) % 500 == 0:
                    peak = max(peak, _rss(srv))
        rss_end = _rss(srv)
        print(f"\nRSS: {rss0:.0f} MB before, {rss_written:.0f} MB after writing 40 MB unread, "
              f"peak {peak:.0f} MB while a consumer caught up, {rss_end:.0f} MB after")
        assert sorted(got) == list(range(4000)) and len(got) == 4000
        # the writes themselves cost ~2 x 40 MB (documents + oplog); catching up adds buffers, not backlog
        assert peak - rss_written < 4 * 16 + 40, (rss_written, peak)
        client.close()
