"""Reading a change stream from an offset, for both modes of `mongodb-changestream`.

- `RawChangeStream`: the driver protocol itself — `aggregate` with `$changeStream`
  (plus `$_passthroughToShard` in shards mode), then `getMore`s — handing out
  each event as its raw BSON bytes and its sort key, read straight from the
  bytes (`event_key`): no event is decoded here, and a reply's batch is cut
  into its events' bytes without a Python object per event (`split_cursor`).
  Events go out one by one (`try_next`) or a whole batch at a time
  (`try_next_batch`: what a micro-batch reads).  pymongo's `watch()` decodes
  every event's `_id` to track its resume token, and cannot add
  `$_passthroughToShard`; this loop does neither.  Like pymongo's change
  stream it resumes once after a resumable error (a network error,
  CursorNotFound, or an error labelled ResumableChangeStreamError) from the
  last token it handed out, and its `resume_token` follows pymongo's rule: the
  last event's `_id`, or the batch's postBatchResumeToken once the batch is
  used up.  With `read_ahead`, the next getMore is sent (from one helper
  thread) as soon as a batch arrives, so that the server prepares the next
  batch while the rows of this one are built; the batches grow from 1000
  events, doubling up to the batch size, so the first rows are built while the
  server is still rendering.
- `TokenStream`: a stream opened at an offset (`offsets.watch_start_kwargs`:
  at its clusterTime), skipping the events up to the offset's token, and
  failing as ChangeStreamFatalError would if an event token it must see is
  not in the stream.
- `ContinuingStream`: a TokenStream that goes on past an `invalidate` (reopened
  with startAfter it), and `batches_through`: its events up to a batch's end.
"""

from __future__ import annotations

import struct
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator, Sequence

from bson.raw_bson import RawBSONDocument

from mongosim.spark import offsets as off

NAME = "mongodb-changestream"

# Server errors worth a clear explanation (code -> what it means for the query).
_EXPLAIN = {
    286: "ChangeStreamHistoryLost: the oplog no longer reaches back to this offset (it was truncated). "
         "The events since then are gone; start a new query (a new checkpoint) or use startAtOperationTime.",
    280: "ChangeStreamFatalError: the offset's resume token is not in the stream any more.",
    260: "InvalidResumeToken: the server refused the offset's resume token.",
    47: "NoMatchingDocument: a pre- or post-image required by fullDocument/fullDocumentBeforeChange is missing.",
}


class ChangeStreamSourceError(RuntimeError):
    """The query cannot go on (the message says why and where)."""


def wrap_error(exc: BaseException, what: str, offset: dict | None) -> ChangeStreamSourceError:
    from pymongo.errors import OperationFailure

    if isinstance(exc, OperationFailure):
        code = exc.code
        errmsg = (exc.details or {}).get("errmsg") or str(exc)
        detail = f"{_EXPLAIN.get(code, '')} Server error {code} ({(exc.details or {}).get('codeName')}): {errmsg}"
    else:
        detail = f"{type(exc).__name__}: {exc}"
    return ChangeStreamSourceError(f"{NAME}: {what} after {off.describe(offset)} failed. {detail.strip()}")


READ_AHEAD_AWAIT_MS = 50
# the getMore wait of a stream read up to a point the server has promised already: all it has to send
# is there, so an empty batch (with the promise as its postBatchResumeToken) need not be waited for
PROMISED_AWAIT_MS = 1
READ_AHEAD_FIRST_BATCH = 1000  # with read-ahead, the first batch size; it doubles up to `batch_size`
_INT = struct.Struct("<i")
_ID_HEAD = b"\x03_id\x00"  # an event's first element: the `_id` document
_DATA_HEAD = b"\x02_data\x00"  # its first element: the `_data` string


