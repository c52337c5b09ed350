"""`explain` of a change-stream aggregate on the router: the real split, shard part and merge part.

The router splits the expanded `$changeStream` above
`$_internalChangeStreamHandleTopologyChange` (seed 004): everything before
runs on every shard, the rest — behind `$mergeCursors`, the
AsyncResultsMerger — runs here.  To show what the shards really run, the
router sends each shard the same shard command it sends when opening the
stream, with `explain: true`, and reports the stages the shard built.

Stages are shown in the server's explain form, `{$changeStream: {stage:
"internalTransform", options: ...}}` (DocumentSourceChangeStream*::serialize
with a verbosity); `$mergeCursors` carries the options that matter for a
change stream (sort on the resume token, tailable + awaitData).
"""

from __future__ import annotations

from typing import Any

from mongosim.oplog.resume_token import decode_resume_token, make_high_water_mark_token
from mongosim.router.merge.split_pipeline import (
    shard_command,  # the same command the shards get
)
from mongosim.shardsim.changestream.transform import EXPANDED_ONLY

_INTERNAL = "$_internalChangeStream"


def explain_form(stage: dict, spec_bson: dict, token: Any) -> dict:
    """A shard's stage (as its node explains it) in the server's explain form."""
    name, args = next(iter(stage.items()))
    if name.startswith(_INTERNAL):
        short = "internal" + name[len(_INTERNAL):]
        body: dict[str, Any] = {"stage": short}
        if short == "internalTransform":
            body["options"] = spec_bson
        elif short == "internalCheckResumability":
            body["resumeToken"] = token if token is not None else \
                make_high_water_mark_token(spec_bson.get("startAtOperationTime"))
        elif short == "internalAddPreImage":
            body["fullDocumentBeforeChange"] = spec_bson.get("fullDocumentBeforeChange")
        elif short == "internalAddPostImage":
            body["fullDocument"] = spec_bson.get("fullDocument")
        body.update(args or {})
        return {"$changeStream": body}
    if name == "$match" and not args:  # the classic-events filter (no showExpandedEvents)
        return {"$match": {"operationType": {"$nin": sorted(EXPANDED_ONLY)}}}
    return stage


def _expand_user_stages(stages: list[dict]) -> list[dict]:
    out: list[dict] = []
    for st in stages:
        if "userStages" in st:
            out.extend(st["userStages"])
        else:
            out.append(st)
    return out


async def explain_change_stream(router: Any, db: str, target: Any, spec_bson: dict, user_stages: list,
                                token: Any) -> dict:

    cmd = shard_command({"aggregate": target}, spec_bson, user_stages)
    cmd["explain"] = True
    shards: dict[str, dict] = {}
    for name in sorted(router.shards):
        remote = router.shard(name)
        reply = await remote.command(db, cmd)
        stages = [explain_form(st, spec_bson, token) for st in _expand_user_stages(reply["stages"])]
        shards[name] = {"host": f"{name}/{remote.node.host}", "stages": stages}
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
