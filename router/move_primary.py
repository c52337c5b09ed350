"""movePrimary: a database's unsharded collections move to another shard, which becomes its primary.

As the server's MovePrimaryCoordinator: the database's writes wait (its
critical section) while the donor's unsharded collections are cloned to the
recipient — same UUIDs, options and indexes; the inserts are `fromMigrate`,
so change streams see nothing of the move — then `config.databases` names the
new primary with the database version's `lastMod` + 1 (a router that missed
it is refused by the old primary with StaleDbVersion and refreshes), and the
donor drops its copies (`fromMigrate`).  Sharded collections stay where their
chunks are; the new primary gets an empty copy of each one it lacks (the
primary shard holds every collection of its database, and logs the
database's DDL events).

`{movePrimary: <db>, to: <shard>}`; moving to the current primary does
nothing.  Refused: admin/config (InvalidOptions), an unknown database
(NamespaceNotFound), an unknown shard (ShardNotFound).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mongosim.oplog.errors import MongoError
from mongosim.router.command_registry import router_command
from mongosim.router.request import Request
from mongosim.router.sharding import admin_only, config_write, critical_sections
from mongosim.router.sharding_logging import log_change

if TYPE_CHECKING:
    from mongosim.router.mongos import Router


@router_command("movePrimary", "moveprimary")
async def cmd_move_primary(router: Router, req: Request) -> dict:
    admin_only(req)
    db = req.cmd[req.name]
    to = req.cmd.get("to")
    if not isinstance(db, str) or not db:
        raise MongoError("InvalidNamespace", f"invalid db name specified: {db!r}")
    if db in ("admin", "config", "local"):
        raise MongoError("InvalidOptions", f"Can't move primary for {db} database")
    if not isinstance(to, str) or not to:
        raise MongoError("InvalidOptions", "you have to specify where you want to move it")
    async with router._ddl_lock:
        router.refresh_catalog()
        database = router.catalog.databases.get(db)
        if database is None:
            raise MongoError("NamespaceNotFound", f"Database {db} not found")
        if to not in router.shards:
            raise MongoError("ShardNotFound", f"Shard {to} not found")
        if database.primary == to:
            return {"ok": 1.0}
        await move_primary(router, db, database.primary, to, database.version)
    return {"ok": 1.0}


async def move_primary(router: Router, db: str, donor: str, to: str, version: dict) -> None:
    """Clone the unsharded collections, commit the new primary, drop the donor's copies."""
    cs = critical_sections(router)
    marker = f"{db}.*"  # the database's critical section: every write to it waits
    cs.acquire(marker)
    try:
        donor_remote, recipient = router.shard(donor), router.shard(to)
        entry = {"database": db, "from": donor, "to": to}  # MovePrimarySourceManager::_buildMoveLogEntry
        await log_change(router, "movePrimary.start", db, entry, by=donor_remote.node)
        source = donor_remote.node.catalog.db(db)
        moved = []
        for name, coll in sorted((source.collections if source else {}).items()):
            sharded = router.catalog.routing(coll.ns) is not None
            if recipient.node.catalog.collection(db, name) is None:
                await recipient.command(db, {
                    "_shardsvrSetShardKey": coll.ns, "key": coll.shard_key, "uuid": coll.uuid,
                    "options": dict(coll.options), "indexes": [dict(s) for s in coll.indexes], "fromMigrate": True})
            if sharded:
                continue
            moved.append(name)
            # a capped collection's documents in their natural (insertion) order, which the clone keeps
            docs = [d for _, d in coll.capped.live(coll)] if coll.capped is not None else list(coll.docs.values())
            if docs:
                await recipient.command(db, {"_recvChunkDocs": coll.ns, "documents": docs})
        new_version = {**version, "lastMod": int(version.get("lastMod", 1)) + 1}
        await config_write(router, {"update": "databases", "updates": [
            {"q": {"_id": db}, "u": {"$set": {"primary": to, "version": new_version}}}]})
        router.refresh_catalog()
        await log_change(router, "movePrimary.commit", db, entry, by=donor_remote.node)
        for name in moved:
            await donor_remote.command(db, {"drop": name, "fromMigrate": True})
    finally:
        cs.release(marker)
