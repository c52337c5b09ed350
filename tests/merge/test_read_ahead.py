"""Which remotes the merge asks for more (AsyncResultsMerger.needs_fetch).

The server's rule is an empty buffer; after answering its client mongosim also
reads ahead from remotes holding less than one client batch.  Either way a
remote with a request in flight, an exhausted one or a failed one is not asked.
"""

from __future__ import annotations

from mongosim.oplog.errors import MongoError
from mongosim.router.merge.async_results_merger import AsyncResultsMerger, RemoteCursor
from mongosim.shardsim.changestream.event_batch import OP_TYPES_FIELD, SORT_KEYS_FIELD


def _merger(buffered: list[int]) -> AsyncResultsMerger:
    arm = AsyncResultsMerger()
    key = iter(range(10**6))
    for i, n in enumerate(buffered):
        keys = [f"82{next(key):016X}" for _ in range(n)]
        arm.add_remote(RemoteCursor(f"s{i}", None, i + 1, "db.c"), [b""] * n,
                       {SORT_KEYS_FIELD: keys, OP_TYPES_FIELD: ["insert"] * n}, {"_data": f"82{next(key):016X}"}, False)
    return arm


def test_the_servers_rule_is_an_empty_buffer():
    assert _merger([0, 3, 0, 7]).needs_fetch() == [0, 2]


def test_reading_ahead_asks_remotes_holding_less_than_a_batch():
    arm = _merger([0, 3, 5, 7])
    assert arm.needs_fetch(5) == [0, 1]
    assert arm.needs_fetch(8) == [0, 1, 2, 3]


def test_never_a_remote_in_flight_exhausted_or_failed():
    arm = _merger([0, 0, 0, 0])
    arm.remotes[0].pending = True
    arm.remotes[1].exhausted = True
    arm.remotes[2].error = MongoError("HostUnreachable", "gone")
    assert arm.needs_fetch(100) == [3]


def test_reading_ahead_asks_remotes_holding_less_than_their_ask():
    arm = _merger([0, 3, 5, 7])
    for rc, ask in zip(arm.remotes, (None, 2, 6, 6)):
        rc.ask = ask
    # below min(client batch, ask); no ask yet: the client's batch
    assert arm.needs_fetch(5, read_ahead=True) == [0]
    assert arm.needs_fetch(8, read_ahead=True) == [0, 2]


def test_before_the_first_batch_each_shard_is_asked_twice_its_even_share():
    arm = _merger([0] * 64)
    assert [arm.ask_for(rc, 1000) for rc in arm.remotes] == [32] * 64  # not 64 x 1000 rendered before one goes
    assert arm.ask_for(arm.remotes[0], 10) == 1  # at least one
    one = _merger([0])
    assert one.ask_for(one.remotes[0], 1000) == 1000  # up to two shards: the client's batch, as the server asks
    two = _merger([0] * 2)
    assert two.ask_for(two.remotes[0], 100) == 100
    assert _merger([0] * 8).ask_for(two.remotes[0], 100) == 25


