"""Spark's static lookup of Python data sources imports every top-level `pyspark_*` module and
registers its `DefaultSource`: this one makes `spark.read.format("mongodb-oplog")` work with no
registration call (the source itself: `mongosim.spark.oplog_source`)."""

from mongosim.spark.oplog_source import MongoOplogDataSource as DefaultSource

__all__ = ["DefaultSource"]
