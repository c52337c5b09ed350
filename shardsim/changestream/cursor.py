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
from mongosim.shardsim.changestream import batch_render
from mongosim.shardsim.changestream.context import PAUSE, ChangeStreamContext, Invalidated, Stage
from mongosim.shardsim.changestream.event_batch import (  # noqa: F401  (the router's merge reads these fields)
    BATCH_BYTES,
    OVERHEAD,
    ID_ALTERED_FIELD,
    OP_TYPES_FIELD,
    SORT_KEYS_FIELD,
    TYPE_BITS_FIELD,
    EventBatch,
)
from mongosim.shardsim.changestream.oplog_match import OplogMatch
from mongosim.shardsim.changestream.split_large_event import LIMIT as SPLIT_LIMIT, SplitLargeEvent

DEFAULT_AWAIT_MS = 1000
MAX_EVENT_BYTES = bsonutil.MAX_BSON_OBJECT_SIZE + 16 * 1024  # BSONObjMaxInternalSize
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
        self._run = self._run_renderer()

    def _run_renderer(self) -> "batch_render.RunRenderer | None":
        """The run renderer, unless a stage can never be bypassed (user stages, images, raw update
        descriptions) or the stages are traced (a trace tells every event's way through them)."""
        if self.ctx.trace is not None or self.ctx.spec.show_raw_update_description:
            return None
        if not all(s.bypassable for s in self.stages):
            return None
        split = any(isinstance(s, SplitLargeEvent) for s in self.stages)
        return batch_render.RunRenderer(self, SPLIT_LIMIT if split else MAX_EVENT_BYTES,
                                        with_sort_key=split and self.ctx.needs_merge)

    # -- one batch ----------------------------------------------------------------------
    def run_batch(self, limit: int) -> list[tuple[dict, Any, bool, str]]:
        """Pull up to `limit` events: [(token, encoded event, _id intact, operationType)]."""
        return self.pull_batch(limit).events()

    def pull_batch(self, limit: int) -> EventBatch:
        batch = EventBatch()
        self._pull(batch, limit)
        return batch

    def _pull(self, batch: EventBatch, limit: int) -> None:
        """Add events to `batch` until it holds `limit` (or the stream pauses).

        Runs of CRUD entries go through the run renderer when every stage would pass them on
        unchanged; anything else goes through the stages, one event at a time."""
        if self.exhausted:
            return
        top = self.top
        run = self._run
        while len(batch) < limit:
            if run is not None and self._stash is None and run.ready():
                how = run.fill(batch, limit)
                if how == batch_render.END:
                    self._advance_hwm()
                    break
                if how == batch_render.FULL:
                    break
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
                intact = _same_token(ev.doc.get("_id"), ev.token)
            if len(raw) > MAX_EVENT_BYTES:
                raise MongoError("BSONObjectTooLarge",
                                 f"BSONObj size: {len(raw)} ({len(raw):#X}) is invalid. Size must be between 0 and "
                                 f"{MAX_EVENT_BYTES}(16MB) First element: _id: {ev.token}")
            if len(batch) and batch.size + len(raw) + OVERHEAD > BATCH_BYTES:
                self._stash = ev
                break
            batch.append(ev.token, raw, intact, ev.op_type)
            self.pbrt = ev.token
            self.pbrt_key = ev.ts_key

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

    async def fill_batch(self, limit: int) -> EventBatch:
        """`pull_batch` in slices of SLICE events with a checkpoint between them, so that a large
        batch does not hold the event loop: other clients' commands (and the router answering its
        client from what it has buffered) run in between."""
        batch = EventBatch()
        while True:
            want = min(limit, len(batch) + SLICE)
            self._pull(batch, want)
            if len(batch) < want or want == limit:
                return batch
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
        if not len(batch) and not self.exhausted:
            wait = (max_time_ms if max_time_ms is not None else DEFAULT_AWAIT_MS) / 1000.0
            with trio.move_on_after(wait):
                while True:
                    # (read each time: a primary stepping down stops promising)
                    instant = self.node.instant_hwm and self.ctx.needs_merge
                    if instant:  # woken by new entries, or by a newer cluster time to promise
                        await self.node.wait_for_progress(self.source.pos, self.pbrt_key)
                    else:
                        await self.node.oplog.wait_for_entries_after(self.source.pos)
                    if self.interrupt is not None:
                        raise self.interrupt
                    promised = self.pbrt_key
                    batch = self.pull_batch(limit)
                    if len(batch) or self.exhausted or (instant and self.pbrt_key > promised):
                        break
            if self.interrupt is not None:
                raise self.interrupt
            if not len(batch) and instant:
                # Scan again before promising the clock: an entry appended while the wait was
                # being cancelled must not be promised away (it would come after a later shard's).
                batch = self.pull_batch(limit)
        return self.finish(batch), self.reply_fields(batch), self.exhausted

    def reply_fields(self, batch: EventBatch | None = None) -> dict:
        """`postBatchResumeToken`, plus (for a router) the batch's columns (event_batch)."""
        fields: dict[str, Any] = {"postBatchResumeToken": self.pbrt}
        if self.ctx.needs_merge:
            fields.update((batch if batch is not None else EventBatch()).merge_fields())
        return fields

    def finish(self, batch: EventBatch) -> list:
        """The batch's documents; for a replica-set stream, check that `_id` is intact first."""
        if batch.altered and not self.ctx.needs_merge:
            raise MongoError("ChangeStreamFatalError", ID_MODIFIED_MSG)
        return bsonutil.RawBatch(batch.raws)

    def close(self) -> None:
        self.exhausted = True


def _same_token(value: Any, token: dict) -> bool:
    """Is an event's `_id` after the user's stages its resume token, byte for byte (the server's
    binaryEqual of the two)?  The stages see the token as plain values: its `_typeBits` comes back as
    `bytes`, the token holds `Binary(..., 0)` -- the same BSON."""
    return value is token or (type(value) is dict and bsonutil.encode_in_order(value) == bsonutil.encode_in_order(token))
