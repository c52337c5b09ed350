"""Durability for `--data-dir DIR`: snapshots of every node plus a journal of oplog entries.

Files in DIR:

- `snapshot.bin`: the state of every node (its catalog: collections, options,
  indexes, shard keys, UUIDs and documents in natural order; its oplog's raw
  entries and base position; its clock; its pre-images) and the number of the
  first journal to replay.  Written to `snapshot.bin.tmp`, fsync'ed, renamed
  over the old one (`os.replace`) and the directory fsync'ed: a crash leaves
  either the old or the new snapshot, never a torn one.
- `journal.<N>.bin`: every oplog entry (and pre-image) appended since the
  snapshot, in append order.
- `mongosim.lock`: an exclusive lock (flock), so two servers never share DIR.
- `users.bin`: the users and roles createUser / createRole made (one record, written
  whole, as the snapshot is, at every change: mongosim/durability.py).

Records (in both files) are `uint32 length, uint32 CRC-32C, payload`.  On
start the snapshot is loaded and the journals replayed: each oplog entry is
appended to its node's oplog byte for byte and applied to the catalog (insert,
update -- `$v: 2` diff or replacement --, delete, noop).  Replay stops at the
first torn or corrupt record (a crash mid-append) -- or at the first entry that
only a snapshot can carry (a DDL command, a transaction's applyOps, a sharding
noop), which is never acknowledged before its snapshot is written.  Then a
fresh snapshot is written and the old journals are deleted.

Acknowledgement (see `DurableService`): before any reply leaves the server,
every journal record appended so far is written and fsync'ed (group commit:
one fsync covers every command waiting at that moment), and a command that
changed state the journal cannot replay (DDL, sharding metadata, transactions)
is followed by a snapshot.  So every acknowledged write, and every event a
change stream has returned (its resume token), survives a crash.  Writes made
in-process without going through the wire (the testing `AsyncClient`) are
flushed by a background task every `flush_interval` seconds.

Not persisted: cursors (clients resume: CursorNotFound is resumable), open
transactions (aborted by a restart), the retryable-write session table,
failpoints and fault injection.
"""

from __future__ import annotations

import dataclasses
import fcntl
import logging
import os
import struct
from array import array
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import crc32c
import trio
from bson import Binary, Int64

from mongosim.oplog import bsonutil
from mongosim.oplog.clock import ts_key
from mongosim.oplog.oplog import Oplog
from mongosim.shardsim.catalog import Catalog, Collection
from mongosim.shardsim.collection_options import refresh
from mongosim.shardsim.query.values import hashable

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

log = logging.getLogger("mongosim.persistence")

FORMAT = 1
SNAPSHOT = "snapshot.bin"
_REC = struct.Struct("<II")
_CHUNK_BYTES = 4 * 1024 * 1024
_KIND_OPLOG = 0x6F  # 'o'
_KIND_PREIMAGE = 0x70  # 'p'


class PersistenceError(Exception):
    """The data directory cannot be used (locked, corrupt snapshot, newer format)."""


# -- record framing ---------------------------------------------------------------------
def frame(payload: bytes) -> bytes:
    return _REC.pack(len(payload), crc32c.crc32c(payload)) + payload


def read_frames(data: bytes | memoryview) -> tuple[list[memoryview], int]:
    """The intact records at the start of `data`, and the offset where they end."""
    buf = memoryview(data)
    out: list[memoryview] = []
    pos = 0
    while pos + _REC.size <= len(buf):
        size, crc = _REC.unpack_from(buf, pos)
        end = pos + _REC.size + size
        if end > len(buf):
            break
        payload = buf[pos + _REC.size:end]
        if crc32c.crc32c(payload) != crc:
            break
        out.append(payload)
        pos = end
    return out, pos


