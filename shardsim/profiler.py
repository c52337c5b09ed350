"""The database profiler of a mongod: the `profile` command and `<db>.system.profile`.

`{profile: <level>, slowms?, sampleRate?, filter?}` on a database sets its
profiling level (0 off, 1 slow operations, 2 every operation; -1 only reads
the settings) and the node's slowms / sampleRate, and answers the settings as
they were: `{was, slowms, sampleRate, filter?, note?}`.  Turning profiling on
creates `<db>.system.profile` (capped, 1 MB, unreplicated: no oplog entry, so
no change event) when it does not exist.

While a database is profiled, every command run on it leaves one document in
its system.profile when it ends, as the server's profiler does at level 2 (at
level 1 only an operation slower than slowms, or one the filter matches, and
at sampleRate).  The level the command started under decides (CurOp keeps the
level read as the command enters its database: curop.cpp), so `{profile: 0}`
sent at level 2 is recorded and `{profile: 2}` sent at level 0 is not.  Its fields come in the order of 8.0's OpDebug::append, then
those profile() adds (introspect.cpp):

    op, ns, command, cursorid, nMatched, nBatches, nModified, ninserted,
    ndeleted, nUpserted, cursorExhausted, numYield, nreturned, readConcern,
    writeConcern, ok/errMsg/errName/errCode (on failure), responseLength,
    protocol, millis, ts, client, appName, allUsers, user

each where the server writes it: `cursorid` for a find/getMore/aggregate that
leaves a cursor open, `cursorExhausted: true` for one that does not,
`nBatches: 1` and `nreturned` for those three (endQueryOp, getMore,
handleCursorCommand); `numYield` always (0: mongosim never yields).
`readConcern` is the operation's effective read concern with its provenance
(ReadConcernArgs::appendInfo, written when the read concern "is specified"):
the client's (provenance "clientSupplied", or the one it named), the
cluster-wide default applied to it ("customDefault"), or the implicit
`{level: "local", provenance: "implicitDefault"}` a mongod gives a client's
command naming none (but hello/isMaster; on a shard's or the config server's
member only to the commands that take no cluster-wide default: a find naming
none has no readConcern there); a command from mongos shows what mongos sent.
`writeConcern` is that of a command that waits for one (`{w, j?, wtimeout,
provenance}`, WriteConcernOptions::toBSON), but not the implicit `{w: 1}` of a
set whose default is not majority (the server's default-constructed one).
`millis` covers the whole command, write concern wait included.
`command` is the command as the client sent it, so
`find({"command.comment": ...})` finds an operation by its comment.
mongosim records one document per command (the server writes one per
statement of a multi-statement update or delete), and leaves out what
measures its query engine, storage and CPU (keysExamined, docsExamined,
keysInserted, planSummary, queryHash/planCacheKey/queryShapeHash,
queryFramework, locks, flowControl, storage, cpuNanos, execStats) and a
getMore's originatingCommand.  A getMore shows its cursor's read concern and
a transaction's later statement the transaction's (as the server restores
them), when the command that opened the cursor or started the transaction
was profiled too (none otherwise).
A command from a mongos carries no client: its document has none.
"""

from __future__ import annotations

import datetime as _dt
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable

import trio
from mongosim.oplog import bsonutil
from mongosim.oplog.errors import MongoError
from mongosim.shardsim import write_concern
from mongosim.shardsim.catalog import Collection
from mongosim.shardsim.command_registry import command
from mongosim.shardsim.operation_context import OpCtx
from mongosim.shardsim.query.matcher import Matcher
from mongosim.shardsim.read_concern_support import default_permitted, read_concern_is_empty
from mongosim.shardsim.write_concern import WriteConcern

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

PROFILE_COLLECTION = "system.profile"
PROFILE_SIZE = 1024 * 1024  # the server's default system.profile size
FILTER_NOTE = "When a filter expression is set, slowms and sampleRate are not used for profiling and slow-query log lines."
_OPS = {"insert": "insert", "update": "update", "delete": "remove", "find": "query", "getMore": "getmore"}
_CURSOR_COMMANDS = frozenset({"find", "getMore", "aggregate"})
_RC_FIELDS = ("level", "afterOpTime", "afterClusterTime", "atClusterTime")
_NO_IMPLICIT_READ_CONCERN = frozenset({"hello", "isMaster", "ismaster"})  # (implicitDefaultReadConcernPermit)


