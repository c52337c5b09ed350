"""A node's change-stream cursor: runs the stages in batches and computes the postBatchResumeToken.

A batch ends when it holds `batchSize` events (or ~16 MiB), or when the oplog
has nothing more (PAUSE).  The postBatchResumeToken (PBRT):

- after an event, that event's token;
- at the end of the oplog, a high-water-mark token at the latest oplog
  timestamp scanned — but only if that is later than the PBRT's own time, so
  it never moves back (PlanExecutorPipeline::_setSpeculativeReadTimestamp).

In `instant_hwm` mode an idle node promises its current cluster time + 1 at
once: every future entry on this node will have a later timestamp, so the
promise holds, and a cold shard no longer holds a merged stream back until
its next periodic noop.

getMore waits (awaitData) up to maxTimeMS (default 1 s) for a batch with at
least one event — through oplog entries that are not the stream's events; if
none comes, it returns an empty batch whose PBRT may still have advanced.
(With instant HWM, a shard feeding a router answers as soon as its promise
moves, so that the router's merge can move on.)
"""

from __future__ import annotations

from typing import Any

import trio

from mongosim.oplog import bsonutil
from mongosim.oplog.errors import MongoError
from mongosim.oplog.resume_token import encode_high_water_mark
from mongosim.shardsim.changestream.context import PAUSE, ChangeStreamContext, Invalidated, Stage
from mongosim.shardsim.changestream.oplog_match import OplogMatch

DEFAULT_AWAIT_MS = 1000
MAX_EVENT_BYTES = bsonutil.MAX_BSON_OBJECT_SIZE + 16 * 1024  # BSONObjMaxInternalSize
# Internal cursor fields for the router (shard part of a sharded stream).
SORT_KEYS_FIELD = "$_sortKeys"
ID_INTACT_FIELD = "$_idIntact"
OP_TYPES_FIELD = "$_opTypes"
BATCH_BYTES = bsonutil.MAX_BSON_OBJECT_SIZE - 64 * 1024
SLICE = 128  # events pulled between two checkpoints of a large batch (fill_batch)

# Raised to the client when a user stage rewrote an event's _id (the resume token).
ID_MODIFIED_MSG = (
    "Encountered an event whose _id field, which contains the resume token, was modified by the pipeline. "
    "Modifying the _id field of an event makes it impossible to resume the stream from that point. "
    "Only transformations that retain the unmodified _id field are allowed."
)


