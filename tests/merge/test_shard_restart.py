"""A shard restarting under an in-flight getMore must not wedge the merged stream (found by the stateful test)."""

import trio

from mongosim.core import open_cluster
from mongosim.testing import AsyncClient
from tests.changestream.conftest import drain


async def test_restart_during_an_awaiting_get_more_resumes_cleanly(autojump_clock):
    async with open_cluster(shards=2, listen=False, epoch=1_700_000_000, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await c.insert("db", "c", [{"_id": 0}])
        cs = c.watch("db", 1, max_await_time_ms=500)
        await cs.open()
        async with trio.open_nursery() as nursery:
            got = []

            async def reader():
                got.extend(await drain(cs, 2))

            nursery.start_soon(reader)
            await trio.sleep(0.1)  # the router's getMores are now parked in the shards' awaitData
            for name in core.shards:
                core.faults.restart(name)
            await c.insert("db", "c", [{"_id": 1}])
            await c.insert("db", "c", [{"_id": 2}])
        assert [e["documentKey"]["_id"] for e in got] == [1, 2]
        assert cs.resumes >= 1
