"""Spark integration (issue 8): change events into Spark, oplog dumps replayed in batch.

- `mongodb-changestream` (`source.py`): a Structured Streaming source over a
  change stream; offsets are resume tokens.
- `mongodb-oplog` (`oplog_source.py`): a batch source reading oplog dumps
  (`<shard>.bson`) and producing the change events the shards' pipelines
  would, merged by token like the router (`merge_job.py`).
- `schema.py`: the row schema both produce; `example_pipeline.py`: mongosim
  -> Spark -> parquet, with its throughput.

Needs the `spark` extra (`pip install -e '.[spark]'`: pyspark 4.3, pyarrow).
`register(spark)` registers both data sources with a session.
"""

from __future__ import annotations


def register(spark) -> None:
    """Register `mongodb-changestream` and `mongodb-oplog` with this SparkSession."""
    from mongosim.spark.oplog_source import MongoOplogDataSource
    from mongosim.spark.source import MongoChangeStreamDataSource

    spark.dataSource.register(MongoChangeStreamDataSource)
    spark.dataSource.register(MongoOplogDataSource)
