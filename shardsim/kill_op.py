"""Operations in flight on a node, killOp, and the currentOp command.

The server gives every operation an `opid` when its client starts it and keeps
it findable by that id until it ends; `killOp` marks the operation killed and
it fails with Interrupted (11601) at its next interruption point
(db/commands/kill_op.cpp, kill_op_cmd_base.cpp, ServiceContext::killOperation).
Here `Node.run_command` registers each command in the node's `OperationTable`
under a new opid, inside a trio cancel scope: the command's interruption points
are its awaits (a getMore waiting for data, a write held back by an fsync lock or
by a transaction that wrote its document, ...), and killOp cancels the scope (a
getMore killed frees its cursor, as a failed one does).  The node then
answers Interrupted "operation was interrupted" (an open transaction aborts, as
after any error in it).  A killed operation that reaches no await completes, as
one that reaches no interruption point does on the server.

killOp answers `{info: "attempting to kill op", ok: 1}` whether or not the op
exists (it "always reports success once past the auth check"); `op` must be an
integral number that fits 32 bits.

The currentOp command (current_op_common.cpp) is the aggregation
`[{$currentOp: {idleConnections: $all, allUsers: !$ownOps, truncateOps: true}},
{$match: <the other fields>}]`, answered as `{inprog: [...], ok: 1}`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import trio
from bson import Int64

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.command_registry import command
from mongosim.shardsim.generic_args import GENERIC_ARGUMENTS
from mongosim.shardsim.operation_context import CLIENT_CONNECTION
from mongosim.shardsim.query.values import type_name

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node
    from mongosim.shardsim.operation_context import OpCtx

__all__ = ["OperationTable", "InFlightOp", "parse_op_id", "current_op_pipeline", "interrupted", "client_fields"]

_INT32 = (-(2**31), 2**31 - 1)


@dataclass(eq=False)
class InFlightOp:
    """One command running on the node: its id, context, start time and the scope killOp cancels."""

    opid: int
    ctx: Any
    name: str
    started: float
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    killed: bool = False
    conn: Any = None  # the client connection it came on (shardsim.operation_context.CLIENT_CONNECTION)


class OperationTable:
    """The node's operations in flight, by opid (opids count up from 1 per node)."""

    def __init__(self) -> None:
        self._next = itertools.count(1)
        self._ops: dict[int, InFlightOp] = {}

    def begin(self, ctx: Any, name: str) -> InFlightOp:
        op = InFlightOp(next(self._next), ctx, name, trio.current_time(), conn=CLIENT_CONNECTION.get())
        self._ops[op.opid] = op
        return op

    def end(self, op: InFlightOp) -> None:
        self._ops.pop(op.opid, None)

    def running(self) -> list[InFlightOp]:
        return list(self._ops.values())

    def kill(self, opid: int) -> bool:
        """Mark the operation killed and interrupt it where it waits; False when no such op runs."""
        op = self._ops.get(opid)
        if op is None:
            return False
        op.killed = True
        op.scope.cancel()
        return True


def interrupted() -> MongoError:
    return MongoError("Interrupted", "operation was interrupted")


def parse_op_id(cmd: dict) -> int:
    """killOp's `op` (bsonExtractIntegerField, then the 32-bit check of KillOpCmdBase::parseOpId)."""
    if "op" not in cmd:
        raise MongoError("NoSuchKey", 'Missing expected field "op"')
    op = cmd["op"]
    if isinstance(op, bool) or not isinstance(op, (int, float)):
        raise MongoError("TypeMismatch", f'"op" had the wrong type. Expected number, found {type_name(op)}')
    if isinstance(op, float):
        if not math.isfinite(op) or op != int(op) or abs(op) >= 2**63:
            raise MongoError("BadValue", 'Expected field "op" to have a value exactly representable as a 64-bit '
                                         f"integer, but found op: {op!r}")
        op = int(op)
    if not _INT32[0] <= op <= _INT32[1]:
        raise MongoError(26823, f"invalid op : {op}. Op ID cannot be represented with 32 bits")
    return op % 2**32  # (an unsigned int on the server)


