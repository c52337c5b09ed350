"""Time: a wall clock on trio time, and each node's logical (cluster) clock.

`TimeSource` reads `trio.current_time()` plus a fixed epoch offset, so the
whole cluster runs unchanged on `trio.testing.MockClock`: awaits, noop
intervals and timestamps all follow virtual time.  A node may add a skew.

`LogicalClock` is the node's cluster time (the server's VectorClock): a
Timestamp `(secs, inc)` that only moves forward.  Writes reserve ticks
(`reserve`), gossip moves it up (`advance`, from `$clusterTime` on commands),
so a write that is causally after another, on any node, gets a later
timestamp.  Internally a timestamp is the int `secs << 32 | inc` ("ts key").
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from functools import lru_cache

import trio
from bson import Timestamp

_EPOCH = datetime(1970, 1, 1)


def ts_key(ts: Timestamp) -> int:
    """Timestamp -> ts key (an int ordered like the Timestamp)."""
    return (ts.time << 32) | ts.inc


@lru_cache(maxsize=4096)
def key_ts(key: int) -> Timestamp:
    """ts key -> Timestamp (immutable: the latest ones are kept, replies name the same times again and again)."""
    return Timestamp(key >> 32, key & 0xFFFFFFFF)


class TimeSource:
    """Wall-clock seconds derived from trio's clock.

    Created inside `trio.run`.  With a real clock the epoch is chosen so that
    `now()` equals `time.time()`; with a virtual clock pass a fixed `epoch` to
    make runs reproducible.
    """

    def __init__(self, epoch: float | None = None) -> None:
        if epoch is None:
            epoch = time.time() - trio.current_time()
        else:
            epoch = epoch - trio.current_time()
        self._epoch = epoch

    def now(self) -> float:
        return self._epoch + trio.current_time()


class NodeClock:
    """One node's wall clock: the shared time source plus a skew (seconds)."""

    def __init__(self, source: TimeSource, skew: float = 0.0) -> None:
        self.source = source
        self.skew = skew
        self._last_ms = -1
        self._last_wall = _EPOCH

    def now(self) -> float:
        return self.source.now() + self.skew

    def wall(self) -> datetime:
        """The oplog `wall` field: naive UTC, millisecond precision."""
        ms = int(self.now() * 1000)
        if ms != self._last_ms:  # many writes share a millisecond: one datetime for them
            self._last_ms = ms
            self._last_wall = _EPOCH + timedelta(milliseconds=ms)
        return self._last_wall


class LogicalClock:
    """A node's cluster time.  Ticks are reserved for writes; gossip advances it."""

    __slots__ = ("_key", "_wall")

    def __init__(self, wall: NodeClock) -> None:
        self._wall = wall
        self._key = 0

    @property
    def key(self) -> int:
        return self._key

    def now(self) -> Timestamp:
        return key_ts(self._key)

    def advance(self, key: int) -> None:
        """Gossip: move up to `key` (never back)."""
        if key > self._key:
            self._key = key

    def reserve(self, n: int = 1) -> int:
        """Reserve `n` consecutive ticks; return the first one's ts key.

        Like the server: if the wall clock's seconds are ahead of the clock,
        jump to `(wallSecs, 0)` first; then add `n` increments.
        """
        secs = int(self._wall.now())
        if secs > (self._key >> 32):
            self._key = secs << 32
        first = self._key + 1
        self._key += n
        return first

    def tick_to(self, key: int) -> None:
        """Make sure the next reserved tick is after `key` (e.g. a commit timestamp)."""
        self.advance(key)


def utc_now_naive() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)
