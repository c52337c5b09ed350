"""$indexStats, $planCacheStats and $currentOp through mongos ($collStats: router/cluster_coll_stats.py).

mongos asks the shards and returns their documents (the server's
ShardServerProcessInterface fan-out):

- `$indexStats`, `$planCacheStats`: every shard that owns chunks of
  the collection (an unsharded one: its primary shard) runs the stage; each
  document names its `shard`.  The spec is checked here first, so a bad one fails
  before any shard is asked.
- `$currentOp` (admin, `{aggregate: 1}`): every shard's operations, each `opid`
  prefixed with its shard's name (`"shard00:12"`) as mongos reports them; with
  `localOps: true`, the router's own operation instead.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from bson import Int64

from mongosim.router.commands_crud import _run_txn_aware, targets_for_query
from mongosim.router.request import Request
from mongosim.router.source_stage_registry import register_router_source
from mongosim.shardsim.current_op_stage import parse_current_op
from mongosim.shardsim.kill_op import client_fields
from mongosim.shardsim.plan_cache_stats_stage import check_plan_cache_stats
from mongosim.shardsim.sessions_collection import list_sessions

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

_OPIDS = itertools.count(1)


async def _each_shard(router: Router, req: Request, shards: list[str], coll: Any, stage: dict) -> list[dict]:
    out: list[dict] = []
    for shard in shards:
        reply = await _run_txn_aware(router, req, shard, req.db,
                                     {"aggregate": coll, "pipeline": [stage], "cursor": {"batchSize": 2**31 - 1}})
        out.extend(reply["cursor"]["firstBatch"])
    return out


def _per_collection(name: str, check):
    async def source(router: Router, req: Request, coll: str | None, spec: Any) -> list[dict]:
        check(spec)
        shards = targets_for_query(router, f"{req.db}.{coll}", None)
        return await _each_shard(router, req, shards, coll, {name: spec})

    return source


def _check_index_stats(spec: Any) -> None:
    from mongosim.oplog.errors import MongoError

    if not isinstance(spec, dict) or spec:
        raise MongoError(28803, "The $indexStats stage specification must be an empty object")


register_router_source("$indexStats")(_per_collection("$indexStats", _check_index_stats))
register_router_source("$planCacheStats")(_per_collection("$planCacheStats", check_plan_cache_stats))


@register_router_source("$currentOp")
async def current_op(router: Router, req: Request, coll: str | None, spec: Any) -> list[dict]:
    parse_current_op(spec, req.db, 1 if coll is None else coll)
    if spec.get("localOps"):
        return [{"type": "op", "host": router.identity.address, **client_fields(req.conn, False), "active": True,
                 "opid": next(_OPIDS), "secs_running": Int64(0), "microsecs_running": Int64(0), "op": "command",
                 "ns": "admin.$cmd.aggregate",
                 "command": {k: v for k, v in req.cmd.items() if k not in ("$clusterTime", "lsid", "$db")}}]
    out = []
    for shard in sorted(router.shards):
        reply = await router.shard(shard).command("admin", {"aggregate": 1, "pipeline": [{"$currentOp": spec}],
                                                            "cursor": {"batchSize": 2**31 - 1}})
        for op in reply["cursor"]["firstBatch"]:
            op = {**op, "shard": shard}
            if "opid" in op:
                op["opid"] = f"{shard}:{op['opid']}"
            out.append(op)
    return out


@register_router_source("$listSessions")
async def list_sessions_source(router: Router, req: Request, coll: Any, spec: Any) -> list[dict]:
    """$listSessions through mongos: config.system.sessions, where every mongos's cache flushes
    (kept by the config server's primary: shardsim/sessions_collection.py)."""
    return list_sessions(req.db, coll, spec, req.cmd, router.session_cache, router.config.sessions_collection,
                         router.config.wall.wall())
