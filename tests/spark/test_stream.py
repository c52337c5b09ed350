"""`mongodb-changestream`: admission control, restart from a checkpoint (stopped or killed), errors."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from mongosim.spark.schema import decode_event
from tests.spark.conftest import now_token, wait_for
from tests.spark.helpers import checkpoint_offsets, committed, read_events, shard_across


def tokens_of(raws: list[bytes]) -> list[str]:
    return [decode_event(r)["_id"]["_data"] for r in raws]


def sink_tokens(spark, sink: Path) -> list[str]:
    if not (sink / "_spark_metadata").exists():
        return []
    return [r.token for r in spark.read.schema("token STRING").parquet(str(sink)).collect()]


def test_database_stream_admission_control_available_now(spark, cluster, client, tmp_path):
    """A database-level stream, 7 events per batch, `availableNow`: every event once, batches of <= 7."""
    shard_across(client, "adm", "a")
    start = now_token(client)
    client.adm.a.insert_many([{"_id": i, "v": i} for i in range(0, 100, 4)])  # 25 events, both shards
    client.adm.a.update_many({"_id": {"$lt": 20}}, {"$set": {"w": 1}})  # 5
    client.adm.b.insert_many([{"_id": i} for i in range(5)])  # 5 (unsharded)
    client.adm.b.delete_many({})  # 5
    client.adm_other.c.insert_many([{"_id": i} for i in range(7)])  # another database: not in the stream
    expected = tokens_of(read_events(cluster.uri, start, 40, db="adm"))

    sink, ck = tmp_path / "out", tmp_path / "ck"
    df = (spark.readStream.format("mongodb-changestream").option("uri", cluster.uri).option("database", "adm")
          .option("startAfter", start).option("maxEventsPerBatch", "7").load())
    q = (df.writeStream.format("parquet").option("path", str(sink)).option("checkpointLocation", str(ck))
         .trigger(availableNow=True).start())
    q.awaitTermination(180)
    assert q.exception() is None
    got = sink_tokens(spark, sink)
    assert sorted(got) == expected and len(set(got)) == 40
    sizes = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    assert sizes == [7, 7, 7, 7, 7, 5]
    rows = spark.read.parquet(str(sink)).select("ns.db", "ns.coll", "operationType").collect()
    assert {r.db for r in rows} == {"adm"} and {r.coll for r in rows} == {"a", "b"}
    # offsets are resume tokens: each batch ends at its last event's token
    offs = checkpoint_offsets(ck)
    assert [offs[b]["token"] for b in sorted(offs)][-6:] == [expected[i] for i in (6, 13, 20, 27, 34, 39)]


def test_restart_from_checkpoint_after_stop(spark, cluster, client, tmp_path):
    """A collection stream stopped and restarted from its checkpoint: every event once, in the parsed schema."""
    coll = client.rst.c
    coll.insert_one({"_id": -1, "tag": "before the start"})
    op_time = client.admin.command("ping")["operationTime"]
    op_time = f"{op_time.time},{op_time.inc + 1}"  # just after the insert above
    sink, ck = tmp_path / "out", tmp_path / "ck"

    def start_query(trigger: dict):
        df = (spark.readStream.format("mongodb-changestream").option("uri", cluster.uri)
              .option("database", "rst").option("collection", "c").option("startAtOperationTime", op_time)
              .option("fullDocumentSchema", "_id INT, n INT, tag STRING").load())
        return (df.writeStream.format("parquet").option("path", str(sink)).option("checkpointLocation", str(ck))
                .trigger(**trigger).start())

    q = start_query({"processingTime": "200 milliseconds"})
    coll.insert_many([{"_id": i, "n": i * 10, "tag": f"t{i}"} for i in range(20)])
    wait_for(lambda: len(sink_tokens(spark, sink)) >= 20, 120, 0.5, "the first 20 events")
    q.stop()
    coll.insert_many([{"_id": i, "n": i * 10, "tag": f"t{i}"} for i in range(20, 30)])
    coll.delete_many({"_id": {"$gte": 25}})
    q = start_query({"availableNow": True})
    q.awaitTermination(120)
    assert q.exception() is None
    df = spark.read.parquet(str(sink))
    rows = df.collect()
    assert len(rows) == 35 and len({r.token for r in rows}) == 35
    inserts = sorted((r.fullDocument for r in rows if r.operationType == "insert"), key=lambda d: d["_id"])
    assert [d["_id"] for d in inserts] == list(range(30))
    assert inserts[3].n == 30 and inserts[3].tag == "t3"
    assert sorted(json.loads(r.documentKey)["_id"] for r in rows if r.operationType == "delete") == list(range(25, 30))


def test_killed_driver_restarts_from_checkpoint(spark, cluster, killed_driver):
    """SIGKILL the driver in the middle of a batch; the restarted query replays that batch: every event once."""
    k = killed_driver["router"]
    expected = tokens_of(read_events(cluster.uri, k.start, 80, db="kill"))
    assert k.batch not in committed(k.checkpoint)
    before = len(sink_tokens(spark, k.sink))
    assert before < 80

    # restarted without the limit: the killed batch is replayed as planned, the rest comes in one batch
    df = (spark.readStream.format("mongodb-changestream").option("uri", cluster.uri).option("database", "kill")
          .option("startAfter", k.start).load())
    q = (df.writeStream.format("parquet").option("path", str(k.sink)).option("checkpointLocation", str(k.checkpoint))
         .trigger(availableNow=True).start())
    q.awaitTermination(180)
    assert q.exception() is None
    assert checkpoint_offsets(k.checkpoint)[k.batch] == k.planned  # the killed batch, replayed as planned
    assert k.batch in committed(k.checkpoint)
    got = sink_tokens(spark, k.sink)
    assert sorted(got) == expected and len(got) == 80


def test_history_lost_fails_the_query_clearly(spark, tmp_path):
    """A checkpointed start the oplog no longer holds: ChangeStreamHistoryLost, named in the failure."""
    import mongosim
    import pymongo

    with mongosim.Cluster(shards=1, port=0, instant_hwm=True, oplog_size_mb=0.05) as small:
        c = pymongo.MongoClient(small.uri)
        start = now_token(c)
        c.lost.c.insert_many([{"_id": i, "pad": "x" * 200} for i in range(600)])  # ~150 KB: truncates
        df = (spark.readStream.format("mongodb-changestream").option("uri", small.uri)
              .option("startAfter", start).load())
        q = (df.writeStream.format("parquet").option("path", str(tmp_path / "out"))
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
        with pytest.raises(Exception) as err:
            q.awaitTermination(120)
        c.close()
    msg = str(err.value)
    assert "ChangeStreamHistoryLost" in msg and start in msg and "mongodb-changestream" in msg


def test_collection_stream_goes_on_after_invalidate(spark, cluster, client, tmp_path):
    """drop -> invalidate ends a collection stream; the source opens the next one after it."""
    start = now_token(client)
    client.inv.c.insert_many([{"_id": i} for i in range(3)])
    client.inv.c.drop()
    client.inv.c.insert_many([{"_id": i} for i in range(10, 12)])  # a new collection of the same name
    df = (spark.readStream.format("mongodb-changestream").option("uri", cluster.uri).option("database", "inv")
          .option("collection", "c").option("startAfter", start).load())
    q = (df.writeStream.format("parquet").option("path", str(tmp_path / "out"))
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    q.awaitTermination(120)
    assert q.exception() is None
    rows = spark.read.parquet(str(tmp_path / "out")).orderBy("token").collect()
    assert [r.operationType for r in rows] == ["insert"] * 3 + ["drop", "invalidate"] + ["insert"] * 2
    assert [json.loads(r.documentKey)["_id"] for r in rows if r.operationType == "insert"] == [0, 1, 2, 10, 11]


# -- the reader's planning, driven directly (no Spark job needed) ---------------------------------------
def reader(uri: str, **options):
    from pyspark.sql.types import StringType, StructField, StructType

    from mongosim.spark.source import MongoChangeStreamDataSource

    schema = StructType([StructField("fullDocument", StringType())])
    return MongoChangeStreamDataSource({"uri": uri, **options}).streamReader(schema)


def test_batch_ends_the_read_limit_and_idle_offsets(cluster, client):
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

    from mongosim.spark import offsets as off

    start = now_token(client)
    client.plan.c.insert_many([{"_id": i} for i in range(10)])
    expected = tokens_of(read_events(cluster.uri, start, 10, db="plan"))
    r = reader(cluster.uri, database="plan", startAfter=start, idleAdvanceSeconds="2")
    s0 = r.initialOffset()
    assert s0 == {"token": start} and r.initialOffset() == s0
    # a row limit ends the batch at the n-th event's token; the batch holds exactly those events
    e1 = r.latestOffset(s0, ReadMaxRows(4))
    assert e1 == {"token": expected[3]}
    assert tokens_of(list(r.read_raw(s0, e1))) == expected[:4]
    # everything available: a high-water mark after the last event (the events are read once)
    e2 = r.latestOffset(e1, ReadAllAvailable())
    assert off.token_kind(e2["token"]) == "hwm" and e2["token"] > expected[-1]
    assert tokens_of(list(r.read_raw(e1, e2))) == expected[4:]
    # nothing new: the offset stays...
    assert r.latestOffset(e2, ReadAllAvailable()) == e2
    # ...until the stream's promise is idleAdvanceSeconds ahead (writes elsewhere move the cluster time)
    time.sleep(2.1)
    client.plan_elsewhere.c.insert_one({"_id": 1})
    e3 = r.latestOffset(e2, ReadAllAvailable())
    assert e3 != e2 and off.token_kind(e3["token"]) == "hwm" and list(r.read_raw(e2, e3)) == []
    r.stop()


def test_a_checkpointed_token_missing_from_the_stream_fails(cluster, client):
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from mongosim.spark.source import ChangeStreamSourceError

    start = now_token(client)
    client.miss.a.insert_one({"_id": 1})
    client.miss.b.insert_one({"_id": 1})
    other = tokens_of(read_events(cluster.uri, start, 1, db="miss", coll="a"))[0]
    r = reader(cluster.uri, database="miss", collection="b", startAfter=other)
    with pytest.raises(ChangeStreamSourceError, match="not in the stream"):
        r.latestOffset(r.initialOffset(), ReadAllAvailable())
    r.stop()


def test_formats_are_found_with_no_register_call(spark, cluster, client, tmp_path):
    """Static registration (issue 16): Spark imports the installed `pyspark_*` modules and registers
    their `DefaultSource`s; nothing in this session called `mongosim.spark.register`."""
    import pkgutil

    assert {"pyspark_mongodb_changestream", "pyspark_mongodb_oplog"} <= {m.name for m in pkgutil.iter_modules()}
    start = now_token(client)
    client.static_reg.c.insert_many([{"_id": i} for i in range(3)])
    q = (spark.readStream.format("mongodb-changestream").option("uri", cluster.uri).option("database", "static_reg")
         .option("startAfter", start).load()
         .writeStream.format("parquet").option("path", str(tmp_path / "out"))
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    q.awaitTermination(120)
    assert q.exception() is None
    assert len(sink_tokens(spark, tmp_path / "out")) == 3


@pytest.mark.parametrize("fault", [{"closeConnection": True},
                                   {"errorCode": 6, "errorLabels": ["ResumableChangeStreamError"]}])
def test_a_resumable_error_in_mid_stream_is_resumed(cluster, client, fault):
    """A dropped connection (or an error labelled resumable) on a getMore: the reader's stream resumes
    after the last event it handed out, as a driver's change stream does; nothing is lost or repeated."""
    import pymongo

    from mongosim.spark import offsets as off
    from mongosim.spark.options import StreamOptions
    from mongosim.spark.streams import RawChangeStream, open_spec

    db = f"resume_err{len(fault)}"
    start = now_token(client)
    client[db].c.insert_many([{"_id": i} for i in range(30)])
    expected = tokens_of(read_events(cluster.uri, start, 30, db=db))
    c = pymongo.MongoClient(cluster.uri)
    spec = open_spec(StreamOptions.parse({"database": db}), off.token_offset(start), light=False)
    spec = {**{k: v for k, v in spec.items() if k != "startAtOperationTime"}, "startAfter": {"_data": start}}
    cs = RawChangeStream(c[db], 1, spec, [], batch_size=5, await_ms=100, read_ahead=True)
    got = [cs.try_next()[0] for _ in range(5)]  # the first batch, with the aggregate
    client.admin.command("configureFailPoint", "failCommand", mode={"times": 1},
                         data={"failCommands": ["getMore"], **fault})
    try:
        while len(got) < 30:
            ev = cs.try_next()
            if ev is not None:
                got.append(ev[0])
    finally:
        client.admin.command("configureFailPoint", "failCommand", mode="off")
        cs.close()
        c.close()
    assert got == expected and cs.resumes == 1
