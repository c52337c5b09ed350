"""`$_passthroughToShard`: one shard's change stream through mongos, with no merge (a per-shard cursor).

    db.runCommand({aggregate: "orders", pipeline: [{$changeStream: {}}],
                   $_passthroughToShard: {shard: "shard01"}, cursor: {}})

mongos skips its cluster targeting and its merge part (no `$mergeCursors`, no
config-server cursor, no topology or resume-token stages): it sends the
aggregate, unsplit, to that one shard, which runs the replica-set change-stream
pipeline on its own oplog (so resume-token checks happen on the shard, and
`migrateChunkToNewShard` never appears).  As the server does
(`runPipelineOnSpecificShardOnly`), mongos asks the shard for a first batch of
0 events, keeps a cursor of its own in front of the shard's, and forwards each
getMore: the events come back as the shard sent them, with the shard's
postBatchResumeToken.  When the shard's cursor ends (an invalidate), so does
mongos's; a later getMore is CursorNotFound.  `explain` answers the shard's
explain (its `stages`, no `splitPipeline`).

Errors, as the server's per-shard cursor tests expect: no `$changeStream`
(6273801), a stage that cannot pass through mongos such as `$out` (6273802),
the config server as the target (6273803), `{}` (40414, the IDL's missing
field), a shard id that is not a string (TypeMismatch), an unknown shard
(ShardNotFound).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mongosim.oplog.errors import MongoError
from mongosim.router.auth.names import missing_field
from mongosim.router.command_registry import aggregate_option
from mongosim.router.request import Request
from mongosim.router.store_possible_cursor import ShardPassthroughCursor
from mongosim.shardsim.cursors import cursor_reply
from mongosim.shardsim.query.idl_errors import wrong_type

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

FIELD = "$_passthroughToShard"
# Stages that must run on mongos (they write, or read other namespaces through the router).
_NOT_PASSTHROUGH = ("$out", "$merge")
_FORWARDED = ("maxTimeMS", "comment", "readConcern")


def target_shard(cmd: dict) -> str:
    """The shard id of `$_passthroughToShard: {shard: <id>}` (parsed as the IDL does)."""
    opts = cmd[FIELD]
    if not isinstance(opts, dict):
        raise wrong_type(f"aggregate.{FIELD}", opts, "object")
    if "shard" not in opts:
        raise missing_field(f"aggregate.{FIELD}", "shard")
    shard = opts["shard"]
    if not isinstance(shard, str):
        raise wrong_type(f"aggregate.{FIELD}.shard", shard, "string")
    return shard


@aggregate_option(FIELD)
async def open_passthrough(router: Router, req: Request) -> dict:
    """The aggregate with `$_passthroughToShard`: run it on that shard only, unmerged."""
    cmd = req.cmd
    shard = target_shard(cmd)
    pipeline = cmd["pipeline"]
    if not (pipeline and isinstance(pipeline[0], dict) and "$changeStream" in pipeline[0]):
        raise MongoError(6273801, "per shard cursor pipeline must contain $changeStream")
    if any(isinstance(st, dict) and any(k in st for k in _NOT_PASSTHROUGH) for st in pipeline[1:]):
        raise MongoError(6273802, "$_passthroughToShard specified with a stage that is not allowed to passthrough "
                                  "from mongos")
    if shard == "config":
        raise MongoError(6273803, "$_passthroughToShard not supported for queries against config replica set")
    if shard not in router.shards:
        raise MongoError("ShardNotFound", f"Shard {shard} not found")
    remote = router.shard(shard)
    shard_cmd: dict[str, Any] = {"aggregate": cmd["aggregate"], "pipeline": pipeline}
    if cmd.get("explain"):
        shard_cmd["explain"] = True
    elif isinstance(cmd.get("cursor"), dict):
        # a first batch of 0: every event comes through the getMore path, as mongos does it
        shard_cmd["cursor"] = {"batchSize": 0}
    elif "cursor" in cmd:
        shard_cmd["cursor"] = cmd["cursor"]  # the shard reports a malformed (or missing) cursor option
    shard_cmd.update({k: cmd[k] for k in _FORWARDED if k in cmd})
    reply = await remote.command(req.db, shard_cmd)
    if cmd.get("explain"):
        return reply
    cur = reply["cursor"]
    target = cmd["aggregate"]
    ns = f"{req.db}.{target}" if isinstance(target, str) else f"{req.db}.$cmd.aggregate"
    fields = {"postBatchResumeToken": cur.get("postBatchResumeToken")}
    req.op_time_key = router.clock.key
    cursor_id = int(cur["id"])
    if cursor_id:  # mongos's cursor in front of the shard's (the server's storePossibleCursor)
        cursor_id = router.cursors.register(ShardPassthroughCursor(remote, req.db, cursor_id, ns, is_change_stream=True,
                                                                   nursery=router.nursery))
    return cursor_reply(cur.get("firstBatch", []), cursor_id, ns, first=True, fields=fields)
