"""`mongodb-oplog`: replay oplog dumps in batch, producing the events the shards' change streams would.

Dumps
-----
A dump is one shard's oplog as concatenated BSON documents — what
`mongodump --db local --collection oplog.rs` writes (`oplog.rs.bson`), one
file per shard.  `dump_oplogs(cluster, directory)` writes such files for a
running `mongosim.Cluster`: `<shard>.bson` for every shard (never the config
server: the router's stream on `config.shards` only steers topology changes
and none of its events reach the client).

Replay
------
Nothing is re-implemented: a dump (or a range of it, `dump_ranges`) is loaded
into an in-memory `oplog.oplog.Oplog`, wrapped in `DumpNode` (the attributes of a `Node` the
change-stream stages read: `oplog`, `catalog`, `preimages`, `name`,
`instant_hwm`, `clock`, `tracer`), and the shard's own stage list is run on it
through `shardsim.changestream.aggregate.build_cursor` with `needs_merge=True`
— exactly the command the router sends each shard (oplog match -> unwind
transaction -> transform -> check invalidate -> check resumability -> ... ->
the user's stages).  The events come out as the same BSON bytes the shard
would send.

Merge (`merge=true`, the default) — the router's merge in one partition
-----------------------------------------------------------------------
The distributed job is `merge_job` (ranges read by their own partitions,
Spark's sort); this is the earlier single-partition form.  The shards' event
sequences are merged by token `_data` (a k-way merge with
`heapq.merge`; each shard's sequence is already in token order).  A dump is a
finished history, so every shard's cursor counts as exhausted and the
AsyncResultsMerger's gate (release an event only once every shard promised
nothing earlier) is always open: the k-way merge releases what the ARM would.
Then, as in `router/merge/cluster_change_stream.py`: the resume-token check
(`router.merge.ensure_resume_token_present.EnsureResumeTokenPresent`, the
router's own class) swallows the events up to a `startAfter` event token and
fails with ChangeStreamFatalError if the token is not there;
`migrateChunkToNewShard` events are swallowed (topology events); an event
whose `_id` the user's pipeline modified fails the stream; the stream ends
after an `invalidate`.  Collection drops on non-primary shards are
`fromMigrate` entries which the shards' oplog match already drops.

If the dumps were taken at different moments, the merged stream after the
earliest dump's last entry may lack the other shards' events (a live router
would wait for them): `endBeforeOperationTime` ("<secs>,<inc>") cuts the
stream before that time.

`merge=false` gives each shard's own event sequence (what the shard sends the
router, `migrateChunkToNewShard` included), one partition per dump, with a
`shard` column.  With `ranges` (the plan `merge_job` makes: the dumps' sparse
indexes and their ranges, as JSON) it is one partition per range instead; the
internal option `mergeColumns` adds the columns the distributed merge sorts
and filters on (`true`: `__key`, `__order`, `__op`, `__intact`; or a
comma-separated list of those the job needs, in that order).

Options: `path` (a directory of `*.bson` dumps, one file, or a comma-separated
list; the shard's name is the file's stem), `merge`, `endBeforeOperationTime`,
and the stream options of `mongosim.spark.options` (`database`, `collection`,
`pipeline`, `showExpandedEvents`, `startAtOperationTime`, `startAfter`,
`fullDocumentSchema`, `includeRawEvent`).  Without a start option the replay
starts at each dump's first entry.  A dump holds no documents and no
pre-images, so `fullDocument: updateLookup | whenAvailable | required` and
`fullDocumentBeforeChange` other than `off` are refused.
"""

from __future__ import annotations

import bisect
import heapq
import os
import struct
from itertools import islice
from pathlib import Path
from typing import Any, Iterable, Iterator

from mongosim.spark.dump_ranges import DumpRange
from mongosim.spark.offsets import parse_operation_time, token_cluster_time
from mongosim.spark.options import StreamOptions, parse_bool

NAME = "mongodb-oplog"
_LEN = struct.Struct("<i")


# -- dumps ----------------------------------------------------------------------------------------
def write_dump(raws: Iterable[bytes], path: str | os.PathLike) -> int:
    """Write raw BSON oplog entries as one concatenated-BSON file, its sparse index beside it
    (`dump_ranges.write_index`); return the number written."""
    from mongosim.oplog.layout import entry_head
    from mongosim.spark.dump_ranges import SAMPLE_EVERY, DumpIndex, write_index

    idx = DumpIndex("", str(path), 0, 0)
    pos = 0
    with open(path, "wb") as f:
        for raw in raws:
            if idx.count % SAMPLE_EVERY == 0:
                idx.offsets.append(pos)
                idx.keys.append(entry_head(raw)[0])
            f.write(raw)
            pos += len(raw)
            idx.count += 1
    write_index(idx, SAMPLE_EVERY)
    return idx.count


