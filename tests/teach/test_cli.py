"""`mongosim demo` and `mongosim explain` from the command line, and the router's explain document."""

from __future__ import annotations

import json

import pytest
import trio
import trio.testing

from mongosim.cli import main
from mongosim.core import open_cluster
from mongosim.testing import AsyncClient


def test_demo_lists_the_scenarios(capsys):
    assert main(["demo", "--list"]) == 0
    out = capsys.readouterr().out
    for name in ("interleaved", "slow-shard", "cold-shard", "instant-hwm", "new-shard", "removed-shard", "transaction",
                 "invalidate", "resume"):
        assert name in out


def test_demo_unknown_scenario(capsys):
    assert main(["demo", "no-such-thing"]) == 2
    err = capsys.readouterr().err
    assert "no scenario 'no-such-thing'" in err and err.count("\n") == 1


def test_demo_cold_shard_writes_the_account_and_the_files(tmp_path, capsys):
    html, svg, trace = tmp_path / "t.html", tmp_path / "t.svg", tmp_path / "t.jsonl"
    assert main(["demo", "cold-shard", "--width", "160", "--html", str(html), "--svg", str(svg),
                 "--trace", str(trace)]) == 0
    out = capsys.readouterr().out
    assert "gate closed" in out and "periodic noop" in out and "why the stream waited" in out
    assert html.read_text().startswith("<!DOCTYPE html>")
    assert "<svg" in svg.read_text()
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    assert {"gate", "released", "noop", "batch"} <= {r["step"] for r in records}


def test_explain_cli_shows_both_halves(capsys):
    assert main(["explain", "db.c", "--pipeline", '[{"$match": {"operationType": "insert"}}]',
                 "--full-document", "updateLookup"]) == 0
    out = capsys.readouterr().out
    shard_part, merge_part = out.split("shard part — on every shard")[1].split("merge part — on mongos")
    for stage in ("OplogMatch", "UnwindTransaction", "Transform", "CheckInvalidate", "CheckResumability",
                  "AddPostImage", '{"operationType": "insert"}'):
        assert stage in shard_part, stage
    assert "$mergeCursors" in merge_part and "HandleTopologyChange" in merge_part
    assert "$mergeCursors" not in shard_part


def test_explain_cli_json(capsys):
    assert main(["explain", "--json"]) == 0  # the whole cluster
    doc = json.loads(capsys.readouterr().out)
    stages = [s["$changeStream"]["stage"] for s in doc["splitPipeline"]["shardsPart"] if "$changeStream" in s]
    assert "internalCheckInvalidate" not in stages, "a whole-cluster stream is never invalidated"
    assert set(doc["shards"]) == {"shard00", "shard01"}


def test_explain_cli_bad_json(capsys):
    assert main(["explain", "db.c", "--pipeline", "[{"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mongosim explain: argument --pipeline: not valid (extended) JSON") and err.count("\n") == 1


def _explain(spec: dict, pipeline: list | None = None, db: str = "db", target="c") -> dict:
    async def body():
        async with open_cluster(shards=3, listen=False, epoch=1_700_000_000) as core:
            c = AsyncClient(core.router)
            await c.insert("db", "c", [{"_id": 1}])
            return await c.command(db, {"aggregate": target, "pipeline": [{"$changeStream": spec}, *(pipeline or [])],
                                        "explain": True})
    return trio.run(body)


def test_router_explain_is_the_real_split():
    doc = _explain({"fullDocumentBeforeChange": "whenAvailable"}, [{"$project": {"x": 0}}])
    assert doc["mergeType"] == "router"
    names = [next(iter(s)) if "$changeStream" not in s else s["$changeStream"]["stage"]
             for s in doc["splitPipeline"]["shardsPart"]]
    assert names == ["internalOplogMatch", "internalUnwindTransaction", "internalTransform", "internalCheckInvalidate",
                     "internalCheckResumability", "$match", "internalAddPreImage", "$project"]
    assert "filter" in doc["splitPipeline"]["shardsPart"][0]["$changeStream"]
    assert set(doc["shards"]) == {"shard00", "shard01", "shard02"}
    for name, shard in doc["shards"].items():
        assert shard["host"].startswith(name + "/") and shard["stages"] == doc["splitPipeline"]["shardsPart"]
    merger = doc["splitPipeline"]["mergerPart"]
    assert list(merger[0]) == ["$mergeCursors"] and merger[0]["$mergeCursors"]["tailableMode"] == "tailableAndAwaitData"
    assert [m["$changeStream"]["stage"] for m in merger[1:]] == ["internalHandleTopologyChange"]


def test_router_explain_ensure_resume_token_only_for_an_event_token():
    async def tokens():
        async with open_cluster(shards=2, listen=False, epoch=1_700_000_000) as core:
            c = AsyncClient(core.router)
            cs = c.watch("db", "c")
            await cs.open()
            await c.insert("db", "c", [{"_id": 1}])
            ev = None
            while ev is None:
                ev = await cs.try_next()
            return ev["_id"], cs.post_batch_resume_token
    event_token, _ = trio.run(tokens, clock=trio.testing.MockClock(autojump_threshold=0))
    doc = _explain({"resumeAfter": event_token})
    stages = [m["$changeStream"]["stage"] for m in doc["splitPipeline"]["mergerPart"][1:]]
    assert stages == ["internalHandleTopologyChange", "internalEnsureResumeTokenPresent"]
    from mongosim.oplog.resume_token import make_high_water_mark_token
    from bson import Timestamp

    doc = _explain({"resumeAfter": make_high_water_mark_token(Timestamp(1_700_000_000, 1))})
    assert [m["$changeStream"]["stage"] for m in doc["splitPipeline"]["mergerPart"][1:]] == \
        ["internalHandleTopologyChange"]
