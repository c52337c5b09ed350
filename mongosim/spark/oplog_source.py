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
Nothing is re-implemented: a dump is loaded into an in-memory
`oplog.oplog.Oplog`, wrapped in `DumpNode` (the attributes of a `Node` the
change-stream stages read: `oplog`, `catalog`, `preimages`, `name`,
`instant_hwm`, `clock`, `tracer`), and the shard's own stage list is run on it
through `shardsim.changestream.aggregate.build_cursor` with `needs_merge=True`
— exactly the command the router sends each shard (oplog match -> unwind
transaction -> transform -> check invalidate -> check resumability -> ... ->
the user's stages).  The events come out as the same BSON bytes the shard
would send.

Merge (`merge=true`, the default) — the batch counterpart of the router
-----------------------------------------------------------------------
The shards' event sequences are merged by token `_data` (a k-way merge with
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
`shard` column.

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

import heapq
import os
import struct
from pathlib import Path
from typing import Any, Iterable, Iterator

from mongosim.spark.offsets import parse_operation_time
from mongosim.spark.options import StreamOptions, parse_bool

NAME = "mongodb-oplog"
_LEN = struct.Struct("<i")


# -- dumps ----------------------------------------------------------------------------------------
def write_dump(raws: Iterable[bytes], path: str | os.PathLike) -> int:
    """Write raw BSON entries as one concatenated-BSON file; return the number written."""
    n = 0
    with open(path, "wb") as f:
        for raw in raws:
            f.write(raw)
            n += 1
    return n


def iter_dump(path: str | os.PathLike) -> Iterator[bytes]:
    """The raw BSON documents of a concatenated-BSON file, in file order."""
    with open(path, "rb") as f:
        data = f.read()
    pos, end = 0, len(data)
    while pos < end:
        if end - pos < 5:
            raise ValueError(f"{path}: truncated BSON at byte {pos}")
        (size,) = _LEN.unpack_from(data, pos)
        if size < 5 or pos + size > end or data[pos + size - 1] != 0:
            raise ValueError(f"{path}: corrupt BSON document at byte {pos}")
        yield data[pos:pos + size]
        pos += size


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


def load_oplog(path: str | os.PathLike) -> Any:
    """An in-memory `oplog.oplog.Oplog` holding a dump's entries."""
    from mongosim.oplog import bsonutil
    from mongosim.oplog.clock import ts_key
    from mongosim.oplog.oplog import Oplog

    oplog = Oplog()
    for raw in iter_dump(path):
        e = bsonutil.decode(raw)
        oplog.append_raw(raw, ts_key(e["ts"]), e.get("op", ""), e.get("ns", ""))
    return oplog


def _check_replayable(opts: StreamOptions) -> None:
    if opts.full_document not in (None, "default"):
        raise ValueError(f"{NAME}: fullDocument={opts.full_document} needs the documents or pre-images; "
                         "a dump has neither (use the default)")
    if opts.full_document_before_change not in (None, "off"):
        raise ValueError(f"{NAME}: fullDocumentBeforeChange={opts.full_document_before_change} needs pre-images; "
                         "a dump has none")


def shard_command(opts: StreamOptions, start_ts: Any) -> tuple[str, dict]:
    """(db, aggregate command) of the shard part of the stream, as the router sends it."""
    from bson import Timestamp

    spec = opts.change_stream_spec()
    if opts.start_after:
        spec["startAfter"] = {"_data": opts.start_after}
    elif opts.start_at_operation_time is not None:
        spec["startAtOperationTime"] = opts.start_at_operation_time
    else:
        spec["startAtOperationTime"] = start_ts if start_ts is not None else Timestamp(0, 1)
    db = opts.database or "admin"
    target = opts.collection or 1
    cmd = {"aggregate": target, "pipeline": [{"$changeStream": spec}, *opts.pipeline], "cursor": {},
           "$_needsMerge": True}
    return db, cmd


def shard_events(name: str, oplog: Any, opts: StreamOptions) -> Iterator[tuple[str, bytes, str, bool]]:
    """Run the shard's change-stream stages over `oplog`: (token _data, event BSON, operationType, _id intact)."""
    from mongosim.oplog.clock import key_ts
    from mongosim.shardsim.changestream.aggregate import build_cursor

    _check_replayable(opts)
    node = DumpNode(name, oplog)
    db, cmd = shard_command(opts, key_ts(oplog.first_key) if len(oplog) else None)
    cur = build_cursor(node, db, cmd, needs_merge=True)
    while True:
        batch = cur.run_batch(1000)
        if not batch:
            return
        for tok, raw, intact, op_type in batch:
            yield tok["_data"], raw if isinstance(raw, (bytes, bytearray)) else raw.raw, op_type, intact


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
    end_key = None
    if end_before is not None:
        end_key = f"82{end_before.time:08X}{end_before.inc:08X}"
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
        streams = {name: shard_events(name, load_oplog(path), opts) for name, path in files.items()}
        for raw in merge_events(streams, opts, end_before):
            yield None, raw
    else:
        for name, path in files.items():
            for key, raw, _op, _ok in shard_events(name, load_oplog(path), opts):
                if end_before is not None and key >= f"82{end_before.time:08X}{end_before.inc:08X}":
                    break
                yield name, raw


# -- the Spark data source -------------------------------------------------------------------------
try:
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
except ImportError:  # pragma: no cover - the dump/replay functions work without Spark
    DataSource = DataSourceReader = object  # type: ignore[misc,assignment]

    class InputPartition:  # type: ignore[no-redef]
        def __init__(self, value: Any) -> None:
            self.value = value


class DumpPartition(InputPartition):
    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    def __repr__(self) -> str:
        return f"DumpPartition({sorted(self.files)})"


class MongoOplogDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def _merge(self) -> bool:
        return parse_bool("merge", {k.lower(): v for k, v in self.options.items()}.get("merge"), True)

    def schema(self) -> str:
        from mongosim.spark.schema import schema_ddl

        o = StreamOptions.parse(self.options)
        return schema_ddl(full_document_schema=o.full_document_schema, include_raw=o.include_raw,
                          shard_column=not self._merge())

    def reader(self, schema: Any) -> "MongoOplogReader":
        return MongoOplogReader(dict(self.options), schema, self._merge())


class MongoOplogReader(DataSourceReader):
    def __init__(self, options: dict, schema: Any, merge: bool) -> None:
        from mongosim.spark.schema import RowBuilder

        options = {k.lower(): v for k, v in options.items()}
        self.opts = StreamOptions.parse(options)
        _check_replayable(self.opts)
        path = options.get("path") or options.get("paths")
        if not path:
            raise ValueError(f"{NAME}: give the dumps' path (load(path) or option path)")
        if str(path).startswith("["):  # load([...]) passes a JSON list
            import json

            path = json.loads(path)
        self.files = {k: str(v) for k, v in dump_files(path).items()}
        self.merge = merge
        end = options.get("endbeforeoperationtime")
        self.end_before = parse_operation_time(end) if end else None
        self.rows = RowBuilder.for_schema(schema)

    def partitions(self):
        if self.merge:
            return [DumpPartition(self.files)]
        return [DumpPartition({k: v}) for k, v in self.files.items()]

    def read(self, partition: DumpPartition) -> Iterator[tuple]:
        rows = self.rows
        files = {k: Path(v) for k, v in partition.files.items()}
        for shard, raw in replay_dumps(files, self.opts, merge=self.merge, end_before=self.end_before):
            yield rows.row(raw, shard)