def iter_dump(path: str | os.PathLike) -> Iterator[bytes]:
    """The raw BSON documents of a concatenated-BSON file, in file order."""
    from mongosim.spark.dump_ranges import walk

    with open(path, "rb") as f:
        data = f.read()
    for pos, size in walk(data, str(path)):
        yield data[pos:pos + size]


def dump_oplogs(cluster: Any, directory: str | os.PathLike) -> dict[str, Path]:
    """Dump every shard's oplog of a running `mongosim.Cluster` to `<directory>/<shard>.bson`."""
    core = cluster.core
    assert core is not None, "cluster not started"

    def snapshot() -> dict[str, list[bytes]]:  # on the cluster's loop: a consistent copy
        out = {}
        for name, node in core.shards.items():
            oplog = node.oplog
            out[name] = list(oplog.columns(oplog.start)[3])
        return out

    snaps = cluster.call(snapshot)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, raws in snaps.items():
        paths[name] = directory / f"{name}.bson"
        write_dump(raws, paths[name])
    return paths


def dump_files(path: str | os.PathLike | Iterable) -> dict[str, Path]:
    """shard name -> dump file, from a directory, a file, or a comma-separated list of files."""
    if isinstance(path, (list, tuple)):
        items = [Path(p) for p in path]
    else:
        s = str(path)
        items = [Path(p.strip()) for p in s.split(",") if p.strip()] if "," in s else [Path(s)]
    files: list[Path] = []
    for p in items:
        if p.is_dir():
            files.extend(sorted(q for q in p.iterdir() if q.suffix == ".bson" and q.is_file()))
        elif p.is_file():
            files.append(p)
        else:
            raise FileNotFoundError(f"{NAME}: no such dump file or directory: {p}")
    if not files:
        raise FileNotFoundError(f"{NAME}: no *.bson dump in {path}")
    out: dict[str, Path] = {}
    for f in files:
        name = f.stem if f.stem != "oplog.rs" else f.parent.name
        if name in out:
            name = str(f)
        out[name] = f
    return out


# -- replaying one shard -------------------------------------------------------------------------
class DumpNode:
    """What the change-stream stages need of a `Node`, over an oplog loaded from a dump."""

    instant_hwm = False
    clock = None
    tracer = None

    def __init__(self, name: str, oplog: Any) -> None:
        from mongosim.shardsim.catalog import Catalog

        self.name = name
        self.oplog = oplog
        self.catalog = Catalog()  # empty: a dump has no documents
        self.preimages: dict = {}  # nor pre-images


def whole_dump(shard: str, path: str | os.PathLike, order: int = 0) -> DumpRange:
    """One range covering a whole dump (its first entry read for the start time)."""
    from mongosim.spark.dump_ranges import entry_meta, walk

    size = os.path.getsize(path)
    lo_key = 0
    with open(path, "rb") as f:
        head = f.read(min(size, 4))
        if len(head) == 4:
            (n,) = _LEN.unpack(head)
            data = head + f.read(max(n - 4, 0))
            for pos, sz in walk(data, str(path)):
                lo_key = entry_meta(data[pos:pos + sz])[0]
                break
    return DumpRange(shard, order, str(path), 0, size, lo_key, None, True)


def load_oplog(path: str | os.PathLike) -> Any:
    """An in-memory `oplog.oplog.Oplog` holding a dump's entries."""
    from mongosim.spark.dump_ranges import load_range

    return load_range(whole_dump("", path))


def _check_replayable(opts: StreamOptions) -> None:
    if opts.full_document not in (None, "default"):
        raise ValueError(f"{NAME}: fullDocument={opts.full_document} needs the documents or pre-images; "
                         "a dump has neither (use the default)")
    if opts.full_document_before_change not in (None, "off"):
        raise ValueError(f"{NAME}: fullDocumentBeforeChange={opts.full_document_before_change} needs pre-images; "
                         "a dump has none")


def shard_command(opts: StreamOptions, start_ts: Any, *, user_start: bool = True) -> tuple[str, dict]:
    """(db, aggregate command) of the shard part of the stream, as the router sends it.

    The stream starts at the user's start point (`user_start`), or else at `start_ts`."""
    from bson import Timestamp

    spec = opts.change_stream_spec()
    if user_start and opts.start_after:
        spec["startAfter"] = {"_data": opts.start_after}
    elif user_start and opts.start_at_operation_time is not None:
        spec["startAtOperationTime"] = opts.start_at_operation_time
    else:
        spec["startAtOperationTime"] = start_ts if start_ts is not None else Timestamp(0, 1)
    db = opts.database or "admin"
    target = opts.collection or 1
    cmd = {"aggregate": target, "pipeline": [{"$changeStream": spec}, *opts.pipeline], "cursor": {},
           "$_needsMerge": True}
    return db, cmd


