"""killOp and the currentOp command through mongos (s/commands/cluster_kill_op.cpp, cluster_current_op.cpp).

`$currentOp` through mongos prints each shard's operation as `opid: "<shardId>:<opId>"`
(router/cluster_source_stages.py); killOp takes that string apart, sends
`{killOp: 1, op: <opId>}` to the shard (which interrupts the operation:
shardsim/kill_op.py) and answers `{shard, shardid: <opId>, ok: 1}` whatever the
shard said.  A number is an operation of the mongos itself: the router keeps none
in flight that it could interrupt apart from the shards', so it is a success that
kills nothing, as killOp of an unknown op is.

The currentOp command is the `$currentOp` aggregation with the command's other
fields as its `$match` (shardsim/kill_op.current_op_pipeline), `{inprog, ok}`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mongosim.oplog.errors import MongoError
from mongosim.router.command_registry import ROUTER_COMMANDS, router_command
from mongosim.router.request import Request
from mongosim.shardsim.kill_op import current_op_command, parse_op_id
from mongosim.shardsim.query.values import type_name

if TYPE_CHECKING:
    from mongosim.router.mongos import Router


def split_shard_op(op: str) -> tuple[str, int]:
    """`"shard00:12"` -> ("shard00", 12); 28625 unless `shardid:opid`, FailedToParse for a bad opid."""
    sep = op.find(":")
    if len(op) < 3 or sep <= 0 or sep == len(op) - 1:
        raise MongoError(28625, f'The op argument to killOp must be of the format shardid:opid but found "{op}"')
    shard, digits = op[:sep], op[sep + 1:]
    body = digits[1:] if digits[:1] in ("-", "+") else digits
    if not body.isascii() or not body.isdigit():
        raise MongoError("FailedToParse", f'Did not consume whole string. "{digits}"')
    opid = int(digits)
    if not -(2**31) <= opid < 2**31:
        raise MongoError("Overflow", f'Value out of range: "{digits}"')
    return shard, opid


@router_command("killOp")
async def cmd_kill_op(router: Router, req: Request) -> dict:
    if req.db != "admin":
        raise MongoError("Unauthorized", "killOp may only be run against the admin database.")
    if "op" not in req.cmd:
        raise MongoError(50759, 'Did not provide "op" field')
    op = req.cmd["op"]
    if isinstance(op, (int, float)) and not isinstance(op, bool):
        parse_op_id(req.cmd)  # (a mongos operation: none of its own is in flight to kill)
        return {"ok": 1.0}
    if not isinstance(op, str):
        raise MongoError(50760, f'"op" field was of unsupported type {type_name(op)}')
    shard, opid = split_shard_op(op)
    remote = router.shard(shard)  # ShardNotFound for an unknown shard id
    try:  # (the shard's answer is ignored, as the legacy killOp did)
        await remote.command("admin", {"killOp": 1, "op": opid})
    except MongoError:
        pass
    return {"shard": shard, "shardid": opid, "ok": 1.0}


@router_command("currentOp")
async def cmd_current_op(router: Router, req: Request) -> dict:
    if req.db != "admin":
        raise MongoError("Unauthorized", "currentOp may only be run against the admin database.")
    agg = Request("admin", current_op_command(req.cmd), req.conn, "aggregate")
    reply = await ROUTER_COMMANDS["aggregate"](router, agg)
    return {"inprog": reply["cursor"]["firstBatch"], "ok": 1.0}