def event_key(raw: bytes) -> str:
    """The resume token `_data` of an event's BSON, read at its place (`_id` first, `_data` first in it),
    or by decoding when the event is laid out otherwise."""
    if raw[4:9] == _ID_HEAD and raw[13:20] == _DATA_HEAD:
        (n,) = _INT.unpack_from(raw, 20)
        return raw[24:23 + n].decode("ascii")
    from mongosim.spark.schema import decode_event

    return decode_event(raw)["_id"]["_data"]


# BSON element types whose value has a fixed size, and those whose value starts with an int32 length
# (value size = that length + the extra bytes before it or not counted in it)
_FIXED = {0x01: 8, 0x06: 0, 0x07: 12, 0x08: 1, 0x09: 8, 0x0A: 0, 0x10: 4, 0x11: 8, 0x12: 8, 0x13: 16,
          0x7F: 0, 0xFF: 0}
_LENGTH_PLUS = {0x02: 4, 0x03: 0, 0x04: 0, 0x05: 5, 0x0D: 4, 0x0E: 4, 0x0F: 0}


def split_cursor(raw: bytes | memoryview, field: str) -> tuple[bytes, list[bytes]] | None:
    """A reply's cursor document (`raw`) cut in two without decoding its batch: a document of its other
    fields (`id`, `ns`, `postBatchResumeToken`, ...) and the documents of its array `field` as raw BSON,
    each sliced from `raw` (a RawBSONDocument would build a Python object per event).  None when the
    document holds an element of a type not walked here, or no `field`."""
    raw = bytes(raw)  # (a nested RawBSONDocument's is a memoryview of the reply)
    name = field.encode() + b"\x00"
    pos, end = 4, len(raw) - 1
    rest: list[bytes] = []
    docs: list[bytes] | None = None
    unpack = _INT.unpack_from
    while pos < end:
        t = raw[pos]
        value = raw.index(0, pos + 1) + 1
        if t in _FIXED:
            nxt = value + _FIXED[t]
        elif t in _LENGTH_PLUS:
            nxt = value + unpack(raw, value)[0] + _LENGTH_PLUS[t]
        else:
            return None
        if t == 0x04 and raw[pos + 1:value] == name:
            docs = []
            p, stop = value + 4, nxt - 1
            while p < stop:  # the array's elements: 0x03, the index, a document
                if raw[p] != 0x03:
                    return None
                p = raw.index(0, p + 1) + 1
                n = unpack(raw, p)[0]
                docs.append(raw[p:p + n])
                p += n
        else:
            rest.append(raw[pos:nxt])
        pos = nxt
    if docs is None:
        return None
    body = b"".join(rest)
    return _INT.pack(len(body) + 5) + body + b"\x00", docs


def _resumable(exc: BaseException) -> bool:
    from pymongo.errors import ConnectionFailure, OperationFailure

    if isinstance(exc, ConnectionFailure):
        return True
    return isinstance(exc, OperationFailure) and (
        exc.code == 43 or exc.has_error_label("ResumableChangeStreamError"))


