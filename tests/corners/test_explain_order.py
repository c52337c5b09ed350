"""The stage order of a change stream, as `explain` shows it: a replica set's whole pipeline, and the
split of a sharded one (the server's order after its optimizer)."""

from __future__ import annotations

import pytest

from tests.corners.conftest import read

RS_ORDER = ["internalOplogMatch", "internalUnwindTransaction", "internalTransform", "internalCheckInvalidate",
            "internalCheckResumability", "$match", "internalAddPreImage", "internalAddPostImage", "$project",
            "$changeStreamSplitLargeEvent", "internalEnsureResumeTokenPresent"]


def _names(stages: list[dict]) -> list[str]:
    return [s["$changeStream"]["stage"] if "$changeStream" in s else next(iter(s)) for s in stages]


def _first_token(coll) -> dict:
    """The resume token of a first insert into `coll`."""
    with coll.watch() as stream:
        coll.insert_one({"_id": 1})
        return read(stream, 1)[0]["_id"]


def _explain(db, spec: dict) -> dict:
    pipeline = [{"$changeStream": spec}, {"$project": {"x": 0}}, {"$changeStreamSplitLargeEvent": {}}]
    return db.command("aggregate", "c", pipeline=pipeline, explain=True)


@pytest.mark.mongosim(topology="replset")
def test_replica_set_stage_order(mongosim_client):
    token = _first_token(mongosim_client.ex.c)
    spec = {"resumeAfter": token, "fullDocument": "updateLookup", "fullDocumentBeforeChange": "whenAvailable"}
    doc = _explain(mongosim_client.ex, spec)
    stages = doc["stages"]
    assert _names(stages) == RS_ORDER
    assert stages[-1]["$changeStream"]["resumeToken"] == token
    assert stages[2]["$changeStream"]["options"]["resumeAfter"] == token
    assert stages[5] == {"$match": {"operationType": {"$in": [
        "delete", "drop", "dropDatabase", "insert", "invalidate", "kNewShardDetected", "rename", "replace",
        "reshardBegin", "reshardDoneCatchUp", "update"]}}}
    # a new stream records its start in the spec; no resume token to ensure
    doc = _explain(mongosim_client.ex, {"showExpandedEvents": True})
    assert _names(doc["stages"]) == ["internalOplogMatch", "internalUnwindTransaction", "internalTransform",
                                     "internalCheckInvalidate", "internalCheckResumability", "$project",
                                     "$changeStreamSplitLargeEvent"]
    assert "startAtOperationTime" in doc["stages"][2]["$changeStream"]["options"]


@pytest.mark.mongosim(topology="sharded")
def test_sharded_split_keeps_ensure_resume_token_present_on_the_router(mongosim_client):
    token = _first_token(mongosim_client.ex.c)
    doc = _explain(mongosim_client.ex, {"resumeAfter": token})
    shards_part = _names(doc["splitPipeline"]["shardsPart"])
    assert shards_part == ["internalOplogMatch", "internalUnwindTransaction", "internalTransform",
                           "internalCheckInvalidate", "internalCheckResumability", "$match", "$project",
                           "$changeStreamSplitLargeEvent"]
    assert _names(doc["splitPipeline"]["mergerPart"]) == ["$mergeCursors", "internalHandleTopologyChange",
                                                          "internalEnsureResumeTokenPresent"]
