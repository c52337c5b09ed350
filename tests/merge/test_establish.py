"""Opening a merged stream: mongos retries a shard's retriable error when it establishes the
cursors (establishCursors, RetryPolicy kIdempotent, up to 3 retries); other errors reach the client.
(Found by the stateful test: two dropped connections on two shards failed a driver's open twice.)"""

import pytest

from mongosim.core import open_cluster
from mongosim.testing import AsyncClient
from mongosim.router.merge.cluster_change_stream import OPEN_RETRIES


async def _open(core) -> dict:
    c = AsyncClient(core.router)
    return await c.command("db", {"aggregate": "c", "pipeline": [{"$changeStream": {}}], "cursor": {}}, check=False)


@pytest.mark.parametrize("drops", [1, OPEN_RETRIES])
async def test_dropped_connections_while_opening_are_retried_by_the_router(autojump_clock, drops):
    async with open_cluster(shards=2, listen=False, epoch=1_700_000_000) as core:
        for name in core.shards:
            core.faults.drop_connection(name, times=drops)
        reply = await _open(core)
        assert reply["ok"] == 1.0 and reply["cursor"]["id"] != 0


async def test_past_the_retries_or_a_non_retriable_error_reaches_the_client(autojump_clock):
    async with open_cluster(shards=2, listen=False, epoch=1_700_000_000) as core:
        core.faults.drop_connection("shard01", times=OPEN_RETRIES + 1)
        reply = await _open(core)
        assert reply["ok"] == 0 and reply["codeName"] == "HostUnreachable"
        assert "ResumableChangeStreamError" in reply.get("errorLabels", [])
    async with open_cluster(shards=2, listen=False, epoch=1_700_000_000) as core:
        core.faults.fail("shard00", times=1, code=2)  # BadValue: not retriable
        reply = await _open(core)
        assert reply["ok"] == 0 and reply["code"] == 2
