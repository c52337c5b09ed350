"""Spark's static lookup of Python data sources imports every top-level `pyspark_*` module and
registers its `DefaultSource`: this one makes `spark.readStream.format("mongodb-changestream")`
work with no registration call (the source itself: `mongosim.spark.source`)."""

from mongosim.spark.source import MongoChangeStreamDataSource as DefaultSource

__all__ = ["DefaultSource"]
