"""Splitting oplog dumps into time ranges that executors replay independently.

A dump is concatenated BSON: a document boundary can only be found by
following the length prefixes from the start.  So the plan has two steps:

1. **Index** (`index_dump`, one Spark task per dump): walk the length chain
   once and keep every `sample_every`-th entry's byte offset and ts — a sparse
   index, a few numbers per thousand entries.  Only those sampled entries are
   looked into.
2. **Ranges** (`plan_ranges`, on the driver, over the indexes only): cut each
   dump at sampled entries into ranges of about equal bytes, as many per dump
   as its share of the requested partitions.  A range is `[lo, hi)` in bytes and
   in ts: its first entry's ts (`lo_key`) and the next range's (`hi_key`).

Replaying a range (`load_range`) needs one piece of state from before its
start: a transaction whose terminal entry lies in the range may have begun
before it — the `partialTxn` entries of a large transaction, or the `prepare`
entry a `commitTransaction` points at — and the unwind stage walks the chain
back through `prevOpTime`.  The range's loader carries those entries across
the boundary: for every transaction entry (`admin.$cmd`) whose `prevOpTime` is
before `lo_key`, it fetches the chain's earlier entries from the dump (the
sparse index gives the nearest sampled offset; from there a short walk finds
the ts) and puts them in the range's oplog below `lo_key`, where the oplog scan
(which starts at `lo_key`) never returns them but the unwind finds them.  No
other stage keeps state from one entry to the next (see
`oplog_source.shard_events`), so a range's events are exactly the events the
whole dump's replay produces from its entries.
"""

from __future__ import annotations

import bisect
import os
import struct
from dataclasses import dataclass, field
from typing import Iterator

from bson.raw_bson import RawBSONDocument

from mongosim.oplog.bsonutil import RAW_CODEC
from mongosim.oplog.layout import entry_head

SAMPLE_EVERY = 256  # entries between two samples of the sparse index
_LEN = struct.Struct("<i")


def _key(ts) -> int:
    return (ts.time << 32) | ts.inc


def entry_meta(raw: bytes) -> tuple[int, str, str]:
    """(ts key, op, ns) of an oplog entry, reading its top-level fields only (`layout.entry_head`)."""
    return entry_head(raw)


def walk(data: bytes | memoryview, path: str, start: int = 0) -> Iterator[tuple[int, int]]:
    """(offset, size) of each BSON document of `data` from `start`, checking only the framing."""
    pos, end = start, len(data)
    while pos < end:
        if end - pos < 5:
            raise ValueError(f"{path}: truncated BSON at byte {pos}")
        (size,) = _LEN.unpack_from(data, pos)
        if size < 5 or pos + size > end or data[pos + size - 1] != 0:
            raise ValueError(f"{path}: corrupt BSON document at byte {pos}")
        yield pos, size
        pos += size


@dataclass
class DumpIndex:
    """The sparse index of one dump: every `sample_every`-th entry's byte offset and ts key."""

    shard: str
    path: str
    size: int
    count: int
    offsets: list[int] = field(default_factory=list)
    keys: list[int] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"shard": self.shard, "path": self.path, "size": self.size, "count": self.count,
                "offsets": self.offsets, "keys": self.keys}

    @classmethod
    def from_json(cls, d: dict) -> "DumpIndex":
        return cls(d["shard"], d["path"], d["size"], d["count"], list(d["offsets"]), list(d["keys"]))


def index_dump(shard: str, path: str | os.PathLike, sample_every: int = SAMPLE_EVERY) -> DumpIndex:
    """Walk a dump's length chain; sample every `sample_every`-th entry (the first one always)."""
    with open(path, "rb") as f:
        data = f.read()
    idx = DumpIndex(shard, str(path), len(data), 0)
    view = memoryview(data)
    for n, (pos, size) in enumerate(walk(view, str(path))):
        if n % sample_every == 0:
            idx.offsets.append(pos)
            idx.keys.append(entry_meta(data[pos:pos + size])[0])
        idx.count = n + 1
    return idx


# -- the index beside a dump ---------------------------------------------------------------------
# `write_dump` knows every entry's offset and ts as it writes them, so it leaves the sparse index
# beside the dump (`<dump>.idx`, JSON) and a job reads that instead of walking the dump again.  The
# file records the dump's size and modification time: a dump changed since (or another sampling)
# is walked as before.
INDEX_SUFFIX = ".idx"
_INDEX_VERSION = 1


def index_path(path: str | os.PathLike) -> str:
    return str(path) + INDEX_SUFFIX


