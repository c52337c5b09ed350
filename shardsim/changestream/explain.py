"""A change stream's stages in the server's explain form.

`explain: true` on a change-stream aggregate shows the expanded `$changeStream`
stage by stage, as each DocumentSourceChangeStream* stage serializes itself
with a verbosity: `{$changeStream: {stage: "internalTransform", options:
<the spec>}}`, `{$changeStream: {stage: "internalCheckResumability",
resumeToken}}`, ... (the oplog match with its `filter`, the image stages with
their mode, ensure-resume-token-present with the client's token); the
classic-events filter as its `$match`; the user's stages as written; the split
stage as `{$changeStreamSplitLargeEvent: {}}`.  A replica-set node answers
with the whole list; a shard answers the router with its part, which the
router shows as the `shardsPart` (router/merge/explain.py).
"""

from __future__ import annotations

from typing import Any

from mongosim.oplog.resume_token import CLASSIC_OPERATION_TYPES, make_high_water_mark_token
from mongosim.shardsim.changestream.context import ChangeStreamContext, Stage

_INTERNAL = "$_internalChangeStream"


def _explain_form(stage: dict, spec_bson: dict, token: Any) -> list[dict]:
    name, args = next(iter(stage.items()))
    if name == "userStages":
        return list(args)
    if name.startswith(_INTERNAL):
        short = "internal" + name[len(_INTERNAL):]
        body: dict[str, Any] = {"stage": short}
        if short == "internalTransform":
            body["options"] = spec_bson
        elif short in ("internalCheckResumability", "internalEnsureResumeTokenPresent"):
            body["resumeToken"] = token
        elif short == "internalAddPreImage":
            body["fullDocumentBeforeChange"] = spec_bson.get("fullDocumentBeforeChange")
        elif short == "internalAddPostImage":
            body["fullDocument"] = spec_bson.get("fullDocument")
        body.update(args or {})
        return [{"$changeStream": body}]
    if name == "$match" and not args:  # the classic-events filter (getMatchFilterForClassicOperationTypes)
        return [{"$match": {"operationType": {"$in": sorted(CLASSIC_OPERATION_TYPES)}}}]
    return [stage]


def explain_stages(ctx: ChangeStreamContext, stages: list[Stage]) -> list[dict]:
    """The stages, in order, as the server's explain shows them."""
    spec = ctx.spec
    spec_bson = spec.to_bson()
    token = spec.resume_token if spec.resume_token is not None else make_high_water_mark_token(ctx.start_key_ts)
    out: list[dict] = []
    for st in stages:
        out.extend(_explain_form(st.explain(), spec_bson, token))
    return out
