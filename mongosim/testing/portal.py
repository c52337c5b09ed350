"""A trio event loop on virtual time in a background thread, for synchronous test code
such as hypothesis stateful machines (hypothesis-trio 0.6 no longer works with hypothesis 6).

`portal.call(afn, *args)` runs `afn` on the loop and returns its result.  On
virtual time (the default) the loop runs on a `MockClock` that jumps ahead
only while a call is in progress: between two steps of a test, time stands
still, so noop writers and timers do not race ahead of the test.
"""

from __future__ import annotations

import math
from typing import Any, Awaitable, Callable

import trio.testing

from mongosim.background_loop import BackgroundLoop


class TrioPortal(BackgroundLoop):
    def __init__(self, *, virtual: bool = True) -> None:
        clock = trio.testing.MockClock(autojump_threshold=math.inf) if virtual else None
        super().__init__(clock=clock, name="trio-portal")
        self.start()

    def call(self, afn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """Run `afn(*args)` on the loop, letting virtual time jump only while it runs."""

        async def runner() -> Any:
            if self.clock is not None:
                self.clock.autojump_threshold = 0
            try:
                return await afn(*args)
            finally:
                if self.clock is not None:
                    self.clock.autojump_threshold = math.inf

        return self.run(runner)

    def start_background(self, afn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """Start a long-lived task (e.g. a cluster) and return what it passes to task_status.started()."""

        async def starter() -> Any:
            return await self.nursery.start(afn, *args)

        return self.call(starter)