# -- journaling hooks on a node -----------------------------------------------------------
class JournaledOplog(Oplog):
    """An Oplog that reports every appended entry to a sink (the store)."""

    __slots__ = ("_sink",)

    def __init__(self, max_bytes: int | None = None, sink: Any = None) -> None:
        super().__init__(max_bytes)
        self._sink = sink

    def append_raw(self, raw: bytes, key: int, op: str, ns: str, **kw: Any) -> None:
        super().append_raw(raw, key, op, ns, **kw)
        if self._sink is not None:
            self._sink(raw, op)


class JournaledPreimages(dict):
    """The node's pre-image store; every new pre-image is reported to a sink."""

    def __init__(self, items: Any = (), sink: Any = None) -> None:
        super().__init__(items)
        self.sink = sink

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        if self.sink is not None:
            self.sink(key, value)


def _pre_key_doc(key: tuple, value: dict) -> dict:
    uuid_bytes, ts, idx = key
    return {"u": Binary(bytes(uuid_bytes), 0), "t": Int64(ts), "i": int(idx), "d": value}


def _pre_key_of(doc: dict) -> tuple:
    return bytes(doc["u"]), int(doc["t"]), int(doc["i"])


# -- snapshots ------------------------------------------------------------------------------
_COLL_SKIP = {"db", "name", "uuid", "options", "indexes", "docs", "shard_key", "_unique",
              "history", "versions",  # (open transactions' snapshots do not survive a restart)
              "access", "_maintained", "_validated", "rids", "_next_rid", "_checked"}  # (indexes are rebuilt from the documents)


def _collection_record(node_name: str, coll: Collection) -> dict:
    rec = {"k": "coll", "node": node_name, "db": coll.db, "name": coll.name, "uuid": coll.uuid,
           "options": coll.options, "indexes": coll.indexes, "shard_key": coll.shard_key}
    extra = {}
    for f in dataclasses.fields(coll):  # fields other engineers may add later
        if f.name not in _COLL_SKIP:
            extra[f.name] = getattr(coll, f.name)
    if extra:
        rec["attrs"] = extra
    return rec


def _chunks(items: list, size_of: Any) -> Iterator[list]:
    chunk: list = []
    size = 0
    for it in items:
        chunk.append(it)
        size += size_of(it)
        if size >= _CHUNK_BYTES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def snapshot_payloads(nodes: list["Node"], next_gen: int) -> Iterator[bytes]:
    """The snapshot's records (unframed BSON payloads), node by node."""
    yield bsonutil.encode({"k": "header", "format": FORMAT, "gen": next_gen, "nodes": [n.name for n in nodes]})
    count = 1
    for node in nodes:
        op = node.oplog
        yield bsonutil.encode({"k": "node", "name": node.name, "is_config": node.is_config,
                               "clock": Int64(node.clock.key), "oplog_base": Int64(op.start)})
        count += 1
        for coll in node.catalog.all_collections():
            yield bsonutil.encode(_collection_record(node.name, coll))
            count += 1
            docs = list(coll.docs.values())
            for chunk in _chunks(docs, lambda d: 64):
                yield bsonutil.encode({"k": "docs", "node": node.name, "db": coll.db, "name": coll.name,
                                       "docs": chunk})
                count += 1
        raws = op._raw
        keys, ops, nss = op._keys, op._ops, op._nss
        idx = list(range(len(raws)))
        for chunk in _chunks(idx, lambda i: len(raws[i])):
            a, b = chunk[0], chunk[-1] + 1
            yield bsonutil.encode({"k": "oplog", "node": node.name, "keys": Binary(keys[a:b].tobytes(), 0),
                                   "ops": ops[a:b], "nss": nss[a:b], "raw": [Binary(r, 0) for r in raws[a:b]]})
            count += 1
        pre = [_pre_key_doc(k, v) for k, v in node.preimages.items()]
        for chunk in _chunks(pre, lambda d: 256):
            yield bsonutil.encode({"k": "pre", "node": node.name, "items": chunk})
            count += 1
    yield bsonutil.encode({"k": "end", "count": count + 1})


