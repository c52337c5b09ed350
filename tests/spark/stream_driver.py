"""A Spark driver in its own process, for the killed-driver tests (`conftest.killed_driver`).

    python tests/spark/stream_driver.py QUERIES_JSON

QUERIES_JSON is a list of `{uri, database, start, checkpoint, sink, mode}`:
each query streams the database's change events from `start` (5 per batch)
until the process is killed — in router mode into a parquet sink; in shards
mode each micro-batch into its own parquet folder `<sink>/batch=<id>`
(`batch_writer`: idempotent, a replayed batch overwrites its folder), so that
the test can check the router's order batch by batch.  It never calls
`mongosim.spark.register`: a fresh driver finds the format through the
installed `pyspark_*` modules.
"""

from __future__ import annotations

import json
import os
import sys
import time

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def batch_writer(sink: str):
    """A foreachBatch function writing micro-batch `id` to `<sink>/batch=<id>` (overwriting a replay)."""
    def write_batch(df, batch_id: int) -> None:
        df.write.mode("overwrite").parquet(os.path.join(sink, f"batch={batch_id:05d}"))
    return write_batch


def main() -> None:
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("killed-driver")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    queries = []
    for spec in json.loads(sys.argv[1]):
        df = (spark.readStream.format("mongodb-changestream").option("uri", spec["uri"])
              .option("database", spec["database"]).option("startAfter", spec["start"])
              .option("maxEventsPerBatch", "5").option("mode", spec["mode"]).load())
        if spec["mode"] == "shards":
            w = df.writeStream.foreachBatch(batch_writer(spec["sink"]))
        else:
            w = df.writeStream.format("parquet").option("path", spec["sink"])
        queries.append(w.option("checkpointLocation", spec["checkpoint"])
                       .trigger(processingTime="50 milliseconds").start())
    print("started", flush=True)
    while True:  # until killed
        time.sleep(1)
        for q in queries:
            if q.exception() is not None:
                print("failed", q.exception(), flush=True)
                sys.exit(1)


if __name__ == "__main__":
    main()
