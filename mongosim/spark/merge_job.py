"""The merge job: several shards' oplog dumps -> one change stream ordered by token -> parquet, distributed.

The batch counterpart of the router's merge, as a Spark job whose every
per-event step runs on the executors:

1. **Plan** — one task per dump walks its length chain and keeps a sparse
   index (`dump_ranges.index_dump`); the driver cuts each dump into time
   ranges from those few samples (`dump_ranges.plan_ranges`).
2. **Shard stages** — one partition per range (`mongodb-oplog` with the
   option `ranges`): each replays its range through the shard's own
   change-stream stages (`oplog_source.range_events`; the transaction chains
   that began before the range are carried in) and emits rows with the sort
   key, the shard's order, the operation type and the `_id` check beside them.
   The rows are persisted: the checks and the sort below read them again.
3. **What the router drops**, as filters: `migrateChunkToNewShard` topology
   events; the events up to a `startAfter` event token (and the router's
   resume-token check: if the token is not in the stream, ChangeStreamFatalError);
   everything after the first `invalidate`; an event whose `_id` the user's
   pipeline modified fails the job (ChangeStreamFatalError).  The three
   stream-wide facts these need (the first event at or after the token, the
   first invalidate, the first modified `_id`) come from one aggregation,
   skipped when the stream cannot have them.
4. **Order** — Spark's distributed sort on the sort key (the resume token's
   `_data`; equal tokens of two shards, if any, in the dumps' name order, as
   the single-partition merge orders them): range partitioning, then a sort
   within each partition.  The
   result is several partitions, each in token order, ordered among
   themselves: written to parquet, `part-00000`, `part-00001`, ... read in
   name order are the router's stream.

A dump is a finished history, so the AsyncResultsMerger's gate (release an
event once every shard promised nothing earlier) is always open: ordering
every shard's events by token releases what the router releases.  Collection
drops on non-primary shards are `fromMigrate` and already filtered by each
shard's oplog match.  `merge_dumps_single_partition` is the earlier job (a
k-way `heapq.merge` in one partition), kept to compare against.

Command line:

    python -m mongosim.spark.merge_job DUMP_DIR OUT_PARQUET [--database DB [--collection C]]
        [--pipeline JSON] [--show-expanded-events] [--start-after TOKEN | --start-at-operation-time S[,I]]
        [--end-before-operation-time S[,I]] [--partitions N] [--output-partitions N] [--master local[2]]

In Python: `merge_dumps(spark, "dumps/", database="shop").write.parquet(...)`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from typing import Any

from mongosim.spark.dump_ranges import SAMPLE_EVERY, DumpIndex, index_dump, plan_ranges
from mongosim.spark.oplog_source import MERGE_COLUMNS, NAME, dump_files
from mongosim.spark.options import StreamOptions

RANGE_BYTES = 32 * 1024 * 1024  # a dump is cut into ranges of at most about this size by default

_OPTION_NAMES = {
    "database": "database", "collection": "collection", "pipeline": "pipeline",
    "show_expanded_events": "showExpandedEvents", "start_after": "startAfter",
    "start_at_operation_time": "startAtOperationTime", "end_before_operation_time": "endBeforeOperationTime",
    "full_document_schema": "fullDocumentSchema", "include_raw_event": "includeRawEvent",
}


def _source_options(options: dict[str, Any]) -> dict[str, str]:
    out = {}
    for k, v in options.items():
        if v is not None:
            out[_OPTION_NAMES.get(k, k)] = str(v).lower() if isinstance(v, bool) else str(v)
    return out


def _index_task(item: tuple[str, str], sample_every: int) -> dict:
    shard, path = item
    return index_dump(shard, path, sample_every).to_json()


class MergeJob:
    """The distributed merge of the dumps under `path` (see the module doc).

    Planning (the index job) runs when the job is made; `dataframe()` gives the merged stream
    (running the checks' aggregation first when the stream needs it); `close()` releases the
    persisted shard-stage output."""

    def __init__(self, spark: Any, path: Any, *, partitions: int | None = None,
                 output_partitions: int | None = None, sample_every: int = SAMPLE_EVERY, **options: Any) -> None:
        from mongosim.spark import ensure_registered

        ensure_registered(spark)
        self.spark = spark
        self.options = _source_options(options)
        self.opts = StreamOptions.parse(self.options)  # bad options fail here, before any job
        files = sorted((k, str(v)) for k, v in dump_files(path).items())
        sc = spark.sparkContext
        indexes = sc.parallelize(files, len(files)).map(lambda item: _index_task(item, sample_every)).collect()
        indexes = [DumpIndex.from_json(d) for d in indexes]
        total = sum(i.size for i in indexes)
        want = partitions or max(len(files), sc.defaultParallelism, math.ceil(total / RANGE_BYTES))
        self.ranges = plan_ranges(indexes, want)
        self.samples = {i.shard: [i.offsets, i.keys] for i in indexes}
        self.output_partitions = output_partitions or max(len(self.ranges), 1)
        self._events = None

    def events(self):
        """The shard stages' rows of every range (with the merge columns), persisted."""
        if self._events is None:
            from pyspark import StorageLevel

            plan = {"dumps": self.samples, "ranges": [r.to_json() for r in self.ranges]}
            reader = (self.spark.read.format(NAME).option("merge", "false").option("ranges", json.dumps(plan))
                      .option("mergeColumns", "true"))
            for k, v in self.options.items():
                reader = reader.option(k, v)
            self._events = reader.load().persist(StorageLevel.MEMORY_AND_DISK)
        return self._events

    def dataframe(self):
        """The merged stream: the router's drops as filters, then Spark's distributed sort by token."""
        from pyspark.sql import functions as F

        from mongosim.oplog.errors import MongoError
        from mongosim.shardsim.changestream.cursor import ID_MODIFIED_MSG
        from mongosim.spark.offsets import token_kind

        df = self.events()
        key, op = F.col("__key"), F.col("__op")
        kept = op != "migrateChunkToNewShard"
        token = self.opts.start_after if self.opts.start_after and token_kind(self.opts.start_after) != "hwm" else None
        if token is not None:
            kept = kept & (key > token)
        aggs = []
        if token is not None:
            aggs.append(F.min(F.when(key >= token, key)).alias("resume"))
        if self.opts.level != "cluster":
            aggs.append(F.min(F.when(kept & (op == "invalidate"), key)).alias("cut"))
        if self.opts.pipeline:
            aggs.append(F.min(F.when(kept & ~F.col("__intact"), key)).alias("bad"))
        if aggs:
            facts = df.agg(*aggs).first().asDict()
            resume = facts.get("resume")
            if token is not None and resume is not None and resume != token:
                raise MongoError("ChangeStreamFatalError",
                                 f"cannot resume stream; the resume token was not found. {{'_data': '{resume}'}}")
            cut, bad = facts.get("cut"), facts.get("bad")
            if bad is not None and (cut is None or bad <= cut):
                raise MongoError("ChangeStreamFatalError", ID_MODIFIED_MSG)
            if cut is not None:
                kept = kept & (key <= cut)
        # Every row kept has its `_id` intact (else the job failed above), so its `token` is its sort
        # key: the sort runs on `token` and the internal columns leave before the shuffle.
        internal = [n for n, _t in MERGE_COLUMNS if n != "__order"]
        return (df.filter(kept).drop("shard", *internal)
                .repartitionByRange(self.output_partitions, "token", "__order")
                .sortWithinPartitions("token", "__order").drop("__order"))

    def close(self) -> None:
        if self._events is not None:
            self._events.unpersist()
            self._events = None


def merge_dumps(spark: Any, path: Any, **options: Any):
    """A DataFrame of the merged change stream of the dumps under `path`, distributed (keyword options
    in snake_case or as the source's option names; `partitions`, `output_partitions`, `sample_every`
    tune the plan).  The shard stages' output stays persisted for the session (use `MergeJob` to
    release it)."""
    return MergeJob(spark, path, **options).dataframe()


def merge_dumps_single_partition(spark: Any, path: Any, **options: Any):
    """The earlier job: every dump replayed and k-way merged (`heapq.merge`) in one Python worker."""
    from mongosim.spark import ensure_registered

    ensure_registered(spark)
    reader = spark.read.format(NAME).option("merge", "true")
    for k, v in _source_options(options).items():
        reader = reader.option(k, v)
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
    p.add_argument("--partitions", type=int, help="ranges the dumps are cut into (default: enough for every core, "
                                                  f"and ranges of at most {RANGE_BYTES >> 20} MiB)")
    p.add_argument("--output-partitions", type=int, help="ordered output partitions (default: as many as ranges)")
    p.add_argument("--master", default="local[2]")
    args = p.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    own = SparkSession.getActiveSession() is None
    spark = (SparkSession.builder.master(args.master).appName("mongosim-merge-job")
             .config("spark.ui.enabled", "false").getOrCreate())
    if own:
        spark.sparkContext.setLogLevel("ERROR")
    t0 = time.monotonic()
    try:
        job = MergeJob(spark, args.dumps, partitions=args.partitions, output_partitions=args.output_partitions,
                       database=args.database, collection=args.collection, pipeline=args.pipeline,
                       show_expanded_events=args.show_expanded_events or None, start_after=args.start_after,
                       start_at_operation_time=args.start_at_operation_time,
                       end_before_operation_time=args.end_before_operation_time)
        job.dataframe().write.mode("overwrite").parquet(args.out)
        job.close()
        n = spark.read.parquet(args.out).count()
        print(f"{n} events -> {args.out} ({len(job.ranges)} ranges, {job.output_partitions} ordered partitions) "
              f"in {time.monotonic() - t0:.1f} s")
    finally:
        if own:
            spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
