"""$_internalChangeStreamHandleTopologyChange: a new shard joins a running stream.

The router's stream on the config server watches `config.shards`.  When an
insert there (a shard added) reaches the head of the merged stream, this
stage opens a cursor on the new shard — same change-stream options, resuming
from a high-water mark at the insert's clusterTime + 1 tick — adds it to the
merger, and swallows the config event.  `migrateChunkToNewShard` events (kept
by shards for older routers) are swallowed too.
"""

from __future__ import annotations

from typing import Any


from mongosim.oplog.clock import key_ts, ts_key
from mongosim.oplog.resume_token import make_high_water_mark_token


class HandleTopologyChange:
    def __init__(self, cursor: Any) -> None:
        self.cursor = cursor

    async def handle(self, rc: Any, raw: Any, op_type: str) -> None:
        """Swallow a topology event; for a shard added, open a cursor on it."""
        if not rc.is_config or op_type != "insert":
            return
        from mongosim.oplog.bsonutil import plain

        raw = plain(raw)
        shard = (raw.get("fullDocument") or {}).get("_id")
        router = self.cursor.router
        if shard is None or shard in {r.shard for r in self.cursor.arm.remotes} or shard not in router.shards:
            return
        start = key_ts(ts_key(raw["clusterTime"]) + 1)
        spec = {k: v for k, v in self.cursor.spec_bson.items() if k not in ("resumeAfter", "startAfter", "startAtOperationTime")}
        spec["resumeAfter"] = make_high_water_mark_token(start)
        if self.cursor.trace:
            self.cursor.trace({"step": "new_shard", "shard": shard, "start": start})
        await self.cursor.open_remote(shard, spec)
