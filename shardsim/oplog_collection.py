"""`local.oplog.rs` as a collection: what oplog-tailing tools read on a replica-set member.

The node's oplog (`oplog.oplog.Oplog`) keeps every entry as the BSON the
server writes; a find on `local.oplog.rs` returns those bytes unchanged
(RawBSONDocument), filtered with the query engine on the decoded entry.
It is a capped collection in natural (timestamp) order: `sort: {$natural: -1}`
reads it backwards; `tailable` (and `awaitData`) cursors follow new entries as
they are written (`shardsim.tailable_cursor`); a cursor whose position the
oplog's truncation (`--oplog-size-mb`) removed fails with CappedPositionLost.
A filter on `ts` ({$gt}, {$gte}) starts the scan at that time instead of the
beginning, as the server's oplog start-point optimization does.
mongos refuses the `local` database ("Can't use 'local' database through mongos").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator

from bson import Timestamp

from mongosim.oplog import bsonutil
from mongosim.oplog.clock import ts_key
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.cursors import QueryCursor, cursor_reply
from mongosim.shardsim.tailable_cursor import TailableCursor, serve

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

NS = "local.oplog.rs"


def is_oplog(db: str, name: Any) -> bool:
    return db == "local" and name == "oplog.rs"


def _start_key(flt: dict) -> int:
    """The ts a filter starts at (0: the beginning)."""
    cond = flt.get("ts")
    if isinstance(cond, dict):
        for op in ("$gte", "$gt"):
            if isinstance(cond.get(op), Timestamp):
                return ts_key(cond[op]) + (1 if op == "$gt" else 0)
    return 0


class OplogSource:
    """The oplog's entries by position."""

    def __init__(self, node: Node) -> None:
        self.node = node

    def records_after(self, pos: int) -> Iterator[tuple[int, Any, dict]]:
        oplog = self.node.oplog
        if pos and pos < oplog.start:
            raise MongoError("CappedPositionLost", "CollectionScan died due to position in capped collection being "
                                                   f"deleted. Last seen record id: RecordId({pos})")
        for p in range(max(pos + 1, oplog.start + 1), oplog.end + 1):
            yield p, bsonutil.raw(oplog.raw_at(p - 1)), oplog.entry_at(p - 1)


def find(node: Node, cmd: dict, match: Callable[[dict], bool], project: Callable | None) -> dict:
    """A find on `local.oplog.rs` (positions are 1-based: 0 means before the first entry)."""
    flt = cmd.get("filter") or {}
    oplog = node.oplog
    start = oplog.position_at_or_after(_start_key(flt)) if _start_key(flt) else oplog.start
    if cmd.get("tailable"):
        cursor = TailableCursor(node, NS, OplogSource(node), match, project, bool(cmd.get("awaitData")))
        cursor.pos = start
        return serve(node, cursor, cmd, keep=len(oplog) > 0)
    sort = cmd.get("sort") or {}
    positions = range(oplog.end - 1, start - 1, -1) if sort.get("$natural") == -1 else range(start, oplog.end)
    skip = int(cmd.get("skip") or 0)
    limit = int(cmd.get("limit") or 0)

    def results() -> Iterator[Any]:
        seen = 0
        sent = 0
        for p in positions:
            entry = oplog.entry_at(p)
            if not match(entry):
                continue
            seen += 1
            if seen <= skip:
                continue
            yield project(entry) if project is not None else bsonutil.raw(oplog.raw_at(p))
            sent += 1
            if limit and sent >= limit:
                return

    cur = QueryCursor(NS, results(), eof_at=limit or None)  # (a COLLSCAN, under a LIMIT at EOF with its n)
    batch = cur.first_batch(cmd.get("batchSize"))
    if cur.exhausted or cmd.get("singleBatch"):
        return cursor_reply(batch, 0, NS, first=True)
    return cursor_reply(batch, node.cursors.register(cur), NS, first=True)
