"""The in-process `mongosim.Cluster` from an asyncio program: `async with Cluster(...)` starts and stops it
without blocking the event loop, and pymongo's AsyncMongoClient reads its change streams."""

from __future__ import annotations

import asyncio

from pymongo import AsyncMongoClient

import mongosim


def test_an_asyncio_program_runs_a_cluster_and_watches_it():
    async def main() -> tuple[list, int, list]:
        ticks = 0

        async def ticker() -> None:  # the loop keeps running while the cluster starts and stops
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        tick_task = asyncio.create_task(ticker())
        async with mongosim.Cluster(shards=2, instant_hwm=True) as cluster:
            started_ticks = ticks
            async with AsyncMongoClient(cluster.uri) as client:
                await client.admin.command("enableSharding", "shop")
                await client.admin.command("shardCollection", "shop.orders", key={"_id": "hashed"})
                orders = client.shop.orders
                async with await orders.watch() as stream:
                    await orders.insert_many([{"_id": i} for i in range(6)])
                    events = [await stream.next() for _ in range(6)]
                await asyncio.to_thread(cluster.faults.delay, "shard01", 0.01)  # the sync API, off the loop
                assert await orders.count_documents({}) == 6
                dropped = await asyncio.to_thread(cluster.reset)
        tick_task.cancel()
        assert not cluster.running
        return events, started_ticks, dropped

    events, started_ticks, dropped = asyncio.run(main())
    assert sorted(e["documentKey"]["_id"] for e in events) == list(range(6))
    assert {e["operationType"] for e in events} == {"insert"}
    assert started_ticks > 0, "the event loop ran while the cluster started"
    assert dropped == ["shop"]
