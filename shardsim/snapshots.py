"""Point-in-time reads for transactions: the before-images an open snapshot still needs.

A transaction reads one snapshot of the node, taken at its first statement
there (as the storage engine's snapshot is), plus its own writes.  WiredTiger
keeps old versions of each record for that; here a node keeps, only while some
transaction holds a snapshot, the document each write replaced:

- `seq` counts writes made while snapshots are open; a snapshot is the `seq`
  at which it was opened;
- each such write records `(seq, before)` in its collection's `versions`
  (`before` is None for an insert);
- a document as a snapshot `s` sees it is the `before` of its first version
  with `seq > s` (the first write after the snapshot), else the current one.

Versions every open snapshot has passed are dropped when a snapshot closes; with
none open, nothing is recorded and reads cost nothing extra.  Hand-written: no
library keeps versions of Python dicts, and the rule above is all we need.

Reads at a cluster time (readConcern snapshot with `atClusterTime`: snapshot
sessions, and transactions whose router picked one time for every shard) use
*pins*: `pin(key)` opens a snapshot standing for cluster time `key` and keeps
it for the history window (the server's minSnapshotHistoryWindowInSeconds,
300 s). A time with a pin, or one no write on this node has passed, can be
read; an older one is SnapshotTooOld, as it is on a server whose history no
longer reaches back that far (mongosim's history starts at the first pin).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter, deque
from itertools import repeat
from operator import itemgetter
from typing import Any, Callable

from mongosim.oplog.errors import MongoError

HISTORY_WINDOW_S = 300.0  # minSnapshotHistoryWindowInSeconds
_last, _seq_of = itemgetter(-1), itemgetter(0)  # a version list's newest version; a version's seq


class Snapshots:
    """The open snapshots of one node, and the versions they need."""

    def __init__(self) -> None:
        self.seq = 0
        self.readers: Counter[int] = Counter()  # snapshot seq -> open transactions at it
        # what was recorded, in seq order: (seq, collection, idk) or, for a batch, (its last seq, collection,
        # [idk, ...]); pruning pops what every open snapshot has passed, so it costs each version once
        self._log: deque[tuple[int, Any, Any]] = deque()
        self._pin_keys: list[int] = []  # cluster times with a pin, ascending
        self._pins: dict[int, tuple[int, float]] = {}  # cluster time -> (snapshot seq, expiry)

    # -- pins: snapshots at a cluster time ------------------------------------------------
    def pin(self, key: int, last_write_key: int, now: float,
            writes_between: Callable[[int, int], bool]) -> int:
        """The snapshot seq for reading at cluster time `key` (pinned for the history window).

        `last_write_key` is this node's newest write; `writes_between(a, b)` says whether this
        node wrote anything with a time in (a, b]."""
        self.expire(now)
        hit = self._pins.get(key)
        if hit is not None:
            return hit[0]
        if key >= last_write_key or not writes_between(key, last_write_key):
            seq = self.seq  # no data written after `key`: the present is that snapshot
        else:
            i = bisect_right(self._pin_keys, key)
            if i == 0 or writes_between(self._pin_keys[i - 1], key):
                raise MongoError("SnapshotTooOld", "Read timestamp is older than the oldest available timestamp.")
            seq = self._pins[self._pin_keys[i - 1]][0]
        self._pins[key] = (seq, now + HISTORY_WINDOW_S)
        self._pin_keys.insert(bisect_right(self._pin_keys, key), key)
        self.readers[seq] += 1
        return seq

    @property
    def pinned(self) -> bool:
        return bool(self._pins)

    def expire(self, now: float) -> None:
        """Release the pins whose history window has passed."""
        old = [k for k, (_seq, until) in self._pins.items() if until <= now]
        for k in old:
            seq, _until = self._pins.pop(k)
            self._pin_keys.remove(k)
            self.close(seq)

    def open(self, seq: int | None = None) -> int:
        """Open a snapshot at the present (or at `seq`, a pinned one); `close` it when done."""
        seq = self.seq if seq is None else seq
        self.readers[seq] += 1
        return seq

    def close(self, snapshot: int) -> None:
        self.readers[snapshot] -= 1
        if self.readers[snapshot] <= 0:
            del self.readers[snapshot]
        self._prune()

    def record(self, coll: Any, idk: Any, before: dict | None) -> None:
        """`coll`'s document `idk` is about to change; `before` is what it was (None: absent)."""
        self.seq += 1
        coll.versions.setdefault(idk, []).append((self.seq, before))
        self._log.append((self.seq, coll, idk))

    def record_inserts(self, coll: Any, idks: list) -> None:
        """`record(coll, idk, None)` for each of `idks` (distinct) in order: a batch of new documents."""
        first = self.seq + 1
        seq = self.seq = self.seq + len(idks)
        versions = coll.versions
        if versions.keys().isdisjoint(idks):
            # the usual case, no earlier version of any: each its own list [(seq, None)], built in C
            versions.update(zip(idks, map(list, zip(zip(range(first, seq + 1), repeat(None))))))
        else:
            for s, idk in enumerate(idks, first):
                versions.setdefault(idk, []).append((s, None))
        self._log.append((seq, coll, idks))

    def _prune(self) -> None:
        """Drop the versions no open snapshot needs (those at or before the oldest one)."""
        log = self._log
        if not self.readers:
            for coll in {id(c): c for _seq, c, _idk in log}.values():
                coll.versions.clear()
            log.clear()
            return
        oldest = min(self.readers)
        while log and log[0][0] <= oldest:
            _seq, coll, what = log.popleft()
            versions = coll.versions
            if type(what) is list and what:
                # a batch, usually each document's versions all passed: dropped whole, in C
                kept_lists = list(map(versions.get, what))
                if None not in kept_lists and max(map(_seq_of, map(_last, kept_lists))) <= oldest:
                    deque(map(versions.pop, what), 0)
                    continue
            for idk in what if type(what) is list else (what,):
                kept = versions.get(idk)
                if kept is None:
                    continue
                if kept[-1][0] <= oldest:  # (the usual case: every version of the document is passed)
                    del versions[idk]
                    continue
                i = 0
                while i < len(kept) and kept[i][0] <= oldest:
                    i += 1
                if i == len(kept):
                    del versions[idk]
                elif i:
                    del kept[:i]


def visible(coll: Any, idk: Any, snapshot: int) -> dict | None:
    """The document `idk` of `coll` as the snapshot sees it (None: it did not exist)."""
    for seq, before in coll.versions.get(idk, ()):
        if seq > snapshot:
            return before
    return coll.docs.get(idk)


def scan(coll: Any, snapshot: int) -> list[tuple[Any, dict]]:
    """`(id key, document)` of every document the snapshot sees, in collection order
    (documents deleted since the snapshot last)."""
    if not coll.versions:
        return list(coll.docs.items())
    out = []
    for idk in coll.docs:
        doc = visible(coll, idk, snapshot)
        if doc is not None:
            out.append((idk, doc))
    for idk in coll.versions:
        if idk not in coll.docs:
            doc = visible(coll, idk, snapshot)
            if doc is not None:
                out.append((idk, doc))
    return out