def user_start_key(opts: StreamOptions) -> int | None:
    """The ts key the user's start option names (a token's clusterTime), or None."""
    from mongosim.oplog.clock import ts_key

    if opts.start_after:
        return ts_key(token_cluster_time(opts.start_after))
    if opts.start_at_operation_time is not None:
        return ts_key(opts.start_at_operation_time)
    return None


def range_events(rng: DumpRange, opts: StreamOptions) -> Iterator[tuple[str, bytes, str, bool]]:
    """The shard's events from the entries of one range: (token _data, event BSON, operationType, _id intact).

    The shard's stages run from the range's start: the range that holds the user's start point (or the
    dump's first range) opens the stream as the user asked; a later range opens it at its first entry
    (`startAtOperationTime`), which lets through exactly the events of its entries; a range wholly
    before the start point has none.  No stage keeps state across entries except the unwind (the
    transaction chains `dump_ranges.load_range` carries in), the resume checks (only where the start
    point is) and check-invalidate, whose end of the stream the merge applies across ranges."""
    from mongosim.oplog.clock import key_ts
    from mongosim.shardsim.changestream.aggregate import build_cursor
    from mongosim.spark.dump_ranges import load_range

    _check_replayable(opts)
    start = user_start_key(opts)
    if start is not None and rng.hi_key is not None and start >= rng.hi_key:
        return
    own_start = start is not None and (rng.first or start >= rng.lo_key)
    oplog = load_range(rng)
    node = DumpNode(rng.shard, oplog)
    db, cmd = shard_command(opts, key_ts(rng.lo_key) if rng.lo_key else None, user_start=own_start)
    cur = build_cursor(node, db, cmd, needs_merge=True)
    while True:
        batch = cur.run_batch(1000)
        if not batch:
            return
        for tok, raw, intact, op_type in batch:
            yield tok["_data"], raw if isinstance(raw, (bytes, bytearray)) else raw.raw, op_type, intact


def shard_events(name: str, path: str | os.PathLike, opts: StreamOptions) -> Iterator[tuple[str, bytes, str, bool]]:
    """Run the shard's change-stream stages over its whole dump (see `range_events`)."""
    return range_events(whole_dump(name, path), opts)


# -- merging the shards, like the router ---------------------------------------------------------
def merge_events(streams: dict[str, Iterator[tuple[str, bytes, str, bool]]], opts: StreamOptions,
                 end_before: Any = None) -> Iterator[bytes]:
    """The router's merge of the shards' event sequences (see the module doc)."""
    from mongosim.oplog.errors import MongoError
    from mongosim.router.merge.ensure_resume_token_present import EnsureResumeTokenPresent
    from mongosim.shardsim.changestream.cursor import ID_MODIFIED_MSG

    ensure = None
    if opts.start_after and not _is_hwm(opts.start_after):
        ensure = EnsureResumeTokenPresent({"_data": opts.start_after})
    end_key = _end_key(end_before)
    merged = heapq.merge(*[((k, i, raw, op, ok) for k, raw, op, ok in it) for i, it in enumerate(streams.values())])
    for key, _i, raw, op_type, intact in merged:
        if end_key is not None and key >= end_key:
            return
        keep = ensure is None or ensure.passes(key, {"_data": key})
        if op_type == "migrateChunkToNewShard":
            continue
        if not keep:
            continue
        if not intact:
            raise MongoError("ChangeStreamFatalError", ID_MODIFIED_MSG)
        yield raw
        if op_type == "invalidate":
            return


def _is_hwm(data: str) -> bool:
    from mongosim.oplog.resume_token import decode_resume_token

    return decode_resume_token({"_data": data}).token_type == 0


def replay_dumps(files: dict[str, Path], opts: StreamOptions, *, merge: bool = True,
                 end_before: Any = None) -> Iterator[tuple[str | None, bytes]]:
    """(shard or None, event BSON) for the dumps: merged like the router, or shard after shard."""
    if merge:
        streams = {name: shard_events(name, path, opts) for name, path in files.items()}
        for raw in merge_events(streams, opts, end_before):
            yield None, raw
    else:
        end_key = _end_key(end_before)
        for name, path in files.items():
            for key, raw, _op, _ok in shard_events(name, path, opts):
                if end_key is not None and key >= end_key:
                    break
                yield name, raw