def test_then_four_times_what_it_gave_to_the_last_client_batch_within_bounds():
    from mongosim.router.merge.async_results_merger import MIN_ASK

    arm = _merger([900, 300, 10, 0])
    arm.remotes[0].buffer.advance(600)  # released to the client: 600, 150, 10, 0
    arm.remotes[1].buffer.advance(150)
    arm.remotes[2].buffer.advance(10)
    arm.size_requests(1000)
    assert [rc.ask for rc in arm.remotes] == [1000, 600, MIN_ASK, MIN_ASK]  # capped by the batch, floored
    arm.remotes[1].buffer.advance(MIN_ASK // 2 + 10)
    arm.size_requests(1000)  # counted from the last sizing
    assert [rc.ask for rc in arm.remotes] == [MIN_ASK, 2 * MIN_ASK + 40, MIN_ASK, MIN_ASK]
    # a smaller client batch: never more than it (the router's buffers stay bounded by it)
    assert [arm.ask_for(rc, 20) for rc in arm.remotes] == [20] * 4
    arm.size_requests(20)
    assert [rc.ask for rc in arm.remotes] == [20] * 4


def test_one_read_ahead_asks_the_most_depleted_remotes_for_two_client_batches_at_most():
    from mongosim.router.merge.async_results_merger import READ_AHEAD_BATCHES

    arm = _merger([10 * (i % 7) for i in range(64)])  # 64 remotes below their ask, drained alike
    for rc in arm.remotes:
        rc.ask = 256
    chosen = [i for i, ask in arm.read_ahead_round(1000) if ask == 256]
    assert len(chosen) == READ_AHEAD_BATCHES * 1000 // 256  # not all 64 (16,000 events) at once
    held = [len(arm.remotes[i].buffer) for i in chosen]
    assert max(held) <= min(len(rc.buffer) for i, rc in enumerate(arm.remotes) if i not in chosen)
    assert _merger([5, 0, 3]).read_ahead_round(4) == [(1, 3), (2, 3)]  # (no ask yet: the even share, 3 each)


def test_the_router_reads_ahead_after_a_batch_it_had_to_wait_for():
    """A getMore that found the buffers empty waits for the remotes; once its reply has left, the
    router asks again the remotes holding less than their ask, as after a batch released at once
    (without it the stream would go on waiting remote by remote, one shard round trip per batch):
    the most depleted first, within READ_AHEAD_BATCHES client batches."""
    import trio
    import trio.testing

    from mongosim.core import open_cluster
    from mongosim.router.merge.async_results_merger import READ_AHEAD_BATCHES, RUNWAY_BATCHES
    from mongosim.router.server import ConnState, run_after_reply
    from mongosim.testing import AsyncClient
    from tests.reliability.test_slow_consumer import _four_shards

    async def main() -> None:
        async with open_cluster(shards=4, listen=False, epoch=1_700_000_000, instant_hwm=True) as core:
            client = AsyncClient(core.router)
            await _four_shards(client)
            conn = ConnState(99, "test")
            opened = await core.router.run_command("b", {"aggregate": "c", "pipeline": [{"$changeStream": {}}],
                                                         "cursor": {"batchSize": 50}}, conn)
            run_after_reply(conn)
            cid = opened["cursor"]["id"]
            assert opened["cursor"]["firstBatch"] == []
            await client.insert("b", "c", [{"k": (i % 4) * 1000 + i // 4} for i in range(400)])
            cur = core.router.cursors._cursors[cid]
            shards = [rc for rc in cur.arm.remotes if not rc.is_config]
            assert all(len(rc.buffer) == 0 for rc in shards)  # nothing buffered: this getMore waits
            reply = await core.router.run_command("b", {"getMore": cid, "collection": "c", "batchSize": 50}, conn)
            assert 0 < len(reply["cursor"]["nextBatch"]) <= 50
            await trio.testing.wait_all_tasks_blocked()
            before = [len(rc.buffer) for rc in shards]
            assert not any(rc.pending for rc in shards)  # the read-ahead waits for the reply to leave
            run_after_reply(conn)  # the reply has left
            await trio.testing.wait_all_tasks_blocked()
            grew = [len(rc.buffer) - b for rc, b in zip(shards, before)]
            asked = [i for i, g in enumerate(grew) if g]
            # within the budget, plus what the remotes about to run dry lack to last their runway
            assert asked and sum(grew) <= (READ_AHEAD_BATCHES + RUNWAY_BATCHES) * 50
            mean = sum(rc.took for rc in shards) / len(shards)
            dry = [i for i, rc in enumerate(shards) if before[i] < RUNWAY_BATCHES * max(rc.took, mean)]
            depleted = sorted(set(range(4)) - set(dry), key=lambda i: (before[i] / shards[i].ask, i))
            assert asked == sorted(dry + depleted[:len(asked) - len(dry)]), (before, grew)  # then the most depleted
            for _ in range(6):  # and the others at the next getMores
                await client.command("b", {"getMore": cid, "collection": "c", "batchSize": 50})
                await trio.testing.wait_all_tasks_blocked()
            assert cur.arm.needs_fetch(50, read_ahead=True) == []

    trio.run(main)


def test_a_remote_about_to_run_dry_is_asked_whatever_the_budget():
    """Remotes drained alike run dry together: one left out of the read-ahead would hold the gate,
    and the next getMores would go out short.  Each one holding fewer than RUNWAY_BATCHES client
    batches at its pace is asked: for its whole ask while the budget lasts (those with the most
    batches left), the others for a runway's worth."""
    from mongosim.router.merge.async_results_merger import READ_AHEAD_BATCHES, RUNWAY_BATCHES

    arm = _merger([40] * 32 + [20] * 32)  # 64 remotes that each gave 16 events to the last batch of 1000
    for rc in arm.remotes:
        rc.ask, rc.took = 256, 16
    round_ = arm.read_ahead_round(1000)
    whole = READ_AHEAD_BATCHES * 1000 // 256  # 7 whole asks fit the budget
    # none left to run dry: the most urgent topped up (first: small, they land soonest), whole asks
    # to those that can wait longest for them
    assert round_ == [(i, RUNWAY_BATCHES * 16) for i in range(32, 64 - whole)] + \
        [(i, 256) for i in range(64 - whole, 64)]
    # few of them: each asked for its whole ask, the rest of the budget going to the most depleted others
    arm = _merger([40] * 60 + [20] * 4)
    for rc in arm.remotes:
        rc.ask, rc.took = 256, 16
    round_ = arm.read_ahead_round(1000)
    assert round_[:4] == [(i, 256) for i in range(60, 64)]
    assert len(round_) == whole
    # the pace is the remotes' mean when that is more than what it gave (one batch is a rough guess)
    arm = _merger([20] * 4)
    for rc, took in zip(arm.remotes, (4, 20, 20, 20)):
        rc.ask, rc.took = 50, took
    assert sorted(i for i, _ask in arm.read_ahead_round(100)) == [0, 1, 2, 3]  # 20 < 2 x 16 for the first too


def test_many_shards_drained_alike_fill_every_batch():
    """A stream over 16 shards whose events interleave evenly: once the first batch is out, every
    batch is full to the end (the read-ahead keeps every remote ahead of the gate)."""
    import trio
    import trio.testing

    from mongosim.core import open_cluster
    from mongosim.router.server import ConnState, run_after_reply
    from mongosim.testing import AsyncClient

    async def main() -> None:
        async with open_cluster(shards=16, listen=False, epoch=1_700_000_000, instant_hwm=True) as core:
            client = AsyncClient(core.router)
            await client.admin({"enableSharding": "b"})
            await client.admin({"shardCollection": "b.c", "key": {"_id": "hashed"}})
            conn = ConnState(99, "test")

            async def run(cmd: dict) -> dict:
                reply = await core.router.run_command("b", cmd, conn)
                run_after_reply(conn)
                await trio.testing.wait_all_tasks_blocked()
                return reply

            opened = await run({"aggregate": "c", "pipeline": [{"$changeStream": {}}], "cursor": {"batchSize": 200}})
            for k in range(0, 6000, 1000):
                await client.insert("b", "c", [{"_id": i} for i in range(k, k + 1000)])
            cid, sizes = opened["cursor"]["id"], []
            while sum(sizes) < 6000:
                sizes.append(len((await run({"getMore": cid, "collection": "c", "batchSize": 200}))["cursor"]["nextBatch"]))
            assert sizes[1:] == [200] * (len(sizes) - 1), sizes

    trio.run(main)