@command("killOp")
async def cmd_kill_op(node: Node, ctx: OpCtx) -> dict:
    if ctx.db != "admin":
        raise MongoError("Unauthorized", "killOp may only be run against the admin database.")
    node.operations.kill(parse_op_id(ctx.cmd))
    return {"info": "attempting to kill op", "ok": 1.0}


_CURRENT_OP_PARAMS = frozenset({"$all", "$ownOps", "$truncateOps"})


def current_op_pipeline(cmd: dict) -> list[dict]:
    """The aggregation the currentOp command runs (CurrentOpCommandBase::run), without its final
    $group: its caller collects the batch into `inprog`."""
    spec = {"idleConnections": bool(cmd.get("$all")), "allUsers": not cmd.get("$ownOps"), "truncateOps": True}
    match = {k: v for i, (k, v) in enumerate(cmd.items())
             if i and k not in _CURRENT_OP_PARAMS and k not in GENERIC_ARGUMENTS}
    return [{"$currentOp": spec}, {"$match": match}]


def current_op_command(cmd: dict) -> dict:
    """The aggregate command behind `cmd` (a currentOp command), its whole result in the first batch."""
    agg = {"aggregate": 1, "pipeline": current_op_pipeline(cmd), "cursor": {"batchSize": 2**31 - 1}}
    for k in ("lsid", "$readPreference", "comment", "maxTimeMS"):
        if k in cmd:
            agg[k] = cmd[k]
    return agg


@command("currentOp")
async def cmd_current_op(node: Node, ctx: OpCtx) -> dict:
    if ctx.db != "admin":
        raise MongoError("Unauthorized", "currentOp may only be run against the admin database.")
    reply = await node.run_command("admin", current_op_command(ctx.cmd), from_router=ctx.from_router)
    return {"inprog": reply["cursor"]["firstBatch"], "ok": 1.0}


def client_fields(conn: Any, via_router: bool) -> dict[str, Any]:
    """An operation's client in $currentOp (CurOp::reportCurrentOpForClient): `desc: "conn<N>"`,
    `connectionId`, `client` "ip:port" (`client_s` for one mongos sent: its client is the router's),
    `appName` and `clientMetadata` from the connection's hello."""
    if conn is None:
        return {"desc": "conn"}
    out: dict[str, Any] = {"desc": f"conn{conn.id}", "connectionId": conn.id,
                           "client_s" if via_router else "client": conn.peer}
    meta = conn.client
    if isinstance(meta, dict):
        app = meta.get("application")
        if isinstance(app, dict) and isinstance(app.get("name"), str):
            out["appName"] = app["name"]
        out["clientMetadata"] = meta
    return out


def describe(node: Node, op: InFlightOp, now: float) -> dict[str, Any]:
    """The $currentOp entry of an operation in flight other than the one asking."""
    ctx = op.ctx
    running = max(now - op.started, 0.0)
    target = ctx.cmd.get(op.name)
    ns = f"{ctx.db}.{target}" if isinstance(target, str) else f"{ctx.db}.$cmd"
    kind = {"find": "query", "getMore": "getmore", "insert": "insert", "update": "update",
            "delete": "remove"}.get(op.name, "command")
    if op.name == "getMore" and isinstance(ctx.cmd.get("collection"), str):
        ns = f"{ctx.db}.{ctx.cmd['collection']}"
    entry: dict[str, Any] = {"type": "op", "host": node.host, **client_fields(op.conn, ctx.from_router),
                             "active": True, "opid": op.opid}
    if ctx.lsid is not None:
        entry["lsid"] = ctx.lsid
    entry.update({"secs_running": Int64(int(running)), "microsecs_running": Int64(int(running * 1_000_000)),
                  "op": kind, "ns": ns, "redacted": False,
                  "command": {k: v for k, v in ctx.cmd.items() if k not in ("$clusterTime", "lsid")},
                  "numYields": 0, "locks": {}, "waitingForLock": False, "lockStats": {},
                  "waitingForFlowControl": False, "flowControlStats": {}})
    if op.killed:
        entry["killPending"] = True
    return entry