def write_index(idx: DumpIndex, sample_every: int) -> None:
    """Leave `idx` beside its dump (written whole: a temporary file renamed over the old one)."""
    import json

    st = os.stat(idx.path)
    body = {"version": _INDEX_VERSION, "sampleEvery": sample_every, "dumpSize": st.st_size,
            "dumpMtimeNs": st.st_mtime_ns, "count": idx.count, "offsets": idx.offsets, "keys": idx.keys}
    tmp = index_path(idx.path) + ".tmp"
    with open(tmp, "w") as f:
        json.dump(body, f)
    os.replace(tmp, index_path(idx.path))


def read_index(shard: str, path: str | os.PathLike, sample_every: int = SAMPLE_EVERY) -> DumpIndex | None:
    """The index left beside the dump, if it still describes it (same size and modification time, same
    sampling); None otherwise."""
    import json

    try:
        st = os.stat(path)
        with open(index_path(path)) as f:
            body = json.load(f)
    except (OSError, ValueError):
        return None
    if (not isinstance(body, dict) or body.get("version") != _INDEX_VERSION
            or body.get("sampleEvery") != sample_every or body.get("dumpSize") != st.st_size
            or body.get("dumpMtimeNs") != st.st_mtime_ns):
        return None
    return DumpIndex(shard, str(path), st.st_size, body["count"], list(body["offsets"]), list(body["keys"]))


@dataclass
class DumpRange:
    """Entries `[lo, hi)` (bytes) of one dump; `lo_key`/`hi_key` the ts keys there (`hi_key` None: to
    the end).  `order` is the dump's place among the shards (ties between shards' tokens sort by it);
    `first`/`last` say whether the range starts/ends its dump.  `samples` is the dump's sparse index
    before `lo` (for fetching the transaction entries carried across the boundary)."""

    shard: str
    order: int
    path: str
    lo: int
    hi: int
    lo_key: int
    hi_key: int | None
    first: bool
    samples: tuple[list[int], list[int]] = ((), ())  # (offsets, keys)

    def to_json(self) -> dict:
        return {"shard": self.shard, "order": self.order, "path": self.path, "lo": self.lo, "hi": self.hi,
                "lo_key": self.lo_key, "hi_key": self.hi_key, "first": self.first,
                "samples": [list(self.samples[0]), list(self.samples[1])]}

    @classmethod
    def from_json(cls, d: dict) -> "DumpRange":
        return cls(d["shard"], d["order"], d["path"], d["lo"], d["hi"], d["lo_key"], d["hi_key"], d["first"],
                   (list(d["samples"][0]), list(d["samples"][1])))


def plan_ranges(indexes: list[DumpIndex], partitions: int) -> list[DumpRange]:
    """Cut the dumps into about `partitions` ranges in all (at least one per non-empty dump), each
    dump's share proportional to its bytes; cuts fall on sampled entries, about equally spaced."""
    indexes = sorted(indexes, key=lambda i: i.shard)
    total = sum(i.size for i in indexes) or 1
    out: list[DumpRange] = []
    for order, idx in enumerate(indexes):
        if not idx.count:
            continue
        want = max(1, min(len(idx.offsets), round(partitions * idx.size / total)))
        cuts = [0]  # sample numbers where ranges start
        for k in range(1, want):
            j = bisect.bisect_left(idx.offsets, idx.size * k / want)
            if j < len(idx.offsets) and j > cuts[-1]:
                cuts.append(j)
        for n, j in enumerate(cuts):
            nxt = cuts[n + 1] if n + 1 < len(cuts) else None
            out.append(DumpRange(
                idx.shard, order, idx.path, idx.offsets[j], idx.offsets[nxt] if nxt is not None else idx.size,
                idx.keys[j], idx.keys[nxt] if nxt is not None else None, j == 0,
                (idx.offsets[:j], idx.keys[:j])))
    return out


