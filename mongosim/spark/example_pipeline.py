"""Example pipeline: mongosim -> Spark Structured Streaming -> parquet, with its throughput.

    python -m mongosim.spark.example_pipeline --events 20000 --out /tmp/orders-events

1. starts a 2-shard mongosim cluster in this process (`--uri` to use a running
   cluster or a real MongoDB instead), shards `shop.orders` across both shards
   and notes a start token;
2. writes the workload: `--events` change events (inserts in batches of 1000,
   then updates of a tenth of them);
3. reads them straight with pymongo (`collection.watch()` from the start
   token) — the direct read rate;
4. runs the Spark query `mongodb-changestream` -> parquet with
   `Trigger.AvailableNow` from the same token (`--max-events-per-batch` per
   micro-batch) and checks that the parquet output holds every event once;
5. with mongosim, also dumps the shards' oplogs and runs the batch merge job
   (`mongodb-oplog` -> parquet).

It prints events/s for each path.  "steady" excludes Spark's first
micro-batch, which pays for starting the Python workers (about 10 s).
This is a benchmark, not a test.
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


def workload(client, events: int) -> int:
    """`events` change events on shop.orders; returns how many were written."""
    orders = client.shop.orders
    n_updates = events // 10
    n_inserts = events - n_updates
    for lo in range(0, n_inserts, 1000):
        orders.insert_many([{"_id": i, "region": "eu" if i % 2 else "us", "total": i % 97, "items": ["a", "b"]}
                            for i in range(lo, min(lo + 1000, n_inserts))], ordered=False)
    for i in range(n_updates):
        orders.update_one({"region": "eu" if i % 2 else "us", "_id": i}, {"$inc": {"total": 1}})
    return n_inserts + n_updates


def direct_read(uri: str, start: str, n: int) -> float:
    """Seconds to read n events with a plain pymongo change stream."""
    import pymongo

    c = pymongo.MongoClient(uri)
    t0 = time.monotonic()
    got = 0
    with c.shop.orders.watch(start_after={"_data": start}, batch_size=10_000, max_await_time_ms=200) as cs:
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
    p.add_argument("--max-events-per-batch", type=int, default=5000)
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
        client.shop.orders.drop()
        if client.admin.command("hello").get("msg") == "isdbgrid":
            client.admin.command("enableSharding", "shop")
            client.admin.command("shardCollection", "shop.orders", key={"region": 1, "_id": 1})
        with client.shop.orders.watch(max_await_time_ms=50) as cs:
            start = cs.resume_token["_data"]
        t0 = time.monotonic()
        n = workload(client, args.events)
        print(f"workload: {n} events written in {time.monotonic() - t0:.1f} s")

        d = direct_read(uri, start, n)
        print(f"direct pymongo read: {n} events in {d:.2f} s = {n / d:,.0f} events/s")

        from pyspark.sql import SparkSession

        from mongosim.spark import register

        t0 = time.monotonic()
        spark = (SparkSession.builder.master(args.master).appName("mongosim-example-pipeline")
                 .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        register(spark)
        print(f"spark session: {time.monotonic() - t0:.1f} s")

        # -- the pipeline -----------------------------------------------------------------
        events = (spark.readStream.format("mongodb-changestream")
                  .option("uri", uri)
                  .option("database", "shop").option("collection", "orders")
                  .option("startAfter", start)
                  .option("maxEventsPerBatch", str(args.max_events_per_batch))
                  .option("fullDocumentSchema", "_id BIGINT, region STRING, total INT, items ARRAY<STRING>")
                  .load())
        query = (events.writeStream.format("parquet")
                 .option("path", str(out / "events"))
                 .option("checkpointLocation", str(out / "checkpoint"))
                 .trigger(availableNow=True)
                 .start())
        t0 = time.monotonic()
        query.awaitTermination()
        total = time.monotonic() - t0
        # -----------------------------------------------------------------------------------
        if query.exception() is not None:
            raise SystemExit(f"query failed: {query.exception()}")
        progress = [pr for pr in query.recentProgress if pr["numInputRows"]]
        df = spark.read.parquet(str(out / "events"))
        count, distinct = df.count(), df.select("token").distinct().count()
        assert count == n == distinct, (count, distinct, n)
        steady = progress[1:]
        rows = sum(pr["numInputRows"] for pr in steady)
        ms = sum(pr["durationMs"]["triggerExecution"] for pr in steady)
        print(f"spark stream -> parquet: {n} events in {total:.1f} s = {n / total:,.0f} events/s overall "
              f"({len(progress)} micro-batches; first {progress[0]['durationMs']['triggerExecution'] / 1000:.1f} s)")
        if ms:
            print(f"  steady (batches after the first): {rows} events in {ms / 1000:.1f} s = {rows / (ms / 1000):,.0f} events/s")
        df.groupBy("operationType").count().orderBy("operationType").show()

        if cluster is not None:
            from mongosim.spark.merge_job import merge_dumps
            from mongosim.spark.oplog_source import dump_oplogs

            t0 = time.monotonic()
            dump_oplogs(cluster, out / "dumps")
            t1 = time.monotonic()
            merge_dumps(spark, str(out / "dumps"), database="shop", collection="orders",
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
