"""The logical session cache of one mongod or mongos, and the `$listLocalSessions` stage that lists it.

Every command carrying an `lsid` makes its session known to the process that
receives it (the server's LogicalSessionCache::vivify): the session's record
`{_id: {id, uid}, lastUse, user?}` is kept, its `lastUse` moved to now; the
user's name is recorded when someone is authenticated.  A mongos lists its own
cache, a replica-set member its own.

Sessions leave the cache at a refresh (the server's runs every
logicalSessionRefreshMillis, 5 minutes; `refreshLogicalSessionCacheNow`
forces one): the ones ended with `endSessions` and the ones unused for
localLogicalSessionTimeoutMinutes (30).  A refresh also flushes the cache to
the deployment's `config.system.sessions` (its `sink`: the sessions still in
use written, the ended ones removed; shardsim/sessions_collection.py), which
`$listSessions` reads.  mongosim refreshes lazily, when the cache or that
collection is listed and a refresh period has passed.

`{aggregate: 1, pipeline: [{$listLocalSessions: {allUsers?, users?}}, ...]}`
lists the sessions of the current user (none authenticated: the sessions
whose uid is the digest of the empty name), of the users named
(`[{user, db}]`), or of everyone (`allUsers: true`), most recently
registered first.  It is run as a `$documents` of those records, so every
later stage (`$out`, `$merge` included) works as after `$documents`.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Callable

import trio

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.idl_errors import wrong_type
from mongosim.shardsim.query.values import describe_type
from mongosim.shardsim.sessions import user_digest

STAGE = "$listLocalSessions"
REFRESH_INTERVAL_S = 300.0  # logicalSessionRefreshMillis
SESSION_TIMEOUT_S = 30 * 60.0  # localLogicalSessionTimeoutMinutes


class LogicalSessionCache:
    """The sessions one process has seen, in order of first sight: id -> [{id, uid}, last use, user].

    The last use is kept as trio time (one float per command: this runs for every command
    carrying a session) and becomes a date only when the cache is listed."""

    def __init__(self) -> None:
        self._entries: dict[bytes, list] = {}  # session id -> entry
        self._ending: set[bytes] = set()
        self._last_refresh: float | None = None
        # where a refresh writes the sessions (config.system.sessions): sink(records, ended ids), and
        # the wall clock that dates their lastUse; set by the process that owns the cache
        self.sink: Callable[[list[dict], set[bytes]], None] | None = None
        self.wall: Callable[[], _dt.datetime] | None = None

    def __len__(self) -> int:
        return len(self._entries)

    def vivify(self, lsid: dict, user: str | None, now: float) -> None:
        """A command of session `lsid` (its uid resolved) arrived at trio time `now`.  A child
        session (mongos's internal transaction for a retryable write) counts as its parent:
        they share the id."""
        key = bytes(lsid["id"])  # (a bytes key hashes faster than bson's Binary)
        entry = self._entries.get(key)
        if entry is None:
            self._entries[key] = [{"id": lsid["id"], "uid": lsid["uid"]}, now, user]
        else:
            entry[1] = now
            if user:
                entry[2] = user

    def end(self, lsids: list) -> None:
        """endSessions: the sessions go at the next refresh."""
        self._ending.update(bytes(lsid["id"]) for lsid in lsids
                            if isinstance(lsid, dict) and isinstance(lsid.get("id"), bytes))

    def refresh(self, now: float) -> None:
        """Flush the sessions to the sink, then forget the ended ones and those idle past the timeout."""
        if self.sink is not None and self.wall is not None:
            ending = set(self._ending)
            live = [r for r in self.records(None, self.wall(), now) if bytes(r["_id"]["id"]) not in ending]
            self.sink(live, ending)
        for key in list(self._entries):
            if key in self._ending or now - self._entries[key][1] >= SESSION_TIMEOUT_S:
                del self._entries[key]
        self._ending.clear()
        self._last_refresh = now

    def maybe_refresh(self, now: float) -> None:
        if self._last_refresh is None:
            self._last_refresh = now
        elif now - self._last_refresh >= REFRESH_INTERVAL_S:
            self.refresh(now)

    def records(self, uids: set[bytes] | None, wall: _dt.datetime, now: float) -> list[dict]:
        """The LogicalSessionRecords `{_id: {id, uid}, lastUse, user?}` of the sessions of `uids`
        (None: every session), the latest registered first; `wall` is the date at trio time `now`."""
        out = []
        for ident, last_use, user in reversed(self._entries.values()):  # the server walks its ids from the back
            if uids is not None and bytes(ident["uid"]) not in uids:
                continue
            when = wall - _dt.timedelta(seconds=now - last_use)
            rec: dict[str, Any] = {"_id": dict(ident), "lastUse": when.replace(microsecond=when.microsecond // 1000 * 1000)}
            if user:
                rec["user"] = {"name": user}
            out.append(rec)
        return out


def parse_spec(spec: Any, current_uid: bytes, stage: str = STAGE) -> set[bytes] | None:
    """The uids `{$listLocalSessions: spec}` (or `$listSessions`: the same ListSessionsSpec) lists
    (None: all), after the server's checks."""
    STAGE = stage  # noqa: N806  (the messages name the stage)
    if not isinstance(spec, dict):
        raise MongoError("TypeMismatch", f"{STAGE} options must be specified in an object, but found: "
                                         f"{describe_type(spec)}")
    for k in spec:
        if k not in ("allUsers", "users"):
            raise MongoError(40415, f"BSON field '{STAGE}.{k}' is an unknown field.")
    all_users = spec.get("allUsers", False)
    if not isinstance(all_users, bool):
        raise wrong_type(f"{STAGE}.allUsers", all_users, "bool")
    users = spec.get("users")
    if users is not None and not isinstance(users, list):
        raise wrong_type(f"{STAGE}.users", users, "array")
    if all_users and users:
        raise MongoError("UnsupportedFormat", f"{STAGE} may not specify {{allUsers:true}} and {{users:[...]}} "
                                              "at the same time")
    if all_users:
        return None
    if not users:
        return {current_uid}
    uids = set()
    for u in users:
        if not isinstance(u, dict) or not isinstance(u.get("user"), str) or not isinstance(u.get("db"), str):
            raise MongoError(40414 if isinstance(u, dict) else "TypeMismatch",
                             f"BSON field '{STAGE}.users.user' is missing but a required field")
        uids.add(bytes(user_digest(f"{u['user']}@{u['db']}" if u["user"] or u["db"] else "")))
    return uids


def expand_list_local_sessions(target: Any, pipeline: list, cmd: dict, cache: LogicalSessionCache | None,
                               wall_clock: Callable[[], _dt.datetime]) -> list:
    """`pipeline` with a leading $listLocalSessions replaced by the `$documents` of its records.
    The current user is the one whose digest the command's own lsid carries (the front door
    completed it: `router.logical_session_id`)."""
    if not any(isinstance(st, dict) and STAGE in st for st in pipeline):
        return pipeline
    for i, st in enumerate(pipeline):
        if i > 0 and isinstance(st, dict) and STAGE in st:
            raise MongoError(40602, f"{STAGE} is only valid as the first stage in a pipeline")
    if target != 1:
        raise MongoError("InvalidNamespace", f"{STAGE} must be run against the database with {{aggregate: 1}}, "
                                             "not a collection")
    if "autocommit" in cmd:
        raise MongoError("OperationNotSupportedInTransaction",
                         "Operation not permitted in transaction :: caused by :: Aggregation stage "
                         f"{STAGE} cannot run within a multi-document transaction.")
    lsid = cmd.get("lsid")
    uid = lsid.get("uid") if isinstance(lsid, dict) else None
    uids = parse_spec(pipeline[0][STAGE], bytes(uid) if uid is not None else bytes(user_digest()))
    if cache is None:
        raise MongoError(31111, f"The {STAGE} stage is not allowed in this context :: missing a LogicalSessionCache")
    now = trio.current_time()
    cache.maybe_refresh(now)
    return [{"$documents": {"$literal": cache.records(uids, wall_clock(), now)}}, *pipeline[1:]]