@dataclass
class ProfileSettings:
    """One node's profiler: the level (and filter) of each profiled database, slowms and sampleRate."""

    levels: dict[str, tuple[int, dict | None]] = field(default_factory=dict)  # db -> (level, filter)
    slowms: int = 100
    sample_rate: float = 1.0
    sizes: dict[str, int] = field(default_factory=dict)  # db -> bytes held by its system.profile
    recorded: int = 0  # documents recorded (their keys in the collection)
    # the read concern of a profiled operation that opened a cursor, or started a transaction: what the
    # server records for its getMores (the cursor's) and the transaction's later statements
    read_concerns: dict[tuple, dict | None] = field(default_factory=dict)

    def of(self, db: str) -> tuple[int, dict | None]:
        return self.levels.get(db, (0, None))


def _check_args(cmd: dict) -> tuple[int, Any, Any, Any]:
    level = cmd.get("profile")
    if isinstance(level, bool) or not isinstance(level, (int, float)):
        raise MongoError("TypeMismatch", "BSON field 'profile.profile' is the wrong type, expected type 'int'")
    level = int(level)
    slowms, rate, flt = cmd.get("slowms"), cmd.get("sampleRate"), cmd.get("filter")
    if slowms is not None and (isinstance(slowms, bool) or not isinstance(slowms, (int, float))):
        raise MongoError("TypeMismatch", "BSON field 'profile.slowms' is the wrong type, expected type 'int'")
    if rate is not None:
        if isinstance(rate, bool) or not isinstance(rate, (int, float)):
            raise MongoError("TypeMismatch", "BSON field 'profile.sampleRate' is the wrong type, expected type 'double'")
        if not 0.0 <= rate <= 1.0:
            raise MongoError("BadValue", "'sampleRate' must be between 0.0 and 1.0 inclusive")
    if flt is not None and not isinstance(flt, dict) and flt != "unset":
        raise MongoError("BadValue", "Expected an object, or the string 'unset'.")
    if isinstance(flt, dict):
        Matcher(flt)  # a filter that does not parse is refused now, not at the next operation
    return level, slowms, rate, flt


def apply_profile_command(settings: ProfileSettings, db: str, cmd: dict, *, on_mongos: bool) -> tuple[dict, int]:
    """The reply of `profile` (the settings as they were) after applying it; and the new level."""
    level, slowms, rate, flt = _check_args(cmd)
    if on_mongos and level not in (-1, 0):
        raise MongoError("BadValue", "Profiling is not permitted on mongoS: the 'profile' field should be 0 to change "
                                     "'slowms', 'sampleRate', or 'filter' settings for logging, or -1 to view current values")
    old_level, old_filter = settings.of(db)
    reply: dict[str, Any] = {"was": old_level, "slowms": settings.slowms, "sampleRate": float(settings.sample_rate)}
    if old_filter is not None:
        reply["filter"] = old_filter
    if old_filter is not None or flt is not None:
        reply["note"] = FILTER_NOTE
    new_level = old_level if level < 0 or level > 2 else level
    new_filter = old_filter if flt is None else (None if flt == "unset" else flt)
    if new_level or new_filter is not None:
        settings.levels[db] = (new_level, new_filter)
    else:
        settings.levels.pop(db, None)
    if slowms is not None:
        settings.slowms = int(slowms)
    if rate is not None:
        settings.sample_rate = float(rate)
    reply["ok"] = 1.0
    return reply, new_level


@command("profile")
def cmd_profile(node: Node, ctx: OpCtx) -> dict:
    reply, level = apply_profile_command(node.profiler, ctx.db, ctx.cmd, on_mongos=False)
    if level > 0:
        ensure_profile_collection(node, ctx.db)
    return reply


