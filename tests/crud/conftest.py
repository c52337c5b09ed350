"""Fixtures of the CRUD tests: one cluster per topology for the whole session.

Every test that takes `client` runs twice: against a sharded cluster (through
mongos, two shards) and against a replica-set endpoint (the node answers).
`sharded_client` is the sharded one alone, for tests of mongos's targeting.
"""

from __future__ import annotations

import pymongo
import pytest

from mongosim import Cluster

TOPOLOGIES = ("sharded", "replset")


@pytest.fixture(scope="session")
def clusters():
    started: dict[str, Cluster] = {}
    yield started
    for c in started.values():
        c.stop()


def _cluster(clusters: dict, topology: str) -> Cluster:
    if topology not in clusters:
        clusters[topology] = Cluster(shards=2, port=0, topology=topology, instant_hwm=True).start()
    return clusters[topology]


def _client(cluster: Cluster):
    cl = pymongo.MongoClient(cluster.uri, serverSelectionTimeoutMS=5000)
    cl.mongosim_cluster = cluster
    return cl


def _cleanup(cl) -> None:
    # (listDatabases lists a database holding a collection; config.databases also knows those that
    # enableSharding or movePrimary left without one)
    names = set(cl.list_database_names()) | {d["_id"] for d in cl.config.databases.find({}, {"_id": 1})}
    for name in sorted(names - {"admin", "config", "local"}):
        cl.drop_database(name)
    cl.close()


@pytest.fixture(params=TOPOLOGIES)
def client(request, clusters):
    cl = _client(_cluster(clusters, request.param))
    cl.topology_name = request.param
    yield cl
    _cleanup(cl)


@pytest.fixture
def sharded_client(clusters):
    cl = _client(_cluster(clusters, "sharded"))
    yield cl
    _cleanup(cl)


@pytest.fixture
def replset_client(clusters):
    cl = _client(_cluster(clusters, "replset"))
    yield cl
    _cleanup(cl)


def shard_two_ways(client, ns: str = "s.c", key: str = "k", split: int = 100) -> None:
    """`ns` sharded on {key: 1}: shard00 owns key < split, shard01 the rest."""
    db = ns.split(".")[0]
    client.admin.command("enableSharding", db, primaryShard="shard00")
    client.admin.command("shardCollection", ns, key={key: 1})
    client.admin.command("split", ns, middle={key: split})
    client.admin.command("moveChunk", ns, find={key: split}, to="shard01")


def in_thread(fn) -> tuple:
    """Run `fn()` in a thread (a command that waits); returns (thread, outcome): outcome["value"] is
    what it returned, outcome["err"] the OperationFailure it raised."""
    import threading

    from pymongo.errors import OperationFailure

    outcome: dict = {}

    def run() -> None:
        try:
            outcome["value"] = fn()
        except OperationFailure as e:
            outcome["err"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, outcome


def wait_for_op(client, query: dict, what: str) -> list[dict]:
    """Poll the currentOp command until an operation matching `query` shows (it starts in another
    thread: no sleep, a bounded number of polls)."""
    for _ in range(2000):
        ops = client.admin.command({"currentOp": 1, **query})["inprog"]
        if ops:
            return ops
    raise AssertionError(f"{what} never showed in currentOp")