class RawChangeStream:
    """A change stream read with aggregate/getMore, event by event as (sort key, raw BSON)."""

    def __init__(self, db: Any, target: Any, spec: dict, pipeline: list, *, batch_size: int | None,
                 await_ms: int, extra: dict | None = None, read_ahead: bool = False,
                 until: str | None = None) -> None:
        from bson.codec_options import CodecOptions

        self.db = db
        # one explicit session for the cursor's whole life: a server refuses a getMore in another
        # session than its aggregate's (pymongo's command() would give each its own implicit one)
        self.session = db.client.start_session(causal_consistency=False)
        self.codec = CodecOptions(document_class=RawBSONDocument)
        self.target = target
        self.spec = spec
        self.pipeline = pipeline
        self.extra = extra or {}
        self.batch_size = batch_size
        # with read-ahead, batches grow from a small first one: the first events come before the server
        # has rendered a whole large batch, and it renders each next one while this one is used
        self._size = min(batch_size, READ_AHEAD_FIRST_BATCH) if batch_size and read_ahead else batch_size
        self.await_ms = await_ms
        # `until`: the sort key up to which the reader wants events and the server has promised them
        # (a planned batch's end): getMores do not wait (PROMISED_AWAIT_MS) until a batch reaches it —
        # and then none is sent ahead.  An empty batch short of it (the promise not kept, e.g. after a
        # failover) ends the shortcut: the next getMores wait `await_ms`.
        self.until = until
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="mongosim-read-ahead") if read_ahead else None
        self._pending = None  # the read-ahead getMore in flight
        self._keys: list[str] = []  # the batch being handed out: sort keys and raw events, from `_next` on
        self._raws: list[bytes] = []
        self._next = 0
        self._last_raw: bytes | None = None  # the last event handed out (to resume after it)
        self.cursor_id = 0
        self.resume_token: Any = None
        self.resumes = 0  # how many times the stream was resumed after an error
        try:
            self._open(spec)
        except BaseException:
            self.close()
            raise

    def _command(self, cmd: dict) -> Any:
        return self.db.command(cmd, codec_options=self.codec, session=self.session)

    def _open(self, spec: dict) -> None:
        cursor = {"batchSize": self._size} if self._size else {}
        reply = self._command({"aggregate": self.target, "pipeline": [{"$changeStream": spec}, *self.pipeline],
                               "cursor": cursor, **self.extra})
        self._take(reply["cursor"], "firstBatch")
        self.collection = self._ns.split(".", 1)[1]

    def _take(self, cur: Any, field: str) -> None:
        parts = split_cursor(cur.raw, field)
        if parts is None:  # laid out otherwise: event by event
            raws = [bytes(doc.raw) for doc in cur[field]]
        else:
            cur, raws = RawBSONDocument(parts[0], self.codec), parts[1]
        self.cursor_id = int(cur["id"])
        self._ns = cur["ns"]
        self._pbrt = cur.get("postBatchResumeToken")
        self._keys = self._keys[self._next:] + [event_key(raw) for raw in raws]
        self._raws = self._raws[self._next:] + raws
        self._next = 0
        if not self._raws and self._pbrt is not None:
            self.resume_token = self._pbrt

    def _get_more(self, await_ms: int) -> Any:
        if self.until is not None:
            await_ms = PROMISED_AWAIT_MS
        cmd: dict[str, Any] = {"getMore": self.cursor_id, "collection": self.collection, "maxTimeMS": await_ms}
        if self._size:
            cmd["batchSize"] = self._size
            self._size = min(2 * self._size, self.batch_size)
        return self._command(cmd)

    def _resume(self) -> None:
        """Open the stream again after the last event handed out (or at the last promise)."""
        from mongosim.spark.schema import decode_event

        starts = ("startAfter", "resumeAfter", "startAtOperationTime")
        # the real `_id` document (with its `_typeBits`), or the server's own promise
        token = decode_event(self._last_raw)["_id"] if self._last_raw is not None else self.resume_token
        spec = {k: v for k, v in self.spec.items() if k not in starts or token is None}
        if token is not None:
            spec["startAfter"] = token
        self.resumes += 1
        self._open(spec)

    @property
    def alive(self) -> bool:
        return self.cursor_id != 0 or self._next < len(self._raws)

    def _hand_out(self, stop: int) -> tuple[list[str], list[bytes]]:
        """The buffered events up to index `stop` (the resume token moves past them)."""
        i, self._next = self._next, stop
        keys, raws = self._keys[i:stop], self._raws[i:stop]
        self._last_raw = raws[-1]
        self.resume_token = {"_data": keys[-1]} if stop < len(self._raws) else (self._pbrt or {"_data": keys[-1]})
        return keys, raws

    def try_next(self) -> tuple[str, bytes] | None:
        """The next (sort key, raw event), or None when the server has nothing more right now."""
        if self._next < len(self._raws) or self._fetch():
            keys, raws = self._hand_out(self._next + 1)
            return keys[0], raws[0]
        return None

    def try_next_batch(self) -> tuple[list[str], list[bytes]]:
        """Every buffered event, else the server's next batch, as (sort keys, raw events); both empty
        when the server has nothing more right now."""
        if self._next < len(self._raws) or self._fetch():
            return self._hand_out(len(self._raws))
        return [], []

    def _fetch(self) -> bool:
        """The next batch from the server (the read-ahead getMore's, if one is in flight) into the
        buffer; False if it holds nothing."""
        if not self.cursor_id:
            return False
        try:
            if self._pending is not None:
                pending, self._pending = self._pending, None
                reply = pending.result()
            else:
                reply = self._get_more(self.await_ms)
        except Exception as exc:  # noqa: BLE001 - resumed once if resumable, as a driver's change stream is
            if not _resumable(exc):
                raise
            self._resume()
            return bool(self._raws)
        self._take(reply["cursor"], "nextBatch")
        until = self.until
        if until is not None:
            pbrt = self._pbrt["_data"] if self._pbrt is not None else ""
            if self._keys and self._keys[-1] >= until or pbrt >= until:
                return bool(self._raws)  # all that is wanted is here: nothing to read ahead
            if not self._raws:
                self.until = None  # short of the promise: wait from now on
        if self._pool is not None and self._raws and self.cursor_id:
            # read ahead while this batch is used; a short wait if nothing is there yet, since the
            # stream may be closed before its answer is wanted (close() waits for it)
            self._pending = self._pool.submit(self._get_more, min(self.await_ms, READ_AHEAD_AWAIT_MS))
        return bool(self._raws)

    def close(self) -> None:
        if self._pending is not None:
            try:
                self._pending.result()
            except Exception:  # noqa: BLE001 - the stream is closing
                pass
            self._pending = None
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        try:
            if self.cursor_id:
                cid, self.cursor_id = self.cursor_id, 0
                self.db.command({"killCursors": self.collection, "cursors": [cid]}, session=self.session)
        except Exception:  # noqa: BLE001 - best effort, as a driver's close()
            pass
        finally:
            self.session.end_session()


