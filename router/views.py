"""Reads on a view through mongos: the primary shard resolves the view, mongos runs it.

mongos does not know views; it sends a find / count / distinct / aggregate to
the namespace's primary shard as for a collection.  The shard answers
CommandOnShardedViewNotSupportedOnMongod (169) with `resolvedView: {ns,
pipeline}`, and mongos runs the view's pipeline, followed by the stages the
command stands for, as an aggregate on the backing namespace across the shards,
then shapes the reply as the command's own (shardsim/views.py converts both
ways; a find's cursor names the view).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mongosim.oplog.errors import MongoError
from mongosim.router.command_registry import ROUTER_COMMANDS, RouterHandler
from mongosim.router import cluster_aggregate  # noqa: F401  (aggregate is registered before it is wrapped)
from mongosim.router.commands_crud import (
    _serve,  # (also: the read commands are registered before they are wrapped)
)
from mongosim.router.request import Request
from mongosim.shardsim.collation import command_collator
from mongosim.shardsim.views import READS, as_pipeline, finish_view_read, view_hint

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

_SESSION_FIELDS = ("lsid", "txnNumber", "autocommit", "startTransaction", "readConcern", "let")


def resolving_views(handler: RouterHandler) -> RouterHandler:
    """`handler`, re-run on the backing namespace when the shard says the namespace is a view."""

    async def run(router: Router, req: Request) -> dict:
        try:
            return await handler(router, req)
        except MongoError as err:
            resolved = err.extra.get("resolvedView") if err.code == 169 else None
            if resolved is None:
                raise
        return await _read_view(router, req, resolved)

    return run


async def _read_view(router: Router, req: Request, resolved: dict) -> dict:
    cmd = req.cmd
    extra = list(cmd.get("pipeline") or []) if req.name == "aggregate" else as_pipeline(req.name, cmd)
    backing = resolved["ns"].split(".", 1)[1]
    inner = {"aggregate": backing, "pipeline": [*resolved["pipeline"], *extra], "cursor": {"batchSize": 2**31 - 1},
             **{k: cmd[k] for k in _SESSION_FIELDS if k in cmd}}
    if "collation" in resolved:
        inner["collation"] = resolved["collation"]  # the view's collation (the shard refused any other)
    hint = view_hint(resolved["pipeline"], cmd)
    if hint is not None:
        inner["hint"] = hint
    reply = await ROUTER_COMMANDS["aggregate"](router, Request(req.db, inner, req.conn, "aggregate", internal=True))
    def serve(_node, ns, results, batch_size, single):
        return _serve(router, ns, list(results), batch_size, single)

    return finish_view_read(None, req.name, cmd, f"{req.db}.{cmd[req.name]}", reply["cursor"]["firstBatch"], serve,
                            collator=command_collator(resolved.get("collation"), None))


for _name in READS:
    ROUTER_COMMANDS[_name] = resolving_views(ROUTER_COMMANDS[_name])
