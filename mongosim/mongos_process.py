"""A mongos process: one Router, its TCP listener and its uptime reporter, started, stopped, restarted.

A cluster has one or more routers (`--routers R`), each its own mongos on its
own port (consecutive from `--port`; with `--port 0` each takes a free port,
and keeps it across restarts).  Stopping one is what a mongos crash is to its
clients: the listener closes with every connection on it, the router's
cursors die (their shard cursors are killed) and what it held in memory is
lost (router/mongos.py `Router.stop`).  Drivers see network errors and go
on through the other routers; a change stream resumes there.  Starting it
again binds the same port, with an empty cache, a new process id, and its
uptime reported afresh to `config.mongos` (router/router_uptime_reporter.py,
only for routers that listen).

The process runs in its own cancel scope inside the cluster's nursery;
stopping cancels it and waits until the old listener is closed, so a restart
can bind the port again.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import trio

from mongosim.router import router_uptime_reporter
from mongosim.router.server import serve_tcp

if TYPE_CHECKING:
    from mongosim.router.mongos import Router


class MongosProcess:
    def __init__(self, router: Router, host: str, port: int, *, listen: bool = True,
                 ssl_context: Any = None, wrap: Any = None) -> None:
        self.router = router
        self.host = host
        self.port = port  # 0: a free port, chosen at the first start and kept
        self.listen = listen
        self.ssl_context = ssl_context
        self.wrap = wrap  # the service the listener serves, around the router (e.g. --data-dir's)
        self._scope: trio.CancelScope | None = None
        self._ended: trio.Event | None = None

    @property
    def name(self) -> str:
        return self.router.name

    @property
    def running(self) -> bool:
        return self.router.up and self._scope is not None

    async def start(self, nursery: trio.Nursery) -> None:
        """Start (or start again): the router's memory afresh, the listener on its port."""
        if self.running:
            return
        if not self.router.up:
            self.router.start()
        self._scope = trio.CancelScope()
        self._ended = trio.Event()
        await nursery.start(self._run, name=f"mongos-{self.name}")

    async def _run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        scope, ended = self._scope, self._ended
        try:
            with scope:
                async with trio.open_nursery() as nursery:
                    if self.listen:
                        service = self.wrap(self.router) if self.wrap is not None else self.router
                        self.port = await nursery.start(partial(serve_tcp, ssl_context=self.ssl_context),
                                                        service, self.host, self.port)
                        self.router.identity.port = self.port
                        await router_uptime_reporter.report_status(self.router)  # listed before "ready"
                        nursery.start_soon(self._report_uptime)
                    task_status.started()
                    await trio.sleep_forever()
        finally:
            ended.set()

    async def _report_uptime(self) -> None:
        await trio.sleep(router_uptime_reporter.REPORT_INTERVAL_S)
        await router_uptime_reporter.run(self.router)

    async def stop(self) -> None:
        """The process goes away: its connections close, its cursors die; returns once the port is free."""
        self.router.stop()
        if self._scope is not None:
            self._scope.cancel()
            await self._ended.wait()
            self._scope = None

    async def restart(self, nursery: trio.Nursery) -> None:
        await self.stop()
        await self.start(nursery)