class TokenStream:
    """A change stream opened at an offset, yielding only what comes after it.

    The stream opens at the offset's clusterTime (see `offsets.watch_start_kwargs`);
    events up to the offset's token are skipped here.  If the offset is an event
    token and the stream passes it without having seen it, the token is not in
    this stream (e.g. the pipeline changed): that fails, as the server's
    ChangeStreamFatalError (280) would.
    """

    def __init__(self, cs: RawChangeStream, start: dict | None) -> None:
        self.cs = cs
        self.start_key = off.offset_sort_key(start) if start is not None else None
        self.must_see = start is not None and "token" in start and "start_after" not in off.watch_start_kwargs(start) \
            and off.token_kind(start["token"]) == "event"
        self.closed = False
        self.last_key: str | None = None  # the last event pulled, skipped or not

    def __enter__(self) -> "TokenStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.cs.close()

    @property
    def pbrt(self) -> str | None:
        tok = self.cs.resume_token
        return tok["_data"] if tok is not None else None

    def next_event(self) -> tuple[str, bytes] | None:
        """The next (sort key, raw event) after the start, or None if there is none right now."""
        while True:
            ev = self.cs.try_next()
            if ev is None:
                self._pulled(())
                return None
            if self._pulled((ev[0],)) == 0:
                return ev

    def next_batch(self) -> tuple[list[str], list[bytes]]:
        """The next events after the start, as many as the stream has buffered (`try_next_batch`):
        (sort keys, raw events), both empty if there is none right now."""
        while True:
            keys, raws = self.cs.try_next_batch()
            i = self._pulled(keys)
            if not keys or i < len(keys):
                return (keys[i:], raws[i:]) if i else (keys, raws)

    def _pulled(self, keys: Sequence[str]) -> int:
        """Take note of the events just pulled from the stream, by their keys: the index of the first
        one after the start (those before it are skipped; len(keys) if none)."""
        if not self.cs.alive:
            self.closed = True
        if not keys:
            return 0
        self.last_key = keys[-1]
        start = self.start_key
        if start is None:
            return 0
        for i, key in enumerate(keys):
            if key > start:
                if self.must_see:
                    raise ChangeStreamSourceError(
                        f"{NAME}: the offset's token {start} is not in the stream any more (the stream "
                        f"went on at {key} without it; was the pipeline or the namespace changed?). "
                        "ChangeStreamFatalError: cannot resume from this checkpoint.")
                self.start_key = None
                return i
            if key == start:
                self.must_see = False
        return len(keys)

    def next_key(self) -> str | None:
        ev = self.next_event()
        return None if ev is None else ev[0]


