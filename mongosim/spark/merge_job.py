"""The merge job: several shards' oplog dumps -> one change stream ordered by token -> parquet, distributed.

The batch counterpart of the router's merge, as a Spark job whose every
per-event step runs on the executors:

1. **Plan** — each dump's sparse index: the one `write_dump` left beside it
   (`<dump>.idx`, while the dump is unchanged), else one task per dump walks
   its length chain (`dump_ranges.index_dump`); the driver cuts the dumps at
   common times into time slices from those few samples
   (`dump_ranges.plan_slices`: slice k is, in every dump, the entries with ts
   in `[B_k, B_k+1)`).
2. **Shard stages and merge** — one partition per slice (`mongodb-oplog` with
   the option `ranges`): it replays each dump's range of the slice through the
   shard's own change-stream stages (`oplog_source.range_events`; the
   transaction chains that began before the range are carried in) and merges
   the shards' events by token (`oplog_source.slice_events`, `heapq.merge`),
   emitting Arrow record batches built column by column, with the merge
   columns the job needs beside them (the operation type; the sort key, the
   shard's order, the `_id` check only where a filter or sort reads them).  A token starts with its event's clusterTime,
   so every event of slice k sorts before every event of slice k+1: the
   partitions, in order, are the merged stream.
3. **What the router drops**, as filters: `migrateChunkToNewShard` topology
   events; the events up to a `startAfter` event token (and the router's
   resume-token check: if the token is not in the stream, ChangeStreamFatalError);
   everything after the first `invalidate`; an event whose `_id` the user's
   pipeline modified fails the job (ChangeStreamFatalError).  The three
   stream-wide facts these need (the first event at or after the token, the
   first invalidate, the first modified `_id`) come from one aggregation over
   the rows, then persisted, skipped when the stream cannot have them.
4. **Order** — nothing more: the slices are the ordered partitions, written to
   parquet as `part-00000`, `part-00001`, ..., which read in name order are the
   router's stream.  No shuffle, no sort, no sample, no cache: per event, the
   JVM only turns the Arrow batches into parquet, and each task's work is in
   its own Python worker (an earlier form sorted the ranges' rows with Spark's
   range partitioning: the persist, sample, shuffle and sort cost the JVM as
   much CPU as the Python replay, which at `local[1]` already ran on the second
   core, so `local[2]` was no faster).  With `output_partitions` other than the
   number of slices, Spark's distributed sort on the token (equal tokens of
   two shards in the dumps' name order) makes that many ordered partitions.

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

In Python: `write_parquet(merge_dumps(spark, "dumps/", database="shop"), "out.parquet")` (or any
DataFrame writer; `write_parquet` leaves parquet's dictionary off for the columns whose values are
all different, which would otherwise be most of the JVM's work).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from typing import Any

from mongosim.spark.dump_ranges import SAMPLE_EVERY, DumpIndex, index_dump, plan_slices, read_index
from mongosim.spark.offsets import token_kind
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
        # the index beside each dump when it still holds; the others are walked by a Spark job
        known = {shard: read_index(shard, p, sample_every) for shard, p in files}
        walk = [item for item in files if known[item[0]] is None]
        if walk:
            walked = sc.parallelize(walk, len(walk)).map(lambda item: _index_task(item, sample_every)).collect()
            known.update((d["shard"], DumpIndex.from_json(d)) for d in walked)
        indexes = [known[shard] for shard, _p in files]
        total = sum(i.size for i in indexes)
        want = partitions or max(sc.defaultParallelism, math.ceil(total / RANGE_BYTES))
        self.slices = plan_slices(indexes, want)
        self.samples = {i.shard: [i.offsets, i.keys] for i in indexes}
        self.output_partitions = output_partitions or max(len(self.slices), 1)
        self._events = None
        self._persisted = False

    @property
    def ranges(self) -> list:
        """The time slices (each a list of its dumps' `DumpRange`s)."""
        return self.slices

    def _needs_facts(self) -> bool:
        """Whether the stream may have stream-wide points to find (see `dataframe`)."""
        return bool(self._token_filter() is not None or self.opts.level != "cluster" or self.opts.pipeline)

    def _token_filter(self) -> str | None:
        """The `startAfter` event token the stream starts after (None for a high-water mark or none)."""
        token = self.opts.start_after
        return token if token and token_kind(token) != "hwm" else None

    def _merge_columns(self) -> list[str]:
        """The merge columns `dataframe` reads (each crosses from Python into the JVM for every event):
        the operation type always; the sort key for a start token's filter or the stream-wide points;
        the shard order for a sort into other partitions; `_id` intact for the user's stages."""
        cols = ["__op"]
        if self._needs_facts():  # (a start token's filter among them)
            cols.append("__key")
        if self.output_partitions != len(self.slices):
            cols.append("__order")
        if self.opts.pipeline:
            cols.append("__intact")
        return cols

    def events(self, persist: bool = True):
        """The time slices' rows, one partition per slice, each in the merged order, the slices in
        order (with the merge columns); persisted (`persist`) when read more than once."""
        if self._events is None:
            plan = {"dumps": self.samples, "slices": [[r.to_json() for r in sl] for sl in self.slices]}
            reader = (self.spark.read.format(NAME).option("merge", "false").option("ranges", json.dumps(plan))
                      .option("mergeColumns", ",".join(self._merge_columns())))
            for k, v in self.options.items():
                reader = reader.option(k, v)
            self._events = reader.load()
        if persist and not self._persisted:
            from pyspark import StorageLevel

            self._events = self._events.persist(StorageLevel.MEMORY_AND_DISK)
            self._persisted = True
        return self._events

    def dataframe(self):
        """The merged stream: the router's drops as filters, then Spark's distributed sort by token."""
        from pyspark.sql import functions as F

        from mongosim.oplog.errors import MongoError
        from mongosim.shardsim.changestream.cursor import ID_MODIFIED_MSG

        reshuffle = self.output_partitions != len(self.slices)
        # read twice (the facts' aggregation, or the range partitioner's sample): persisted
        df = self.events(persist=reshuffle or self._needs_facts())
        key, op = F.col("__key"), F.col("__op")
        kept = op != "migrateChunkToNewShard"
        token = self._token_filter()
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
        internal = [n for n, _t in MERGE_COLUMNS if n != "__order"]
        kept = df.filter(kept).drop("shard", *internal)
        if not reshuffle:  # the slices are the ordered partitions: filters only, no shuffle
            return kept.drop("__order")
        # Another number of output partitions: Spark's distributed sort.  Every row kept has its `_id`
        # intact (else the job failed above), so its `token` is its sort key.
        return (kept.repartitionByRange(self.output_partitions, "token", "__order")
                .sortWithinPartitions("token", "__order").drop("__order"))

    def close(self) -> None:
        if self._events is not None and self._persisted:
            self._events.unpersist()
        self._events, self._persisted = None, False


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


# The event columns whose values are (nearly) all different: parquet's dictionary encoding, on by
# default, hashes and compares every such value until the dictionary outgrows its page and then
# writes them all again plainly -- most of the JVM's work in writing the job's output (measured).
UNIQUE_COLUMNS = ("token", "clusterTime.t", "clusterTime.i", "wallTime", "documentKey", "fullDocument",
                  "fullDocumentBeforeChange", "updateDescription", "lsid", "extra", "rawEvent")
# The columns that carry a document as JSON text (or the raw event): parquet's statistics of them
# (min/max per row group and page, compared byte by byte on every value, and size histograms) serve
# no filter -- JSON text is not ordered like the values it holds -- and cost the writer a string
# comparison per value.  The token and the times keep theirs: a reader skips row groups by them
# (e.g. `token > <a resume token>`).
PAYLOAD_COLUMNS = ("documentKey", "fullDocument", "fullDocumentBeforeChange", "updateDescription", "lsid", "extra",
                   "rawEvent")


def write_parquet(df: Any, out: Any, mode: str = "overwrite") -> None:
    """Write the merged stream (`MergeJob.dataframe()`, or the single-partition job's) as parquet, the
    columns of `UNIQUE_COLUMNS` without a dictionary (the others -- operationType, ns -- keep theirs),
    those of `PAYLOAD_COLUMNS` without statistics."""
    writer = df.write.mode(mode)
    for col in UNIQUE_COLUMNS:
        writer = writer.option(f"parquet.enable.dictionary#{col}", "false")
    for col in PAYLOAD_COLUMNS:
        writer = (writer.option(f"parquet.column.statistics.enabled#{col}", "false")
                  .option(f"parquet.size.statistics.enabled#{col}", "false"))
    writer.parquet(str(out))


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
        write_parquet(job.dataframe(), args.out)
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
