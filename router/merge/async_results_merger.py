"""The AsyncResultsMerger (ARM): one globally ordered stream out of many shard streams.

Per remote (a shard's change-stream cursor, or the config server's):

- a buffer of events, each with its sort key (the resume token's `_data`);
- its *promised minimum sort key*: the latest postBatchResumeToken it sent.
  The shard promises that everything it will still send sorts at or after it.
  A promise never moves back (a regression would be a bug; it raises).

The *minimum promised sort key* (minPromisedSortKey) is the smallest promise
over all remotes (kept in a SortedList); it exists once every remote has
reported one.  The next event — the smallest front of the buffers — may be
released only if its key is <= that minimum (`_readySortedTailable`): no
remote can still send anything smaller.  Otherwise the merge waits for the
lagging remote — the one holding the minimum.

Releasing runs (`next_run`, or `peek_run` then `take`): everything at or below the minimum may go, and
each buffer is sorted, so the releasable events of each remote are a prefix
of its buffer, found by bisection; the prefixes are merged in one step (a
stable sort over the keys).  Events the merge part must look at one by one
(a topology event, an invalidate, an event whose `_id` a user stage changed,
anything from the config server) end a run: `next_ready` releases them singly.
Buffers hold the shards' batches as columns (`RemoteBuffer`), never one
object per event.

When nothing can be released the router's postBatchResumeToken is the
high-water mark: the minimum promised key (if the remote holding it is
eligible; the config server's cursor is not, on its first batch or while its
batch is non-empty).

Sort keys are compared as plain strings: KeyString keeps the BSON order of
(clusterTime, tokenType, txnOpIndex, fromInvalidate, uuid, eventIdentifier).

Which remotes to ask for more (`needs_fetch`): the server asks a remote whose
buffer is empty.  After answering its client, mongosim also reads ahead: it
asks every remote holding less than its *ask*, so that the shards compute the
next batches while the client decodes this one.  What is released, and when,
is unchanged: only the number and size of shard getMores differ.

How many events to ask a remote for (`size_requests`, `ask`): the server sends
every remote the client's batch size.  All of mongosim's shards share one
process, and nothing can be released before every remote has answered; asked
for a whole client batch each, 64 shards would render 64 batches before the
first event goes out, with the consumer idle.  So a remote is asked for
ASK_BATCHES times what it gave to the last client batch, never fewer than
MIN_ASK events (a shard getMore has a fixed cost); never more than the
client's batch, so the router holds at most about two client batches per
remote (tests/reliability/test_slow_consumer.py).  Before the first client
batch, when the client waits for every remote's first reply, it is asked for
FIRST_ASK_BATCHES times its even share (batch / remotes): enough for the
merge to release a whole batch when the events interleave evenly.  With up to
FIRST_ASK_BATCHES remotes, one remote carrying the stream, or client batches
of at most MIN_ASK, that is the client's batch, as the server asks.  Read
ahead while it holds less than its ask, a remote holds a few client batches'
worth: the next client batch seldom has to wait for a reply.

How many remotes one read-ahead asks (`read_ahead_round`): the most depleted
first (the smallest part of its ask held), as long as their asks add up to at
most READ_AHEAD_BATCHES client batches (one remote at least).  The remotes of a
stream are drained at the same pace, so they fall below their asks together:
64 remotes asked at once would render 64 asks (16,000 events) in one go while
the client's next getMore waits behind them.  Within the budget the shards
render, after each client batch, about what the client takes per batch.  But
a remote about to run dry (it holds fewer than RUNWAY_BATCHES client batches
at the pace of the last one) is asked whatever the budget: after the first
batches every remote is in that state at once, and those left for later
rounds would hold the gate, every getMore going out short until all had been
asked: in full while the budget lasts (those that can wait longest for their
replies), the others for a runway's worth only.  The whole asks go to a few
remotes per round, so the remotes' refills spread out over the rounds.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import deque
from dataclasses import dataclass, field
from itertools import accumulate, repeat
from operator import add, itemgetter
from typing import Any, Callable

from sortedcontainers import SortedList

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.changestream.event_batch import (
    OVERHEAD,
    ID_ALTERED_FIELD,
    OP_TYPES_FIELD,
    SORT_KEYS_FIELD,
    TYPE_BITS_FIELD,
    make_token,
)

# Events the merge part treats one by one: a topology event (handle topology change) and the end of
# the stream.  (An event whose _id a user stage changed too; and everything from the config server.)
SPECIAL_OPS = frozenset({"migrateChunkToNewShard", "invalidate"})
_COMPACT = 4096  # consumed events a buffer keeps before it drops them
MIN_ASK = 256  # the fewest events a remote is asked for after the first client batch (a shard getMore's fixed
# cost), unless the client's batch is smaller
ASK_BATCHES = 4  # a remote is asked for that many times its part of a client batch
FIRST_ASK_BATCHES = 2  # before the first client batch: that many times its even share
READ_AHEAD_BATCHES = 2  # one read-ahead asks remotes for at most that many client batches in all
RUNWAY_BATCHES = 2  # a remote holding fewer client batches than that (at its last pace) is asked at once


class RemoteBuffer:
    """One remote's buffered events, as parallel columns (event_batch) with a read position.

    Batches are appended column by column; released events are passed over (`head`) and dropped
    in bulk now and then.  Sparse facts are kept by absolute event number (`base + index`): the
    type bits of a token, and which events are *special* (see SPECIAL_OPS), in order.
    """

    __slots__ = ("keys", "raws", "ops", "head", "base", "bits", "special", "altered")

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.raws: list[Any] = []
        self.ops: list[str] = []
        self.head = 0
        self.base = 0
        self.bits: dict[int, bytes] = {}
        self.special: deque[int] = deque()
        self.altered: set[int] = set()

    def __len__(self) -> int:
        return len(self.keys) - self.head

    def __getitem__(self, i: int) -> tuple[str, dict, Any, bool, str]:
        """The i-th buffered event as `(key, token, raw, _id intact, operationType)`."""
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self.event(self.head + i)

    def __iter__(self):
        """The buffered events as `(key, token, raw, _id intact, operationType)` (for inspection)."""
        for j in range(self.head, len(self.keys)):
            yield self.event(j)

    def append(self, keys: list[str], raws: list, ops: list[str], bits: dict[int, bytes], altered: list[int],
               all_special: bool) -> None:
        first = self.base + len(self.keys)
        self.keys.extend(keys)
        self.raws.extend(raws)
        self.ops.extend(ops)
        for i, b in bits.items():
            self.bits[first + i] = b
        for i in altered:
            self.altered.add(first + i)
        if all_special:
            self.special.extend(range(first, first + len(keys)))
        elif altered or not SPECIAL_OPS.isdisjoint(ops):
            marked = set(altered)
            marked.update(i for i, op in enumerate(ops) if op in SPECIAL_OPS)
            self.special.extend(first + i for i in sorted(marked))

    def event(self, j: int) -> tuple[str, dict, Any, bool, str]:
        n = self.base + j
        key = self.keys[j]
        return key, make_token(key, self.bits.get(n)), self.raws[j], n not in self.altered, self.ops[j]

    def pop(self) -> tuple[str, dict, Any, bool, str]:
        ev = self.event(self.head)
        self.advance(1)
        return ev

    def advance(self, k: int) -> None:
        """Pass over the next `k` events (released)."""
        self.head += k
        n = self.base + self.head
        special = self.special
        while special and special[0] < n:
            special.popleft()
        if self.head >= _COMPACT and 2 * self.head >= len(self.keys):
            h = self.head
            del self.keys[:h], self.raws[:h], self.ops[:h]
            if self.bits:
                self.bits = {k: v for k, v in self.bits.items() if k >= n}
            if self.altered:
                self.altered = {k for k in self.altered if k >= n}
            self.base = n
            self.head = 0


@dataclass(eq=False)
class RemoteCursor:
    shard: str
    remote: Any  # ShardRemote
    cursor_id: int
    ns: str
    is_config: bool = False
    buffer: RemoteBuffer = field(default_factory=RemoteBuffer)
    promised_key: str | None = None
    promised_token: dict | None = None
    exhausted: bool = False
    eligible_for_hwm: bool = True
    pending: bool = False
    error: MongoError | None = None
    batches: int = 0
    ask: int | None = None  # how many events to ask for next (size_requests); None: an even share
    released_mark: int = 0  # events released from it when the asks were last sized
    took: int = 0  # events it gave to the last client batch (size_requests)

    @property
    def collection(self) -> str:
        return self.ns.split(".", 1)[1]


def _candidates(spans: list[tuple[RemoteBuffer, int, int, int]], limit: int) -> list:
    """The spans (buffer, remote index, head, end) cut to what can be among the first `limit`
    events in merged order.

    Take the first c = limit / (number of spans) keys of every span, doubling c until they are at
    least `limit` keys (or are the spans whole); the limit-th smallest of them, `cut`, has at least
    `limit` keys at or below it, so the first `limit` events of the merge all sort at or below
    `cut`: every span is cut after its last key <= `cut` (by bisection).  Balanced remotes leave
    about `limit` keys to sort, not all they hold."""
    if sum(end - h for _b, _i, h, end in spans) <= limit:
        return spans
    c = -(-limit // len(spans))
    while True:
        heads: list[str] = []
        whole = True
        for buf, _idx, h, end in spans:
            e = h + c
            if e < end:
                whole = False
            else:
                e = end
            heads += buf.keys[h:e]
        if whole:
            return spans
        if len(heads) >= limit:
            break
        c *= 2
    heads.sort()
    cut = heads[limit - 1]
    cut_spans = []
    for buf, idx, h, end in spans:
        e = bisect_right(buf.keys, cut, h, end)
        if e > h:
            cut_spans.append((buf, idx, h, e))
    return cut_spans


class AsyncResultsMerger:
    def __init__(self, trace: Callable[[dict], None] | None = None) -> None:
        self.remotes: list[RemoteCursor] = []
        self._promised = SortedList()  # (promised key, remote index)
        self.high_water_mark: dict | None = None  # last released token, or the minimum promise
        self.trace = trace
        self._gate_traced: tuple | None = None  # (front key, blockers) last reported as closed

    # -- remotes ------------------------------------------------------------------------
    def add_remote(self, rc: RemoteCursor, first_batch: list, fields: dict, pbrt: dict | None, exhausted: bool) -> int:
        idx = len(self.remotes)
        self.remotes.append(rc)
        if self.trace:
            self.trace({"step": "remote_added", "shard": rc.shard})
        self.add_batch(idx, first_batch, fields, pbrt, exhausted)
        return idx

    def add_batch(self, idx: int, batch: list, fields: dict, pbrt: dict | None, exhausted: bool) -> None:
        """A remote's reply arrived: buffer its events (the columns of event_batch), update its promise."""
        rc = self.remotes[idx]
        keys = fields.get(SORT_KEYS_FIELD, ())
        if len(keys):
            rc.buffer.append(keys, batch, fields.get(OP_TYPES_FIELD, ()), fields.get(TYPE_BITS_FIELD, {}),
                             fields.get(ID_ALTERED_FIELD, ()), rc.is_config)
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
        if self.trace:
            self.trace({"step": "batch", "shard": rc.shard, "events": list(keys),
                        "ops": list(fields.get(OP_TYPES_FIELD, ())), "pbrt": rc.promised_key,
                        "min_promised": self.min_promised_key()})

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

    def _front(self) -> int:
        """The remote whose next event sorts first (ties: the lower remote index), or -1."""
        best, best_key = -1, None
        for idx, rc in enumerate(self.remotes):
            buf = rc.buffer
            if buf.head < len(buf.keys):
                k = buf.keys[buf.head]
                if best_key is None or k < best_key:
                    best, best_key = idx, k
        return best

    def front_event(self) -> tuple[str, Any] | None:
        """(key, raw) of the next event in merged order, or None."""
        idx = self._front()
        if idx < 0:
            return None
        buf = self.remotes[idx].buffer
        return buf.keys[buf.head], buf.raws[buf.head]

    def ready(self) -> bool:
        """`_readySortedTailable`: is the smallest buffered event at or below minPromisedSortKey?"""
        idx = self._front()
        if idx < 0:
            return False
        buf = self.remotes[idx].buffer
        key = buf.keys[buf.head]
        m = self.min_promised_key()
        ok = m is not None and key <= m
        if self.trace and not ok:
            self._trace_gate_closed(key, idx, m)
        return ok

    def _trace_gate_closed(self, key: str, idx: int, m: str | None) -> None:
        """Trace: the gate is closed — who holds the smallest buffered event back (once per change)."""
        waiting = [{"shard": rc.shard, "promise": rc.promised_key, "in_flight": rc.pending}
                   for rc in self.remotes if rc.promised_key is None or rc.promised_key < key]
        state = (key, tuple((w["shard"], w["promise"]) for w in waiting))
        if state != self._gate_traced:
            self._gate_traced = state
            self.trace({"step": "gate", "key": key, "shard": self.remotes[idx].shard, "min_promised": m,
                        "waiting_on": waiting})

    def next_ready(self) -> tuple[str, dict, Any, bool, str, RemoteCursor]:
        """Release the next event (the caller checked `ready()`)."""
        idx = self._front()
        rc = self.remotes[idx]
        key, tok, raw, ok, op = rc.buffer.pop()
        if self.trace:
            self._gate_traced = None
            self.trace({"step": "released", "shard": rc.shard, "key": key, "op": op,
                        "min_promised": self.min_promised_key()})
        return key, tok, raw, ok, op, rc

    def next_run(self, limit: int, budget: int, first: bool) -> tuple[list, dict] | None:
        """Release the run `peek_run` finds: (the events' BSON, the last one's token), or None."""
        run = self.peek_run(limit, budget, first)
        if run is None:
            return None
        raws, tok, counts = run
        self.take(counts)
        return raws, tok

    def take(self, counts: list[tuple[RemoteBuffer, int]]) -> None:
        """Release a run `peek_run` found: pass over its events in their buffers."""
        for buf, k in counts:
            if k:
                buf.advance(k)

    def peek_run(self, limit: int, budget: int, first: bool) -> tuple[list, dict, list] | None:
        """Find, in one step, the longest run of events in merged order that the gate allows,
        stopping before a special event, after `limit` events or `budget` bytes (the first event of
        a batch always goes, whatever its size, when `first`).  Returns (the events' BSON, the last
        one's token, how many events each buffer gives: for `take`), or None when no event can go
        this way (the caller takes `next_ready`).  Nothing is released before `take`; meanwhile
        the run stays a prefix of what the gate allows (buffers grow only at their ends, promises
        only rise), so it can be found ahead of the getMore that releases it.

        Every remote's buffer is sorted, so the releasable events of a remote are a prefix of its
        buffer (those at or below minPromisedSortKey); the prefixes are merged by one stable sort
        on the keys (ties: the lower remote index, as `next_ready`).  No remote gives more than
        `limit` events, so each prefix is cut there first: a small batch sorts what it may take, not
        everything the read-ahead buffered (a special event past the cut comes after the first
        `limit` events of its own remote, hence after every event released).  Nor do the remotes
        together give more than about `limit` to the sort (`_candidates`): 64 remotes holding a
        few hundred events each would otherwise sort them all for a batch of 1000."""
        m = self.min_promised_key()
        if m is None:
            return None
        spans: list[tuple[RemoteBuffer, int, int, int]] = []  # (buffer, remote index, head, end)
        stop: tuple[str, int] | None = None  # the first special event in merged order: release before it
        for idx, rc in enumerate(self.remotes):
            buf = rc.buffer
            h = buf.head
            if h == len(buf.keys):
                continue
            end = min(bisect_right(buf.keys, m, h), h + limit)  # (no remote gives more than the batch)
            if buf.special:
                s = buf.special[0] - buf.base
                if s < end:
                    end = s
                    if stop is None or (buf.keys[s], idx) < stop:
                        stop = (buf.keys[s], idx)
            if end > h:
                spans.append((buf, idx, h, end))
        if stop is not None:
            key, at = stop
            spans = [(buf, idx, h, (bisect_right if idx < at else bisect_left)(buf.keys, key, h, end))
                     for buf, idx, h, end in spans]
            spans = [sp for sp in spans if sp[3] > sp[2]]
        if not spans:
            return None
        if len(spans) > 1:
            spans = _candidates(spans, limit)
        if len(spans) == 1:
            buf, _idx, h, end = spans[0]
            raws = buf.raws[h:end]
            keys = None
        else:
            keys = []
            raws = []
            for buf, _idx, h, end in spans:
                keys += buf.keys[h:end]
                raws += buf.raws[h:end]
            order = sorted(range(len(keys)), key=keys.__getitem__)
            raws = list(itemgetter(*order)(raws)) if len(order) > 1 else raws
        n = min(len(raws), limit)
        total = list(accumulate(map(add, map(len, raws[:n]), repeat(OVERHEAD))))
        fit = bisect_right(total, budget)
        if fit < n:
            n = fit if (fit or not first) else 1
        if n == 0:
            return None
        # pass over what went: from each remote, its events among the first n in merged order
        if keys is None:
            buf = spans[0][0]
            last_buf, last = buf, buf.head + n - 1
            counts = [(buf, n)]
        else:
            last_pos = order[n - 1]
            taken = sorted(order[:n]) if n < len(order) else None
            counts = []
            offset = 0
            for buf, _idx, h, end in spans:
                width = end - h
                if offset <= last_pos < offset + width:
                    last_buf, last = buf, h + last_pos - offset
                k = width if taken is None else bisect_left(taken, offset + width) - bisect_left(taken, offset)
                counts.append((buf, k))
                offset += width
        del raws[n:]
        key = last_buf.keys[last]
        tok = make_token(key, last_buf.bits.get(last_buf.base + last))
        return raws, tok, counts

    def returned(self, tok: dict) -> None:
        """An event went to the client: the high-water mark is its token.

        (The server moves it on every event popped; we move it only on events the
        client receives, so a swallowed config-server event never becomes a
        postBatchResumeToken the client could not resume from.)
        """
        self.high_water_mark = tok

    def blocking_remote(self) -> RemoteCursor | None:
        """Whom the gate waits on: the remote holding the minimum promise."""
        if self._front() < 0:
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

    def needs_fetch(self, low_water: int = 1, read_ahead: bool = False) -> list[int]:
        """Remotes to ask for more: fewer than `low_water` buffered events (the server: an empty
        buffer), or when reading ahead fewer than their ask (at most `low_water`); nothing in
        flight, not exhausted."""
        if read_ahead:
            return [i for i, rc in enumerate(self.remotes)
                    if len(rc.buffer) < min(low_water, rc.ask or low_water) and not rc.pending
                    and not rc.exhausted and rc.error is None]
        return [i for i, rc in enumerate(self.remotes)
                if len(rc.buffer) < low_water and not rc.pending and not rc.exhausted and rc.error is None]

    def read_ahead_round(self, limit: int) -> list[tuple[int, int]]:
        """The remotes one read-ahead asks (client batch `limit`), each with its ask: those below
        their ask (`needs_fetch`).

        First every one that would run dry within RUNWAY_BATCHES client batches (it holds fewer
        than RUNWAY_BATCHES times its pace: what it gave to the last batch, or the remotes' mean
        if that is more — one batch's count is a rough guess of a remote's share), fewest batches
        left first: left out, it would hold the gate and the next getMores would go out short.
        Those with the most batches left get their whole ask while the asks add up to at most
        READ_AHEAD_BATCHES client batches; the more urgent rest, RUNWAY_BATCHES batches at their
        pace (a top-up: small, it lands soonest, and goes first in the round).
        Then the others, the most depleted first, while the asks add up to at most the budget
        (one remote at least).  See the module doc."""
        wanted = self.needs_fetch(limit, read_ahead=True)
        remotes = self.remotes
        asks = {i: self.ask_for(remotes[i], limit) for i in wanted}
        if len(wanted) < 2:
            return list(asks.items())
        config = [(i, asks.pop(i)) for i in wanted if remotes[i].is_config]  # (a trickle: outside the budget)
        live = [rc.took for rc in remotes if not rc.is_config and not rc.exhausted and rc.error is None]
        mean = sum(live) / len(live) if live else 0
        pace = {i: max(remotes[i].took, mean) for i in asks}
        urgent = sorted((i for i in asks if len(remotes[i].buffer) < RUNWAY_BATCHES * pace[i]),
                        key=lambda i: (len(remotes[i].buffer) / pace[i], i))
        budget = READ_AHEAD_BATCHES * limit
        whole: list[tuple[int, int]] = []
        for i in reversed(urgent):  # whole asks to the ones that can wait longest for them
            if asks[i] > budget:
                break
            budget -= asks[i]
            whole.append((i, asks.pop(i)))
        top_ups = [(i, min(asks.pop(i), math.ceil(RUNWAY_BATCHES * pace[i])))
                   for i in urgent if i in asks]
        budget -= sum(ask for _i, ask in top_ups)
        chosen = whole[::-1]
        for i in sorted(asks, key=lambda i: (len(remotes[i].buffer) / asks[i], i)):
            if (chosen or top_ups) and asks[i] > budget:
                break
            budget -= asks[i]
            chosen.append((i, asks[i]))
        return config + top_ups + chosen

    def even_share(self, limit: int) -> int:
        """FIRST_ASK_BATCHES times a remote's part of a client batch of `limit` events, every live
        shard's remote giving as much (the ask before the first client batch)."""
        live = sum(1 for rc in self.remotes if not rc.is_config and not rc.exhausted and rc.error is None)
        return min(limit, max(1, -(-FIRST_ASK_BATCHES * limit // max(1, live))))

    def ask_for(self, rc: RemoteCursor, limit: int) -> int:
        """How many events to ask `rc` for, the client's batch being `limit`."""
        return min(limit, rc.ask) if rc.ask is not None else self.even_share(limit)

    def size_requests(self, limit: int) -> None:
        """After a client batch of at most `limit` events: each remote's next ask is ASK_BATCHES
        times what it gave to that batch, within [MIN_ASK, limit] (see the module doc)."""
        low = min(limit, MIN_ASK)
        for rc in self.remotes:
            buf = rc.buffer
            released = buf.base + buf.head
            rc.took, rc.released_mark = released - rc.released_mark, released
            rc.ask = min(limit, max(low, ASK_BATCHES * rc.took))

    def errors(self) -> list[RemoteCursor]:
        return [rc for rc in self.remotes if rc.error is not None]
