"""Resuming from a $changeStreamSplitLargeEvent fragment's token, on a replica set and through the router."""

from __future__ import annotations

import pymongo
import pytest

from mongosim.oplog.resume_token import decode_resume_token
from tests.corners.conftest import BOTH, read

BIG = "x" * (6 * 1024 * 1024)
SPLIT = [{"$changeStreamSplitLargeEvent": {}}]
IMAGES = {"full_document": "required", "full_document_before_change": "required"}


def _large_update(client, topology):
    db = client.split_db
    db.create_collection("c", changeStreamPreAndPostImages={"enabled": True})
    if topology == "sharded":
        client.admin.command("shardCollection", "split_db.c", key={"_id": 1})
    db.c.insert_one({"_id": 1, "a": BIG})
    return db.c


@BOTH
def test_resume_from_each_fragment(mongosim_client, topology):
    coll = _large_update(mongosim_client, topology)
    with coll.watch(SPLIT, batch_size=1, **IMAGES) as stream:
        coll.update_one({"_id": 1}, {"$set": {"b": BIG}})
        coll.insert_one({"_id": 2})
        frags = read(stream, 3)
    assert [f.get("splitEvent") for f in frags] == [{"fragment": 1, "of": 2}, {"fragment": 2, "of": 2}, None]
    assert [decode_resume_token(f["_id"]).fragment_num for f in frags[:2]] == [0, 1]
    # fields smallest first: the two 6 MiB images do not fit one fragment with the update's description
    assert list(frags[0])[:2] == ["_id", "splitEvent"] and "fullDocument" in frags[1]
    for k in range(2):
        with coll.watch(SPLIT, resume_after=frags[k]["_id"], **IMAGES) as again:
            rest = read(again, 2 - k)
        assert [r["_id"] for r in rest] == [f["_id"] for f in frags[k + 1:]]


@BOTH
def test_resume_from_a_fragment_without_the_split_stage_fails(mongosim_client, topology):
    coll = _large_update(mongosim_client, topology)
    with coll.watch(SPLIT, batch_size=1, **IMAGES) as stream:
        coll.update_one({"_id": 1}, {"$set": {"b": BIG}})
        first = read(stream, 1)[0]
    coll.insert_one({"_id": 2})
    with pytest.raises(pymongo.errors.OperationFailure) as ei:
        with coll.watch(resume_after=first["_id"], **IMAGES) as again:
            read(again, 1)
    # a replica set swallows the whole event (it is not the token) and passes the token unseen; a shard
    # must send the whole event to the router, and it is too large for one document
    assert ei.value.code == (280 if topology == "replset" else 10334)
