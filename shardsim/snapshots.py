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
"""

from __future__ import annotations

from collections import Counter
from typing import Any


class Snapshots:
    """The open snapshots of one node, and the versions they need."""

    def __init__(self) -> None:
        self.seq = 0
        self.readers: Counter[int] = Counter()  # snapshot seq -> open transactions at it
        self._holding: dict[int, Any] = {}  # id -> collection with versions

    def open(self) -> int:
        self.readers[self.seq] += 1
        return self.seq

    def close(self, snapshot: int) -> None:
        self.readers[snapshot] -= 1
        if self.readers[snapshot] <= 0:
            del self.readers[snapshot]
        self._prune()

    def record(self, coll: Any, idk: Any, before: dict | None) -> None:
        """`coll`'s document `idk` is about to change; `before` is what it was (None: absent)."""
        self.seq += 1
        coll.versions.setdefault(idk, []).append((self.seq, before))
        self._holding[id(coll)] = coll

    def _prune(self) -> None:
        if not self.readers:
            for coll in self._holding.values():
                coll.versions.clear()
            self._holding.clear()
            return
        oldest = min(self.readers)
        for key, coll in list(self._holding.items()):
            versions = coll.versions
            for idk in list(versions):
                kept = [v for v in versions[idk] if v[0] > oldest]
                if kept:
                    versions[idk] = kept
                else:
                    del versions[idk]
            if not versions:
                del self._holding[key]


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
