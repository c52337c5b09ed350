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
at sampleRate): `{op, ns, command, <counts>, ok/errCode/errName/errMsg on
failure, responseLength, protocol, millis, ts, client, appName, allUsers,
user}`.  `command` is the command as the client sent it, so
`find({"command.comment": ...})` finds an operation by its comment.
mongosim records one document per command (the server writes one per
statement of a multi-statement update or delete) and leaves out the fields of
its query engine and locks (keysExamined, planSummary, locks, execStats...).
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
from mongosim.shardsim.catalog import Collection
from mongosim.shardsim.command_registry import command
from mongosim.shardsim.operation_context import OpCtx
from mongosim.shardsim.query.matcher import Matcher

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

PROFILE_COLLECTION = "system.profile"
PROFILE_SIZE = 1024 * 1024  # the server's default system.profile size
FILTER_NOTE = "When a filter expression is set, slowms and sampleRate are not used for profiling and slow-query log lines."
_OPS = {"insert": "insert", "update": "update", "delete": "remove", "find": "query", "getMore": "getmore"}


@dataclass
class ProfileSettings:
    """One node's profiler: the level (and filter) of each profiled database, slowms and sampleRate."""

    levels: dict[str, tuple[int, dict | None]] = field(default_factory=dict)  # db -> (level, filter)
    slowms: int = 100
    sample_rate: float = 1.0
    sizes: dict[str, int] = field(default_factory=dict)  # db -> bytes held by its system.profile
    recorded: int = 0  # documents recorded (their keys in the collection)

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


def check_user_write(db: str, name: str, cmd: dict) -> None:
    """A client's write to `<db>.system.profile` is refused (the server's userAllowedWriteNS)."""
    if cmd.get(name) == PROFILE_COLLECTION:
        raise MongoError("InvalidNamespace", f"cannot write to {db}.{PROFILE_COLLECTION}")


def _ns(db: str, name: str, cmd: dict) -> str:
    if name == "getMore":
        coll = cmd.get("collection")
        return f"{db}.{coll}" if isinstance(coll, str) else f"{db}.$cmd"
    target = cmd.get(name)
    return f"{db}.{target}" if isinstance(target, str) else f"{db}.$cmd"


def _counts(name: str, reply: dict) -> dict:
    """What the operation did, in the server's fields."""
    if name in ("find", "getMore"):
        cur = reply.get("cursor") or {}
        batch = cur.get("firstBatch", cur.get("nextBatch", []))
        out: dict[str, Any] = {"cursorid": cur.get("id", 0)} if cur.get("id") else {}
        out["nreturned"] = len(batch)
        return out
    if name == "insert":
        return {"ninserted": reply.get("n", 0)}
    if name == "update":
        return {"nMatched": reply.get("n", 0) - len(reply.get("upserted", ())), "nModified": reply.get("nModified", 0),
                "nUpserted": len(reply.get("upserted", ()))}
    if name == "delete":
        return {"ndeleted": reply.get("n", 0)}
    return {}


def _should_record(settings: ProfileSettings, level: int, flt: dict | None, entry: dict) -> bool:
    if flt is not None:
        return Matcher(flt).matches(entry)
    if level == 2:
        return True
    return entry["millis"] >= settings.slowms and random.random() < settings.sample_rate


async def profiled(node: Node, db: str, cmd: dict, run: Callable[[], Awaitable[dict]], client: dict | None) -> dict:
    """Run the command, then record it in `<db>.system.profile` if the database is profiled."""
    name = next(iter(cmd), "")
    start = trio.current_time()
    wall = node.wall.wall()
    reply: dict | None = None
    error: MongoError | None = None
    try:
        reply = await run()
        return reply
    except MongoError as err:
        error = err
        raise
    finally:
        level, flt = node.profiler.of(db)
        if level or flt is not None:
            _record(node, db, name, cmd, reply, error, start, wall, client, level, flt)


def _record(node: Node, db: str, name: str, cmd: dict, reply: dict | None, error: MongoError | None, start: float,
            wall: _dt.datetime, client: dict | None, level: int, flt: dict | None) -> None:
    entry: dict[str, Any] = {"op": _OPS.get(name, "command"), "ns": _ns(db, name, cmd), "command": dict(cmd)}
    if reply is not None:
        entry.update(_counts(name, reply))
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
