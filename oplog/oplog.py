"""The oplog of one node: an append-only, size-bounded log of raw BSON entries.

Storage is chosen for memory and scan speed: each entry is kept as its BSON
bytes, with three parallel columns (ts key in an `array('Q')`, the `op` code
and the interned `ns`), so a change-stream scan can skip entries of other
namespaces without decoding them.  Positions are absolute sequence numbers
that survive truncation.

Bounded history, like mongod's `--oplogSize`: when the stored bytes exceed
`max_bytes`, the oldest entries are dropped in one chunk (down to 90 % of the
cap, as the server drops whole truncate markers).  A reader whose position
fell off the front gets ChangeStreamHistoryLost from the change-stream
stages.

Waiting (awaitData): `wait_for_entries_after(pos)` parks until an entry is
appended beyond `pos`; callers bound it with a cancel scope (maxTimeMS).

Majority visibility (replica sets of several members): `committed_end` is the
position one past the newest majority-committed entry (None: every entry is
committed, as on a one-member set).  Change streams read only up to it, as the
server's read the oplog at the majority commit point; waiters wake when it
moves (`set_committed_end`).  Rollback removes the newest entries
(`truncate_after`), back to the common point with the new primary.
"""

from __future__ import annotations

import bisect
import sys
from array import array
from struct import unpack_from
from typing import Iterator

import trio

from mongosim.oplog import bsonutil
from mongosim.oplog.clock import ts_key
from mongosim.oplog.layout import crud_layout, locate_o

MAX_ENTRY_BYTES = bsonutil.MAX_BSON_OBJECT_SIZE + 16 * 1024  # BSONObjMaxInternalSize


class EntryTooLarge(Exception):
    """An oplog entry over the size limit (the write must be refused; nothing was logged)."""

    def __init__(self, size: int) -> None:
        super().__init__(f"oplog entry of {size} bytes is over the limit")
        self.size = size


class EntryView:
    """A CRUD oplog entry by reference: ts key, op, ns, raw bytes, the offsets of `o`/`o2`, wall (ms), ui."""

    __slots__ = ("key", "op", "ns", "raw", "o", "o2", "wall", "ui", "from_migrate", "pos")

    def __init__(self, key, op, ns, raw, o, o2, wall, ui, from_migrate, pos=-1) -> None:
        self.key, self.op, self.ns, self.raw, self.o, self.o2, self.wall, self.ui, self.from_migrate = (
            key, op, ns, raw, o, o2, wall, ui, from_migrate)
        self.pos = pos


