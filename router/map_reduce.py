"""mapReduce through mongos: map and reduce on the shards, the shards' results reduced again here.

As 8.0 runs it (an aggregation split at its `$group`): each shard holding
input maps its own documents and reduces per key (`$_reduced`: without
finalize) — unless the command has a `limit`, where the pipeline splits
before the map: the shards then send their first documents, and mongos maps
the first `limit` of them in `sort` order itself — mongos gathers their `{_id, value}` results, reduces each key's
values again with the same script engine (shardsim.map_reduce: reduce is
called even for a key one shard alone had, as the merging accumulator does),
finalizes, and sorts by `_id`.  `out` is written through mongos's own
`$out`/`$merge` paths (router.aggregate_output): replace as `$out`, merge as a
`$merge` replacing by `_id`, reduce as that merge of values first reduced with
the target's existing ones (read from the shards holding the target).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mongosim.oplog.errors import MongoError
from mongosim.router.aggregate_output import output_writer
from mongosim.router.command_registry import ROUTER_COMMANDS, router_command
from mongosim.router.commands_crud import targets_for_query
from mongosim.router.commands_ddl import shards_holding
from mongosim.router.request import GENERIC_FIELDS, Request
from mongosim.shardsim.map_reduce import (
    engine_for,
    finish,
    internal_error_context,
    map_phase,
    output_stage,
    parse,
    reduce_into_existing,
    reply_for,
)
from mongosim.shardsim.query.sorting import sort_key_fn
from mongosim.shardsim.query.values import hashable

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

_FORWARD = ("lsid", "txnNumber", "readConcern", "writeConcern", "comment", "maxTimeMS", "bypassDocumentValidation")


@router_command("mapReduce", "mapreduce")
async def cmd_map_reduce(router: Router, req: Request) -> dict:
    coll = req.cmd[req.name]
    out_db, out_coll, mode = parse(req.cmd)
    if "$_reduced" in req.cmd:
        raise MongoError(40415, "BSON field 'MapReduceCommandRequest.$_reduced' is an unknown field.")
    cmd = {k: v for k, v in req.cmd.items() if k not in GENERIC_FIELDS or k in _FORWARD}
    shard_cmd = {**cmd, "out": {"inline": 1}, "$_reduced": True}
    groups: dict = {}
    targets = targets_for_query(router, f"{req.db}.{coll}", req.cmd.get("query") or {})
    if req.cmd.get("limit") and len(targets) > 1:  # the pipeline splits at its $limit: the map runs here
        docs = await _limited_input(router, req.db, coll, req.cmd, targets)
        with internal_error_context():
            groups = map_phase(engine_for(req.cmd), req.cmd["map"], docs) if docs else {}
    else:
        for shard in targets:
            reply = await router.shard(shard).command(req.db, shard_cmd)
            for doc in reply.get("results", []):
                g = groups.setdefault(hashable(doc["_id"]), (doc["_id"], []))
                g[1].append(doc["value"])
    with internal_error_context():
        results = finish(engine_for(req.cmd), req.cmd, groups) if groups else []
        if out_coll is None:
            return reply_for(req.db, out_db, None, results)
        target_db = out_db or req.db
        if mode == "reduce" and results:
            existing = await _existing(router, target_db, out_coll, [d["_id"] for d in results])
            results = reduce_into_existing(engine_for(req.cmd), req.cmd, results, existing)
        if not results and mode != "replace":
            await _ensure_collection(router, req, target_db, out_coll)
        else:
            write = output_writer(router, req, output_stage(mode, target_db, out_coll))
            await write(results, {})
    return reply_for(req.db, out_db, out_coll, [])


async def _limited_input(router: Router, db: str, coll: str, cmd: dict, shards: list[str]) -> list[dict]:
    """The first `limit` documents matching `query` in `sort` order, across the shards."""
    limit = int(cmd["limit"])
    find = {"find": coll, "filter": cmd.get("query") or {}, "limit": limit, "batchSize": limit, "singleBatch": True}
    if cmd.get("sort"):
        find["sort"] = cmd["sort"]
    docs: list[dict] = []
    for shard in shards:
        docs += (await router.shard(shard).command(db, find))["cursor"]["firstBatch"]
    if cmd.get("sort"):
        docs.sort(key=sort_key_fn(cmd["sort"]))
    return docs[:limit]


async def _existing(router: Router, db: str, coll: str, ids: list) -> dict:
    """The target's documents with these _ids, by hashable _id."""
    found: dict = {}
    for shard in shards_holding(router, db, coll):
        reply = await router.shard(shard).command(db, {"find": coll, "filter": {"_id": {"$in": ids}},
                                                       "batchSize": 2**31 - 1, "singleBatch": True})
        for doc in reply["cursor"]["firstBatch"]:
            found[hashable(doc["_id"])] = doc
    return found


async def _ensure_collection(router: Router, req: Request, db: str, coll: str) -> None:
    try:
        await ROUTER_COMMANDS["create"](router, Request(db, {"create": coll}, req.conn, "create"))
    except MongoError as e:
        if e.code != 48:  # NamespaceExists
            raise


__all__ = ["cmd_map_reduce"]