class ContinuingStream:
    """The events after a position, going on past invalidates: when a stream ends at an `invalidate`,
    the next is opened with startAfter it (`next_event` -> the next event, or None when there is
    nothing more right now; `pbrt`: the current promise; `closed`: ended, not at an invalidate)."""

    def __init__(self, open_stream: Callable[[dict | None], TokenStream], position: dict | None) -> None:
        self.open_stream = open_stream
        self.ts = open_stream(position)

    @property
    def pbrt(self) -> str | None:
        return self.ts.pbrt

    @property
    def closed(self) -> bool:
        return self.ts.closed

    def next_event(self) -> tuple[str, bytes] | None:
        while True:
            ev = self.ts.next_event()
            if ev is not None or not self._past_invalidate():
                return ev

    def next_batch(self) -> tuple[list[str], list[bytes]]:
        while True:
            keys, raws = self.ts.next_batch()
            if keys or not self._past_invalidate():
                return keys, raws

    def _past_invalidate(self) -> bool:
        """If the stream ended at an `invalidate`, open the next one with startAfter it (True)."""
        if self.ts.closed and self.ts.last_key is not None and off.token_kind(self.ts.last_key) == "invalidate":
            after = self.ts.last_key
            self.ts.cs.close()
            self.ts = self.open_stream(off.token_offset(after))
            return True
        return False

    def close(self) -> None:
        self.ts.cs.close()


def batches_through(events: ContinuingStream, end_key: str, deadline: float, late: Callable[[], str],
                    on_past: Callable[[str], None] | None = None) -> Iterator[tuple[list[str], list[bytes]]]:
    """The events of `events` up to and including `end_key`, as the stream hands them out: (sort keys,
    raw events) batch after batch, until that event, an event past it (`on_past(its key)`), the
    stream's end, or a promise (postBatchResumeToken) that reaches it; after `deadline`
    (time.monotonic()) without any of those, ChangeStreamSourceError(late())."""
    while True:
        keys, raws = events.next_batch()
        if not keys:
            if events.closed or (events.pbrt is not None and events.pbrt >= end_key):
                return
            if time.monotonic() > deadline:
                raise ChangeStreamSourceError(late())
            continue
        if max(keys) < end_key:
            yield keys, raws
            continue
        i = next(i for i, key in enumerate(keys) if key >= end_key)
        if keys[i] == end_key:
            yield keys[:i + 1], raws[:i + 1]
            return
        if i:
            yield keys[:i], raws[:i]
        if on_past is not None:
            on_past(keys[i])
        return


def open_spec(opts: Any, position: dict | None, *, light: bool) -> dict:
    """The `$changeStream` document for a stream opened at `position` (`light`: without the images,
    when only the tokens are read and no user stage looks at the images)."""
    spec = opts.change_stream_spec()
    if light:
        spec.pop("fullDocument", None)
        spec.pop("fullDocumentBeforeChange", None)
    if position is not None:
        kw = off.watch_start_kwargs(position)
        if "start_after" in kw:
            spec["startAfter"] = kw["start_after"]
        else:
            spec["startAtOperationTime"] = kw["start_at_operation_time"]
    return spec
