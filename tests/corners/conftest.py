"""The seed corners of change streams (issue 15), through pymongo, in the topologies where each applies.

`BOTH` parametrizes a test over a sharded cluster (the plugin's shared cluster,
2 shards) and a replica set; `read` pulls events with a deadline.
"""

from __future__ import annotations

import time

import pytest

BOTH = pytest.mark.parametrize("topology", [
    pytest.param("sharded", marks=pytest.mark.mongosim(topology="sharded")),
    pytest.param("replset", marks=pytest.mark.mongosim(topology="replset")),
])


def read(stream, n: int, timeout: float = 10.0) -> list[dict]:
    """The next `n` events of `stream` (fewer if they do not come within `timeout` seconds)."""
    out: list[dict] = []
    t0 = time.time()
    while len(out) < n and time.time() - t0 < timeout:
        ev = stream.try_next()
        if ev is not None:
            out.append(ev)
    return out