@dataclasses.dataclass
class NodeState:
    name: str
    is_config: bool
    clock: int
    oplog_base: int
    collections: list[dict] = dataclasses.field(default_factory=list)  # coll records, docs attached
    oplog: list[tuple[bytes, bytes, list, list]] = dataclasses.field(default_factory=list)
    preimages: list[dict] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Snapshot:
    gen: int
    nodes: dict[str, NodeState]
    order: list[str]


def parse_snapshot(data: bytes) -> Snapshot:
    payloads, end = read_frames(data)
    if end != len(data) or not payloads:
        raise PersistenceError("snapshot is torn or corrupt")
    recs = [bsonutil.decode(p) for p in payloads]
    head, last = recs[0], recs[-1]
    if head.get("k") != "header" or last.get("k") != "end" or last.get("count") != len(recs):
        raise PersistenceError("snapshot is incomplete")
    if head.get("format") != FORMAT:
        raise PersistenceError(f"snapshot format {head.get('format')} is not supported (expected {FORMAT})")
    nodes: dict[str, NodeState] = {}
    colls: dict[tuple[str, str, str], dict] = {}
    for r in recs[1:-1]:
        k = r["k"]
        if k == "node":
            nodes[r["name"]] = NodeState(r["name"], r["is_config"], int(r["clock"]), int(r["oplog_base"]))
        elif k == "coll":
            r["docs"] = []
            nodes[r["node"]].collections.append(r)
            colls[(r["node"], r["db"], r["name"])] = r
        elif k == "docs":
            colls[(r["node"], r["db"], r["name"])]["docs"].extend(r["docs"])
        elif k == "oplog":
            nodes[r["node"]].oplog.append((bytes(r["keys"]), r["ops"], r["nss"], [bytes(x) for x in r["raw"]]))
        elif k == "pre":
            nodes[r["node"]].preimages.extend(r["items"])
    return Snapshot(int(head["gen"]), nodes, list(head["nodes"]))


def restore_node(node: "Node", state: NodeState, sink_oplog: Any, sink_pre: Any) -> None:
    """Replace a freshly built node's state by the saved one."""
    catalog = Catalog()
    for r in state.collections:
        indexes = list(r["indexes"])
        id_index = [s for s in indexes if s.get("name") == "_id_"]
        coll = Collection(r["db"], r["name"], uuid=r["uuid"], options=r["options"], indexes=id_index or [],
                          shard_key=r.get("shard_key"))
        for attr, value in (r.get("attrs") or {}).items():
            if hasattr(coll, attr):
                setattr(coll, attr, value)
        for doc in r["docs"]:
            coll.docs[hashable(doc["_id"])] = doc
        for spec in indexes:
            if spec.get("name") != "_id_":
                coll.add_index(spec)
        catalog.add_collection(refresh(coll))
    node.catalog = catalog
    oplog = JournaledOplog(node.oplog.max_bytes)
    oplog._base = state.oplog_base
    for keys_bytes, ops, nss, raws in state.oplog:
        keys = array("Q")
        keys.frombytes(keys_bytes)
        for key, op, ns, raw in zip(keys, ops, nss, raws):
            oplog.append_raw(raw, key, op, ns)
    oplog._sink = sink_oplog
    node.oplog = oplog
    node.clock.advance(max(state.clock, oplog.last_key))
    node.preimages = JournaledPreimages(((_pre_key_of(d), d["d"]) for d in state.preimages), sink_pre)


def attach(node: "Node", sink_oplog: Any, sink_pre: Any) -> None:
    """Journal a fresh node from now on (its current state goes into the next snapshot)."""
    old = node.oplog
    if not isinstance(old, JournaledOplog):
        new = JournaledOplog(old.max_bytes)
        new._base = old.start
        for pos in range(old.start, old.end):
            key, op, ns = old.meta_at(pos)
            new.append_raw(old.raw_at(pos), key, op, ns)
        node.oplog = new
    node.oplog._sink = sink_oplog
    node.preimages = JournaledPreimages(node.preimages, sink_pre)


