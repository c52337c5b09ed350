"""`mongodb-changestream`: a Spark Structured Streaming source over MongoDB change streams.

    # no registration: Spark finds the format through the installed `pyspark_mongodb_changestream`
    events = (spark.readStream.format("mongodb-changestream")
              .option("uri", "mongodb://127.0.0.1:27017/")
              .option("database", "shop").option("collection", "orders")   # both optional
              .option("maxEventsPerBatch", 10000)
              .load())

Two modes (`option("mode", ...)`), the same rows (`schema.py`):

- `router` (the default, `router_reader.py`): the change stream read through
  one router, one partition per micro-batch; offsets are resume tokens.
  Works against any MongoDB deployment through pymongo.
- `shards` (`shards_reader.py`): one partition per shard, each reading its
  shard's stream through the router with `$_passthroughToShard`; offsets are
  the vector of the shards' positions; a micro-batch ends at the minimum of
  the shards' promises, so the batch sorted by token is the router's merged
  stream over that range.  A sharded cluster only.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import DataSource

from mongosim.spark.options import StreamOptions
from mongosim.spark.router_reader import NAME, ChangeStreamSourceError, MongoChangeStreamReader
from mongosim.spark.schema import schema_ddl
from mongosim.spark.shards_reader import ShardsStreamReader

__all__ = ["NAME", "ChangeStreamSourceError", "MongoChangeStreamDataSource"]
MODES = {"router": MongoChangeStreamReader, "shards": ShardsStreamReader}


class MongoChangeStreamDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        o = StreamOptions.parse(self.options)
        return schema_ddl(full_document_schema=o.full_document_schema, include_raw=o.include_raw)

    def streamReader(self, schema: Any) -> MongoChangeStreamReader:
        mode = str({k.lower(): v for k, v in self.options.items()}.get("mode") or "router").strip().lower()
        if mode not in MODES:
            raise ValueError(f"{NAME}: option mode must be one of {sorted(MODES)}, got {mode!r}")
        return MODES[mode](dict(self.options), schema)
