"""The scenario tests run on the pytest plugin's shared cluster (3 shards here), reset before each test."""

import time
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items):
    """Every test in this folder uses a 3-shard cluster (a marker on the test itself still wins)."""
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.mongosim(shards=3))


@pytest.fixture
def cluster(mongosim_cluster):
    return mongosim_cluster


@pytest.fixture
def client(mongosim_client):
    return mongosim_client


def shard_three_ways(client, ns: str = "s.c") -> None:
    """`ns` sharded on {k: 1}: shard00 owns k < 100, shard01 [100, 200), shard02 k >= 200."""
    db = ns.split(".")[0]
    client.admin.command("enableSharding", db, primaryShard="shard00")
    client.admin.command("shardCollection", ns, key={"k": 1})
    for i in (1, 2):
        client.admin.command("split", ns, middle={"k": 100 * i})
        client.admin.command("moveChunk", ns, find={"k": 100 * i}, to=f"shard0{i}")


def read(stream, n: int, timeout: float = 10.0) -> list[dict]:
    out = []
    t0 = time.time()
    while len(out) < n and time.time() - t0 < timeout:
        ev = stream.try_next()
        if ev is not None:
            out.append(ev)
    return out


def read_quiet(stream, seconds: float = 0.5) -> list[dict]:
    """Whatever arrives within `seconds` (to check that nothing does)."""
    out = []
    t0 = time.time()
    while time.time() - t0 < seconds:
        ev = stream.try_next()
        if ev is not None:
            out.append(ev)
    return out
