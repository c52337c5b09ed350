"""A Spark driver in its own process, for the killed-driver test.

    python tests/spark/stream_driver.py URI DATABASE START_TOKEN CHECKPOINT SINK

Streams the database's change events (5 per batch) into a parquet sink until
it is killed.  It never calls `mongosim.spark.register`: a fresh driver finds
the format through the installed `pyspark_*` modules.
"""

from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def main() -> None:
    uri, database, start, checkpoint, sink = sys.argv[1:6]
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("killed-driver")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    df = (spark.readStream.format("mongodb-changestream").option("uri", uri).option("database", database)
          .option("startAfter", start).option("maxEventsPerBatch", "5").load())
    q = (df.writeStream.format("parquet").option("path", sink).option("checkpointLocation", checkpoint)
         .trigger(processingTime="50 milliseconds").start())
    print("started", flush=True)
    while True:  # until killed
        time.sleep(1)
        if q.exception() is not None:
            print("failed", q.exception(), flush=True)
            sys.exit(1)


if __name__ == "__main__":
    main()
