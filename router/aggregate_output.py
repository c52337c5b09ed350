"""$out and $merge through mongos: where an aggregation's results are written.

mongos computes the results (on the one shard holding an unsharded source, or
merged at the router) and then:

- `$out`: the target must not be sharded (28769).  The writing happens on the
  target database's primary shard, which is where the server runs the merging
  half of a $out pipeline and where an unsharded target lives: it receives the
  results (`{aggregate: 1, pipeline: [{$documents: {$literal: results}}, {$out}]}`)
  and creates the temporary collection, inserts, and renames it over the target
  there (`shardsim.out_stage`, its shard flavour).
- `$merge`: each result becomes an insert or an update (`shardsim.merge_stage`)
  sent through mongos's own write path, so a sharded target's writes are
  targeted by shard key like any client's.  `on` defaults to the target's shard
  key and `_id`; other `on` fields need a unique index, read from a shard
  holding the target.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mongosim.oplog.errors import MongoError
from mongosim.router.command_registry import ROUTER_COMMANDS
from mongosim.router.commands_ddl import shards_holding
from mongosim.router.request import Request
from mongosim.router.sharding import ensure_database
from mongosim.shardsim.merge_stage import MergeSpec, check_reply, merge_writes, parse_merge, resolve_on
from mongosim.shardsim.out_stage import parse_out

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

_FORWARD = ("writeConcern", "bypassDocumentValidation", "comment", "maxTimeMS")


def output_writer(router: Router, req: Request, writer: tuple[str, Any] | None):
    """The writing stage as `write(results, variables)` (its spec checked now), or None."""
    if writer is None:
        return None
    name, spec = writer
    if name == "$out":
        db, coll = parse_out(spec, req.db)
        return lambda results, variables: _out(router, req, db, coll, results)
    merge = parse_merge(spec, req.db)
    return lambda results, variables: _merge(router, req, merge, results, variables)


async def _out(router: Router, req: Request, db: str, coll: str, results: list[dict]) -> None:
    if router.catalog.routing(f"{db}.{coll}") is not None:
        raise MongoError(28769, f"{db}.{coll} cannot be sharded")
    primary = await ensure_database(router, db)
    cmd = {"aggregate": 1, "pipeline": [{"$documents": {"$literal": results}}, {"$out": {"db": db, "coll": coll}}],
           "cursor": {}, **{k: req.cmd[k] for k in _FORWARD if k in req.cmd}}
    await router.shard(primary).command(db, cmd)
    key = router.shard(primary).node.oplog.last_key
    if key > req.op_time_key:
        req.op_time_key = key


async def _indexes(router: Router, db: str, coll: str) -> list[dict]:
    for shard in shards_holding(router, db, coll):
        try:
            reply = await router.shard(shard).command(db, {"listIndexes": coll})
        except MongoError as err:
            if err.code_name == "NamespaceNotFound":
                continue
            raise
        return list(reply["cursor"]["firstBatch"])
    return []


async def _merge(router: Router, req: Request, spec: MergeSpec, results: list[dict], variables: dict) -> None:
    ns = f"{spec.db}.{spec.coll}"
    routing = router.catalog.routing(ns)
    indexes = await _indexes(router, spec.db, spec.coll) if spec.on is not None and spec.on != ["_id"] else None
    on = resolve_on(spec, dict(routing.pattern.key) if routing is not None else None, indexes)
    await ensure_database(router, spec.db)
    extra = {k: req.cmd[k] for k in (*_FORWARD, "let") if k in req.cmd}  # (the let mongos evaluated)
    for cmd in merge_writes(spec, on, results, variables):
        name = next(iter(cmd))
        sub = Request(spec.db, {**cmd, **extra}, req.conn, name, internal=True)
        reply = await ROUTER_COMMANDS[name](router, sub)  # mongos's own insert / update
        if sub.op_time_key > req.op_time_key:
            req.op_time_key = sub.op_time_key
        check_reply(spec, cmd, reply)
