"""The AsyncResultsMerger (ARM): one globally ordered stream out of many shard streams.

Per remote (a shard's change-stream cursor, or the config server's):

- a buffer of events, each with its sort key (the resume token's `_data`);
- its *promised minimum sort key*: the latest postBatchResumeToken it sent.
  The shard promises that everything it will still send sorts at or after it.
  A promise never moves back (a regression would be a bug; it raises).

A heap orders the remotes that have buffered events by their front event's
key.  The *minimum promised sort key* (minPromisedSortKey) is the smallest
promise over all remotes (kept in a SortedList); it exists once every remote
has reported one.  The next event may be released only if its key is <= that
minimum (`_readySortedTailable`): no remote can still send anything smaller.
Otherwise the merge waits for the lagging remote — the one holding the
minimum.

When nothing can be released the router's postBatchResumeToken is the
high-water mark: the minimum promised key (if the remote holding it is
eligible; the config server's cursor is not, on its first batch or while its
batch is non-empty).

Sort keys are compared as plain strings: KeyString keeps the BSON order of
(clusterTime, tokenType, txnOpIndex, fromInvalidate, uuid, eventIdentifier).

Which remotes to ask for more (`needs_fetch`): the server asks a remote whose
buffer is empty.  After answering its client, mongosim also reads ahead: it
asks every remote holding less than one client batch (`low_water`), so that the
shards compute the next batches while the client decodes this one.  What is
released, and when, is unchanged: only the number of shard getMores differs.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from sortedcontainers import SortedList

from mongosim.oplog.errors import MongoError


@dataclass(eq=False)
class RemoteCursor:
    shard: str
    remote: Any  # ShardRemote
    cursor_id: int
    ns: str
    is_config: bool = False
    buffer: deque = field(default_factory=deque)  # (key, token, raw, id_intact, operationType)
    promised_key: str | None = None
    promised_token: dict | None = None
    exhausted: bool = False
    eligible_for_hwm: bool = True
    pending: bool = False
    error: MongoError | None = None
    batches: int = 0

    @property
    def collection(self) -> str:
        return self.ns.split(".", 1)[1]


class AsyncResultsMerger:
    def __init__(self, trace: Callable[[dict], None] | None = None) -> None:
        self.remotes: list[RemoteCursor] = []
        self._queue: list[tuple[str, int, int]] = []  # (front key, tiebreak, remote index)
        self._promised = SortedList()  # (promised key, remote index)
        self._seq = itertools.count()
        self.high_water_mark: dict | None = None  # last released token, or the minimum promise
        self.trace = trace
        self._gate_traced: tuple | None = None  # (front key, blockers) last reported as closed

    # -- remotes ------------------------------------------------------------------------
    def add_remote(self, rc: RemoteCursor, first_batch: list, sort_tokens: list[dict], intact: list[bool],
                   op_types: list, pbrt: dict | None, exhausted: bool) -> int:
        idx = len(self.remotes)
        self.remotes.append(rc)
        if self.trace:
            self.trace({"step": "remote_added", "shard": rc.shard})
        self.add_batch(idx, first_batch, sort_tokens, intact, op_types, pbrt, exhausted)
        return idx

    def add_batch(self, idx: int, batch: list, sort_tokens: list[dict], intact: list[bool],
                  op_types: list, pbrt: dict | None, exhausted: bool) -> None:
        """A remote's reply arrived: buffer its events, update its promise."""
        rc = self.remotes[idx]
        was_empty = not rc.buffer
        for raw, tok, ok, op in zip(batch, sort_tokens, intact, op_types):
            rc.buffer.append((tok["_data"], tok, raw, ok, op))
        rc.batches += 1
        if rc.is_config:
            rc.eligible_for_hwm = rc.batches > 1 and not batch
        if pbrt is not None:
            key = pbrt["_data"]
            if rc.promised_key is not None:
                if key < rc.promised_key:
                    raise MongoError("InternalError",
                                     f"postBatchResumeToken of {rc.shard} went backwards: {key} < {rc.promised_key}")
                self._promised.remove((rc.promised_key, idx))
            rc.promised_key = key
            rc.promised_token = pbrt
            self._promised.add((key, idx))
        rc.exhausted = rc.exhausted or exhausted
        if was_empty and rc.buffer:
            heapq.heappush(self._queue, (rc.buffer[0][0], next(self._seq), idx))
        if self.trace:
            self.trace({"step": "batch", "shard": rc.shard, "events": [t["_data"] for t in sort_tokens],
                        "ops": list(op_types), "pbrt": rc.promised_key, "min_promised": self.min_promised_key()})

    # -- the gate -------------------------------------------------------------------------
    def min_promised_key(self) -> str | None:
        """The smallest promise over all remotes, or None until every remote reported one."""
        if len(self._promised) < len(self.remotes) or not self._promised:
            return None
        return self._promised[0][0]

    def min_promised_remote(self) -> RemoteCursor | None:
        if not self._promised:
            return None
        return self.remotes[self._promised[0][1]]

    def ready(self) -> bool:
        """`_readySortedTailable`: is the smallest buffered event at or below minPromisedSortKey?"""
        if not self._queue:
            return False
        m = self.min_promised_key()
        ok = m is not None and self._queue[0][0] <= m
        if self.trace and not ok:
            self._trace_gate_closed(m)
        return ok

    def _trace_gate_closed(self, m: str | None) -> None:
        """Trace: the gate is closed — who holds the smallest buffered event back (once per change)."""
        key, _, idx = self._queue[0]
        waiting = [{"shard": rc.shard, "promise": rc.promised_key, "in_flight": rc.pending}
                   for rc in self.remotes if rc.promised_key is None or rc.promised_key < key]
        state = (key, tuple((w["shard"], w["promise"]) for w in waiting))
        if state != self._gate_traced:
            self._gate_traced = state
            self.trace({"step": "gate", "key": key, "shard": self.remotes[idx].shard, "min_promised": m,
                        "waiting_on": waiting})

    def next_ready(self) -> tuple[str, dict, Any, bool, str, RemoteCursor]:
        key, _, idx = heapq.heappop(self._queue)
        rc = self.remotes[idx]
        _k, tok, raw, ok, op = rc.buffer.popleft()
        if rc.buffer:
            heapq.heappush(self._queue, (rc.buffer[0][0], next(self._seq), idx))
        if self.trace:
            self._gate_traced = None
            self.trace({"step": "released", "shard": rc.shard, "key": key, "op": op,
                        "min_promised": self.min_promised_key()})
        return key, tok, raw, ok, op, rc

    def returned(self, tok: dict) -> None:
        """An event went to the client: the high-water mark is its token.

        (The server moves it on every event popped; we move it only on events the
        client receives, so a swallowed config-server event never becomes a
        postBatchResumeToken the client could not resume from.)
        """
        self.high_water_mark = tok

    def blocking_remote(self) -> RemoteCursor | None:
        """Whom the gate waits on: the remote holding the minimum promise."""
        if not self._queue:
            return None
        return self.min_promised_remote()

    def advance_high_water_mark(self) -> dict | None:
        """With nothing releasable, the PBRT moves up to the minimum promised key."""
        m = self.min_promised_key()
        if m is not None and not self.ready():
            rc = self.min_promised_remote()
            if rc is not None and rc.eligible_for_hwm:
                if self.high_water_mark is None or m > self.high_water_mark["_data"]:
                    self.high_water_mark = rc.promised_token
                    if self.trace:
                        self.trace({"step": "hwm", "key": m, "shard": rc.shard})
        return self.high_water_mark

    def needs_fetch(self, low_water: int = 1) -> list[int]:
        """Remotes to ask for more: fewer than `low_water` buffered events (the server: an empty
        buffer), nothing in flight, not exhausted."""
        return [i for i, rc in enumerate(self.remotes)
                if len(rc.buffer) < low_water and not rc.pending and not rc.exhausted and rc.error is None]

    def errors(self) -> list[RemoteCursor]:
        return [rc for rc in self.remotes if rc.error is not None]
