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