def _end_key(end_before: Any) -> str | None:
    """`endBeforeOperationTime` as a sort key: every token at or after that time sorts at or after it."""
    return None if end_before is None else f"82{end_before.time:08X}{end_before.inc:08X}"


# -- the Spark data source -------------------------------------------------------------------------
try:
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
except ImportError:  # pragma: no cover - the dump/replay functions work without Spark
    DataSource = DataSourceReader = object  # type: ignore[misc,assignment]

    class InputPartition:  # type: ignore[no-redef]
        def __init__(self, value: Any) -> None:
            self.value = value


def with_samples(plan: dict | list) -> list:
    """The partitions of a plan (`{"dumps": {shard: [offsets, keys]}, "ranges": [...]}` or with
    `"slices": [[...], ...]`, a list of ranges per time slice): each range given its dump's sparse
    index up to its start (to fetch the transaction entries it carries in)."""
    if isinstance(plan, list):
        return plan
    import bisect

    def given(r: dict) -> dict:
        offsets, keys = plan["dumps"].get(r["shard"], ([], []))
        j = bisect.bisect_left(offsets, r["lo"])
        return {**r, "samples": [offsets[:j], keys[:j]]}

    if "slices" in plan:
        return [[given(r) for r in sl] for sl in plan["slices"]]
    return [given(r) for r in plan["ranges"]]


MERGE_COLUMNS = (("__key", "STRING"), ("__order", "INT"), ("__op", "STRING"), ("__intact", "BOOLEAN"))


def merge_column_names(value: Any) -> tuple[str, ...]:
    """The merge columns the option `mergeColumns` asks for: all of them (`true`), none (absent or
    `false`), or the comma-separated names given (kept in MERGE_COLUMNS's order)."""
    if value is None or str(value).strip().lower() in ("", "true", "false"):
        return tuple(n for n, _t in MERGE_COLUMNS) if parse_bool("mergeColumns", value) else ()
    asked = {v.strip() for v in str(value).split(",")}
    known = {n for n, _t in MERGE_COLUMNS}
    if not asked <= known:
        raise ValueError(f"{NAME}: mergeColumns: unknown columns {sorted(asked - known)}")
    return tuple(n for n, _t in MERGE_COLUMNS if n in asked)


