"""Cursors of one node: ids, namespaces, batches, idle timeout, killCursors.

A cursor is any object with `ns`, `get_more(batch_size, max_time_ms)` (a coroutine
returning `(batch, fields, exhausted)`; `fields` are extra cursor fields such as
`postBatchResumeToken`) and `close()`.  Replies are built in the server's
field order: `{cursor: {firstBatch|nextBatch, postBatchResumeToken?, id, ns}, ok}`.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any, Iterator

import trio
from bson import Int64

from mongosim.oplog import bsonutil
from mongosim.oplog.errors import MongoError
from mongosim.shardsim import api_parameters
from mongosim.shardsim.fail_point import check_max_time_always_times_out
from mongosim.shardsim.generic_args import max_time_ms as generic_max_time_ms

DEFAULT_FIRST_BATCH = 101
MAX_BATCH_BYTES = 16 * 1024 * 1024
CURSOR_TIMEOUT_S = 600.0  # cursorTimeoutMillis default


def new_cursor_id() -> int:
    return secrets.randbits(62) + 1


def cursor_reply(batch: list, cursor_id: int, ns: str, *, first: bool, fields: dict | None = None) -> dict:
    cur: dict[str, Any] = {"firstBatch" if first else "nextBatch": batch}  # a list, or a bsonutil.RawBatch
    if fields:
        cur.update(fields)
    cur["id"] = Int64(cursor_id)
    cur["ns"] = ns
    return {"cursor": cur, "ok": 1.0}


_BATCH_BYTES = MAX_BATCH_BYTES - 64 * 1024
# A batch's documents are the elements of an array: each costs its type byte, its index's digits
# and a NUL beside its own bytes (FindCommon's kPerDocumentOverheadBytesUpperBound: 2 + the digits
# of the largest index a 16 MB reply can hold).
PER_DOCUMENT_OVERHEAD = 2 + len(str(MAX_BATCH_BYTES // 5))


def _encoded_size(doc: Any) -> int:
    if isinstance(doc, (bytes, bytearray)):
        return len(doc)
    raw = getattr(doc, "raw", None)
    if raw is not None:
        return len(raw)
    try:
        return len(bsonutil.encode(doc))
    except Exception:
        return 0


@dataclass
class QueryCursor:
    """A cursor over a finished result (find, aggregate, list*), and when it reports itself exhausted.

    The server fills a batch by asking its executor for the next document until the batch is full;
    the cursor closes when one of those asks found nothing more (a batch not full), or when the
    executor says it is at EOF once the batch is full (`exec->isEOF()`: find_cmd.cpp's and
    getmore_cmd.cpp's shouldSaveCursor).  Whether it is at EOF right after its last document depends
    on what feeds it: a plan whose LIMIT has returned its n, an express lookup or a list command's
    queued documents are; a scan, a blocking SORT or a pipeline learn it only when asked once more,
    so a result that exactly fills its batches leaves the cursor open, and the next getMore answers an
    empty batch and closes.  `eof_at` is the number of documents after which the source is at EOF
    (None: only once asked past its end); nothing is read ahead.
    """

    ns: str
    results: Iterator[dict]
    last_used: float = 0.0
    exhausted: bool = False
    eof_at: int | None = None
    returned: int = 0
    _stash: list = field(default_factory=list)  # a document that did not fit its batch (stashResult)

    def take(self, n: int | None) -> list[dict]:
        """Up to `n` documents (None or 0: as many as fit 16 MB)."""
        out: list[dict] = []
        limit = n if n else None
        size = 0
        while limit is None or len(out) < limit:
            if self._stash:
                doc = self._stash.pop()
            else:
                try:
                    doc = next(self.results)
                except StopIteration:
                    self.exhausted = True
                    break
            size += _encoded_size(doc) + PER_DOCUMENT_OVERHEAD
            if out and size > _BATCH_BYTES:  # a batch stops short of 16 MB (the reply must fit in a message)
                self._stash.append(doc)
                break
            out.append(doc)
        self.returned += len(out)
        if self.returned == self.eof_at and not self._stash:
            self.exhausted = True
        return out

    def first_batch(self, batch_size: int | None) -> list[dict]:
        """The first batch: `batchSize` documents (101 by default); none for a batch size of 0, the
        cursor then exhausted only if its source is at EOF before any document."""
        if batch_size == 0:
            self.exhausted = self.exhausted or self.eof_at == 0
            return []
        return self.take(batch_size if batch_size is not None else DEFAULT_FIRST_BATCH)

    async def get_more(self, batch_size: int | None, max_time_ms: int | None):
        return self.take(batch_size), None, self.exhausted

    def close(self) -> None:
        self.exhausted = True


class CursorManager:
    def __init__(self, node: Any) -> None:
        self.node = node
        self._cursors: dict[int, Any] = {}
        self._pinned: set[int] = set()
        self._time_limited: set[int] = set()  # opened by a command with a maxTimeMS
        self._api_params: dict[int, dict] = {}  # the API parameters of the command that opened it, if any

    def __len__(self) -> int:
        return len(self._cursors)

    def register(self, cursor: Any) -> int:
        cid = new_cursor_id()
        cursor.last_used = trio.current_time()
        self._cursors[cid] = cursor
        return cid

    def note_time_limit(self, reply: dict) -> None:
        """The cursor a command with a maxTimeMS opened (if any) keeps a time limit: its getMores run with
        what is left of it (getmore_cmd.cpp's leftover maxTime), so maxTimeAlwaysTimeOut fails them."""
        cur = reply.get("cursor")
        cid = cur.get("id") if isinstance(cur, dict) else None
        if cid and int(cid) in self._cursors:
            self._time_limited.add(int(cid))

    def note_api_parameters(self, reply: dict, cmd: dict) -> None:
        """The cursor a client's command opened (if any) keeps its API parameters: a getMore must give
        the same (`shardsim.api_parameters.mismatch`)."""
        cur = reply.get("cursor")
        cid = cur.get("id") if isinstance(cur, dict) else None
        params = api_parameters.params_of(cmd)
        if cid and params and int(cid) in self._cursors:
            self._api_params[int(cid)] = params

    def items(self) -> list[tuple[int, Any]]:
        """(cursor id, cursor) of every open cursor (for $currentOp's idle cursors)."""
        return list(self._cursors.items())

    def lookup(self, cid: int, ns: str) -> Any:
        cur = self._cursors.get(cid)
        if cur is None:
            raise MongoError("CursorNotFound", f"cursor id {cid} not found")
        if cur.ns != ns:
            raise MongoError(
                "Unauthorized",
                f"Requested getMore on namespace '{ns}', but cursor belongs to a different namespace {cur.ns}",
            )
        return cur

    def pin(self, cid: int) -> None:
        if cid in self._pinned:
            raise MongoError(143,  # CursorInUse
                             f"cursor id {cid} is already in use")
        self._pinned.add(cid)

    def unpin(self, cid: int) -> None:
        self._pinned.discard(cid)
        cur = self._cursors.get(cid)
        if cur is not None:
            cur.last_used = trio.current_time()

    def remove(self, cid: int) -> None:
        cur = self._cursors.pop(cid, None)
        self._pinned.discard(cid)
        self._time_limited.discard(cid)
        self._api_params.pop(cid, None)
        if cur is not None:
            cur.close()

    def kill(self, ns: str, ids: list) -> dict:
        killed, not_found = [], []
        for cid in ids:
            if not isinstance(cid, int) or isinstance(cid, bool):
                raise MongoError("TypeMismatch", "BSON field 'killCursors.cursors' is the wrong type, expected type 'long'")
            cid = int(cid)
            cur = self._cursors.get(cid)
            if cur is None or cur.ns != ns:
                not_found.append(Int64(cid))
            else:
                self.remove(cid)
                killed.append(Int64(cid))
        return {"cursorsKilled": killed, "cursorsNotFound": not_found, "cursorsAlive": [], "cursorsUnknown": [], "ok": 1.0}

    def kill_all(self, interrupt: MongoError | None = None) -> None:
        """Kill every cursor; an operation in flight on one fails with `interrupt` (e.g. at shutdown)."""
        for cid in list(self._cursors):
            cur = self._cursors.get(cid)
            if interrupt is not None and cur is not None:
                cur.interrupt = interrupt
            self.remove(cid)

    def reap_idle(self, timeout: float = CURSOR_TIMEOUT_S) -> int:
        now = trio.current_time()
        stale = [cid for cid, c in self._cursors.items()
                 if cid not in self._pinned and not getattr(c, "no_timeout", False) and now - c.last_used > timeout]
        for cid in stale:
            self.remove(cid)
        return len(stale)

    async def get_more(self, cmd: dict, db: str, *, client: bool = True) -> dict:
        """Run a getMore; a `client`'s must give its cursor's API parameters (mongos's to a shard
        carries its own)."""
        cid = cmd.get("getMore")
        if not isinstance(cid, int) or isinstance(cid, bool):
            raise MongoError("TypeMismatch", "BSON field 'getMore.getMore' is the wrong type, expected type 'long'")
        coll = cmd.get("collection")
        if not isinstance(coll, str):
            raise MongoError("TypeMismatch" if coll is not None else 40414,
                             "BSON field 'getMore.collection' is missing but a required field" if coll is None
                             else "BSON field 'getMore.collection' is the wrong type, expected type 'string'")
        ns = f"{db}.{coll}"
        cur = self.lookup(int(cid), ns)
        if client:
            api_parameters.mismatch("getMore", cmd, self._api_params.get(int(cid), {}), "the cursor-creating command")
        batch_size = cmd.get("batchSize")
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 0):
            raise MongoError("BadValue", "Batch size for getMore must be positive, but received: " + str(batch_size))
        max_time_ms = generic_max_time_ms(cmd)
        self.pin(int(cid))
        try:
            if int(cid) in self._time_limited:
                check_max_time_always_times_out(self.node.failpoints, cmd, True)
            batch, fields, exhausted = await cur.get_more(batch_size, max_time_ms)
        except MongoError:
            self.remove(int(cid))
            raise
        finally:
            self.unpin(int(cid))
        if exhausted:
            self.remove(int(cid))
        return cursor_reply(batch, 0 if exhausted else int(cid), ns, first=False, fields=fields)
