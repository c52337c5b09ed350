"""A shard's cursor behind a router cursor (the server's storePossibleCursor).

Commands mongos forwards to one shard whole (listCollections, listIndexes)
answer with that shard's cursor.  When the cursor stays open, mongos keeps it
behind a cursor of its own: the client's getMore reaches the router, which
asks the shard for the next batch; killCursors (or the router's reaper)
kills the shard's cursor too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bson import Int64

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

    async def get_more(self, batch_size: int | None, max_time_ms: int | None) -> tuple[list, None, bool]:
        cmd: dict[str, Any] = {"getMore": Int64(self.shard_cursor_id), "collection": self.ns.split(".", 1)[1]}
        if batch_size:
            cmd["batchSize"] = batch_size
        if max_time_ms:
            cmd["maxTimeMS"] = max_time_ms  # (a tailable awaitData cursor's await time)
        reply = await self.remote.command(self.db, cmd)
        self.exhausted = reply["cursor"]["id"] == 0
        return reply["cursor"]["nextBatch"], None, self.exhausted

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
