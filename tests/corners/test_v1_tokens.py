"""Resuming from a version-1 resume token: the server resumes it (events not past it carry v1 tokens,
later ones v2), with resumeAfter and startAfter, and a v1 high-water mark."""

from __future__ import annotations

import pytest
from bson import Timestamp

from mongosim.oplog.resume_token import (
    ResumeTokenData,
    decode_resume_token,
    encode_resume_token,
    make_high_water_mark_token,
)
from tests.corners.conftest import BOTH, read


def as_v1(token: dict) -> dict:
    """The v1 token of the same event (eventIdentifier: the bare documentKey)."""
    data = decode_resume_token(token)
    return encode_resume_token(ResumeTokenData(data.cluster_time, 1, 128, data.txn_op_index, data.from_invalidate,
                                               data.uuid, data.event_identifier["documentKey"]))


def _setup(client, topology):
    if topology == "sharded":
        client.admin.command("shardCollection", "v1db.c", key={"_id": "hashed"})
    return client.v1db.c


@BOTH
@pytest.mark.parametrize("option", ["resume_after", "start_after"])
def test_resume_from_a_v1_event_token(mongosim_client, topology, option):
    coll = _setup(mongosim_client, topology)
    with coll.watch() as stream:
        coll.insert_many([{"_id": i} for i in range(1, 5)])
        original = read(stream, 4)
    v1 = as_v1(original[1]["_id"])
    assert v1["_data"].startswith("82") and v1["_data"][18:22] == "2B02"  # version 1
    with coll.watch(**{option: v1}) as again:
        rest = read(again, 2)
        assert again.resume_token["_data"] >= rest[-1]["_id"]["_data"]
    assert [e["documentKey"]["_id"] for e in rest] == [3, 4]
    assert [e["_id"] for e in rest] == [e["_id"] for e in original[2:]]  # v2 after the token
    assert all(decode_resume_token(e["_id"]).version == 2 for e in rest)


@BOTH
def test_events_of_a_transaction_after_a_v1_token(mongosim_client, topology):
    coll = _setup(mongosim_client, topology)
    coll.insert_one({"_id": 0})
    with coll.watch() as stream:
        with mongosim_client.start_session() as s, s.start_transaction():
            coll.insert_many([{"_id": 10}, {"_id": 11}, {"_id": 12}], session=s)
        coll.insert_one({"_id": 13})
        original = read(stream, 4)
    first = decode_resume_token(original[0]["_id"])
    with coll.watch(resume_after=as_v1(original[0]["_id"])) as again:
        rest = read(again, 3)
    assert [e["documentKey"] for e in rest] == [e["documentKey"] for e in original[1:]]
    for got, was in zip(rest, original[1:]):
        data = decode_resume_token(was["_id"])
        # not past the token (on another shard, the same commit time and op index): the client's version
        past = data.cluster_time > first.cluster_time or data.txn_op_index > first.txn_op_index
        assert got["_id"] == (was["_id"] if past else as_v1(was["_id"]))
    assert any(decode_resume_token(e["_id"]).cluster_time == first.cluster_time for e in rest)


@BOTH
def test_resume_from_a_v1_high_water_mark(mongosim_client, topology):
    coll = _setup(mongosim_client, topology)
    t = mongosim_client.admin.command("ping")["$clusterTime"]["clusterTime"]
    start = Timestamp(t.time, t.inc + 1)
    coll.insert_one({"_id": 1})
    with coll.watch(resume_after=make_high_water_mark_token(start, version=1)) as again:
        (event,) = read(again, 1)
        assert decode_resume_token(again.resume_token).version == 2
    assert event["documentKey"] == {"_id": 1} and decode_resume_token(event["_id"]).version == 2
