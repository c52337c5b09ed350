"""pytest plugin (entry point `mongosim`): a mongosim cluster for your tests, as pytest-mongo and
mongodb-memory-server users expect.

    def test_orders_stream(mongosim_client):
        orders = mongosim_client.shop.orders
        with orders.watch() as stream:
            orders.insert_one({"_id": 1})
            assert stream.next()["operationType"] == "insert"

Fixtures
    mongosim_cluster       the running `mongosim.Cluster` for this test, reset before it
    mongosim_uri           its connection string
    mongosim_client        a `pymongo.MongoClient` on it (a new one per test, closed after)
    mongosim_async_client  a `pymongo.AsyncMongoClient` on it (a new one per test; closed after on
                           the event loop that used it — or close it yourself: `async with client:`)

One cluster serves the whole session (starting one costs ~40 ms); before each test that uses a
fixture it is reset (`mongosim.reset`: user databases dropped, cursors killed, transactions ended,
faults and failpoints cleared — a millisecond or so), unless the test opts out with
`@pytest.mark.mongosim(reset=False)`. Tests that ask for other options get a cluster of their own
options, shared in the same way; `isolated=True` gives a test a cluster to itself, stopped after it
(for a test that adds shards). Instant high-water mark is on by default in tests: an idle shard does
not hold a change event back for its noop interval (README, "Cold shards").

Configuration: a marker beats a command-line flag, which beats an ini option, which beats the default.

    ini option (pytest.ini, [tool.pytest.ini_options])  command-line flag             marker keyword
    mongosim_shards = 2                                   --mongosim-shards N           shards=
    mongosim_routers = 1                                  --mongosim-routers R          routers=
    mongosim_members = 1                                  --mongosim-members M          members=
    mongosim_arbiters = 0                                 --mongosim-arbiters A         arbiters=
    mongosim_topology = sharded | replset                 --mongosim-topology T         topology=
    mongosim_instant_hwm = true                           --mongosim-instant-hwm,       instant_hwm=
                                                          --mongosim-no-instant-hwm
    mongosim_noop_interval = 10                           --mongosim-noop-interval S    noop_interval=
    mongosim_host = 127.0.0.1                             --mongosim-host H             host=
    mongosim_port = 0  (any free port)                    --mongosim-port P             port=
    mongosim_reset = true                                 --mongosim-no-reset           reset=
                                                                                        isolated=
    and, in the marker, any other `ClusterOptions` field (oplog_size_mb=, event_cache=, auth=, ...).

    @pytest.mark.mongosim(shards=3, topology="sharded", instant_hwm=False, noop_interval=1)
    def test_cold_shard(mongosim_client): ...

A marker on a module (`pytestmark`) or class applies to its tests; the closest marker wins per keyword.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator

import pytest

_INI: dict[str, tuple[str, str, Any]] = {  # ini name -> (help, type, default)
    "mongosim_shards": ("mongosim: number of shards of the test cluster", "string", "2"),
    "mongosim_routers": ("mongosim: number of mongos routers of the test cluster", "string", "1"),
    "mongosim_members": ("mongosim: members of each replica set (each shard, the config server)", "string", "1"),
    "mongosim_arbiters": ("mongosim: arbiters of each shard's replica set (members=2, arbiters=1: PSA)", "string",
                          "0"),
    "mongosim_topology": ("mongosim: sharded or replset", "string", "sharded"),
    "mongosim_instant_hwm": ("mongosim: idle shards promise at once (no cold-shard latency)", "bool", True),
    "mongosim_noop_interval": ("mongosim: seconds between periodic noop writes", "string", "10"),
    "mongosim_host": ("mongosim: address the test cluster listens on", "string", "127.0.0.1"),
    "mongosim_port": ("mongosim: port of the test cluster (0: any free port)", "string", "0"),
    "mongosim_reset": ("mongosim: reset the cluster before each test that uses it", "bool", True),
}
_CASTS = {"shards": int, "routers": int, "members": int, "arbiters": int, "noop_interval": float, "port": int, "topology": str, "host": str}
_PLUGIN_KEYS = ("reset", "isolated")


def pytest_addoption(parser: pytest.Parser) -> None:
    for name, (help_text, kind, default) in _INI.items():
        parser.addini(name, help_text, type=kind, default=default)
    group = parser.getgroup("mongosim", "mongosim test cluster")
    group.addoption("--mongosim-shards", type=int, default=None, metavar="N", help="number of shards")
    group.addoption("--mongosim-routers", type=int, default=None, metavar="R",
                    help="number of mongos routers (cluster.uri names them all)")
    group.addoption("--mongosim-members", type=int, default=None, metavar="M",
                    help="members of each replica set (each shard, the config server)")
    group.addoption("--mongosim-arbiters", type=int, default=None, metavar="A",
                    help="arbiters of each shard's replica set (--mongosim-members 2 --mongosim-arbiters 1: PSA)")
    group.addoption("--mongosim-topology", choices=["sharded", "replset"], default=None)
    group.addoption("--mongosim-instant-hwm", dest="mongosim_instant_hwm", action="store_true", default=None,
                    help="idle shards promise at once (the default in tests)")
    group.addoption("--mongosim-no-instant-hwm", dest="mongosim_instant_hwm", action="store_false",
                    help="faithful cold-shard latency: idle shards promise only with their noop writes")
    group.addoption("--mongosim-noop-interval", type=float, default=None, metavar="S")
    group.addoption("--mongosim-host", default=None, metavar="H")
    group.addoption("--mongosim-port", type=int, default=None, metavar="P", help="0: any free port")
    group.addoption("--mongosim-no-reset", dest="mongosim_reset", action="store_false", default=None,
                    help="do not reset the cluster between tests")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "mongosim(shards=2, topology='sharded', instant_hwm=True, reset=True, isolated=False, **options): "
        "the mongosim cluster this test's fixtures use (options: mongosim.ClusterOptions fields)")


def _settings(config: pytest.Config, node: pytest.Item) -> dict[str, Any]:
    """The cluster options and plugin switches for one test: default < ini < command line < marker."""
    settings: dict[str, Any] = {}
    for name in _INI:
        key = name[len("mongosim_"):]
        value = config.getini(name)
        settings[key] = _CASTS[key](value) if key in _CASTS else value
        flag = config.getoption(name, default=None)
        if flag is not None:
            settings[key] = flag
    settings["isolated"] = False
    fields = {f.name for f in dataclasses.fields(_cluster_options())}
    for marker in reversed(list(node.iter_markers("mongosim"))):  # farthest first: the closest wins
        if marker.args:
            pytest.fail(f"{node.nodeid}: @pytest.mark.mongosim takes keywords only, e.g. shards=3", pytrace=False)
        for key in marker.kwargs:
            if key not in fields and key not in _PLUGIN_KEYS:
                pytest.fail(f"{node.nodeid}: unknown @pytest.mark.mongosim option {key!r} "
                            f"(one of: {', '.join(sorted(fields | set(_PLUGIN_KEYS)))})", pytrace=False)
        settings.update(marker.kwargs)
    return settings


def _cluster_options() -> Any:
    from mongosim.core import ClusterOptions

    return ClusterOptions


def import_server_modules() -> None:
    """Import, in this (the test) thread, every module the cluster's thread could import lazily.

    pytest rewrites the asserts of every module of a plugin's distribution, mongosim's included, as
    they are imported, and CPython 3.11's parser is not safe when two threads build ASTs at once
    ("SystemError: AST constructor recursion depth mismatch"): a module the server imports on its
    first request of some kind must not be parsed while pytest parses a test module."""
    import importlib
    import pkgutil

    import mongosim.oplog
    import mongosim.router
    import mongosim.shardsim

    for pkg in (mongosim.router, mongosim.shardsim, mongosim.oplog):
        for module in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            importlib.import_module(module.name)
    for name in ("reset", "status", "faults", "durability", "command_log", "trace", "testing.client"):
        importlib.import_module(f"mongosim.{name}")


def start_cluster(options: dict[str, Any]) -> Any:
    from mongosim.cluster import Cluster

    import_server_modules()
    return Cluster(**options).start()


class ClusterPool:
    """The session's clusters, one per distinct set of options, started on first use."""

    def __init__(self) -> None:
        self._clusters: dict[str, Any] = {}

    def get(self, options: dict[str, Any]) -> Any:
        key = repr(sorted(options.items()))
        cluster = self._clusters.get(key)
        if cluster is None or not cluster.running:
            if cluster is not None:
                cluster.stop()  # it died: re-raises why
            cluster = self._clusters[key] = start_cluster(options)
        return cluster

    def close(self) -> None:
        clusters, self._clusters = list(self._clusters.values()), {}
        for cluster in clusters:
            cluster.stop()


