"""`explain` of a change-stream aggregate on the router: the real split, shard part and merge part.

The router splits the expanded `$changeStream` above
`$_internalChangeStreamHandleTopologyChange` (seed 004): everything before
runs on every shard, the rest — behind `$mergeCursors`, the
AsyncResultsMerger — runs here.  To show what the shards really run, the
router sends each shard the same shard command it sends when opening the
stream, with `explain: true`, and reports the stages the shard built.

Stages are shown in the server's explain form, `{$changeStream: {stage:
"internalTransform", options: ...}}` (DocumentSourceChangeStream*::serialize
with a verbosity), as each shard gives them (shardsim/changestream/explain.py);
`$mergeCursors` carries the options that matter for a change stream (sort on
the resume token, tailable + awaitData).
"""

from __future__ import annotations

from typing import Any

from mongosim.oplog.resume_token import decode_resume_token
from mongosim.router.merge.split_pipeline import (
    shard_command,  # the same command the shards get
)


async def explain_change_stream(router: Any, db: str, target: Any, spec_bson: dict, user_stages: list,
                                token: Any) -> dict:

    cmd = shard_command({"aggregate": target}, spec_bson, user_stages)
    cmd["explain"] = True
    shards: dict[str, dict] = {}
    for name in sorted(router.shards):
        remote = router.shard(name)
        reply = await remote.command(db, cmd)
        shards[name] = {"host": f"{name}/{remote.node.host}", "stages": reply["stages"]}
    shards_part = next(iter(shards.values()))["stages"] if shards else []
    ns = f"{db}.{target}" if isinstance(target, str) else f"{db}.$cmd.aggregate"
    merger: list[dict] = [
        {"$mergeCursors": {"sort": {"_id._data": 1}, "compareWholeSortKey": False,
                           "tailableMode": "tailableAndAwaitData", "nss": ns, "allowPartialResults": False}},
        {"$changeStream": {"stage": "internalHandleTopologyChange"}},
    ]
    if token is not None and decode_resume_token(token).token_type != 0:
        merger.append({"$changeStream": {"stage": "internalEnsureResumeTokenPresent", "resumeToken": token}})
    return {
        "mergeType": "router",
        "splitPipeline": {"shardsPart": shards_part, "mergerPart": merger},
        "shards": shards,
        "ok": 1.0,
    }
