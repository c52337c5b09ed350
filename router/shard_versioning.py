"""The router side of the shard versioning protocol: versions out, refresh and retry on StaleConfig.

A router routes by its catalog cache, which another router's DDL or
migration may have made stale.  With each command it targets by that cache
it sends the version it routed by (`with_versions`): the collection's
`shardVersion` for the target shard, and for an unsharded collection also the
`databaseVersion` to the database's primary shard.  The shard checks them
(shardsim/filtering_metadata.py) and answers StaleConfig / StaleDbVersion
when they do not match; the router then refreshes its cache and tries again,
up to `MAX_STALE_RETRIES` times (the server's kMaxNumStaleVersionRetries):

- a read (find, count, distinct, aggregate, listCollections, listIndexes) and
  findAndModify run again as a whole (nothing was written);
- insert, update and delete retarget only the items whose child batch came
  back stale (commands_crud.py): the others were written;
- inside a transaction, only the first statement with a single participant
  can be retried (the transaction is restarted on it); otherwise the error
  goes back to the client, labelled TransientTransactionError.

Snapshot reads outside transactions are not versioned: they read every shard
that held the collection at their atClusterTime.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from mongosim.oplog.errors import MongoError, in_category
from mongosim.router.request import Request
from mongosim.shardsim.filtering_metadata import ZERO_TS, unsharded_version

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

MAX_STALE_RETRIES = 10  # kMaxNumStaleVersionRetries
STALE_DB_VERSION = 249
# commands run again as a whole after a stale answer
RETRIED_WHOLE = {"find", "count", "distinct", "aggregate", "listCollections", "listIndexes",
                 "findAndModify", "findandmodify", "insert", "update", "delete", "bulkWrite"}
_BATCH_WRITES = {"insert", "update", "delete", "bulkWrite"}  # outside a transaction: they retarget per child


def is_stale(err: MongoError) -> bool:
    """StaleConfig, StaleEpoch (the NeedRetargettingError category) or StaleDbVersion; or routing
    that named a shard since removed (Router.shard: ShardNotFound, the cache refreshed)."""
    return (in_category(err.code, "NeedRetargettingError") or err.code == STALE_DB_VERSION
            or getattr(err, "shard_removed", False))


def version_fields(router: Router, db: str, coll: Any, shard: str) -> dict:
    """The version fields a command on `db.coll` routed to `shard` carries (none for admin, config
    and collectionless commands)."""
    if not isinstance(coll, str) or db in ("admin", "config", "local"):
        return {}
    routing = router.catalog.routing(f"{db}.{coll}")
    if routing is not None:
        return {"shardVersion": {"e": routing.epoch, "t": routing.timestamp,
                                 "v": routing.placement.get(shard, ZERO_TS)}}
    out: dict = {"shardVersion": unsharded_version()}
    database = router.catalog.databases.get(db)
    if database is not None and database.primary == shard:
        out["databaseVersion"] = database.version
    return out


def note_routing(router: Router, req: Request, coll: Any, shards: Iterable[str]) -> None:
    """Remember, when the command is targeted, the versions it is targeted by: they go with its
    requests to those shards even if the cache is refreshed meanwhile (by another command)."""
    for shard in shards:
        if isinstance(shard, str):
            req.routing[shard] = version_fields(router, req.db, coll, shard)


def with_versions(router: Router, req: Request, db: str, cmd: dict, shard: str) -> dict:
    """`cmd`, for `shard`, with the version this router targeted it by."""
    rc = cmd.get("readConcern")
    if isinstance(rc, dict) and rc.get("level") == "snapshot" and "autocommit" not in cmd:
        return cmd
    fields = req.routing.get(shard) if db == req.db else None
    if fields is None:
        fields = version_fields(router, db, cmd[next(iter(cmd))], shard)
    return {**cmd, **fields} if fields else cmd


def with_database_version(router: Router, db: str, cmd: dict, shard: str) -> dict:
    """`cmd` for the database's primary shard with the database version (listCollections, ...)."""
    database = router.catalog.databases.get(db)
    if database is None or database.primary != shard:
        return cmd
    return {**cmd, "databaseVersion": database.version}


async def retry_after_stale(router: Router, req: Request, err: MongoError, attempt: int) -> bool:
    """After a stale answer that reached the top of a command: refresh, and say whether to run
    the command again."""
    if attempt >= MAX_STALE_RETRIES or req.name not in RETRIED_WHOLE or not is_stale(err):
        return False
    in_txn = req.cmd.get("autocommit") is False
    if req.name in _BATCH_WRITES and not in_txn:
        return False
    if in_txn and not await router.txns.restart_after_stale(req):
        return False
    router.refresh_catalog()
    return True
