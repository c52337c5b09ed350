"""A trio event loop on one background thread, for synchronous callers.

`mongosim.Cluster` keeps its cluster on one (real time); the stateful tests'
`TrioPortal` keeps one on virtual time. Everything inside the loop stays
single-threaded trio; the caller's thread only hands work in:

    loop = BackgroundLoop().start()
    core = loop.enter(open_cluster(options=...))   # held open until close()
    loop.run(some_async_fn, arg)                   # returns its result
    loop.close()                                   # exits what was entered, then stops

(trio ships the two halves — `trio.run` and `trio.from_thread` — but not this
wrapper; anyio's blocking portal would add a dependency for forty lines.)
"""

from __future__ import annotations

import threading
from contextlib import AbstractAsyncContextManager
from typing import Any, Awaitable, Callable

import trio


class BackgroundLoop:
    def __init__(self, *, clock: trio.abc.Clock | None = None, name: str = "mongosim") -> None:
        self.clock = clock
        self.nursery: trio.Nursery | None = None
        self._name = name
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.Event | None = None
        self._closing: trio.Event | None = None
        self._contexts: trio.Nursery | None = None
        self._error: BaseException | None = None

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> "BackgroundLoop":
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()
        self._ready.wait()
        self._raise_error()
        return self

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def close(self) -> None:
        """Exit every entered context (in its own time), cancel the background tasks, join.

        Re-raises whatever ended the loop with an error.
        """
        if self._thread is None:
            return
        if self._token is not None and self._stop is not None:
            try:
                trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
            except trio.RunFinishedError:
                pass
        self._thread.join(timeout=30)
        self._thread = None
        self._raise_error()

    def _raise_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def _run(self) -> None:
        try:
            trio.run(self._main, clock=self.clock)
        except BaseException as exc:  # reported by start() or close()
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._stop, self._closing = trio.Event(), trio.Event()
        async with trio.open_nursery() as background:
            self.nursery = background
            # Entered contexts live in an inner nursery: on close they exit normally
            # (their cleanup may await) before the background tasks are cancelled.
            async with trio.open_nursery() as contexts:
                self._contexts = contexts
                self._ready.set()
                await self._stop.wait()
                self._closing.set()
            background.cancel_scope.cancel()

    # -- handing work in ------------------------------------------------------------------
    def run(self, afn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """Run `afn(*args)` on the loop; block until it returns, and return its result."""
        return trio.from_thread.run(afn, *args, trio_token=self._token)

    def start_background(self, afn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """Start a long-lived task (cancelled by close) and return what it passes to
        ``task_status.started()``."""

        async def starter() -> Any:
            return await self.nursery.start(afn, *args)

        return self.run(starter)

    def enter(self, cm: AbstractAsyncContextManager[Any]) -> Any:
        """Enter `cm` on the loop and return its value; `close()` exits it (not by cancellation)."""

        async def hold(task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED) -> None:
            async with cm as value:
                task_status.started(value)
                await self._closing.wait()

        async def starter() -> Any:
            return await self._contexts.start(hold)

        return self.run(starter)
