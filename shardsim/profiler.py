"""The database profiler: `profile` and `<db>.system.profile`.

`{profile: <level>, slowms?, sampleRate?, filter?}` answers the settings it
replaces (`was`, `slowms`, `sampleRate`; -1 only reads them).  Level 2
records every operation on the database, level 1 those slower than `slowms`
(or matching `filter`), each as a document of the capped collection
`system.profile` (1 MiB, created when profiling is turned on): `op` (query,
insert, update, remove, getmore, command), `ns`, `command` (as the client
sent it, with its `comment`), counters (`nreturned`, `ninserted`,
`nMatched`, `nModified`, `ndeleted`), `responseLength`, `protocol`,
`millis`, `ts`, `client`, `appName`, `allUsers`, `user`.
Operations on system.profile itself are not profiled.  mongos keeps no
profile: only levels 0 and -1 are accepted there (router/commands_admin).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import trio

from mongosim.oplog import bsonutil
from mongosim.oplog.errors import MongoError
from mongosim.shardsim import capped
from mongosim.shardsim.command_registry import command
from mongosim.shardsim.create_collection import create_collection
from mongosim.shardsim.operation_context import OpCtx
from mongosim.shardsim.query.matcher import Matcher

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

PROFILE = "system.profile"
PROFILE_SIZE = 1024 * 1024
DEFAULT_SLOWMS = 100
_SETTINGS: "weakref.WeakKeyDictionary[Node, dict[str, dict]]" = weakref.WeakKeyDictionary()
_GLOBAL = {"slowms": DEFAULT_SLOWMS, "sampleRate": 1.0}
_OPS = {"find": "query", "aggregate": "command", "insert": "insert", "update": "update", "delete": "remove",
        "getMore": "getmore", "count": "command", "distinct": "command", "findAndModify": "command"}
_DROPPED = ("lsid", "txnNumber", "$clusterTime", "$readPreference", "apiVersion", "autocommit", "startTransaction")


def active(node: Node) -> bool:
    return node in _SETTINGS


def _level(node: Node, db: str) -> dict:
    return _SETTINGS.get(node, {}).get(db, {"level": 0})


@command("profile")
def cmd_profile(node: Node, ctx: OpCtx) -> dict:
    cmd = ctx.cmd
    level = cmd["profile"]
    if isinstance(level, bool) or not isinstance(level, (int, float)):
        raise MongoError("TypeMismatch", f"BSON field 'profile.profile' is the wrong type, expected type 'int'")
    level = int(level)
    if level > 2:
        raise MongoError("BadValue", f"Invalid profiling level: {level}")
    rate = cmd.get("sampleRate")
    if rate is not None and not 0.0 <= float(rate) <= 1.0:
        raise MongoError("BadValue", "'sampleRate' must be between 0.0 and 1.0 inclusive")
    old = _level(node, ctx.db)
    reply: dict[str, Any] = {"was": old["level"], "slowms": _GLOBAL["slowms"], "sampleRate": _GLOBAL["sampleRate"]}
    if "filter" in old:
        reply["filter"] = old["filter"]
    if "filter" in old or isinstance(cmd.get("filter"), dict):
        reply["note"] = ("When a filter expression is set, slowms and sampleRate are not used for profiling and "
                         "slow-query log lines.")
    if "slowms" in cmd:
        _GLOBAL["slowms"] = int(cmd["slowms"])
    if rate is not None:
        _GLOBAL["sampleRate"] = float(rate)
    if level >= 0:
        new = {"level": level}
        flt = cmd.get("filter", old.get("filter"))
        if isinstance(flt, dict):
            new["filter"] = flt
        _SETTINGS.setdefault(node, {})[ctx.db] = new
        if level > 0 and node.catalog.collection(ctx.db, PROFILE) is None:
            create_collection(node, OpCtx(ctx.db, {"create": PROFILE}), ctx.db, PROFILE,
                              {"capped": True, "size": PROFILE_SIZE})
    reply["ok"] = 1.0
    return reply


def record(node: Node, db: str, cmd: dict, reply: dict | None, started: float) -> None:
    """Write the operation's profile entry if the database's level asks for it."""
    settings = _level(node, db)
    if not settings["level"]:
        return
    name = next(iter(cmd))
    if cmd.get(name) == PROFILE or name in ("profile",):
        return
    millis = int((trio.current_time() - started) * 1000)
    if settings["level"] == 1 and "filter" not in settings and millis < _GLOBAL["slowms"]:
        return
    coll = node.catalog.collection(db, PROFILE)
    if coll is None:
        return
    entry: dict[str, Any] = {"op": _OPS.get(name, "command"), "ns": f"{db}.{cmd.get(name)}" if isinstance(
        cmd.get(name), str) else f"{db}.$cmd",
        "command": {**{k: v for k, v in cmd.items() if k not in _DROPPED}, "$db": db}}
    entry.update(_counters(name, reply))
    entry["responseLength"] = len(bsonutil.encode(reply)) if reply is not None else 0
    entry["protocol"] = "op_msg"
    entry["millis"] = millis
    entry["ts"] = node.wall.wall()
    entry["client"] = ""
    entry["appName"] = ""
    entry["allUsers"] = []
    entry["user"] = ""
    if "filter" in settings and not Matcher(settings["filter"]).matches(entry):
        return
    key = ("profile", coll.capped.next_seq)  # (profile entries have no _id, and are not replicated)
    coll.docs[key] = entry
    capped.after_insert(node, OpCtx(db, {}), coll, entry, key, replicated=False)


def _counters(name: str, reply: dict | None) -> dict:
    if reply is None:
        return {}
    cursor = reply.get("cursor") or {}
    if name in ("find", "aggregate", "getMore"):
        batch = cursor.get("firstBatch", cursor.get("nextBatch", []))
        return {"cursorExhausted": not cursor.get("id"), "nreturned": len(batch)}
    if name == "insert":
        return {"ninserted": reply.get("n", 0)}
    if name == "update":
        return {"nMatched": reply.get("n", 0), "nModified": reply.get("nModified", 0)}
    if name == "delete":
        return {"ndeleted": reply.get("n", 0)}
    return {}
