"""A member's majority-committed snapshot: what readConcern majority reads and rollback returns to.

The server keeps, on every member, a snapshot of its data at the majority
commit point (the "committed snapshot"; storage's stable timestamp).
readConcern majority reads through it, and rollback recovers to it ("recover
to a stable timestamp") before it re-applies its own oplog up to the common
point with the new primary.

Here it is an open snapshot of the node's `Snapshots` (shardsim/snapshots.py):
while it is open every write keeps the document it replaced, so the data as
of the snapshot can be read back.  A snapshot stands for an oplog time only
where the node's data is known to be exactly "every entry up to that time
applied": `mark()` notes such points (the node's newest ts key and its
snapshot counter) at moments when no write is half done — after a secondary
applied a batch, when a primary's entries are fetched by its secondaries.
`advance(commit_key)` moves the snapshot to the newest mark at or before the
commit point.  Each mark also keeps the catalog's shape (collections, their
UUIDs, options, indexes, shard keys) when a command entry changed it, so that
rollback can undo DDL as well as documents.

Only sets of several members keep one: on a one-member set everything written
is committed at once, and nothing is recorded.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mongosim.shardsim import snapshots
from mongosim.shardsim.catalog import Collection
from mongosim.shardsim.collection_options import refresh
from mongosim.shardsim.snapshot_reads import SnapshotView
from mongosim.shardsim.snapshots import Snapshots

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node


@dataclass(frozen=True)
class CollectionShape:
    """A collection's catalog entry as of a mark (its documents come from the snapshot)."""

    coll: Collection
    db: str
    name: str
    uuid: Any
    options: dict
    indexes: tuple
    shard_key: dict | None


def catalog_shape(node: "Node") -> tuple[CollectionShape, ...]:
    return tuple(CollectionShape(c, c.db, c.name, c.uuid, dict(c.options), tuple(dict(s) for s in c.indexes),
                                 dict(c.shard_key) if c.shard_key else None)
                 for c in node.catalog.all_collections())


@dataclass(frozen=True)
class Mark:
    key: int  # every entry up to this ts key is applied, none after
    seq: int  # the node's snapshot counter at that moment
    pos: int  # the oplog position after that entry
    shape: tuple[CollectionShape, ...]


class CommittedSnapshot:
    def __init__(self, node: "Node") -> None:
        self.node = node
        self.key = 0
        self.seq: int | None = None
        self.shape: tuple[CollectionShape, ...] = ()
        self._marks: deque[Mark] = deque()
        self._last: Mark | None = None

    @property
    def active(self) -> bool:
        return self.seq is not None

    def start(self) -> None:
        """Begin keeping history: the node's present is taken as committed (a fresh set)."""
        if self.seq is not None:
            return
        snaps = self.node.catalog.snapshots
        self.seq = snaps.open()
        self.shape = catalog_shape(self.node)
        self.key = self.node.oplog.last_key
        self._last = Mark(self.key, self.seq, self.node.oplog.end, self.shape)
        self._marks.clear()

    def stop(self) -> None:
        if self.seq is not None:
            self.node.catalog.snapshots.close(self.seq)
        self.seq = None
        self._marks.clear()
        self._last = None

    # -- marks ------------------------------------------------------------------------
    def mark(self) -> None:
        """The node's data is, right now, exactly its oplog applied: remember this point."""
        if self.seq is None:
            return
        oplog = self.node.oplog
        key = oplog.last_key
        last = self._last
        if last is not None and key <= last.key:
            return
        shape = last.shape if last is not None else ()
        start = max(last.pos if last is not None else oplog.start, oplog.start)
        if last is None or "c" in oplog.columns(start)[1]:
            shape = catalog_shape(self.node)  # a command entry since the last mark: the catalog changed
        m = Mark(key, self.node.catalog.snapshots.seq, oplog.end, shape)
        self._marks.append(m)
        self._last = m

    def advance(self, commit_key: int) -> None:
        """Move to the newest mark at or before the commit point (never back)."""
        if self.seq is None:
            return
        if self.node.oplog.last_key <= commit_key:
            self.mark()
        best = None
        marks = self._marks
        while marks and marks[0].key <= commit_key:
            best = marks.popleft()
        if best is None or best.key <= self.key:
            return
        snaps = self.node.catalog.snapshots
        old = self.seq
        self.seq = snaps.open(best.seq)
        self.key = best.key
        self.shape = best.shape
        snaps.close(old)

    def view(self) -> SnapshotView:
        """The documents as of the committed snapshot (readConcern majority)."""
        return SnapshotView(self.seq if self.seq is not None else self.node.catalog.snapshots.seq)

    # -- rollback ---------------------------------------------------------------------
    def recover(self) -> int:
        """Put the node's catalog and documents back as they were at the committed snapshot
        (recover to the stable timestamp); returns its ts key.  History is lost: every
        other snapshot and pin is gone, as after a restart."""
        node = self.node
        seq = self.seq if self.seq is not None else node.catalog.snapshots.seq
        restored = []
        for s in self.shape:
            docs = dict(snapshots.scan(s.coll, seq))
            restored.append((s, docs))
        fresh = Snapshots()
        node.catalog.snapshots = fresh
        node.catalog.databases.clear()
        for s, docs in restored:
            coll = s.coll
            coll.db, coll.name, coll.uuid = s.db, s.name, s.uuid
            coll.options = dict(s.options)
            coll.shard_key = dict(s.shard_key) if s.shard_key else None
            coll.versions = {}
            coll.indexes = [dict(i) for i in s.indexes if i.get("name") == "_id_"]
            coll._unique = {}
            if coll.capped is not None:
                # a capped collection's natural (eviction) order is its record ids': documents still
                # there keep theirs; the ones restored were deleted since, by eviction (the oldest)
                # or by a user (anywhere: put first too, where the record id is not known)
                seq_of = coll.capped.seq_of
                docs = dict(sorted(docs.items(), key=lambda kv: seq_of.get(kv[0], 0)))
                coll.capped = None
            coll.docs = docs
            refresh(coll)
            for spec in s.indexes:
                if spec.get("name") != "_id_":
                    coll.add_index(dict(spec))
            node.catalog.add_collection(coll)
        key = self.key
        self.seq = fresh.open()
        self._marks.clear()
        self._last = None
        return key
