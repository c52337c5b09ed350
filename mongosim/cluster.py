"""`mongosim.Cluster`: the whole emulated cluster in the background of a synchronous program.

    with mongosim.Cluster(shards=3) as cluster:
        client = pymongo.MongoClient(cluster.uri)

The cluster runs on its own trio event loop in one background thread (the
only thread mongosim starts; everything inside it is single-threaded trio).
`cluster.call(fn, *args)` runs a function on that loop — that is how the
fault-injection API and tests reach in safely.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import trio

from mongosim.core import ClusterCore, ClusterOptions, open_cluster


class Cluster:
    def __init__(self, shards: int = 2, **kwargs: Any) -> None:
        self.options = ClusterOptions(shards=shards, **kwargs)
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.Event | None = None
        self._error: BaseException | None = None
        self.core: ClusterCore | None = None

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> "Cluster":
        self._thread = threading.Thread(target=self._run, name="mongosim", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error
        return self

    def _run(self) -> None:
        try:
            trio.run(self._main)
        except BaseException as exc:  # reported to start() or stop()
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._stop = trio.Event()
        async with open_cluster(options=self.options) as core:
            self.core = core
            self._ready.set()
            await self._stop.wait()

    def stop(self) -> None:
        if self._thread is None:
            return
        if self._token is not None and self._stop is not None:
            try:
                trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
            except trio.RunFinishedError:
                pass
        self._thread.join(timeout=30)
        self._thread = None

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

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run `fn(*args)` (sync or async) on the cluster's event loop and return its result."""
        assert self._token is not None

        async def runner() -> Any:
            r = fn(*args)
            if hasattr(r, "__await__"):
                r = await r
            return r

        return trio.from_thread.run(runner, trio_token=self._token)

    # -- fault injection (see docs) --------------------------------------------------------
    def shard(self, name: str):
        assert self.core is not None and self.core.router is not None
        return self.core.router.shard(name)

    def add_shard(self, name: str | None = None) -> str:
        from router.sharding import add_shard

        router = self.core.router
        name = name or f"shard{len(router.shards):02d}"
        self.call(add_shard, router, name)
        return name
