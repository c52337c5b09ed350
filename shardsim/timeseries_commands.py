"""The commands a time-series collection answers itself (views.py hands them over): inserts, updates,
deletes, findAndModify, and createIndexes / listIndexes / dropIndexes in the user's terms
(timeseries_index_conversion.py translates, the buckets collection's own commands run)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mongosim.oplog.errors import MongoError
from mongosim.shardsim import timeseries, timeseries_modify
from mongosim.shardsim.command_registry import COMMANDS
from mongosim.shardsim.reads import serve_cursor
from mongosim.shardsim.timeseries_index_conversion import bucket_index_specs, drop_target, user_index

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node
    from mongosim.shardsim.operation_context import OpCtx

INDEX_COMMANDS = frozenset({"createIndexes", "listIndexes", "dropIndexes"})


async def run(node: Node, ctx: OpCtx, command: str, name: str) -> dict:
    """`command` on the time-series collection `name`."""
    if command == "insert":
        return await timeseries.insert(node, ctx, name)
    if command in INDEX_COMMANDS:
        return await _index_command(node, ctx, command, name, timeseries.buckets_of(name))
    return await timeseries_modify.run(node, ctx, command, name)


async def _index_command(node: Node, ctx: OpCtx, command: str, name: str, buckets: str) -> dict:
    coll = node.catalog.collection(ctx.db, buckets)
    if coll is None or "timeseries" not in coll.options:
        raise MongoError("NamespaceNotFound", f"ns does not exist: {ctx.db}.{name}")
    ts = coll.options["timeseries"]
    cmd = dict(ctx.cmd)
    if command == "listIndexes":
        specs = [s for s in (user_index(ts, spec) for spec in coll.indexes if spec.get("name") != "_id_")
                 if s is not None]
        return serve_cursor(node, f"{ctx.db}.$cmd.listIndexes.{name}", iter(specs),
                            (cmd.get("cursor") or {}).get("batchSize"), eof_at=len(specs))
    cmd[command] = buckets
    if command == "createIndexes":
        if isinstance(cmd.get("indexes"), list):
            cmd["indexes"] = bucket_index_specs(ts, ctx.cmd, cmd["indexes"])
    elif "index" in cmd:
        cmd["index"] = drop_target(ts, ctx.cmd, cmd["index"])
    saved = ctx.cmd
    ctx.cmd = cmd
    try:
        reply = COMMANDS[command](node, ctx)
        if hasattr(reply, "__await__"):
            reply = await reply
    finally:
        ctx.cmd = saved
    for field in ("numIndexesBefore", "numIndexesAfter", "nIndexesWas"):  # (the buckets have no _id index)
        if field in reply:
            reply[field] -= 1
    return reply