def plan_slices(indexes: list[DumpIndex], partitions: int) -> list[list[DumpRange]]:
    """Cut the dumps at common times into about `partitions` time slices: slice k is, in every dump,
    the entries with ts in `[B_k, B_k+1)`.  The boundaries are quantiles of all the dumps' sampled ts
    keys (each sample stands for `sample_every` entries), so the slices hold about equal entries.

    The router's order is the token's, and a token starts with the event's clusterTime (its entry's
    ts), so every event of slice k sorts before every event of slice k+1: merging each slice's
    shards on its own (one task, `heapq.merge`) and concatenating the slices is the merged stream —
    no shuffle, no sort across tasks.  A dump's range in a slice is a byte window from the sample at
    or before `B_k` to the first sample at or after `B_k+1`, with `lo_key`/`hi_key` the exact times:
    `load_range` keeps the window's entries before `lo_key` below the scan (they may be a chain's
    earlier entries) and drops those at or after `hi_key`."""
    indexes = sorted((i for i in indexes if i.count), key=lambda i: i.shard)
    keys = sorted(k for i in indexes for k in i.keys)
    n = max(1, min(partitions, len(keys)))
    bounds = sorted({keys[(len(keys) * k) // n] for k in range(1, n)} - {keys[0]}) if keys else []
    edges = [None, *bounds, None]  # slice k is [edges[k], edges[k+1]) (None: open)
    order = {i.shard: o for o, i in enumerate(sorted(indexes, key=lambda i: i.shard))}
    slices: list[list[DumpRange]] = []
    for k in range(len(edges) - 1):
        lo_b, hi_b = edges[k], edges[k + 1]
        out = []
        for idx in indexes:
            first_key = idx.keys[0]
            if hi_b is not None and hi_b <= first_key:
                continue  # the dump starts after this slice
            if lo_b is None or lo_b <= first_key:
                j, lo_key, first = 0, first_key, True
            else:
                j, lo_key, first = bisect.bisect_right(idx.keys, lo_b) - 1, lo_b, False
            j2 = len(idx.keys) if hi_b is None else bisect.bisect_left(idx.keys, hi_b)
            hi = idx.offsets[j2] if j2 < len(idx.offsets) else idx.size
            out.append(DumpRange(idx.shard, order[idx.shard], idx.path, idx.offsets[j], hi, lo_key, hi_b, first,
                                 (idx.offsets[:j], idx.keys[:j])))
        slices.append(out)
    return slices


def _read(path: str, lo: int, hi: int) -> bytes:
    with open(path, "rb") as f:
        f.seek(lo)
        return f.read(hi - lo)


def _fetch(rng: DumpRange, key: int) -> bytes | None:
    """The dump's entry with ts `key` (before the range), found from the nearest sample before it."""
    offsets, keys = rng.samples
    j = bisect.bisect_right(keys, key) - 1
    if j < 0:
        return None
    stop = offsets[j + 1] if j + 1 < len(offsets) else rng.lo
    data = _read(rng.path, offsets[j], stop)
    for pos, size in walk(data, rng.path):
        raw = data[pos:pos + size]
        k = entry_meta(raw)[0]
        if k == key:
            return raw
        if k > key:
            return None
    return None


def _prev_key(raw: bytes) -> int | None:
    prev = RawBSONDocument(raw, RAW_CODEC).get("prevOpTime")
    if prev is None:
        return None
    ts = prev.get("ts")
    return _key(ts) if ts is not None and ts.time != 0 else None


def load_range(rng: DumpRange):
    """An in-memory `Oplog` holding the range's entries (the byte window's, before `hi_key`), below
    them the transaction entries carried across its start (the ones a chain ending in the range
    points back to)."""
    from mongosim.oplog.oplog import Oplog

    data = _read(rng.path, rng.lo, rng.hi)
    entries: list[tuple[int, str, str, bytes]] = []
    below: dict[int, bytes] = {}  # the window's entries before lo_key (a time slice's window starts early)
    wanted: list[int] = []  # chain entries before lo_key that the range's transactions point to
    for pos, size in walk(data, rng.path):
        raw = data[pos:pos + size]
        key, op, ns = entry_meta(raw)
        if rng.hi_key is not None and key >= rng.hi_key:
            break
        entries.append((key, op, ns, raw))
        if op == "c" and ns == "admin.$cmd" and not rng.first:
            if key < rng.lo_key:
                below[key] = raw
                continue
            prev = _prev_key(raw)
            if prev is not None and prev < rng.lo_key:
                wanted.append(prev)
    carried: dict[int, tuple[str, str, bytes] | None] = {}
    while wanted:
        key = wanted.pop()
        if key in carried:
            continue
        raw = below.get(key)
        if raw is not None:  # already in the window: follow its chain on
            carried[key] = None
        else:
            raw = _fetch(rng, key)
            if raw is None:
                continue  # not in the dump: the unwind reports the history as lost, as for the whole dump
            _k, op, ns = entry_meta(raw)
            carried[key] = (op, ns, raw)
        prev = _prev_key(raw)
        if prev is not None:
            wanted.append(prev)
    oplog = Oplog()
    for key in sorted(k for k, v in carried.items() if v is not None):  # all before the window
        op, ns, raw = carried[key]
        oplog.append_raw(raw, key, op, ns)
    for key, op, ns, raw in entries:
        oplog.append_raw(raw, key, op, ns)
    return oplog
