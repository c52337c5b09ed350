"""A trio event loop in a background thread, for synchronous test code such as hypothesis
stateful machines (hand-written: hypothesis-trio 0.6 no longer works with hypothesis 6).

`portal.call(afn, *args)` runs `afn` on the loop and returns its result.  On
virtual time (the default) the loop runs on a `MockClock` that jumps ahead
only while a call is in progress: between two steps of a test, time stands
still, so noop writers and timers do not race ahead of the test.
"""

from __future__ import annotations

import math
import threading
from typing import Any, Awaitable, Callable

import trio
import trio.testing


class TrioPortal:
    def __init__(self, *, virtual: bool = True) -> None:
        self.clock = trio.testing.MockClock(autojump_threshold=math.inf) if virtual else None
        self._ready = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.Event | None = None
        self.nursery: trio.Nursery | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="trio-portal", daemon=True)
        self._thread.start()
        self._ready.wait()

    def _run(self) -> None:
        try:
            if self.clock is not None:
                trio.run(self._main, clock=self.clock)
            else:
                trio.run(self._main)
        except BaseException as exc:  # surfaced by close()
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._stop = trio.Event()
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            self._ready.set()
            await self._stop.wait()
            nursery.cancel_scope.cancel()

    def call(self, afn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        async def runner() -> Any:
            if self.clock is not None:
                self.clock.autojump_threshold = 0
            try:
                return await afn(*args)
            finally:
                if self.clock is not None:
                    self.clock.autojump_threshold = math.inf

        return trio.from_thread.run(runner, trio_token=self._token)

    def start_background(self, afn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """Start a long-lived task (e.g. a cluster) and return what it passes to task_status.started()."""

        async def starter() -> Any:
            return await self.nursery.start(afn, *args)

        return self.call(starter)

    def close(self) -> None:
        if self._token is not None and self._stop is not None:
            try:
                trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
            except trio.RunFinishedError:
                pass
        self._thread.join(timeout=30)
        if self._error is not None:
            raise self._error
