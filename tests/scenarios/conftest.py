import time

import pymongo
import pytest

from mongosim import Cluster


@pytest.fixture(scope="module")
def cluster():
    with Cluster(shards=3, port=0, instant_hwm=True) as c:
        yield c


@pytest.fixture
def client(cluster):
    cl = pymongo.MongoClient(cluster.uri, serverSelectionTimeoutMS=5000)
    yield cl
    for name in cl.list_database_names():
        if name not in ("admin", "config", "local"):
            cl.drop_database(name)
    cl.close()


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
