"""`explain` of a change-stream aggregate on the router: the split pipeline."""

from __future__ import annotations

from typing import Any


def explain_change_stream(router: Any, db: str, target: Any, spec_bson: dict, user_stages: list, token: Any) -> dict:
    shard_part = [
        {"$_internalChangeStreamOplogMatch": {}},
        {"$_internalChangeStreamUnwindTransaction": {}},
        {"$_internalChangeStreamTransform": spec_bson},
    ]
    if target != 1 or db != "admin":
        shard_part.append({"$_internalChangeStreamCheckInvalidate": {}})
    shard_part.append({"$_internalChangeStreamCheckResumability": {}})
    if spec_bson.get("fullDocumentBeforeChange", "off") != "off":
        shard_part.append({"$_internalChangeStreamAddPreImage": {"fullDocumentBeforeChange": spec_bson["fullDocumentBeforeChange"]}})
    if spec_bson.get("fullDocument", "default") != "default":
        shard_part.append({"$_internalChangeStreamAddPostImage": {"fullDocument": spec_bson["fullDocument"]}})
    shard_part.extend(user_stages)
    merge = [{"$mergeCursors": {"sort": {"_id._data": 1}, "tailableMode": "tailableAndAwaitData"}},
             {"$_internalChangeStreamHandleTopologyChange": {}}]
    if token is not None:
        merge.append({"$_internalChangeStreamEnsureResumeTokenPresent": {"resumeToken": token}})
    return {
        "mergeType": "router",
        "splitPipeline": {"shardsPart": shard_part, "mergerPart": merge},
        "shards": {name: {"stages": shard_part} for name in sorted(router.shards)},
        "ok": 1.0,
    }
