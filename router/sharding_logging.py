"""config.changelog: the cluster's record of its metadata changes (the server's ShardingLogging).

Every migration, split, shardCollection, addShard, removeShard and
movePrimary leaves documents in `config.changelog` — a capped collection
(200 MB) the first logged change creates on the config server — each in the
server's shape (ChangeLogType), fields in this order:

    _id         "<server>-<time>-<ObjectId>"
    server      the logging process, "<host>:<port>"
    shard       the shard that logged it ("config" for the config server)
    clientAddr  the address of the client of that process's operation
    time        when (the logging process's wall clock)
    what        "moveChunk.start", "moveChunk.to", "moveChunk.commit", "moveChunk.from", "split",
                "shardCollection.start", "shardCollection.end", "addShard", "removeShard.start",
                "removeShard", "movePrimary.start", "movePrimary.commit", ...
    ns          the namespace ("" for shard-level changes)
    details     what the change was: a chunk's bounds and shards, timings of a migration's steps, ...

mongosh's `sh.status()` counts the successful migrations of the last day from
the donors' `moveChunk.from` entries (`details.note: "success"`); reading the
entries of one migration in order is the best account of what it did.  Logging
is best effort, as on the server: a failed write is not the operation's failure.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from bson import ObjectId

from mongosim.oplog.errors import MongoError

if TYPE_CHECKING:
    from mongosim.router.mongos import Router
    from mongosim.shardsim.node import Node

CHANGELOG = "changelog"
CHANGELOG_SIZE_MB = 200  # kChangeLogCollectionSizeMB


def _time_string(t: datetime) -> str:
    """Date_t::toString(): ISO 8601 with milliseconds and the (UTC) offset."""
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}+00:00"


async def _ensure_changelog(router: Router) -> None:
    if router.config.catalog.collection("config", CHANGELOG) is not None:
        return
    try:
        await router.config_remote.command("config", {"create": CHANGELOG, "capped": True,
                                                      "size": CHANGELOG_SIZE_MB * 1024 * 1024})
    except MongoError as err:
        if err.code_name != "NamespaceExists":
            raise


async def log_change(router: Router, what: str, ns: str, details: dict, *, by: Node | None = None,
                     client_addr: str = "") -> None:
    """Insert one changelog entry, as the process `by` (a shard's node; None: the config server) logs it."""
    node = by if by is not None else router.config
    shard = "config" if node is router.config else node.name
    now = node.wall.wall()
    server = node.host
    doc: dict[str, Any] = {"_id": f"{server}-{_time_string(now)}-{ObjectId()}", "server": server, "shard": shard,
                           "clientAddr": client_addr, "time": now, "what": what, "ns": ns, "details": details}
    try:
        await _ensure_changelog(router)
        await router.config_remote.command("config", {"insert": CHANGELOG, "documents": [doc]})
    except MongoError:  # "Error encountered while logging config change": the change itself stands
        pass


def chunk_version_string(major: int, minor: int, epoch: ObjectId, timestamp: Any) -> str:
    """ChunkVersion::toString(): `major|minor||epoch||Timestamp(t, i)`."""
    return f"{major}|{minor}||{epoch}||Timestamp({timestamp.time}, {timestamp.inc})"