class Oplog:
    __slots__ = ("_keys", "_raw", "_ops", "_nss", "_base", "_bytes", "max_bytes", "_lot", "committed_end")

    def __init__(self, max_bytes: int | None = None) -> None:
        self._keys = array("Q")
        self._raw: list[bytes] = []
        self._ops: list[str] = []
        self._nss: list[str] = []
        self._base = 0  # absolute position of _raw[0]
        self._bytes = 0
        self.max_bytes = max_bytes
        self._lot = trio.lowlevel.ParkingLot()
        self.committed_end: int | None = None  # majority visibility (None: every entry)

    # -- size and positions ---------------------------------------------------
    def __len__(self) -> int:
        return len(self._raw)

    @property
    def start(self) -> int:
        """Absolute position of the oldest stored entry."""
        return self._base

    @property
    def end(self) -> int:
        """Absolute position one past the newest entry."""
        return self._base + len(self._raw)

    @property
    def visible_end(self) -> int:
        """One past the newest entry a majority reader may see."""
        return self._base + len(self._raw) if self.committed_end is None else self.committed_end

    def set_committed_end(self, pos: int | None) -> None:
        """Move the majority visibility to `pos` (None: everything); readers waiting wake up."""
        old = self.committed_end
        self.committed_end = pos
        if len(self._lot) and (pos is None or old is None or pos > old):
            self._lot.unpark_all()

    @property
    def size_bytes(self) -> int:
        return self._bytes

    @property
    def last_key(self) -> int:
        """ts key of the newest entry (0 if empty)."""
        return self._keys[-1] if self._keys else 0

    @property
    def first_key(self) -> int:
        return self._keys[0] if self._keys else 0

    # -- writing ----------------------------------------------------------------
    def append(self, entry: dict) -> bytes:
        """Append one entry (its `ts` must be after the last one); return its bytes.

        An entry larger than the server's internal BSON limit (16 MiB + 16 KiB), or
        an insert or replacement whose document is over the user limit (16 MiB),
        raises EntryTooLarge and is not appended.
        """
        raw = bsonutil.encode(entry)
        if len(raw) > MAX_ENTRY_BYTES:
            raise EntryTooLarge(len(raw))
        if len(raw) > bsonutil.MAX_BSON_OBJECT_SIZE and entry["op"] in ("i", "u"):  # (rare: a large entry)
            stored = unpack_from("<i", raw, locate_o(raw)[0])[0]  # the document an insert or replacement stores
            if stored > bsonutil.MAX_BSON_OBJECT_SIZE:
                raise EntryTooLarge(stored)
        self.append_raw(raw, ts_key(entry["ts"]), entry["op"], entry["ns"], entry=entry)
        return raw

    def append_raw(self, raw: bytes, key: int, op: str, ns: str, *, entry: dict | None = None) -> None:
        """Append an encoded entry (`entry`: its dict, unused here, accepted for callers that have it)."""
        if self._keys and key <= self._keys[-1]:
            raise AssertionError(f"oplog out of order: {key} after {self._keys[-1]}")
        self._keys.append(key)
        self._raw.append(raw)
        self._ops.append(op)
        self._nss.append(sys.intern(ns))
        self._bytes += len(raw)
        if self.max_bytes is not None and self._bytes > self.max_bytes:
            self._truncate()
        if len(self._lot):
            self._lot.unpark_all()

    def extend_raw(self, raws: list[bytes], first_key: int, op: str, ns: str) -> None:
        """`append_raw` of entries of one `op` and `ns` with consecutive ts keys from `first_key`, in one
        step (a subclass that watches appends gets each one)."""
        if type(self).append_raw is not Oplog.append_raw:
            for i, raw in enumerate(raws):
                self.append_raw(raw, first_key + i, op, ns)
            return
        if self._keys and first_key <= self._keys[-1]:
            raise AssertionError(f"oplog out of order: {first_key} after {self._keys[-1]}")
        n = len(raws)
        self._keys.extend(range(first_key, first_key + n))
        self._raw.extend(raws)
        self._ops.extend([op] * n)
        self._nss.extend([sys.intern(ns)] * n)
        self._bytes += sum(map(len, raws))
        if self.max_bytes is not None and self._bytes > self.max_bytes:
            self._truncate()
        if len(self._lot):
            self._lot.unpark_all()

    def extend_columns(self, keys, ops: list[str], nss: list[str], raws: list[bytes]) -> None:
        """`append_raw` of each entry, in one step: columns as another oplog's `columns` gives them
        (ascending ts keys; a secondary copying its source's entries)."""
        if type(self).append_raw is not Oplog.append_raw:
            for key, op, ns, raw in zip(keys, ops, nss, raws):
                self.append_raw(raw, key, op, ns)
            return
        if not raws:
            return
        if self._keys and keys[0] <= self._keys[-1]:
            raise AssertionError(f"oplog out of order: {keys[0]} after {self._keys[-1]}")
        self._keys.extend(keys)
        self._raw.extend(raws)
        self._ops.extend(ops)
        self._nss.extend(nss)  # (interned by the oplog they come from)
        self._bytes += sum(map(len, raws))
        if self.max_bytes is not None and self._bytes > self.max_bytes:
            self._truncate()
        if len(self._lot):
            self._lot.unpark_all()

    def _truncate(self) -> None:
        target = int(self.max_bytes * 0.9)
        k = 0
        dropped = 0
        n = len(self._raw) - 1  # always keep the newest entry
        while k < n and self._bytes - dropped > target:
            dropped += len(self._raw[k])
            k += 1
        if k:
            del self._keys[:k], self._raw[:k], self._ops[:k], self._nss[:k]
            self._base += k
            self._bytes -= dropped

    def truncate_after(self, key: int) -> int:
        """Remove every entry with ts > `key` (rollback to the common point); how many went."""
        i = bisect.bisect_right(self._keys, key)
        n = len(self._raw) - i
        if n:
            self._bytes -= sum(len(r) for r in self._raw[i:])
            del self._keys[i:], self._raw[i:], self._ops[i:], self._nss[i:]
            if self.committed_end is not None and self.committed_end > self.end:
                self.committed_end = self.end
        return n

    # -- reading ----------------------------------------------------------------
    def position_at_or_after(self, key: int) -> int:
        """Absolute position of the first entry with ts >= key."""
        return self._base + bisect.bisect_left(self._keys, key)

    def position_after(self, key: int) -> int:
        """Absolute position of the first entry with ts > key."""
        return self._base + bisect.bisect_right(self._keys, key)

    def key_at(self, pos: int) -> int:
        return self._keys[pos - self._base]

    def raw_at(self, pos: int) -> bytes:
        return self._raw[pos - self._base]

    def entry_at(self, pos: int) -> dict:
        return bsonutil.decode(self._raw[pos - self._base])

    def meta_at(self, pos: int) -> tuple[int, str, str]:
        """(ts key, op, ns) without decoding."""
        i = pos - self._base
        return self._keys[i], self._ops[i], self._nss[i]

    def find_by_key(self, key: int) -> dict | None:
        """The entry with exactly this ts, or None (e.g. truncated)."""
        i = bisect.bisect_left(self._keys, key)
        if i < len(self._keys) and self._keys[i] == key:
            return bsonutil.decode(self._raw[i])
        return None

    def column_refs(self):
        """The live columns (keys, ops, nss, raws), indexed from `start`; read them, never keep them."""
        return self._keys, self._ops, self._nss, self._raw

    def view_at(self, pos: int) -> "EntryView | None":
        """A CRUD entry as the renderer needs it, without decoding (see oplog.layout);
        None when the entry is not laid out as our writer lays entries out."""
        i = pos - self._base
        raw = self._raw[i]
        o, o2, wall, ui, from_migrate = crud_layout(raw)
        if ui is None:
            return None
        return EntryView(self._keys[i], self._ops[i], self._nss[i], raw, o, o2, wall, ui, from_migrate, pos)

    def columns(self, pos: int, stop: int | None = None):
        """Slices (keys, ops, nss, raws) from absolute `pos` to `stop` for fast scans."""
        i = pos - self._base
        j = len(self._raw) if stop is None else stop - self._base
        return self._keys[i:j], self._ops[i:j], self._nss[i:j], self._raw[i:j]

    def iter_entries(self, pos: int = 0) -> Iterator[dict]:
        i = max(pos - self._base, 0)
        for raw in self._raw[i:]:
            yield bsonutil.decode(raw)

    # -- waiting ----------------------------------------------------------------
    async def wait_for_entries_after(self, pos: int) -> None:
        """Park until the oplog holds a (majority-visible) entry at absolute position >= `pos`."""
        while self.visible_end <= pos:
            await self._lot.park()

    async def wait_for_change(self) -> None:
        """Park once: until an entry is appended (committed or not: a secondary's fetcher reads past
        the commit point) or `wake_readers` is called."""
        await self._lot.park()

    def wake_readers(self) -> None:
        """Wake every reader parked on this oplog so it looks again (its node changed state: a
        restart, a rollback, an initial sync, a new replication source)."""
        self._lot.unpark_all()
