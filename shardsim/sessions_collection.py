"""`config.system.sessions` and the `$listSessions` stage that reads it.

The server's logical session caches (one per mongod and mongos) write their sessions to
`config.system.sessions` at every refresh (SessionsCollection: the sessions in use upserted with
their `lastUse`, the ended ones removed), and a TTL index on `lastUse`
(localLogicalSessionTimeoutMinutes, 30) expires the idle ones.  `$listSessions` is a `$match` on
that collection: `{aggregate: "system.sessions", pipeline: [{$listSessions: {allUsers?, users?}}]}`
on `config` lists the records `{_id: {id, uid}, lastUse, user?}` of the current user's sessions,
of the users named, or of everyone; run on another namespace it is InvalidNamespace.  So a session
appears there only after a refresh of the cache that saw it (`refreshLogicalSessionCacheNow`, or
the 5-minute period).

Here the collection is kept as those records in memory: a replica set's on its node (the node's
cache flushes into it); a sharded cluster's on the config server's primary, where every mongos's
cache flushes (the server shards the collection over the shards; the records are the same).  The
stage is registered as a source of the node (replica set) and of the router
(router/cluster_source_stages.py).
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING, Any

import trio

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.logical_session_cache import SESSION_TIMEOUT_S, LogicalSessionCache, parse_spec
from mongosim.shardsim.sessions import user_digest
from mongosim.shardsim.source_stage_registry import register_source

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node
    from mongosim.shardsim.operation_context import OpCtx

__all__ = ["STAGE", "SessionsCollection", "list_sessions"]

STAGE = "$listSessions"


class SessionsCollection:
    """The records of `config.system.sessions`, by session id, in insertion order."""

    def __init__(self) -> None:
        self._records: dict[bytes, dict] = {}

    def apply(self, active: list[dict], ended: set[bytes]) -> None:
        """A cache's refresh: its sessions in use upserted, its ended sessions removed."""
        for key in ended:
            self._records.pop(key, None)
        for rec in reversed(active):  # (the cache lists the latest first)
            key = bytes(rec["_id"]["id"])
            old = self._records.get(key)
            if old is None or rec["lastUse"] >= old["lastUse"]:
                self._records[key] = rec

    def records(self, uids: set[bytes] | None, now: _dt.datetime) -> list[dict]:
        """The records of `uids` (None: all), the expired ones first removed (the TTL index)."""
        limit = now - _dt.timedelta(seconds=SESSION_TIMEOUT_S)
        for key in [k for k, r in self._records.items() if r["lastUse"] < limit]:
            del self._records[key]
        return [dict(r) for r in self._records.values() if uids is None or bytes(r["_id"]["uid"]) in uids]


def list_sessions(db: str, coll: Any, spec: Any, cmd: dict, cache: LogicalSessionCache, sessions: SessionsCollection,
                  wall: _dt.datetime) -> list[dict]:
    """The documents `{$listSessions: spec}` answers, checked as DocumentSourceListSessions is."""
    if db != "config" or coll != "system.sessions":
        raise MongoError("InvalidNamespace", f"{STAGE} may only be run against config.system.sessions")
    lsid = cmd.get("lsid")
    uid = lsid.get("uid") if isinstance(lsid, dict) else None
    uids = parse_spec(spec, bytes(uid) if uid is not None else bytes(user_digest()), STAGE)
    cache.maybe_refresh(trio.current_time())
    return sessions.records(uids, wall)


@register_source(STAGE)
def _node_list_sessions(node: Node, ctx: OpCtx, coll: Any, spec: Any) -> list[dict]:
    return list_sessions(ctx.db, coll, spec, ctx.cmd, node.session_cache, node.sessions_collection, node.wall.wall())