class ChangeStreamCursor:
    is_change_stream = True

    def __init__(self, ctx: ChangeStreamContext, source: OplogMatch, top: Stage, stages: list[Stage],
                 ns: str, initial_pbrt: dict, initial_pbrt_key: int) -> None:
        self.ctx = ctx
        self.node = ctx.node
        self.source = source
        self.top = top
        self.stages = stages
        self.ns = ns
        self.pbrt = initial_pbrt
        self.pbrt_key = initial_pbrt_key
        self.exhausted = False
        self.invalidated = False
        self.interrupt: MongoError | None = None  # set when the node shuts down under an in-flight getMore
        self.last_used = 0.0
        self._stash: Any = None

    # -- one batch ----------------------------------------------------------------------
    def run_batch(self, limit: int) -> list[tuple[dict, Any, bool, str]]:
        """Pull up to `limit` events: [(token, encoded event, _id intact, operationType)]."""
        out: list[tuple[dict, Any, bool, str]] = []
        self._pull(out, limit, 0)
        return out

    def _pull(self, out: list, limit: int, size: int) -> int:
        """Append events to `out` until it holds `limit` (or the stream pauses); return its bytes."""
        if self.exhausted:
            return size
        top = self.top
        while len(out) < limit:
            if self._stash is not None:
                ev, self._stash = self._stash, None
            else:
                try:
                    ev = top.get_next()
                except Invalidated:
                    self.exhausted = True
                    self.invalidated = True
                    break
            if ev is PAUSE:
                self._advance_hwm()
                break
            raw = ev.raw
            intact = True
            if raw is None:
                raw = bsonutil.encode_in_order(ev.doc)
                intact = ev.doc.get("_id") == ev.token
            if len(raw) > MAX_EVENT_BYTES:
                raise MongoError("BSONObjectTooLarge",
                                 f"BSONObj size: {len(raw)} ({len(raw):#X}) is invalid. Size must be between 0 and "
                                 f"{MAX_EVENT_BYTES}(16MB) First element: _id: {ev.token}")
            if out and size + len(raw) > BATCH_BYTES:
                self._stash = ev
                break
            size += len(raw)
            out.append((ev.token, raw, intact, ev.op_type))
            self.pbrt = ev.token
            self.pbrt_key = ev.ts_key
        return size

    def _advance_hwm(self) -> None:
        latest = self.source.latest_key
        if self.node.instant_hwm and self.source.pos >= self.node.oplog.end:
            # only with the whole oplog read: an entry written since the last scan (e.g. at the very
            # instant the awaitData wait timed out) is below the clock and must be sent first
            latest = max(latest, self.node.clock.key + 1)
        if latest > self.pbrt_key:
            if self.ctx.trace is not None:
                self.ctx.emit("promise", ts=latest, previous=self.pbrt["_data"],
                              why="instant" if latest > self.source.latest_key else "oplog")
            self.pbrt = {"_data": encode_high_water_mark(latest)}
            self.pbrt_key = latest

    async def fill_batch(self, limit: int) -> list[tuple[dict, Any, bool, str]]:
        """`run_batch` in slices of SLICE events with a checkpoint between them, so that a large
        batch does not hold the event loop: other clients' commands (and the router answering its
        client from what it has buffered) run in between."""
        out: list = []
        size = 0
        while True:
            want = min(limit, len(out) + SLICE)
            size = self._pull(out, want, size)
            if len(out) < want or want == limit:
                return out
            await trio.lowlevel.checkpoint()
            if self.interrupt is not None:
                raise self.interrupt

    # -- cursor protocol ------------------------------------------------------------------
    async def get_more(self, batch_size: int | None, max_time_ms: int | None):
        limit = batch_size if batch_size else 2**31
        promised_before = self.pbrt_key
        batch = await self.fill_batch(limit)
        # instant-HWM: a promise that moved is news for a router; do not sit on it (a client reading a
        # replica set waits through entries that are not its events, up to maxTimeMS, as on the server)
        instant = self.node.instant_hwm and self.ctx.needs_merge
        if instant and self.pbrt_key > promised_before:
            return self.finish(batch), self.reply_fields(batch), self.exhausted
        if not batch and not self.exhausted:
            wait = (max_time_ms if max_time_ms is not None else DEFAULT_AWAIT_MS) / 1000.0
            with trio.move_on_after(wait):
                while True:
                    if instant:  # woken by new entries, or by a newer cluster time to promise
                        await self.node.wait_for_progress(self.source.pos, self.pbrt_key)
                    else:
                        await self.node.oplog.wait_for_entries_after(self.source.pos)
                    if self.interrupt is not None:
                        raise self.interrupt
                    promised = self.pbrt_key
                    batch = self.run_batch(limit)
                    if batch or self.exhausted or (instant and self.pbrt_key > promised):
                        break
            if self.interrupt is not None:
                raise self.interrupt
            if not batch and instant:
                # Scan again before promising the clock: an entry appended while the wait was
                # being cancelled must not be promised away (it would come after a later shard's).
                batch = self.run_batch(limit)
        return self.finish(batch), self.reply_fields(batch), self.exhausted

    def reply_fields(self, batch: list | None = None) -> dict:
        """`postBatchResumeToken`, plus (for a router) each event's sort key, _id check and type."""
        fields: dict[str, Any] = {"postBatchResumeToken": self.pbrt}
        if self.ctx.needs_merge:
            batch = batch or []
            fields[SORT_KEYS_FIELD] = [t for t, _r, _i, _o in batch]
            fields[ID_INTACT_FIELD] = [i for _t, _r, i, _o in batch]
            fields[OP_TYPES_FIELD] = [o for _t, _r, _i, o in batch]
        return fields

    def finish(self, batch: list) -> list:
        """The batch's documents; for a replica-set stream, check that `_id` is intact first."""
        if not self.ctx.needs_merge:
            for _tok, _raw, intact, _op in batch:
                if not intact:
                    raise MongoError("ChangeStreamFatalError", ID_MODIFIED_MSG)
        return bsonutil.RawBatch([raw for _tok, raw, _intact, _op in batch])

    def close(self) -> None:
        self.exhausted = True
