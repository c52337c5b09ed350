"""The merge job: several shards' oplog dumps -> one change stream ordered by token -> parquet.

The batch counterpart of the router's merge.  Each shard's dump is replayed
through that shard's own change-stream stages (`oplog_source.shard_events`),
and the shards' sequences are merged the way the router merges its shard
cursors (`oplog_source.merge_events`):

- order: by the resume token's `_data`, compared as strings — a k-way merge
  (`heapq.merge`) of the per-shard sequences, each already in token order.
  The router's AsyncResultsMerger is not reused: its gate (release an event
  only when every shard has promised nothing earlier) exists for live
  cursors; a dump is a finished history, so the gate is always open and a
  k-way merge releases exactly what the ARM releases, in the same order,
  without its trio/remote machinery.
- dropped, as the router drops them: `migrateChunkToNewShard` topology events
  (the config server's `config.shards` events never appear: its oplog is not
  dumped); events up to a `startAfter` event token (the router's own
  `EnsureResumeTokenPresent`, which also fails if that token is missing);
  everything after an `invalidate`.  Collection drops on non-primary shards
  are `fromMigrate` and are already filtered by each shard's oplog match.

The output is one partition, in stream order, with the schema of
`mongosim.spark.schema` — the same rows `mongodb-changestream` produces for
the same stream.

Command line:

    python -m mongosim.spark.merge_job DUMP_DIR OUT_PARQUET [--database DB [--collection C]]
        [--pipeline JSON] [--show-expanded-events] [--start-after TOKEN | --start-at-operation-time S[,I]]
        [--end-before-operation-time S[,I]]

In Python: `merge_dumps(spark, "dumps/", database="shop").write.parquet(...)`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

_OPTION_NAMES = {
    "database": "database", "collection": "collection", "pipeline": "pipeline",
    "show_expanded_events": "showExpandedEvents", "start_after": "startAfter",
    "start_at_operation_time": "startAtOperationTime", "end_before_operation_time": "endBeforeOperationTime",
    "full_document_schema": "fullDocumentSchema", "include_raw_event": "includeRawEvent",
}


def merge_dumps(spark: Any, path: str, **options: Any):
    """A DataFrame of the merged change stream of the dumps under `path` (keyword options in snake_case
    or as the source's option names)."""
    from mongosim.spark import ensure_registered

    ensure_registered(spark)
    reader = spark.read.format("mongodb-oplog").option("merge", "true")
    for k, v in options.items():
        if v is None:
            continue
        name = _OPTION_NAMES.get(k, k)
        reader = reader.option(name, str(v).lower() if isinstance(v, bool) else str(v))
    return reader.load(str(path))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mongosim.spark.merge_job", description=__doc__.split("\n\n")[0])
    p.add_argument("dumps", help="directory of <shard>.bson oplog dumps (or comma-separated files)")
    p.add_argument("out", help="parquet output directory")
    p.add_argument("--database")
    p.add_argument("--collection")
    p.add_argument("--pipeline", help="JSON array of stages after $changeStream")
    p.add_argument("--show-expanded-events", action="store_true")
    p.add_argument("--start-after")
    p.add_argument("--start-at-operation-time")
    p.add_argument("--end-before-operation-time")
    p.add_argument("--master", default="local[2]")
    args = p.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(args.master).appName("mongosim-merge-job")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate())
    t0 = time.monotonic()
    df = merge_dumps(spark, args.dumps, database=args.database, collection=args.collection, pipeline=args.pipeline,
                     show_expanded_events=args.show_expanded_events or None, start_after=args.start_after,
                     start_at_operation_time=args.start_at_operation_time,
                     end_before_operation_time=args.end_before_operation_time)
    df.write.mode("overwrite").parquet(args.out)
    n = spark.read.parquet(args.out).count()
    print(f"{n} events -> {args.out} in {time.monotonic() - t0:.1f} s")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
