"""Tailable cursors: a find on a capped collection (or the oplog) that stays open at the end.

`find {tailable: true}` returns what is there and keeps its cursor while the
collection has records (find_cmd.cpp's shouldSaveCursor: a tailable cursor is
kept unless the collection is empty); each getMore continues after the last
record it examined, in insertion order, and may return an empty batch without
closing.  `skip` passes over the first matching records and `limit` caps
the records of all batches together (the plan's SKIP and LIMIT stages above the
scan); past the limit the cursor stays open, returning nothing.  With `awaitData: true` a getMore that finds nothing waits for new
records until its `maxTimeMS` (default one second) runs out — woken by the
node's writes, no polling.  If capped deletion removed the record the cursor
stands on, the next getMore fails with CappedPositionLost.

A *source* gives records in order from a position: a capped collection's
record ids (`CappedSource`) or the oplog's positions
(`shardsim.oplog_collection.OplogSource`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator

import trio

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.cursors import MAX_BATCH_BYTES, DEFAULT_FIRST_BATCH, _encoded_size, cursor_reply

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

AWAIT_DATA_DEFAULT_MS = 1000


def check_find_options(cmd: dict) -> None:
    """query_request_helper's checks of tailable/awaitData combinations."""
    if cmd.get("awaitData") and not cmd.get("tailable"):
        raise MongoError("FailedToParse", "Cannot set 'awaitData' without also setting 'tailable'")
    if cmd.get("tailable"):
        sort = cmd.get("sort")
        if sort and sort != {"$natural": 1}:
            raise MongoError("BadValue", "cannot use tailable option with a sort other than {$natural: 1}")
        if cmd.get("singleBatch"):
            raise MongoError("BadValue", "cannot use tailable option with the 'singleBatch' option")


def not_capped(ns: str, flt: dict) -> MongoError:
    return MongoError("BadValue", f"error processing query: ns={ns}Tree: {_tree(flt)}\nSort: {{}}\nProj: {{}}\n "
                                  "tailable cursor requested on non capped collection")


def _tree(flt: dict) -> str:
    return "$and" if not flt else str(flt)


class CappedSource:
    """A capped collection's records, by record id."""

    def __init__(self, node: Node, db: str, name: str) -> None:
        self.node, self.db, self.name = node, db, name
        coll = node.catalog.collection(db, name)
        self.uuid = coll.uuid

    def _coll(self):
        coll = self.node.catalog.collection(self.db, self.name)
        if coll is None or coll.uuid != self.uuid:
            raise MongoError("QueryPlanKilled", f"collection dropped. UUID {self.uuid}")
        return coll

    def records_after(self, pos: int) -> Iterator[tuple[int, Any, dict]]:
        coll = self._coll()
        state = coll.capped
        if pos and pos <= state.evicted_through and pos not in state.records:
            raise MongoError("CappedPositionLost", "CollectionScan died due to position in capped collection being "
                                                   f"deleted. Last seen record id: RecordId({pos})")
        for seq, doc in state.live(coll, pos + 1):
            yield seq, doc, doc

    def is_empty(self) -> bool:
        return len(self._coll()) == 0


class TailableCursor:
    """A cursor that never reports itself exhausted (killCursors or a dropped collection end it)."""

    def __init__(self, node: Node, ns: str, source: Any, match: Callable[[dict], bool], project: Callable | None,
                 await_data: bool) -> None:
        self.node, self.ns, self.source = node, ns, source
        self.match, self.project, self.await_data = match, project, await_data
        self.pos = 0
        self.last_used = 0.0
        self.exhausted = False
        self.skip = 0  # matching records still to pass over
        self.remaining: int | None = None  # records the find's limit still allows (None: no limit)

    def take(self, limit: int | None) -> list:
        out: list = []
        size = 0
        if self.remaining is not None:
            limit = min(limit, self.remaining) if limit else self.remaining
            if not limit:
                return out
        for pos, item, doc in self.source.records_after(self.pos):
            if limit and len(out) >= limit:
                break
            if not self.match(doc):
                self.pos = pos
                continue
            if self.skip:
                self.skip -= 1
                self.pos = pos
                continue
            value = self.project(doc) if self.project is not None else item
            size += _encoded_size(value)
            if out and size > MAX_BATCH_BYTES - 64 * 1024:
                break
            out.append(value)
            self.pos = pos
        if self.remaining is not None:
            self.remaining -= len(out)
        return out

    async def get_more(self, batch_size: int | None, max_time_ms: int | None):
        batch = self.take(batch_size)
        if not batch and self.await_data:
            wait_ms = max_time_ms if max_time_ms else AWAIT_DATA_DEFAULT_MS
            with trio.move_on_after(wait_ms / 1000.0):
                while not batch:
                    await self.node.progress.park()
                    batch = self.take(batch_size)
        return batch, None, False

    def close(self) -> None:
        self.exhausted = True


def serve(node: Node, cursor: TailableCursor, cmd: dict, keep: bool) -> dict:
    """The find reply: the first batch, and the cursor kept unless the collection was empty."""
    cursor.skip = int(cmd.get("skip") or 0)
    if cmd.get("limit"):
        cursor.remaining = int(cmd["limit"])
    batch_size = cmd.get("batchSize")
    batch = cursor.take(batch_size if batch_size is not None else DEFAULT_FIRST_BATCH) if batch_size != 0 else []
    if not keep:
        return cursor_reply(batch, 0, cursor.ns, first=True)
    return cursor_reply(batch, node.cursors.register(cursor), cursor.ns, first=True)


def find(node: Node, db: str, name: str, cmd: dict, match: Callable[[dict], bool], project: Callable | None) -> dict:
    """A tailable find on `db.name` (a capped collection)."""
    coll = node.catalog.collection(db, name)
    ns = f"{db}.{name}"
    if coll is None or coll.capped is None:
        raise not_capped(ns, cmd.get("filter") or {})
    source = CappedSource(node, db, name)
    cursor = TailableCursor(node, ns, source, match, project, bool(cmd.get("awaitData")))
    return serve(node, cursor, cmd, keep=not source.is_empty())
