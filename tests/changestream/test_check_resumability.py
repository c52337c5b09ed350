"""Check-resumability's shortcut: an event of a later clusterTime than the client's token
surpasses it without decoding the event's token (CheckResumability._compare).

That holds only if every event's `ts_key` is its token's clusterTime.  Random workloads (those of
test_batch_render: every CRUD kind, transactions, DDL, migrations, a drop), every stream level and
option, split events, read from the start and resumed from an event: each comparison the stage
makes is checked against the full one, and the event's ts_key against its decoded token.
"""

from __future__ import annotations

import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from mongosim.core import open_cluster
from mongosim.oplog.clock import ts_key
from mongosim.oplog.errors import MongoError
from mongosim.oplog.resume_token import decode_resume_token
from mongosim.shardsim.changestream.check_resumability import CheckResumability, compare_against_client_token
from tests.changestream.test_batch_render import EPOCH, STREAMS, _drain, ids, resumed_after, shard_streams, steps


async def _check(id_values, script, sharded, drop, stream, split) -> int:
    checked = 0
    shortcut = CheckResumability._compare

    def compare(self, ev):
        nonlocal checked
        checked += 1
        assert ev.ts_key == ts_key(decode_resume_token(ev.token).cluster_time)
        got = shortcut(self, ev)
        assert got == compare_against_client_token(decode_resume_token(ev.token), self.client_token)
        return got

    CheckResumability._compare = compare
    try:
        async with open_cluster(shards=2, listen=False, epoch=EPOCH) as core:
            for _name, node, cmd in await shard_streams(core, id_values, script, sharded, drop, stream, True, split):
                keys = [k for b in _drain(node, cmd, False, [5]) for k in b[1]]
                for key in keys[:: max(1, len(keys) // 4)]:
                    try:
                        _drain(node, resumed_after(cmd, key), False, [5])
                    except MongoError:  # e.g. a collection stream resumed after its invalidate
                        continue
    finally:
        CheckResumability._compare = shortcut
    return checked


@given(id_values=st.lists(ids, min_size=1, max_size=6, unique_by=lambda x: (type(x).__name__, str(x))), script=steps,
       sharded=st.booleans(), drop=st.booleans(), stream=st.sampled_from(STREAMS), split=st.booleans())
@settings(max_examples=100, deadline=None)
def test_the_shortcut_agrees_with_the_full_comparison(id_values, script, sharded, drop, stream, split):
    trio.run(_check, id_values, script, sharded, drop, stream, split,
             clock=trio.testing.MockClock(autojump_threshold=0))


def test_the_shortcut_is_taken():
    """A workload with events: the comparisons were made (the test above checks something)."""
    script = [("insert", n, n, 1, False) for n in range(4)] + [("txn", 0, 3, 1, False)]
    assert trio.run(_check, [1, 2, 3, 4], script, True, False, STREAMS[0], False,
                    clock=trio.testing.MockClock(autojump_threshold=0)) > 0
