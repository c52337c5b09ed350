"""`mongodb-oplog`: replaying the shards' oplog dumps gives, event by event, what the router streamed."""

from __future__ import annotations

import datetime as dt
import json
import time

import pymongo
import pytest
from bson.raw_bson import RawBSONDocument

from mongosim.spark.merge_job import merge_dumps
from mongosim.spark.oplog_source import dump_files, iter_dump
from mongosim.spark.schema import RowBuilder, decode_event
from tests.spark.helpers import STREAMS, spark_row

def test_dump_files_are_concatenated_bson_per_shard(recorded, cluster):
    _start, dumps, _ = recorded
    files = dump_files(dumps)
    assert sorted(files) == ["shard00", "shard01"]
    for name, path in files.items():
        entries = [decode_event(raw) for raw in iter_dump(path)]
        assert entries[0]["o"] == {"msg": "initiating set"}
        assert [e["ts"] for e in entries] == sorted(e["ts"] for e in entries)
    shard01 = [decode_event(raw) for raw in iter_dump(files["shard01"])]
    assert any("migrateChunkToNewShard" in (e.get("o2") or {}) for e in
               (decode_event(r) for r in iter_dump(files["shard00"]))), "the workload moved a chunk to a new shard"
    assert any(e.get("fromMigrate") for e in shard01)


@pytest.mark.parametrize("name,target,watch_kw,options", STREAMS, ids=[s[0] for s in STREAMS])
def test_batch_replay_equals_router_stream(spark, recorded, name, target, watch_kw, options):
    start, dumps, streamed = recorded
    expected = streamed[name]
    assert len(expected) > 10
    df = merge_dumps(spark, str(dumps), start_after=start, include_raw_event=True, **options)
    rows = [spark_row(r) for r in df.collect()]
    # event by event: the same BSON bytes, in the same order
    assert [r[-1] for r in rows] == expected
    # and the same rows as the streaming source builds from the router's events
    builder = RowBuilder(include_raw=True)
    assert rows == [builder.row(raw) for raw in expected]
    ops = [decode_event(raw)["operationType"] for raw in expected]
    if name == "collection-match":
        assert ops[-2:] == ["drop", "invalidate"] and "update" not in ops
    if name == "cluster-expanded":
        assert {"create", "shardCollection", "createIndexes", "rename", "drop", "dropDatabase"} <= set(ops)
    assert "migrateChunkToNewShard" not in ops


def test_per_shard_replay_keeps_what_the_router_drops(spark, recorded):
    start, dumps, streamed = recorded
    df = (spark.read.format("mongodb-oplog").option("merge", "false").option("startAfter", start)
          .option("showExpandedEvents", "true").load(str(dumps)))
    rows = df.select("shard", "operationType", "token").collect()
    assert {r.shard for r in rows} == {"shard00", "shard01"}
    topology = [r for r in rows if r.operationType == "migrateChunkToNewShard"]
    assert topology, "the shards send migrateChunkToNewShard to the router"
    merged = streamed["cluster-expanded"]
    assert len(rows) - len(topology) == len(merged)
    assert sorted(r.token for r in rows if r.operationType != "migrateChunkToNewShard") == \
        [decode_event(raw)["_id"]["_data"] for raw in merged]


def test_full_document_schema_and_operation_time_bounds(spark, recorded):
    start, dumps, streamed = recorded
    first = decode_event(streamed["cluster"][0])["clusterTime"]
    inserts = [e for e in map(decode_event, streamed["cluster"])
               if e["operationType"] == "insert" and e["ns"]["db"] == "eq"]
    last_insert = inserts[-1]["clusterTime"]
    df = merge_dumps(spark, str(dumps), database="eq", start_at_operation_time=f"{first.time},{first.inc}",
                     end_before_operation_time=f"{last_insert.time},{last_insert.inc}",
                     full_document_schema="_id INT, n BIGINT, tags ARRAY<STRING>, nested STRUCT<x: INT>, at TIMESTAMP",
                     pipeline='[{"$match": {"operationType": "insert"}}]')
    assert dict(df.dtypes)["fullDocument"].startswith("struct<_id:int,n:bigint")
    rows = df.collect()
    assert len(rows) == len(inserts) - 1  # the last insert is at the (exclusive) end
    by_id = {r.fullDocument["_id"]: r.fullDocument for r in rows}
    assert by_id[7].n == 7 and by_id[7].tags == ["a", "b"] and by_id[7].nested.x == 7
    assert by_id[1002].at.astimezone(dt.timezone.utc) == dt.datetime(2024, 1, 1, 0, 0, 2, tzinfo=dt.timezone.utc)
    assert by_id[1002].n is None  # a missing field is null


def test_refuses_what_a_dump_cannot_answer(spark, recorded):
    _start, dumps, _ = recorded
    with pytest.raises(Exception, match="updateLookup"):
        spark.read.format("mongodb-oplog").option("fullDocument", "updateLookup").load(str(dumps)).collect()


def test_streaming_source_gives_the_same_rows(spark, cluster, recorded, tmp_path):
    """The same range through `mongodb-changestream` (availableNow -> parquet): the batch's rows, in token order."""
    start, dumps, streamed = recorded
    last = decode_event(streamed["cluster-expanded"][-1])["_id"]["_data"]
    q = (spark.readStream.format("mongodb-changestream").option("uri", cluster.uri).option("startAfter", start)
         .option("showExpandedEvents", "true").option("includeRawEvent", "true").load()
         .writeStream.format("parquet").option("path", str(tmp_path / "out"))
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    q.awaitTermination(120)
    assert q.exception() is None
    from_stream = [spark_row(r) for r in spark.read.parquet(str(tmp_path / "out")).orderBy("token").collect()]
    from_stream = [r for r in from_stream if r[0] <= last]
    from_dumps = [spark_row(r) for r in merge_dumps(spark, str(dumps), start_after=start, show_expanded_events=True,
                                                    include_raw_event=True).collect()]
    assert from_stream == from_dumps
