"""getShardVersion on mongos: what the router's catalog cache holds for a collection or a database
(cluster_get_shard_version_cmd.cpp).

`{getShardVersion: "<db>.<coll>"}` answers the collection placement version the router routes by —
`version` (Timestamp(major, minor), the highest chunk `lastmod`), `versionEpoch`, `versionTimestamp` —
and with `fullMetadata: true` also `chunks`, each chunk's `[min, max]` in shard-key order.  An unsharded
collection is NamespaceNotSharded.  `{getShardVersion: "<db>"}` answers the database's `primaryShard` and
`version` (NamespaceNotFound for a database that does not exist).  The namespace must be a string
(BadValue).  mongosim keeps no sharding index catalog: no `indexVersion`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bson import Timestamp

from mongosim.oplog.errors import MongoError
from mongosim.router.command_registry import router_command
from mongosim.router.request import Request
from mongosim.router.sharding import admin_only
from mongosim.shardsim.query.values import describe_type

if TYPE_CHECKING:
    from mongosim.router.mongos import Router


@router_command("getShardVersion", "getshardversion")
async def cmd_get_shard_version(router: Router, req: Request) -> dict:
    admin_only(req)
    ns = req.cmd[req.name]
    if not isinstance(ns, str):
        raise MongoError("BadValue", f"namespace has invalid type {describe_type(ns)}")
    db, _, coll = ns.partition(".")
    if not coll:
        router.catalog.primary_of(db)  # (not cached: looked up on the config server)
        database = router.catalog.databases.get(db)
        if database is None:
            raise MongoError("NamespaceNotFound", f"database {db} not found")
        return {"primaryShard": database.primary, "version": dict(database.version), "ok": 1.0}
    r = router.catalog.routing(ns)
    if r is None:
        router.refresh_catalog()  # (a collection not in the cache is looked up)
        r = router.catalog.routing(ns)
    if r is None:
        raise MongoError("NamespaceNotSharded", f"Collection {ns} is not sharded.")
    version = max((c.lastmod for c in r.chunks), key=lambda t: (t.time, t.inc), default=Timestamp(0, 0))
    reply: dict = {"version": version, "versionEpoch": r.epoch, "versionTimestamp": r.timestamp}
    if req.cmd.get("fullMetadata"):
        reply["chunks"] = [[c.min, c.max] for c in r.chunks]
    reply["ok"] = 1.0
    return reply
