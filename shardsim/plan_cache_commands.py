"""planCacheClear on a node (the server's plan_cache_clear_command.cpp).

mongosim plans every query afresh and caches no plan (`$planCacheStats` lists none), so clearing
has nothing to remove; the command still checks its arguments as the server does: `query`, `sort`,
`projection` and `collation` objects, the query parsed like a find's filter, and `sort` or
`projection` without `query` refused ("we do not want to clear the entire cache inadvertently").
A collection that does not exist has nothing to clear either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.command_registry import command
from mongosim.shardsim.create_collection import check_namespace
from mongosim.shardsim.operation_context import OpCtx
from mongosim.shardsim.query.matcher import compile_filter

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

_FIELDS = (("query", "required field query must be an object"),
           ("sort", "optional field sort must be an object"),
           ("projection", "optional field projection must be an object"),
           ("collation", "optional field collation must be an object"))


@command("planCacheClear")
def cmd_plan_cache_clear(node: Node, ctx: OpCtx) -> dict:
    check_namespace(ctx.db, ctx.cmd["planCacheClear"])
    cmd = ctx.cmd
    if "query" in cmd:
        for field, message in _FIELDS:
            if field in cmd and not isinstance(cmd[field], dict):
                raise MongoError("BadValue", message)
        compile_filter(cmd["query"])  # (the query shape is canonicalized: a bad filter is the parser's error)
    elif "sort" in cmd or "projection" in cmd:
        raise MongoError("BadValue", "sort or projection provided without query")
    return {"ok": 1.0}
