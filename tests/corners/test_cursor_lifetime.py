"""A change stream's getMore on virtual time: it waits through oplog entries that are not its events
(no early empty batch), and an idle cursor is reaped after cursorTimeoutMillis (10 minutes)."""

from __future__ import annotations

import pytest
import trio

from mongosim.core import open_cluster
from mongosim.oplog.bsonutil import plain
from mongosim.testing import AsyncClient, CommandError

TOPOLOGIES = pytest.mark.parametrize("topology", ["sharded", "replset"])


def _cluster(topology: str, instant_hwm: bool):
    return open_cluster(topology=topology, shards=2, listen=False, epoch=1_700_000_000, instant_hwm=instant_hwm)


@TOPOLOGIES
@pytest.mark.parametrize("instant_hwm", [True, False])
def test_get_more_waits_through_entries_that_are_not_events(autojump_clock, topology, instant_hwm):
    async def body():
        async with _cluster(topology, instant_hwm) as core:
            reader, writer = AsyncClient(core.frontend), AsyncClient(core.frontend)
            await writer.insert("w", "a", [{"_id": 0}])
            await writer.insert("w", "b", [{"_id": 0}])
            cs = reader.watch("w", "a")
            await cs.open()

            async def write():
                for i in (1, 2, 3):  # writes the stream does not show
                    await trio.sleep(1)
                    await writer.insert("w", "b", [{"_id": i}])
                await trio.sleep(1)
                await writer.insert("w", "a", [{"_id": 1}])

            async with trio.open_nursery() as nursery:
                nursery.start_soon(write)
                t0 = trio.current_time()
                reply = await reader.command("w", {"getMore": cs.cursor_id, "collection": "a", "maxTimeMS": 30_000})
                waited = trio.current_time() - t0
            batch = reply["cursor"]["nextBatch"]
            # with only other writes, a getMore runs out its maxTimeMS before answering empty
            t0 = trio.current_time()
            await writer.insert("w", "b", [{"_id": 4}])
            empty = await reader.command("w", {"getMore": cs.cursor_id, "collection": "a", "maxTimeMS": 2_000})
            return [plain(e)["documentKey"] for e in batch], waited, empty["cursor"]["nextBatch"], trio.current_time() - t0
    keys, waited, empty, empty_waited = trio.run(body, clock=autojump_clock)
    assert keys == [{"_id": 1}]
    if topology == "replset" or instant_hwm:
        assert 4.0 <= waited < 5.0
    else:  # the event also waits for the idle shard's promise (its periodic noop, every 10 s)
        assert 4.0 <= waited <= 30.0
    assert empty == [] and 2.0 <= empty_waited < 3.0


@TOPOLOGIES
def test_an_idle_change_stream_cursor_is_reaped(autojump_clock, topology):
    async def body():
        async with _cluster(topology, True) as core:
            c = AsyncClient(core.frontend)
            await c.insert("r", "c", [{"_id": 0}])
            kept, idle = c.watch("r", "c"), c.watch("r", "c")
            await kept.open()
            await idle.open()
            for _ in range(4):  # 20 minutes, a getMore every 5
                await trio.sleep(300)
                await c.command("r", {"getMore": kept.cursor_id, "collection": "c", "maxTimeMS": 10})
            await c.insert("r", "c", [{"_id": 1}])
            more = await c.command("r", {"getMore": kept.cursor_id, "collection": "c", "maxTimeMS": 1000})
            with pytest.raises(CommandError) as ei:
                await c.command("r", {"getMore": idle.cursor_id, "collection": "c"})
            return [plain(e) for e in more["cursor"]["nextBatch"]], ei.value.code
    batch, code = trio.run(body, clock=autojump_clock)
    assert [e["documentKey"] for e in batch] == [{"_id": 1}]
    assert code == 43  # CursorNotFound


@TOPOLOGIES
def test_reaped_within_seconds_of_the_timeout(autojump_clock, topology):
    """The server's cursor monitor looks every 4 s (clientCursorMonitorFrequencySecs)."""
    async def body():
        async with _cluster(topology, True) as core:
            c = AsyncClient(core.frontend)
            cs = c.watch("r", "c")
            await cs.open()
            await trio.sleep(330)
            await c.command("r", {"getMore": cs.cursor_id, "collection": "c", "maxTimeMS": 10})  # still there
            await trio.sleep(598)
            await c.command("r", {"getMore": cs.cursor_id, "collection": "c", "maxTimeMS": 10})  # still there
            await trio.sleep(606)
            with pytest.raises(CommandError) as ei:
                await c.command("r", {"getMore": cs.cursor_id, "collection": "c"})
            return ei.value.code
    assert trio.run(body, clock=autojump_clock) == 43
