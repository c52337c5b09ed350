"""Spark integration (issue 8): change events into Spark, oplog dumps replayed in batch.

- `mongodb-changestream` (`source.py`): a Structured Streaming source over a
  change stream; offsets are resume tokens.
- `mongodb-oplog` (`oplog_source.py`): a batch source reading oplog dumps
  (`<shard>.bson`) and producing the change events the shards' pipelines
  would, merged by token like the router (`merge_job.py`).
- `schema.py`: the row schema both produce; `example_pipeline.py`: mongosim
  -> Spark -> parquet, with its throughput.

Needs the `spark` extra (pyspark 4.3, pyarrow, Java 17) and its companion
distribution `mongosim-spark` (`spark-plugin/`: `pip install -e '.[spark]' -e
./spark-plugin`), whose top-level `pyspark_mongodb_changestream` and
`pyspark_mongodb_oplog` modules Spark 4 imports when a session first uses a
Python data source: both formats then work with no registration call.
`register(spark)` registers them by hand (where the companion is not installed);
`ensure_registered(spark)` does that only when it is missing.
"""

from __future__ import annotations


def register(spark) -> None:
    """Register `mongodb-changestream` and `mongodb-oplog` with this SparkSession."""
    from mongosim.spark.oplog_source import MongoOplogDataSource
    from mongosim.spark.source import MongoChangeStreamDataSource

    spark.dataSource.register(MongoChangeStreamDataSource)
    spark.dataSource.register(MongoOplogDataSource)


def ensure_registered(spark) -> None:
    """Register the sources by hand only if Spark cannot find them itself (no `mongosim-spark`)."""
    import importlib.util

    if importlib.util.find_spec("pyspark_mongodb_changestream") is None or \
            importlib.util.find_spec("pyspark_mongodb_oplog") is None:
        register(spark)