# -- replaying the journal ------------------------------------------------------------------
class NotReplayable(Exception):
    """An entry whose effects only a snapshot carries: replay stops before it."""


def apply_entry(node: "Node", entry: dict) -> None:
    """Apply one oplog entry's effect on the catalog (the entry itself is appended by the caller)."""
    op = entry["op"]
    if op == "n":
        if entry.get("o2"):
            raise NotReplayable("sharding noop")
        return
    if op not in ("i", "u", "d"):
        raise NotReplayable(f"command {next(iter(entry.get('o') or {'?': 0}))}")
    db, _, name = entry["ns"].partition(".")
    coll = node.catalog.collection(db, name)
    if coll is None or ("ui" in entry and coll.uuid != entry["ui"]):
        raise NotReplayable(f"{entry['ns']} is not in the snapshot")
    o = entry["o"]
    if op == "i":
        existing = coll.get(o["_id"])
        if existing is not None:  # (never logged that way; replay stays idempotent all the same)
            coll.delete(existing)
        coll.insert(o)
    elif op == "d":
        doc = coll.get(o["_id"])
        if doc is not None:
            coll.delete(doc)
    else:
        doc = coll.get(entry["o2"]["_id"])
        if doc is None:
            raise NotReplayable(f"update of a missing document in {entry['ns']}")
        if "$v" in o and "diff" in o:
            from mongosim.shardsim.query.diff import apply_diff

            new = apply_diff(doc, o["diff"])
        else:
            new = o
        coll.replace(doc, new)