@pytest.fixture(scope="session")
def mongosim_pool() -> Iterator[ClusterPool]:
    """The session's clusters (see `ClusterPool`); stopped when the session ends."""
    pool = ClusterPool()
    yield pool
    pool.close()


@pytest.fixture
def mongosim_cluster(request: pytest.FixtureRequest, mongosim_pool: ClusterPool) -> Iterator[Any]:
    """The running `mongosim.Cluster` for this test (configured by ini, flags and the marker), reset first."""
    settings = _settings(request.config, request.node)
    reset, isolated = settings.pop("reset"), settings.pop("isolated")
    if isolated:
        cluster = start_cluster(settings)
        try:
            yield cluster
        finally:
            cluster.stop()
        return
    cluster = mongosim_pool.get(settings)
    if reset:
        cluster.reset()
    yield cluster


@pytest.fixture
def mongosim_uri(mongosim_cluster: Any) -> str:
    """The connection string of the test's cluster."""
    return mongosim_cluster.uri


@pytest.fixture
def mongosim_client(mongosim_uri: str) -> Iterator[Any]:
    """A synchronous `pymongo.MongoClient` connected to the test's cluster, closed after the test."""
    import pymongo

    client = pymongo.MongoClient(mongosim_uri)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def mongosim_async_client(mongosim_uri: str) -> Iterator[Any]:
    """A `pymongo.AsyncMongoClient` connected to the test's cluster (asyncio).

    It connects on first use, on the test's event loop. After the test it is closed on that loop if the
    loop is still open (pytest-asyncio and anyio keep it open past the test); a test that runs its own
    loop (`asyncio.run`) closes it there: `async with mongosim_async_client as client: ...`.
    """
    from pymongo import AsyncMongoClient

    client = AsyncMongoClient(mongosim_uri)
    try:
        yield client
    finally:
        _close_async_client(client)


def _close_async_client(client: Any) -> None:
    import asyncio

    if getattr(client, "_closed", False):
        return
    loop = getattr(client, "_loop", None)  # pymongo >= 4.11 binds a client to the loop of its first use
    if loop is None:  # never used, or pymongo < 4.11 (not bound to a loop)
        asyncio.run(client.close())
    elif not loop.is_closed() and not loop.is_running():
        loop.run_until_complete(client.close())
    # else: the test's loop is gone with the client's tasks; pymongo warns about the unclosed client
