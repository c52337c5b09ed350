"""Opening a change stream on a node: `aggregate` with `$changeStream` as its first stage.

Resolves the start point — the client's token, `startAtOperationTime`, or
(for a new stream) one tick after the node's last oplog entry — builds the
stages, runs the first batch without waiting, and registers the cursor.
When the router opens the shard part of a sharded stream it sets
`$_needsMerge`: the batch then goes back with each event's sort key beside
it (raw BSON, never re-encoded by the router).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mongosim.oplog.clock import key_ts, ts_key
from mongosim.oplog.errors import MongoError
from mongosim.oplog.resume_token import make_high_water_mark_token
from mongosim.shardsim.changestream.context import ChangeStreamContext
from mongosim.shardsim.changestream.cursor import ChangeStreamCursor
from mongosim.shardsim.changestream.event_batch import EventBatch
from mongosim.shardsim.changestream.explain import explain_stages
from mongosim.shardsim.changestream.pipeline import build_stages
from mongosim.shardsim.changestream.spec import parse_spec, validate
from mongosim.shardsim.changestream.token_version import regenerate_high_water_mark
from mongosim.shardsim.changestream.user_stages import validate_user_pipeline
from mongosim.shardsim.cursors import DEFAULT_FIRST_BATCH, cursor_reply
from mongosim.shardsim.operation_context import OpCtx

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node



def build_cursor(node: Node, db: str, cmd: dict, *, needs_merge: bool) -> ChangeStreamCursor:
    pipeline = cmd["pipeline"]
    spec = parse_spec(pipeline[0]["$changeStream"])
    target = cmd["aggregate"]
    if not (target == 1 or isinstance(target, str)):
        raise MongoError("FailedToParse", "Invalid aggregate namespace")
    level = validate(spec, db, target, in_router=False)
    regenerate_high_water_mark(spec)
    user_stages, split = validate_user_pipeline(pipeline[1:])
    token = spec.token_data()
    if token is not None:
        start_key = ts_key(token.cluster_time)
        initial_pbrt = spec.resume_token
    elif spec.start_at_operation_time is not None:
        start_key = ts_key(spec.start_at_operation_time)
        initial_pbrt = make_high_water_mark_token(spec.start_at_operation_time)
    else:  # a new stream starts now (the spec records it, as the server's does)
        start_key = node.oplog.last_key + 1
        initial_pbrt = make_high_water_mark_token(key_ts(start_key))
        spec.start_at_operation_time = key_ts(start_key)
    coll = target if isinstance(target, str) else None
    ns = f"{db}.{coll}" if coll else f"{db}.$cmd.aggregate"
    ctx = ChangeStreamContext(node, spec, level, db, coll, needs_merge, start_key,
                              client_token=token, trace=node.tracer)
    source, top, stages = build_stages(ctx, user_stages, split)
    return ChangeStreamCursor(ctx, source, top, stages, ns, initial_pbrt, start_key if token is None else start_key)


async def open_change_stream(node: Node, ctx: OpCtx) -> dict:
    cmd = ctx.cmd
    needs_merge = bool(cmd.get("$_needsMerge")) and ctx.from_router
    if cmd.get("explain"):
        cur = build_cursor(node, ctx.db, cmd, needs_merge=needs_merge)
        return {"explainVersion": "1", "stages": explain_stages(cur.ctx, cur.stages), "ok": 1.0}
    cursor_opt = cmd.get("cursor")
    if cursor_opt is None:
        raise MongoError("FailedToParse", "The 'cursor' option is required, except for aggregate with the explain argument")
    if not isinstance(cursor_opt, dict):
        raise MongoError("TypeMismatch", "cursor field must be missing or an object")
    batch_size = cursor_opt.get("batchSize", DEFAULT_FIRST_BATCH)
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 0:
        raise MongoError("BadValue", "cursor.batchSize must not be negative")
    cur = build_cursor(node, ctx.db, cmd, needs_merge=needs_merge)
    batch = cur.pull_batch(batch_size) if batch_size else EventBatch()
    items = cur.finish(batch)
    cid = 0 if cur.exhausted else node.cursors.register(cur)
    return cursor_reply(items, cid, cur.ns, first=True, fields=cur.reply_fields(batch))
