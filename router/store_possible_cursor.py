"""A shard's cursor behind a router cursor (the server's storePossibleCursor).

Commands mongos forwards to one shard whole (listCollections, listIndexes)
answer with that shard's cursor.  When the cursor stays open, mongos keeps it
behind a cursor of its own: the client's getMore reaches the router, which
asks the shard for the next batch; killCursors (or the router's reaper)
kills the shard's cursor too.  A `$_passthroughToShard` change stream is kept
the same way (router/merge/passthrough_to_shard.py): its getMores also carry
maxTimeMS (an awaitData cursor) and each batch's postBatchResumeToken comes back.

Reading ahead (a change stream's, as the AsyncResultsMerger keeps a request
outstanding on its one remote): once a reply carrying events has left for the
client (`request.after_reply`), the router asks the shard for the next batch
of the same size, without awaiting (maxTimeMS 0).  The next getMore waits for
that request if it is still out, then answers with its events (those it asks
for: a getMore asking for fewer leaves the rest to the next one, with the last
returned event's token as its postBatchResumeToken) or its error, as the
shard's own getMore would have; a read-ahead that found nothing is dropped and
the getMore asks the shard itself, awaiting as the client asked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import trio
from bson import Int64

from mongosim.oplog.bsonutil import plain
from mongosim.oplog.errors import MongoError
from mongosim.router.request import after_reply

if TYPE_CHECKING:
    from mongosim.router.mongos import Router
    from mongosim.router.remote import ShardRemote


@dataclass
class ShardPassthroughCursor:
    """A router cursor whose batches come from one shard cursor."""

    remote: ShardRemote
    db: str
    shard_cursor_id: int
    ns: str
    last_used: float = 0.0
    exhausted: bool = False
    is_change_stream: bool = False  # an awaitData change-stream cursor (per-shard)
    nursery: Any = None  # where a change stream's read-ahead runs (None: no read-ahead)
    _ahead: trio.Event | None = field(default=None, repr=False)  # set when the read-ahead's reply is in
    _ahead_scope: trio.CancelScope | None = field(default=None, repr=False)
    _ready: tuple | None = field(default=None, repr=False)  # (events, postBatchResumeToken, closed) read ahead
    _error: MongoError | None = field(default=None, repr=False)  # the read-ahead's error, for the next getMore

    async def _shard_get_more(self, batch_size: int | None, max_time_ms: int | None) -> tuple[list, Any, bool]:
        cmd: dict[str, Any] = {"getMore": Int64(self.shard_cursor_id), "collection": self.ns.split(".", 1)[1]}
        if batch_size:
            cmd["batchSize"] = batch_size
        if max_time_ms is not None:
            # (a tailable awaitData cursor's await time, or a change stream's)
            cmd["maxTimeMS"] = max_time_ms
        try:
            reply = await self.remote.command(self.db, cmd)
        except MongoError:
            self.exhausted = True  # the shard dropped its cursor with the error
            raise
        cursor = reply["cursor"]
        return cursor["nextBatch"], cursor.get("postBatchResumeToken"), cursor["id"] == 0

    async def get_more(self, batch_size: int | None, max_time_ms: int | None) -> tuple[list, dict | None, bool]:
        events, pbrt, closed = None, None, False
        if self._ahead is not None:
            await self._ahead.wait()
        if self._error is not None:
            err, self._error = self._error, None
            raise err
        if self._ready is not None:
            events, pbrt, closed = self._ready
            self._ready = None
            if batch_size and len(events) > batch_size:  # (a getMore asking for fewer: the rest waits)
                self._ready = (events[batch_size:], pbrt, closed)
                events, closed = events[:batch_size], False
                pbrt = plain(events[-1])["_id"]
        if events is None:
            events, pbrt, closed = await self._shard_get_more(batch_size, max_time_ms or None)
        self.exhausted = closed
        if not self.is_change_stream:
            return events, None, closed
        if events and not closed and self.nursery is not None and batch_size:
            after_reply(lambda: self._read_ahead(batch_size))
        return events, {"postBatchResumeToken": pbrt}, closed

    def _read_ahead(self, batch_size: int) -> None:
        if self.exhausted or self._ahead is not None or self._ready is not None:
            return
        self._ahead = trio.Event()
        self.nursery.start_soon(self._fetch_ahead, batch_size)

    async def _fetch_ahead(self, batch_size: int) -> None:
        """The next batch, asked for ahead of the client's getMore (see the module doc)."""
        with trio.CancelScope() as self._ahead_scope:
            try:
                events, pbrt, closed = await self._shard_get_more(batch_size, 0)
                if events or closed:
                    self._ready = (events, pbrt, closed)  # (nothing yet: the getMore asks and awaits itself)
            except MongoError as err:
                self._error = err
            finally:
                event, self._ahead, self._ahead_scope = self._ahead, None, None
                event.set()

    def close(self) -> None:
        if self._ahead_scope is not None:
            self._ahead_scope.cancel()
        self._ready = None
        if not self.exhausted:
            self.exhausted = True
            self.remote.node.cursors.remove(self.shard_cursor_id)  # (killCursors to the shard, in process)


def store_possible_cursor(router: Router, shard: str, db: str, reply: dict) -> dict:
    """`reply` with its open shard cursor replaced by a router cursor over it."""
    cursor = reply.get("cursor")
    if not isinstance(cursor, dict) or not cursor.get("id"):
        return reply
    passthrough = ShardPassthroughCursor(router.shard(shard), db, int(cursor["id"]), cursor["ns"])
    return {**reply, "cursor": {**cursor, "id": Int64(router.cursors.register(passthrough))}}
