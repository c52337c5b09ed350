"""$currentOp on a node: the operations in progress, and the idle transactions and cursors (document_source_current_op.cpp).

`db.adminCommand({aggregate: 1, pipeline: [{$currentOp: {...}}, ...]})` — only on
`admin` with `{aggregate: 1}` (InvalidNamespace otherwise).  Options (booleans:
FailedToParse for another type or an unknown option): `allUsers`,
`idleConnections`, `idleCursors`, `idleSessions` (default true), `localOps`,
`backtrace`, `targetAllNodes`, `truncateOps`.

The active operations are the `$currentOp` aggregate itself (`type: "op"`, `active:
true`, its command) and the commands in flight on the node meanwhile (those that
wait: shardsim/kill_op.py), each with its client (`desc: "conn<N>"`, `client`,
`appName`, `clientMetadata`, `connectionId`: the connection it came on);
`idleSessions` adds each open transaction (`type: "idleSession"`, `desc: "inactive
transaction"`, its `lsid` and `transaction` parameters and timings), `idleCursors`
each open cursor (`type: "idleCursor"`).  Idle connections belong to the wire
layer, which a node does not see: `idleConnections` adds nothing.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import trio
from bson import Int64

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.kill_op import client_fields, describe
from mongosim.shardsim.operation_context import CLIENT_CONNECTION
from mongosim.shardsim.query.values import type_name
from mongosim.shardsim.source_stage_registry import register_source, shard_name

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node
    from mongosim.shardsim.operation_context import OpCtx

__all__ = ["parse_current_op", "current_ops", "OPTIONS"]

OPTIONS = ("allUsers", "idleConnections", "idleCursors", "idleSessions", "localOps", "backtrace", "targetAllNodes",
           "truncateOps")
_OPIDS = itertools.count(1)


def parse_current_op(spec: Any, db: str, target: Any) -> dict:
    if db != "admin" or target != 1:
        raise MongoError("InvalidNamespace", "$currentOp must be run against the 'admin' database with {aggregate: 1}")
    if not isinstance(spec, dict):
        raise MongoError("FailedToParse", f"$currentOp options must be specified in an object, but found: "
                                          f"{type_name(spec)}")
    for k, v in spec.items():
        if k not in OPTIONS:
            raise MongoError("FailedToParse", f"Unrecognized option '{k}' in $currentOp stage.")
        if not isinstance(v, bool):
            raise MongoError("FailedToParse", f"The '{k}' parameter of the $currentOp stage must be a boolean value, "
                                              f"but found: {type_name(v)}")
    return spec


def _micros(seconds: float) -> Int64:
    return Int64(int(max(seconds, 0) * 1_000_000))


def current_ops(node: Node, ctx: OpCtx, spec: dict) -> list[dict]:
    now_wall = node.wall.wall()
    now = trio.current_time()
    shard = shard_name(node)
    ops: list[dict] = []
    me: dict[str, Any] = {"type": "op", "host": node.host,
                          **client_fields(CLIENT_CONNECTION.get(), ctx.from_router), "active": True,
                          "currentOpTime": now_wall.isoformat(timespec="milliseconds") + "+00:00",
                          "threaded": True, "opid": ctx.opid or next(_OPIDS)}
    if ctx.lsid is not None:
        me["lsid"] = ctx.lsid
    me.update({"secs_running": Int64(0), "microsecs_running": Int64(0), "op": "command",
               "ns": f"{ctx.db}.$cmd.aggregate", "redacted": False,
               "command": {k: v for k, v in ctx.cmd.items() if k not in ("$clusterTime", "lsid")},
               "numYields": 0, "locks": {}, "waitingForLock": False, "lockStats": {},
               "waitingForFlowControl": False, "flowControlStats": {}})
    ops.append(me)
    for op in node.operations.running():  # (the commands awaiting something meanwhile: shardsim.kill_op)
        if op.ctx is not ctx:
            ops.append(describe(node, op, now))
    if spec.get("idleSessions", True):
        for txn in node.sessions.open_transactions():
            open_s = now - txn.started
            ops.append({"type": "idleSession", "host": node.host, "desc": "inactive transaction", "lsid": txn.lsid,
                        "transaction": {"parameters": {"txnNumber": Int64(txn.txn_number), "autocommit": False},
                                        "timeOpenMicros": _micros(open_s), "timeActiveMicros": Int64(0),
                                        "timeInactiveMicros": _micros(open_s)},
                        "active": False, "waitingForLock": False, "locks": {}, "lockStats": {},
                        "waitingForFlowControl": False, "flowControlStats": {}})
    if spec.get("idleCursors"):
        for cid, cur in node.cursors.items():
            ops.append({"type": "idleCursor", "host": node.host, "ns": cur.ns,
                        "cursor": {"cursorId": Int64(cid), "lastAccessDate": now_wall,
                                   "noCursorTimeout": False, "tailable": False, "awaitData": False}})
    if shard is not None:
        for op in ops:
            op["shard"] = shard
    return ops


@register_source("$currentOp")
def _source(node: Node, ctx: OpCtx, coll: str | None, spec: Any) -> list[dict]:
    return current_ops(node, ctx, parse_current_op(spec, ctx.db, 1 if coll is None else coll))
