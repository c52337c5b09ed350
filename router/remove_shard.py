"""removeShard: a shard drains and leaves the cluster (the server's ShardingCatalogManager::removeShard).

Called again and again until it answers `completed`:

1. The first call marks the shard `draining: true` in `config.shards` and
   answers `{msg: "draining started successfully", state: "started", shard,
   note, dbsToMove}`.  The balancer (router/balancer.py) moves its chunks to
   the other shards; the databases whose primary it is must be moved by hand
   (`movePrimary`, router/move_primary.py) or dropped: they are `dbsToMove`.
2. While chunks or databases remain: `{msg: "draining ongoing", state:
   "ongoing", remaining: {chunks, dbs, jumboChunks}, note, dbsToMove}`.
3. When none remain: the shard's `config.shards` document is deleted (and the
   topologyTime of another, the control shard, advanced), no router targets
   it any more, and the answer is `{msg: "removeshard completed
   successfully", state: "completed", shard}`.

Refused: an unknown shard (ShardNotFound "Shard <name> does not exist"), and
the last shard not draining (IllegalOperation "Operation not allowed because
it would remove the last shard").

Change streams: the router's stream on `config.shards` sees the removal and,
like the server's HandleTopologyChange stage, does nothing with it; the
removed shard's node keeps running (as a removed mongod does), so the running
streams keep their cursor on it and lose nothing it wrote.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bson import Int64

from mongosim.oplog.errors import MongoError
from mongosim.router.command_registry import router_command
from mongosim.router.request import Request
from mongosim.router.sharding import admin_only, config_write
from mongosim.router.sharding_logging import log_change

if TYPE_CHECKING:
    from mongosim.router.mongos import Router


def _docs(router: Router, coll: str) -> list[dict]:
    c = router.config.catalog.collection("config", coll)
    return list(c.docs.values()) if c is not None else []


def _db_info(router: Router, name: str) -> dict:
    dbs = sorted(d["_id"] for d in _docs(router, "databases") if d.get("primary") == name and d["_id"] != "local")
    return {"note": "you need to drop or movePrimary these databases", "dbsToMove": dbs}


@router_command("removeShard", "removeshard")
async def cmd_remove_shard(router: Router, req: Request) -> dict:
    admin_only(req)
    name = req.cmd[req.name]
    if not isinstance(name, str):
        raise MongoError("TypeMismatch", "Field 'removeShard' must be of type string")
    async with router._ddl_lock:  # (the server's shard membership lock)
        router.refresh_catalog()
        shards = _docs(router, "shards")
        doc = next((d for d in shards if d["_id"] == name), None)
        if doc is None:
            raise MongoError("ShardNotFound", f"Shard {name} does not exist")
        if not any(d["_id"] != name and not d.get("draining") for d in shards):
            raise MongoError("IllegalOperation", "Operation not allowed because it would remove the last shard")
        if not doc.get("draining"):
            await log_change(router, "removeShard.start", "", {"shard": name})
            await config_write(router, {"update": "shards", "updates": [
                {"q": {"_id": name}, "u": {"$set": {"draining": True}}}]})
            balancer = router.manager.balancer
            if balancer is not None:
                balancer.wake()
            return {"msg": "draining started successfully", "state": "started", "shard": name,
                    **_db_info(router, name), "ok": 1.0}
        chunks = sum(1 for c in _docs(router, "chunks") if c.get("shard") == name)
        jumbo = sum(1 for c in _docs(router, "chunks") if c.get("shard") == name and c.get("jumbo"))
        dbs = sum(1 for d in _docs(router, "databases") if d.get("primary") == name)
        if chunks or dbs:
            return {"msg": "draining ongoing", "state": "ongoing",
                    "remaining": {"chunks": Int64(chunks), "dbs": Int64(dbs), "jumboChunks": Int64(jumbo)},
                    **_db_info(router, name), "ok": 1.0}
        await _remove(router, name, shards)
    return {"msg": "removeshard completed successfully", "state": "completed", "shard": name, "ok": 1.0}


async def _remove(router: Router, name: str, shards: list[dict]) -> None:
    """Delete the shard's document, advance the control shard's topologyTime, retire the shard."""
    control = next(d["_id"] for d in shards if d["_id"] != name)
    reply = await config_write(router, {"delete": "shards", "deletes": [{"q": {"_id": name}, "limit": 1}]})
    removed_key = reply.get("_opTimeKey") or router.config.oplog.last_key
    await config_write(router, {"update": "shards", "updates": [
        {"q": {"_id": control}, "u": {"$set": {"topologyTime": router.clock.now()}}}]})
    router.registry.retire(name, removed_key)
    await log_change(router, "removeShard", "", {"shard": name})
