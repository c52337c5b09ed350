"""Example pipeline: mongosim -> Spark Structured Streaming -> parquet, with its throughput.

    python -m mongosim.spark.example_pipeline --events 20000 --out /tmp/orders-events

1. starts a 2-shard mongosim cluster in this process (`--uri` to use a running
   cluster or a real MongoDB instead), shards `spark_example.orders` (dropped first!) across both shards
   and notes a start token;
2. runs the pipeline once on 1000 events (the warm-up: Spark's first use of
   a Python data source starts its Python workers, about 10-20 s);
3. writes the workload: `--events` change events (inserts in batches of 1000,
   then updates of a tenth of them) and reads them straight with pymongo
   (`collection.watch()`) — the direct read rate;
4. runs the pipeline again from its checkpoint — `mongodb-changestream` ->
   parquet, `Trigger.AvailableNow`, `--max-events-per-batch` events per
   micro-batch (default: everything available) — and checks that the parquet
   output holds every event once;
5. with mongosim, also dumps the shards' oplogs and runs the batch merge job
   (`mongodb-oplog` -> parquet).

It prints events/s for each path.  This is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path


def workload(client, events: int, first_id: int = 0) -> int:
    """`events` change events on spark_example.orders (ids from `first_id`); returns how many were written."""
    orders = client.spark_example.orders
    n_updates = events // 10
    n_inserts = events - n_updates
    ids = range(first_id, first_id + n_inserts)
    for lo in range(0, n_inserts, 1000):
        orders.insert_many([{"_id": i, "region": "eu" if i % 2 else "us", "total": i % 97, "items": ["a", "b"]}
                            for i in ids[lo:lo + 1000]], ordered=False)
    for i in ids[:n_updates]:
        orders.update_one({"region": "eu" if i % 2 else "us", "_id": i}, {"$inc": {"total": 1}})
    return n_inserts + n_updates


def direct_read(uri: str, start: str, n: int) -> float:
    """Seconds to read n events with a plain pymongo change stream."""
    import pymongo

    c = pymongo.MongoClient(uri)
    t0 = time.monotonic()
    got = 0
    with c.spark_example.orders.watch(start_after={"_data": start}, batch_size=10_000, max_await_time_ms=200) as cs:
        while got < n:
            if cs.try_next() is not None:
                got += 1
    dt = time.monotonic() - t0
    c.close()
    return dt


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mongosim.spark.example_pipeline", description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=20_000)
    p.add_argument("--out", default=None, help="parquet output directory (default: a temporary one)")
    p.add_argument("--uri", default=None, help="use this deployment instead of an in-process mongosim cluster")
    p.add_argument("--max-events-per-batch", type=int, default=0,
                   help="admission control (0, the default: each micro-batch takes everything available)")
    p.add_argument("--master", default="local[2]")
    args = p.parse_args(argv)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import pymongo

    import mongosim

    out = Path(args.out or tempfile.mkdtemp(prefix="mongosim-spark-"))
    shutil.rmtree(out, ignore_errors=True)
    cluster_cm = nullcontext() if args.uri else mongosim.Cluster(shards=2, port=0, instant_hwm=True)
    with cluster_cm as cluster:
        uri = args.uri or cluster.uri
        client = pymongo.MongoClient(uri)
        client.spark_example.orders.drop()
        if client.admin.command("hello").get("msg") == "isdbgrid":
            client.admin.command("enableSharding", "spark_example")
            client.admin.command("shardCollection", "spark_example.orders", key={"region": 1, "_id": 1})
        with client.spark_example.orders.watch(max_await_time_ms=50) as cs:
            start = cs.resume_token["_data"]

        from pyspark.sql import SparkSession

        from mongosim.spark import ensure_registered

        t0 = time.monotonic()
        spark = (SparkSession.builder.master(args.master).appName("mongosim-example-pipeline")
                 .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        ensure_registered(spark)  # (a no-op once mongosim-spark is installed)
        print(f"spark session: {time.monotonic() - t0:.1f} s")

        def run_pipeline():
            """The pipeline: change events -> parquet, every event available now, from the checkpoint on."""
            reader = (spark.readStream.format("mongodb-changestream")
                      .option("uri", uri)
                      .option("database", "spark_example").option("collection", "orders")
                      .option("startAfter", start)  # the first run only: later runs go on from the checkpoint
                      .option("fullDocumentSchema", "_id BIGINT, region STRING, total INT, items ARRAY<STRING>"))
            if args.max_events_per_batch:
                reader = reader.option("maxEventsPerBatch", str(args.max_events_per_batch))
            query = (reader.load().writeStream.format("parquet")
                     .option("path", str(out / "events"))
                     .option("checkpointLocation", str(out / "checkpoint"))
                     .trigger(availableNow=True)
                     .start())
            t = time.monotonic()
            query.awaitTermination()
            if query.exception() is not None:
                raise SystemExit(f"query failed: {query.exception()}")
            return time.monotonic() - t, [pr for pr in query.recentProgress if pr["numInputRows"]]

        # warm-up: the first run pays for starting Spark's Python workers
        warm = workload(client, 1000, first_id=10**9)
        t_warm, _ = run_pipeline()
        print(f"warm-up run: {warm} events in {t_warm:.1f} s")

        with client.spark_example.orders.watch(max_await_time_ms=50) as cs:
            mark = cs.resume_token["_data"]
        t0 = time.monotonic()
        n = workload(client, args.events)
        print(f"workload: {n} events written in {time.monotonic() - t0:.1f} s")
        d = direct_read(uri, mark, n)
        print(f"direct pymongo read: {n} events in {d:.2f} s = {n / d:,.0f} events/s")

        total, progress = run_pipeline()
        df = spark.read.parquet(str(out / "events"))
        count, distinct = df.count(), df.select("token").distinct().count()
        assert count == n + warm == distinct, (count, distinct, n + warm)
        print(f"spark stream -> parquet: {n} events in {total:.1f} s = {n / total:,.0f} events/s "
              f"({len(progress)} micro-batches)")
        df.groupBy("operationType").count().orderBy("operationType").show()
        n += warm

        if cluster is not None:
            from mongosim.spark.merge_job import merge_dumps
            from mongosim.spark.oplog_source import dump_oplogs

            t0 = time.monotonic()
            dump_oplogs(cluster, out / "dumps")
            t1 = time.monotonic()
            merge_dumps(spark, str(out / "dumps"), database="spark_example", collection="orders",
                        start_after=start).write.parquet(str(out / "replayed"))
            t2 = time.monotonic()
            m = spark.read.parquet(str(out / "replayed")).count()
            assert m == n, (m, n)
            print(f"oplog dumps: {t1 - t0:.2f} s; batch merge job -> parquet: {m} events in {t2 - t1:.1f} s "
                  f"= {m / (t2 - t1):,.0f} events/s")
        spark.stop()
        client.close()
    print(f"output: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
