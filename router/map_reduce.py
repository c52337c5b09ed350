"""mapReduce through mongos: each shard holding input runs it (inline), then the primary shard writes `out`.

Without a script engine a shard fails at its first input document (31246,
`shardsim.script_engine`); over an empty input the shards answer no results,
and an `out` collection is created on the database's primary shard.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mongosim.router.command_registry import router_command
from mongosim.router.commands_crud import targets_for_query
from mongosim.router.request import GENERIC_FIELDS, Request
from mongosim.router.sharding import ensure_database
from mongosim.shardsim.map_reduce import parse, reply_for

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

_FORWARD = ("lsid", "txnNumber", "readConcern", "writeConcern", "comment", "maxTimeMS", "bypassDocumentValidation")


@router_command("mapReduce", "mapreduce")
async def cmd_map_reduce(router: Router, req: Request) -> dict:
    coll = req.cmd[req.name]
    out_db, out_coll, _mode = parse(req.cmd)
    cmd = {k: v for k, v in req.cmd.items() if k not in GENERIC_FIELDS or k in _FORWARD}
    results: list = []
    for shard in targets_for_query(router, f"{req.db}.{coll}", req.cmd.get("query") or {}):
        reply = await router.shard(shard).command(req.db, {**cmd, "out": {"inline": 1}})
        results.extend(reply.get("results", []))
    if out_coll is None:
        return reply_for(req.db, out_db, None, results)
    primary = await ensure_database(router, out_db or req.db)
    await router.shard(primary).command(req.db, cmd)
    return reply_for(req.db, out_db, out_coll, results)
