"""`mongosim.Cluster`: the whole emulated cluster in the background of a synchronous program.

    with mongosim.Cluster(shards=3) as cluster:
        client = pymongo.MongoClient(cluster.uri)

The cluster runs on its own trio event loop in one background thread
(`mongosim.background_loop`, the only thread mongosim starts; everything inside
it is single-threaded trio).
`cluster.call(fn, *args)` runs a function on that loop — that is how the
fault-injection API and tests reach in safely.
"""

from __future__ import annotations

from typing import Any, Callable

from mongosim.background_loop import BackgroundLoop
from mongosim.core import ClusterCore, ClusterOptions, open_cluster


class Cluster:
    def __init__(self, shards: int = 2, **kwargs: Any) -> None:
        self.options = ClusterOptions(shards=shards, **kwargs)
        self._loop: BackgroundLoop | None = None
        self.core: ClusterCore | None = None

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> "Cluster":
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
        return self._loop is not None and self._loop.alive

    def __enter__(self) -> "Cluster":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- access ---------------------------------------------------------------------------
    @property
    def uri(self) -> str:
        assert self.core is not None, "cluster not started"
        return self.core.uri

    @property
    def port(self) -> int:
        assert self.core is not None
        return self.core.port

    @property
    def router_uris(self) -> list[str]:
        """One URI per mongos router (router00, router01, ...), for a client that must use one router;
        `uri` names them all."""
        assert self.core is not None, "cluster not started"
        return self.core.router_uris

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run `fn(*args)` (sync or async) on the cluster's event loop and return its result."""
        assert self._loop is not None, "cluster not started"

        async def runner() -> Any:
            r = fn(*args)
            if hasattr(r, "__await__"):
                r = await r
            return r

        return self._loop.run(runner)

    # -- fault injection (see docs) --------------------------------------------------------
    def shard(self, name: str):
        assert self.core is not None and self.core.router is not None
        return self.core.router.shard(name)

    def add_shard(self, name: str | None = None) -> str:
        from mongosim.router.sharding import add_shard

        router = self.core.router
        name = name or f"shard{len(router.shards):02d}"
        self.call(add_shard, router, name)
        return name
