"""A shard's cursor behind a router cursor (the server's storePossibleCursor).

Commands mongos forwards to one shard whole (listCollections, listIndexes)
answer with that shard's cursor.  When the cursor stays open, mongos keeps it
behind a cursor of its own: the client's getMore reaches the router, which
asks the shard for the next batch; killCursors (or the router's reaper)
kills the shard's cursor too.  A `$_passthroughToShard` change stream is kept
the same way (router/merge/passthrough_to_shard.py): its getMores also carry
maxTimeMS (an awaitData cursor) and each batch's postBatchResumeToken comes back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bson import Int64

from mongosim.oplog.errors import MongoError

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

    async def get_more(self, batch_size: int | None, max_time_ms: int | None) -> tuple[list, dict | None, bool]:
        cmd: dict[str, Any] = {"getMore": Int64(self.shard_cursor_id), "collection": self.ns.split(".", 1)[1]}
        if batch_size:
            cmd["batchSize"] = batch_size
        if max_time_ms:
            # (a tailable awaitData cursor's await time, or a change stream's)
            cmd["maxTimeMS"] = max_time_ms
        try:
            reply = await self.remote.command(self.db, cmd)
        except MongoError:
            self.exhausted = True  # the shard dropped its cursor with the error
            raise
        cursor = reply["cursor"]
        self.exhausted = cursor["id"] == 0
        fields = {"postBatchResumeToken": cursor.get("postBatchResumeToken")} if self.is_change_stream else None
        return cursor["nextBatch"], fields, self.exhausted

    def close(self) -> None:
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
