"""`mongodb-changestream` in router mode (the default): one change stream, read through the router.

    # no registration: Spark finds the format through the installed `pyspark_mongodb_changestream`
    events = (spark.readStream.format("mongodb-changestream")
              .option("uri", "mongodb://127.0.0.1:27017/")
              .option("database", "shop").option("collection", "orders")   # both optional
              .option("maxEventsPerBatch", 10000)
              .load())

It only speaks the driver protocol (pymongo), so it works against mongosim or
any real deployment (replica set or sharded; MongoDB >= 4.2 for
`startAfter`).  Options (all strings), besides those of
`mongosim.spark.options` (namespace, `pipeline`, `fullDocument`,
`fullDocumentBeforeChange`, `showExpandedEvents`, `startAtOperationTime`,
`startAfter`, `fullDocumentSchema`, `includeRawEvent`):

- `uri` (required) — the connection string.
- `maxEventsPerBatch` — admission control: the default read limit becomes
  `ReadMaxRows(n)`; without it a batch takes everything available.
- `maxAwaitTimeMS` (default 500) — getMore wait while reading a batch.
- `probeAwaitTimeMS` (default 100) — getMore wait while looking for the
  latest offset (a short wait: new data is picked up by the next trigger).
- `idleAdvanceSeconds` (default 60) — when no event arrives, move the offset
  to the stream's postBatchResumeToken once it is this far (in cluster time)
  past the current offset (an empty batch), so that a stream filtered down to
  nothing does not fall off the oplog.  0 disables it.
- `readTimeoutSeconds` (default 300) — give up reading a planned batch after
  this long without reaching its end token.

Offsets (see `offsets.py`) are resume tokens — never a client clock.  The
batch planned from offset S to offset E is exactly the events after S up to
and including E.  Every stream is opened at S's clusterTime and the events up
to S's token are skipped (`TokenStream`; an invalidate token is resumed with
`startAfter` instead).  `latestOffset` takes up to the read limit's number of
events, projected to their `_id`, and E is the last one's token; without a
limit, once one event follows S, E is the high-water mark a stream opened now
promises, so the events are read once.  `read` opens the stream at S again
and returns events until it has returned E (or the stream's
postBatchResumeToken reaches E; past an `invalidate` it continues in a stream
opened after it).  A retried or replayed batch reads the same events again,
which with a checkpoint and an idempotent sink (the file sink) gives
exactly-once delivery.  Every batch is one partition: a change stream is one
ordered sequence.

`Trigger.AvailableNow` is supported: `prepareForTriggerAvailableNow` records
a fresh stream's postBatchResumeToken as the target; planning waits until the
stream has promised everything up to the target and never goes past it.

Errors such as ChangeStreamHistoryLost (the oplog no longer reaches back to
the checkpointed token) fail the query with a `ChangeStreamSourceError` that
names the offset and the server's error.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Iterator

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from mongosim.spark import client_cache
from mongosim.spark import offsets as off
from mongosim.spark.options import StreamOptions, parse_float, parse_int
from mongosim.spark.schema import RowBuilder
from mongosim.spark.streams import (
    NAME,
    ChangeStreamSourceError,
    ContinuingStream,
    RawChangeStream,
    TokenStream,
    batches_through,
    open_spec,
)
from mongosim.spark.streams import wrap_error as _wrap

log = logging.getLogger("mongosim.spark.source")

class TokenRange(InputPartition):
    """One batch: the events after `start` up to and including `end`."""

    def __init__(self, start: dict, end: dict) -> None:
        self.start = start
        self.end = end

    def __repr__(self) -> str:
        return f"TokenRange({off.describe(self.start)} .. {off.describe(self.end)})"


class MongoChangeStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: dict, schema: Any) -> None:
        self.options = options = {k.lower(): v for k, v in options.items()}  # Spark lower-cases the keys
        self.opts = StreamOptions.parse(options)
        self.uri = options.get("uri")
        if not self.uri:
            raise ValueError(f"{NAME}: the option uri is required")
        self.max_events = parse_int("maxEventsPerBatch", options.get("maxeventsperbatch"), None, minimum=1)
        self.max_await_ms = parse_int("maxAwaitTimeMS", options.get("maxawaittimems"), 500)
        self.probe_await_ms = parse_int("probeAwaitTimeMS", options.get("probeawaittimems"), 100)
        self.idle_advance = parse_float("idleAdvanceSeconds", options.get("idleadvanceseconds"), 60.0)
        self.read_timeout = parse_float("readTimeoutSeconds", options.get("readtimeoutseconds"), 300.0)
        self.rows = RowBuilder.for_schema(schema)
        self._client = None
        self._shared = False  # `_client` is the worker's shared one (`client_cache`)
        self._initial: dict | None = None
        self._target: str | None = None  # availableNow: the sort key not to go past

    # -- pickling: never ship a client -------------------------------------------------
    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_client"], state["_shared"] = None, False
        return state

    # -- pymongo ------------------------------------------------------------------------
    def _mongo(self):
        """The reader's client: on an executor its worker's shared one (`client_cache`), else its own."""
        if self._client is None:
            if client_cache.on_executor():
                self._client = client_cache.shared_client(self.uri, self._open_client)
                self._shared = True
            else:
                self._client = self._open_client()
        return self._client

    def _open_client(self):
        from bson.raw_bson import RawBSONDocument
        from pymongo import MongoClient

        return MongoClient(self.uri, document_class=RawBSONDocument, appname="mongosim-spark")

    def _raw_stream(self, start: dict | None, *, probe: bool, await_ms: int, batch_size: int | None = None,
                    extra: dict | None = None, until: str | None = None) -> RawChangeStream:
        """A stream opened at `start` (`streams.RawChangeStream`).  The probe needs only the tokens: the
        images do not change which events come, unless the user's stages look at them (then they stay),
        and the user's stages are followed by a projection to `_id`.  Reading (a large batch size)
        reads ahead."""
        o = self.opts
        pipeline = list(o.pipeline)
        if probe and not any("$changeStreamSplitLargeEvent" in st for st in pipeline):
            pipeline.append({"$project": {"_id": 1}})
        db = self._mongo().get_database(o.database or "admin")
        return RawChangeStream(db, o.collection or 1, open_spec(o, start, light=probe and not o.pipeline), pipeline,
                               batch_size=batch_size, await_ms=await_ms, extra=extra,
                               read_ahead=(batch_size or 0) >= 1000, until=until)

    def _stream(self, start: dict | None, *, probe: bool, await_ms: int, batch_size: int | None = None,
                until: str | None = None):
        return TokenStream(self._raw_stream(start, probe=probe, await_ms=await_ms, batch_size=batch_size,
                                            until=until), start)

    # -- offsets ------------------------------------------------------------------------
    def initialOffset(self) -> dict:
        if self._initial is not None:  # may be called twice: same answer
            return self._initial
        o = self.opts
        if o.start_after:
            self._initial = off.token_offset(o.start_after)
        elif o.start_at_operation_time is not None:
            self._initial = off.optime_offset(o.start_at_operation_time)
        else:
            self._initial = self._now_offset()
        return self._initial

    def _now_offset(self) -> dict:
        """A fresh stream's starting point: its postBatchResumeToken (or the first event's time)."""
        try:
            cs = self._raw_stream(None, probe=True, await_ms=self.probe_await_ms)
            try:
                for _ in range(2):  # the aggregate's reply, then one getMore
                    if cs.resume_token is not None:
                        return off.token_offset(cs.resume_token["_data"])
                    ev = cs.try_next()
                    if ev is not None:
                        return off.optime_offset(off.token_cluster_time(ev[0]))
            finally:
                cs.close()
        except Exception as exc:
            raise _wrap(exc, "opening the stream", None) from exc
        raise ChangeStreamSourceError(f"{NAME}: the server sent no postBatchResumeToken (MongoDB >= 4.0.7 needed)")

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.max_events) if self.max_events else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """The target of an availableNow run: what a stream opened now promises (a high-water mark)."""
        now = self._now_offset()
        self._target = off.offset_sort_key(now)

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        """The end of the next batch.

        With a row limit: the token of the n-th event after `start` (the probe
        reads the tokens only).  Without one (`ReadAllAvailable`): if at least
        one event follows `start`, the high-water mark a stream opened now
        promises (in an availableNow run, its target) — so the events are
        read once, by `read`, not twice.
        """
        if start is None:
            start = self.initialOffset()
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        min_rows = limit.min_rows if isinstance(limit, ReadMinRows) else None
        all_available = max_rows is None and min_rows is None
        target = self._target
        last, count = None, 0
        deadline = time.monotonic() + self.read_timeout
        try:
            with self._stream(start, probe=True, await_ms=self.probe_await_ms, until=target,
                              batch_size=1 if all_available else min(max_rows or 10_000, 10_000)) as ts:
                while max_rows is None or count < max_rows:
                    key = ts.next_key()
                    if key is None:
                        # caught up; in an availableNow run, only once the stream promised the target
                        if ts.closed or target is None or (ts.pbrt is not None and ts.pbrt >= target):
                            break
                        if time.monotonic() > deadline:
                            raise ChangeStreamSourceError(
                                f"{NAME}: availableNow: the stream did not reach its target {target} "
                                f"(at {ts.pbrt}) within readTimeoutSeconds={self.read_timeout}")
                        continue
                    if target is not None and key > target:
                        break
                    last, count = key, count + 1
                    if all_available:
                        break
                pbrt = ts.pbrt
            if last is not None and all_available and not ts.closed:
                if target is not None:
                    return off.token_offset(target)
                now = self._now_offset()
                if off.offset_sort_key(now) > last:
                    return now
        except ChangeStreamSourceError:
            raise
        except Exception as exc:
            raise _wrap(exc, "looking for new events", start) from exc
        if last is not None:
            if min_rows is not None and count < min_rows:
                return start
            return off.token_offset(last)
        return self._idle_offset(start, pbrt, target)

    def _idle_offset(self, start: dict, pbrt: str | None, target: str | None) -> dict:
        """No event: stay, unless the stream's promise is far enough ahead to move on (an empty batch)."""
        if pbrt is None or self.idle_advance <= 0 or pbrt <= off.offset_sort_key(start) or target is not None:
            return start  # (availableNow: no more events means done, not an empty batch)
        t0, t1 = off.offset_cluster_time(start), off.token_cluster_time(pbrt)
        if t1.time - t0.time >= self.idle_advance:
            return off.token_offset(pbrt)
        return start

    def partitions(self, start: dict, end: dict):
        if start is None:
            start = self.initialOffset()
        if start == end:
            return []
        return [TokenRange(start, end)]

    def commit(self, end: dict) -> None:
        pass  # nothing to acknowledge: the server keeps no per-reader state

    def stop(self) -> None:
        """Let go of the client: close it if it is the reader's own (a worker's shared one stays open)."""
        if self._client is not None:
            if not self._shared:
                self._client.close()
            self._client = None
            self._shared = False

    # -- reading (on an executor) -------------------------------------------------------------
    def read(self, partition: TokenRange) -> Iterator[Any]:
        yield from self.rows.event_batches(self.read_batches(partition.start, partition.end))

    def read_raw(self, start: dict, end: dict) -> Iterator[bytes]:
        """The raw BSON events after `start` up to and including `end`."""
        for raws in self.read_batches(start, end):
            yield from raws

    def read_batches(self, start: dict, end: dict) -> Iterator[list[bytes]]:
        """The raw BSON events after `start` up to and including `end`, as the getMores bring them.

        A collection or database stream ends at an `invalidate`; if the batch
        goes on past it, the rest is read from a stream opened after it.
        """
        end_key = off.offset_sort_key(end)
        deadline = time.monotonic() + self.read_timeout
        try:
            events = ContinuingStream(
                lambda pos: self._stream(pos, probe=False, await_ms=self.max_await_ms, batch_size=10_000,
                                         until=end_key), start)
            try:
                for _, raws in batches_through(events, end_key, deadline, lambda: (
                        f"{NAME}: the batch after {off.describe(start)} did not reach its end "
                        f"{off.describe(end)} within readTimeoutSeconds={self.read_timeout}"), on_past=lambda key:
                        log.warning("%s: end token %s not seen; stopped at %s", NAME, end_key, key)):
                    yield raws
            finally:
                events.close()
        except ChangeStreamSourceError:
            raise
        except Exception as exc:
            raise _wrap(exc, "reading the batch", start) from exc
        finally:
            self.stop()