def journal_files(directory: Path) -> list[tuple[int, Path]]:
    out = []
    for p in directory.glob("journal.*.bin"):
        try:
            out.append((int(p.name.split(".")[1]), p))
        except ValueError:
            continue
    return sorted(out)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Store:
    """One data directory: load at start, journal while running, snapshot now and then."""

    def __init__(self, directory: str | os.PathLike, *, flush_interval: float = 0.05,
                 snapshot_interval: float = 60.0, snapshot_journal_bytes: int = 64 * 1024 * 1024,
                 fsync: bool = True) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.flush_interval = flush_interval
        self.snapshot_interval = snapshot_interval
        self.snapshot_journal_bytes = snapshot_journal_bytes
        self.fsync = fsync
        self._lock_fd = os.open(self.dir / "mongosim.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._lock_fd)
            raise PersistenceError(f"{self.dir} is in use by another mongosim") from None
        self.nodes: list["Node"] = []
        self._index: dict[str, int] = {}
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._needs_snapshot = False
        self._appended = 0  # records appended (sequence number of the last one)
        self._durable = 0  # records known to be on disk
        self._journal_bytes = 0
        self._flushing = False
        self._flushed = trio.Event()
        self.gen = 0
        self._journal_fd: int | None = None
        self.restored: Snapshot | None = None
        self.replayed = 0
        self.stopped_at: str | None = None
        self.closed = False
        self.started = False
        self.snapshots_written = 0
        self._retired: list[int] = []
        self._load()

    # -- loading ----------------------------------------------------------------------------
    def _load(self) -> None:
        path = self.dir / SNAPSHOT
        if path.exists():
            self.restored = parse_snapshot(path.read_bytes())
            self.gen = self.restored.gen
        for stale in self.dir.glob("*.tmp"):
            stale.unlink()

    @property
    def node_names(self) -> list[str] | None:
        """The nodes to build (in their original order), or None for a fresh directory."""
        return list(self.restored.order) if self.restored else None

    def adopt(self, node: "Node") -> None:
        """Called for every node as it is built: restore its saved state, then journal it."""
        idx = len(self.nodes)
        self.nodes.append(node)
        self._index[node.name] = idx

        def on_oplog(raw: bytes, op: str, _i: int = idx) -> None:
            self._record(bytes((_i, _KIND_OPLOG)) + raw)
            if op == "c" or op == "n" and b"o2\x00" in raw:
                self._needs_snapshot = True

        def on_pre(key: tuple, value: dict, _i: int = idx) -> None:
            self._record(bytes((_i, _KIND_PREIMAGE)) + bsonutil.encode(_pre_key_doc(key, value)))

        state = self.restored.nodes.get(node.name) if self.restored and not self.started else None
        if state is not None:
            restore_node(node, state, on_oplog, on_pre)
        else:
            attach(node, on_oplog, on_pre)
        if self.started:  # a shard added while running: the journal may name it only after a snapshot has
            self.write_snapshot()

    def replay(self) -> int:
        """Replay the journals written after the snapshot; then write a fresh snapshot."""
        n = 0
        for gen, path in journal_files(self.dir):
            if gen < self.gen or self.stopped_at is not None:
                continue
            payloads, end = read_frames(path.read_bytes())
            if end != path.stat().st_size:
                log.warning("journal %s: torn tail at byte %d ignored", path.name, end)
            for p in payloads:
                try:
                    self._replay_one(p)
                except NotReplayable as exc:
                    self.stopped_at = f"{path.name}: {exc}"
                    log.warning("journal replay stopped at an unacknowledged change (%s)", exc)
                    break
                n += 1
        self.replayed = n
        self.write_snapshot()
        self.started = True
        return n

    def _replay_one(self, payload: memoryview) -> None:
        idx, kind = payload[0], payload[1]
        if idx >= len(self.nodes):
            raise NotReplayable(f"record of unknown node #{idx}")
        node = self.nodes[idx]
        data = bytes(payload[2:])
        if kind == _KIND_PREIMAGE:
            d = bsonutil.decode(data)
            dict.__setitem__(node.preimages, _pre_key_of(d), d["d"])
            return
        entry = bsonutil.decode(data)
        key = ts_key(entry["ts"])
        if key <= node.oplog.last_key:
            return  # already in the snapshot
        apply_entry(node, entry)  # first: a NotReplayable entry must not reach the oplog
        sink, node.oplog._sink = node.oplog._sink, None
        try:
            node.oplog.append_raw(data, key, entry["op"], entry["ns"])
        finally:
            node.oplog._sink = sink
        node.clock.advance(key)

    # -- journaling -------------------------------------------------------------------------
    def _record(self, payload: bytes) -> None:
        rec = frame(payload)
        self._pending.append(rec)
        self._pending_bytes += len(rec)
        self._appended += 1

    @property
    def dirty(self) -> bool:
        return bool(self._pending) or self._needs_snapshot

    def request_snapshot(self) -> None:
        self._needs_snapshot = True

    async def commit(self) -> None:
        """Return once everything appended so far is durable (group commit)."""
        target = self._appended
        while (self._durable < target or self._needs_snapshot) and not self.closed:
            if self._flushing:
                await self._flushed.wait()
                continue
            self._flushing = True
            try:
                upto = self._appended
                data = b"".join(self._pending)
                self._pending.clear()
                self._pending_bytes = 0
                if data:
                    fd = self._journal_fd
                    await trio.to_thread.run_sync(self._write_journal, fd, data)
                    self._journal_bytes += len(data)
                self._durable = max(self._durable, upto)
                if self._needs_snapshot or self._journal_bytes > self.snapshot_journal_bytes:
                    self.write_snapshot()
            finally:
                self._flushing = False
                while self._retired:
                    os.close(self._retired.pop())
                ev, self._flushed = self._flushed, trio.Event()
                ev.set()

    def _write_journal(self, fd: int, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        if self.fsync:
            os.fsync(fd)

    def write_snapshot(self) -> None:
        """Write a snapshot of every node (synchronously), start a new journal, drop the old ones.

        Records pending at this moment are in the snapshot, so they need no journal."""
        next_gen = self.gen + 1
        tmp = self.dir / (SNAPSHOT + ".tmp")
        with open(tmp, "wb") as f:
            for payload in snapshot_payloads(self.nodes, next_gen):
                f.write(frame(payload))
            f.flush()
            if self.fsync:
                os.fsync(f.fileno())
        new_fd = os.open(self.dir / f"journal.{next_gen}.bin", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.replace(tmp, self.dir / SNAPSHOT)
        if self.fsync:
            _fsync_dir(self.dir)
        old_fd, self._journal_fd = self._journal_fd, new_fd
        if old_fd is not None:
            if self._flushing:  # a worker thread may be writing to it: close it after the flush
                self._retired.append(old_fd)
            else:
                os.close(old_fd)
        self.gen = next_gen
        self._pending.clear()
        self._pending_bytes = 0
        self._durable = self._appended
        self._journal_bytes = 0
        self._needs_snapshot = False
        self.snapshots_written += 1
        for gen, path in journal_files(self.dir):
            if gen < next_gen:
                path.unlink(missing_ok=True)

    async def run(self) -> None:
        """Background: flush in-process writes, snapshot periodically."""
        last_snapshot = trio.current_time()
        while True:
            await trio.sleep(self.flush_interval)
            if self.dirty:
                await self.commit()
            # an idle cluster journals only its periodic noops: do not rewrite a big snapshot for those
            if self._journal_bytes > 1024 * 1024 and trio.current_time() - last_snapshot >= self.snapshot_interval:
                if not self._flushing:
                    self.write_snapshot()
                last_snapshot = trio.current_time()

    # -- small files written whole ------------------------------------------------------------
    def write_record_file(self, name: str, payload: bytes) -> None:
        """Replace the file `name` with one framed record, atomically (the snapshot's way: a
        temporary file, fsync'ed, renamed over the old one, the directory fsync'ed)."""
        path, tmp = self.dir / name, self.dir / (name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, frame(payload))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        _fsync_dir(self.dir)

    def read_record_file(self, name: str) -> bytes | None:
        """The record `write_record_file` wrote (None: no file); PersistenceError if it is torn."""
        path = self.dir / name
        if not path.exists():
            return None
        records, _end = read_frames(path.read_bytes())
        if len(records) != 1:
            raise PersistenceError(f"{path}: unreadable (a torn or corrupt record)")
        return bytes(records[0])

    def close(self) -> None:
        """Clean shutdown: a final snapshot, then release the directory."""
        if self.closed:
            return
        try:
            if self.nodes:
                self.write_snapshot()
        finally:
            self.closed = True
            if self._journal_fd is not None:
                os.close(self._journal_fd)
                self._journal_fd = None
            os.close(self._lock_fd)


# Commands whose effects the journal replays on its own (CRUD through oplog entries) or that
# change nothing.  After any other command the store takes a snapshot before acknowledging.
JOURNALED_COMMANDS = frozenset({
    "insert", "update", "delete", "findAndModify", "findandmodify", "find", "getMore", "killCursors", "count",
    "distinct", "aggregate", "hello", "isMaster", "ismaster", "ping", "buildInfo", "buildinfo", "getParameter",
    "getCmdLineOpts", "serverStatus", "connectionStatus", "whatsmyuri", "endSessions", "killSessions",
    "refreshSessions", "startSession", "getDefaultRWConcern", "hostInfo", "logout", "listCommands", "saslStart",
    "saslContinue", "authenticate", "listCollections", "listIndexes", "listDatabases", "listShards",
    "balancerStatus", "explain", "dbStats", "collStats", "abortTransaction",
})


class DurableService:
    """Wraps the wire service: a reply leaves only once what it may depend on is durable."""

    def __init__(self, inner: Any, store: Store) -> None:
        self._inner = inner
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def run_command(self, db: str, cmd: dict, conn: Any) -> dict:
        try:
            return await self._inner.run_command(db, cmd, conn)
        finally:
            name = next(iter(cmd), "") if cmd else ""
            if name not in JOURNALED_COMMANDS:
                self._store.request_snapshot()
            if self._store.dirty:
                with trio.CancelScope(shield=True):
                    await self._store.commit()