def ensure_profile_collection(node: Node, db: str) -> Collection:
    """`<db>.system.profile`: capped, with no index (no `_id` either: its documents have none),
    unreplicated (created without an oplog entry)."""
    coll = node.catalog.committed_collection(db, PROFILE_COLLECTION)
    if coll is None:
        coll = node.catalog.add_collection(Collection(db, PROFILE_COLLECTION, indexes=[],
                                                      options={"capped": True, "size": PROFILE_SIZE}))
        node.profiler.sizes[db] = 0
    return coll


def _ns(db: str, name: str, cmd: dict) -> str:
    if name == "getMore":
        coll = cmd.get("collection")
        return f"{db}.{coll}" if isinstance(coll, str) else f"{db}.$cmd"
    target = cmd.get(name)
    return f"{db}.{target}" if isinstance(target, str) else f"{db}.$cmd"


def _counts(name: str, reply: dict | None) -> dict:
    """What the operation did, in the server's fields and order, up to nreturned."""
    out: dict[str, Any] = {}
    if reply is None:
        out["numYield"] = 0
        return out
    if name in _CURSOR_COMMANDS:
        cur = reply.get("cursor")
        if isinstance(cur, dict):
            batch = cur.get("firstBatch", cur.get("nextBatch", []))
            if cur.get("id"):
                out["cursorid"] = cur["id"]
            out["nBatches"] = 1
            if not cur.get("id"):
                out["cursorExhausted"] = True
            out["numYield"] = 0
            out["nreturned"] = len(batch)
            return out
    elif name == "insert":
        out["ninserted"] = reply.get("n", 0)
    elif name == "update":
        out.update({"nMatched": reply.get("n", 0) - len(reply.get("upserted", ())),
                    "nModified": reply.get("nModified", 0), "nUpserted": len(reply.get("upserted", ()))})
    elif name == "delete":
        out["ndeleted"] = reply.get("n", 0)
    out["numYield"] = 0
    return out


def effective_read_concern(name: str, cmd: dict, *, from_router: bool, shard_member: bool) -> dict | None:
    """The read concern an operation runs at, as its profile entry shows it (see the module
    docstring): `cmd` is the command as it ran, the cluster-wide default read concern applied."""
    rc = cmd.get("readConcern")
    if not from_router and name not in _NO_IMPLICIT_READ_CONCERN and read_concern_is_empty(rc) and \
            (not shard_member or not default_permitted(name, cmd)):
        return {"level": "local", "provenance": "implicitDefault"}
    if not isinstance(rc, dict):
        return None
    out = {k: rc[k] for k in _RC_FIELDS if k in rc}
    out["provenance"] = rc.get("provenance", "clientSupplied")
    return out


_REMEMBERED = 10_000  # (past this many, those of closed cursors are forgotten)


def _txn_key(cmd: dict) -> tuple | None:
    lsid = cmd.get("lsid")
    if isinstance(lsid, dict) and "txnNumber" in cmd:
        return ("txn", lsid.get("id"), int(cmd["txnNumber"]))
    return None


def _operation_read_concern(node: Node, name: str, cmd: dict, reply: dict | None, *, from_router: bool,
                            shard_member: bool) -> dict | None:
    """The `readConcern` of a profile entry: a getMore's is its cursor's (applyCursorReadConcern), a
    transaction's later statement's the transaction's (TxnResources::release) — known when the
    operation that opened the cursor, or started the transaction, was profiled too."""
    remembered = node.profiler.read_concerns
    in_txn = "autocommit" in cmd
    if name == "getMore":
        rc = remembered.get(("cursor", cmd.get("getMore")))
    elif in_txn and not cmd.get("startTransaction"):
        rc = remembered.get(_txn_key(cmd))  # type: ignore[arg-type]
    else:
        rc = effective_read_concern(name, cmd, from_router=from_router, shard_member=shard_member)
        if in_txn and (key := _txn_key(cmd)) is not None:
            remembered[key] = rc
    cur = reply.get("cursor") if reply is not None else None
    if isinstance(cur, dict) and name in _CURSOR_COMMANDS:
        if cur.get("id"):
            remembered[("cursor", cur["id"])] = rc
        elif name == "getMore":
            remembered.pop(("cursor", cmd.get("getMore")), None)
    if len(remembered) > _REMEMBERED:
        open_ids = {cid for cid, _ in node.cursors.items()}
        for key in [k for k in remembered if k[0] == "cursor" and k[1] not in open_ids]:
            del remembered[key]
        while len(remembered) > _REMEMBERED:  # (transactions: the oldest first)
            del remembered[next(iter(remembered))]
    return rc