class DumpPartition(InputPartition):
    """The merged replay of whole dumps, in one partition."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    def __repr__(self) -> str:
        return f"DumpPartition({sorted(self.files)})"


class RangePartition(InputPartition):
    """One range of one dump (`dump_ranges.DumpRange` as JSON), replayed on its own."""

    def __init__(self, rng: dict) -> None:
        self.rng = rng

    def __repr__(self) -> str:
        r = self.rng
        return f"RangePartition({r['shard']} bytes {r['lo']}..{r['hi']})"


class SlicePartition(InputPartition):
    """One time slice: a range of each dump (`dump_ranges.plan_slices`), merged by token."""

    def __init__(self, ranges: list[dict]) -> None:
        self.ranges = ranges

    def __repr__(self) -> str:
        return "SlicePartition(" + ", ".join(f"{r['shard']} bytes {r['lo']}..{r['hi']}" for r in self.ranges) + ")"


def slice_events(ranges: list[DumpRange], opts: StreamOptions) -> Iterator[tuple[str, int, bytes, str, bool]]:
    """(token _data, shard order, event BSON, operationType, _id intact) of one time slice: its
    ranges' events merged by (token, shard order) — `heapq.merge` keeps each range's own order."""
    return heapq.merge(*[_ordered(r, opts) for r in ranges], key=lambda e: (e[0], e[1]))


def _ordered(rng: DumpRange, opts: StreamOptions) -> Iterator[tuple[str, int, bytes, str, bool]]:
    for k, raw, op, ok in range_events(rng, opts):
        yield k, rng.order, raw, op, ok


class MongoOplogDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def _opt(self, name: str) -> Any:
        return {k.lower(): v for k, v in self.options.items()}.get(name.lower())

    def _merge(self) -> bool:
        return parse_bool("merge", self._opt("merge"), self._opt("ranges") is None)

    def schema(self) -> str:
        from mongosim.spark.schema import schema_ddl

        o = StreamOptions.parse(self.options)
        ddl = schema_ddl(full_document_schema=o.full_document_schema, include_raw=o.include_raw,
                         shard_column=not self._merge())
        names = merge_column_names(self._opt("mergeColumns"))
        ddl += "".join(f", `{n}` {t}" for n, t in MERGE_COLUMNS if n in names)
        return ddl

    def reader(self, schema: Any) -> "MongoOplogReader":
        return MongoOplogReader(dict(self.options), schema, self._merge())


class MongoOplogReader(DataSourceReader):
    """Partitions: the merged replay in one (`merge=true`), or one per dump, or one per planned range
    (`ranges`: the JSON list `merge_job` plans; with `mergeColumns`, each row also carries the
    columns the distributed merge sorts and filters on: sort key, shard order, operation type as the
    shard stage saw it, and whether the user's stages left `_id` intact)."""

    def __init__(self, options: dict, schema: Any, merge: bool) -> None:
        import json

        from mongosim.spark.schema import RowBuilder

        options = {k.lower(): v for k, v in options.items()}
        self.opts = StreamOptions.parse(options)
        _check_replayable(self.opts)
        self.merge = merge
        self.merge_columns = merge_column_names(options.get("mergecolumns"))
        ranges = options.get("ranges")
        if ranges is not None:
            if merge:
                raise ValueError(f"{NAME}: the option ranges reads each range on its own: give merge=false")
            self.ranges = json.loads(ranges)
            self.files = {}
        else:
            path = options.get("path") or options.get("paths")
            if not path:
                raise ValueError(f"{NAME}: give the dumps' path (load(path) or option path)")
            if str(path).startswith("["):  # load([...]) passes a JSON list
                path = json.loads(path)
            self.files = {k: str(v) for k, v in dump_files(path).items()}
            self.ranges = None
        end = options.get("endbeforeoperationtime")
        self.end_before = parse_operation_time(end) if end else None
        self.rows = RowBuilder.for_schema(schema)

    def partitions(self):
        if self.merge:
            return [DumpPartition(self.files)]
        if self.ranges is not None:
            return [SlicePartition(p) if isinstance(p, list) else RangePartition(p) for p in with_samples(self.ranges)]
        return [RangePartition(whole_dump(k, v, i).to_json()) for i, (k, v) in enumerate(sorted(self.files.items()))]

    def read(self, partition: DumpPartition | RangePartition) -> Iterator[Any]:
        if isinstance(partition, DumpPartition):
            files = {k: Path(v) for k, v in partition.files.items()}
            replay = replay_dumps(files, self.opts, merge=True, end_before=self.end_before)
            if self.rows.arrow_schema is None:
                yield from (self.rows.row(raw, shard) for shard, raw in replay)
            else:
                yield from self.rows.event_batches(_chunked((raw for _shard, raw in replay), BATCH_ROWS))
        elif isinstance(partition, SlicePartition):
            ranges = [DumpRange.from_json(r) for r in partition.ranges]
            shards = {r.order: r.shard for r in ranges}
            yield from self._batches(slice_events(ranges, self.opts), shards)
        else:
            rng = DumpRange.from_json(partition.rng)
            yield from self._batches(_ordered(rng, self.opts), {rng.order: rng.shard})

    def _batches(self, events: Iterator[tuple[str, int, bytes, str, bool]], shards: dict[int, str]) -> Iterator[Any]:
        """The events (in sort-key order) as record batches of BATCH_ROWS rows, built column by column,
        the merge columns asked for after the schema's own (row tuples without an Arrow schema);
        nothing from `endBeforeOperationTime` on."""
        rows, end_key, names = self.rows, _end_key(self.end_before), self.merge_columns
        if rows.arrow_schema is None:
            for key, order, raw, op, intact in events:
                if end_key is not None and key >= end_key:
                    return
                extra = {"__key": key, "__order": order, "__op": op, "__intact": intact}
                yield rows.row(raw, shards[order]) + tuple(extra[n] for n in names)
            return
        for chunk in _chunked(events, BATCH_ROWS):
            keys, orders, raws, ops, intacts = map(list, zip(*chunk))
            cut = len(keys) if end_key is None or keys[-1] < end_key else bisect.bisect_left(keys, end_key)
            if cut < len(keys):
                keys, orders, raws, ops, intacts = keys[:cut], orders[:cut], raws[:cut], ops[:cut], intacts[:cut]
            if keys:
                columns = {"__key": keys, "__order": orders, "__op": ops, "__intact": intacts}
                yield rows.record_batch_of(raws, list(map(shards.__getitem__, orders)),
                                           tuple(columns[n] for n in names))
            if cut < len(chunk):
                return


BATCH_ROWS = 2048  # rows per record batch a partition yields


def _chunked(items: Iterable, size: int) -> Iterator[list]:
    """`items` as lists of `size` (the last one shorter)."""
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk
