"""`mongosim.Cluster`: the whole emulated cluster in the background of a synchronous (or asyncio) program.

    with mongosim.Cluster(shards=3, instant_hwm=True) as cluster:
        client = pymongo.MongoClient(cluster.uri)

    async with mongosim.Cluster(shards=3, instant_hwm=True) as cluster:     # from asyncio
        client = pymongo.AsyncMongoClient(cluster.uri)

The cluster runs on its own trio event loop in one background thread
(`mongosim.background_loop`, the only thread mongosim starts; everything inside
it is single-threaded trio), so it serves a synchronous program and an asyncio
program alike: their clients reach it over TCP on `cluster.uri`.
`cluster.call(fn, *args)` runs a function on that loop — that is how the
fault-injection API (`cluster.faults`), `reset()` and tests reach in safely.
"""

from __future__ import annotations

from typing import Any, Callable

from mongosim.background_loop import BackgroundLoop
from mongosim.core import ClusterCore, ClusterOptions, open_cluster


class Cluster:
    """A running emulated cluster (`start()`/`stop()`, or a `with` / `async with` block).

    `Cluster(shards=2, **options)`: the options are `ClusterOptions` fields (`topology`, `port`,
    `instant_hwm`, `noop_interval`, ...); the port defaults to 0 (any free port: read `uri`).
    """

    def __init__(self, shards: int = 2, **kwargs: Any) -> None:
        self.options = ClusterOptions(shards=shards, **kwargs)
        self._loop: BackgroundLoop | None = None
        self.core: ClusterCore | None = None

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> "Cluster":
        """Start the cluster (its event loop thread, nodes, router and listener); returns self."""
        loop = BackgroundLoop(name="mongosim").start()
        try:
            self.core = loop.enter(open_cluster(options=self.options))
        except BaseException:
            loop.close()
            raise
        self._loop = loop
        return self

    def stop(self) -> None:
        """Shut the cluster down (its own shutdown, then the loop); re-raises a crash."""
        loop, self._loop = self._loop, None
        if loop is not None:
            loop.close()

    @property
    def running(self) -> bool:
        """True between `start()` and `stop()` while the event loop is alive."""
        return self._loop is not None and self._loop.alive

    def __enter__(self) -> "Cluster":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    async def __aenter__(self) -> "Cluster":
        """`async with Cluster(...)`: starts in a worker thread, so the asyncio loop keeps running."""
        import asyncio

        return await asyncio.to_thread(self.start)

    async def __aexit__(self, *exc: Any) -> None:
        import asyncio

        await asyncio.to_thread(self.stop)

    # -- access ---------------------------------------------------------------------------
    @property
    def uri(self) -> str:
        """The connection string (`mongodb://127.0.0.1:PORT/`, with `?replicaSet=rs0` for a replica set)."""
        assert self.core is not None, "cluster not started"
        return self.core.uri

    @property
    def port(self) -> int:
        """The port it listens on (the one picked when `port=0`)."""
        assert self.core is not None, "cluster not started"
        return self.core.port

    @property
    def router_uris(self) -> list[str]:
        """One URI per mongos router (router00, router01, ...), for a client that must use one router;
        `uri` names them all."""
        assert self.core is not None, "cluster not started"
        return self.core.router_uris

    def replica_set_uri(self, name: str) -> str:
        """The connection string of one replica set: a shard's (`shard00`), the config server's
        (`config`), or the replset topology's: `mongodb://h:p1,h:p2,h:p3/?replicaSet=shard00`."""
        assert self.core is not None, "cluster not started"
        return self.core.replica_set_uri(name)

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run `fn(*args, **kwargs)` (sync or async) on the cluster's event loop and return its result."""
        assert self._loop is not None, "cluster not started"

        async def runner() -> Any:
            r = fn(*args, **kwargs)
            if hasattr(r, "__await__"):
                r = await r
            return r

        return self._loop.run(runner)

    def reset(self) -> list[str]:
        """Drop every user database, kill every cursor, end open transactions, clear faults and failpoints
        (what the pytest fixtures do between tests; see `mongosim.reset`). Returns the databases dropped."""
        from mongosim.reset import reset_cluster

        return self.call(reset_cluster, self.core)

    # -- fault injection (see mongosim.faults) ----------------------------------------------
    @property
    def faults(self) -> "OnLoop":
        """The cluster's `FaultInjector`, each method run on the cluster's loop:
        `cluster.faults.delay("shard01", 0.5)`, `.fail(...)`, `.drop_connection(...)`, `.restart(...)`,
        `.pause_noop(...)`, `.skew(...)`, `.clear()` (a sharded cluster), and the replica-set members'
        `.step_down(...)`, `.kill(...)`, `.restart_member(...)`, `.partition(...)`, `.lag(...)`,
        `.stop_replication(...)` (any topology)."""
        assert self.core is not None, "cluster not started"
        if self.core.faults is None:
            raise RuntimeError("fault injection needs a sharded cluster (topology='sharded')")
        return OnLoop(self, self.core.faults)

    def shard(self, name: str):
        """The router's `ShardRemote` for a shard (its faults, its `node`); read it, change it through `call`."""
        assert self.core is not None and self.core.router is not None
        return self.core.router.shard(name)

    def add_shard(self, name: str | None = None) -> str:
        """Add a shard to the running cluster (as `addShard` does; open change streams pick it up)."""
        from mongosim.router.sharding import add_shard

        router = self.core.router
        name = name or f"shard{len(router.shards):02d}"
        self.call(add_shard, router, name)
        return name


class OnLoop:
    """An object whose methods run on a cluster's event loop (thread-safe from any thread)."""

    def __init__(self, cluster: Cluster, target: Any) -> None:
        self._cluster = cluster
        self._target = target

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if not callable(attr):
            return attr

        def on_loop(*args: Any, **kwargs: Any) -> Any:
            return self._cluster.call(attr, *args, **kwargs)

        on_loop.__doc__ = attr.__doc__
        return on_loop