def _should_record(settings: ProfileSettings, level: int, flt: dict | None, entry: dict) -> bool:
    if flt is not None:
        return Matcher(flt).matches(entry)
    if level == 2:
        return True
    return entry["millis"] >= settings.slowms and random.random() < settings.sample_rate


async def profiled(node: Node, db: str, cmd: dict, run: Callable[[], Awaitable[dict]], client: dict | None, *,
                   effective: dict | None = None, wc: WriteConcern | None = None, from_router: bool = True,
                   shard_member: bool = False) -> dict:
    """Run the command, then record it in `<db>.system.profile` if the database is profiled.
    `cmd`: the command as the client sent it; `effective`: as it ran (the default read concern
    applied), `wc` the write concern it waited for, `from_router` / `shard_member` what decides its
    implicit read concern."""
    name = next(iter(cmd), "")
    start = trio.current_time()
    wall = node.wall.wall()
    # the level the operation started under decides (8.0's CurOp keeps the database's level as
    # the command enters its namespace, curop.cpp enter_inlock/raiseDbProfileLevel, and
    # completeAndLogOperation profiles by it): `profile: 0` sent at level 2 is recorded, `profile: 2`
    # sent at level 0 is not
    start_level, _ = node.profiler.of(db)
    reply: dict | None = None
    error: MongoError | None = None
    try:
        reply = await run()
        return reply
    except MongoError as err:
        error = err
        raise
    finally:
        level, flt = node.profiler.of(db)  # (the filter as it is at the end, as the server reads it)
        if db in node.profiler.levels or name == "profile":  # (a dropped database's settings went with it)
            level = start_level
        if level or flt is not None:
            rc = _operation_read_concern(node, name, effective if effective is not None else cmd, reply,
                                         from_router=from_router, shard_member=shard_member)
            _record(node, db, name, cmd, reply, error, start, wall, client, level, flt, rc,
                    write_concern.profiled(wc))


def _record(node: Node, db: str, name: str, cmd: dict, reply: dict | None, error: MongoError | None, start: float,
            wall: _dt.datetime, client: dict | None, level: int, flt: dict | None, rc: dict | None,
            wc: dict | None) -> None:
    entry: dict[str, Any] = {"op": _OPS.get(name, "command"), "ns": _ns(db, name, cmd), "command": dict(cmd)}
    entry.update(_counts(name, reply))
    if rc is not None:
        entry["readConcern"] = rc
    if wc is not None:
        entry["writeConcern"] = wc
    if error is not None:
        entry.update({"ok": 0.0, "errMsg": error.errmsg, "errName": error.code_name, "errCode": error.code})
    body = reply if reply is not None else (error.to_reply() if error is not None else {})
    entry["responseLength"] = len(bsonutil.encode({k: v for k, v in body.items() if not k.startswith("_")}))
    entry["protocol"] = "op_msg"
    entry["millis"] = int((trio.current_time() - start) * 1000)
    entry["ts"] = wall.replace(microsecond=wall.microsecond // 1000 * 1000)
    if client is not None:
        entry["client"] = client.get("client", "")
        if client.get("appName"):
            entry["appName"] = client["appName"]
        user = client.get("user")
        entry["allUsers"] = [{"user": user.split("@", 1)[0], "db": user.split("@", 1)[1]}] if user else []
        entry["user"] = user or ""
    if not _should_record(node.profiler, level, flt, entry):
        return
    coll = ensure_profile_collection(node, db)
    settings = node.profiler
    settings.recorded += 1
    # kept under a key of the profiler's own (the documents have no _id), oldest first
    coll.docs[("profile", settings.recorded)] = entry
    size = settings.sizes.get(db, 0) + len(bsonutil.encode(entry))
    while size > PROFILE_SIZE and len(coll.docs) > 1:  # capped: the oldest documents go first
        size -= len(bsonutil.encode(coll.docs.pop(next(iter(coll.docs)))))
    settings.sizes[db] = size
