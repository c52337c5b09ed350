"""A micro-batch's events read a getMore's batch at a time (`RawChangeStream.try_next_batch`,
`TokenStream.next_batch`, `ContinuingStream`, `batches_through`) are the events read one by one
(`try_next` / `next_event`) and the events of the range: over scripted servers — random replies (empty
ones, read-ahead), start and end points, an invalidate in mid-stream."""

from __future__ import annotations

import time
from collections import deque

import bson
from bson import Int64, Timestamp
from bson.raw_bson import RawBSONDocument
from hypothesis import given, settings
from hypothesis import strategies as hst

from mongosim.spark import offsets as off
from mongosim.spark.streams import PROMISED_AWAIT_MS, ContinuingStream, RawChangeStream, TokenStream, batches_through
from tests.spark.test_offsets import event_token


class _Session:
    def end_session(self) -> None:
        pass


class ScriptedDb:
    """A database whose change stream answers from a script: (event tokens, postBatchResumeToken) per
    reply (the aggregate's first); the cursor is closed with the last reply when `ends` (an invalidate
    ended the stream), else it goes on with empty batches promising a later time."""

    def __init__(self, replies: list[tuple[list[str], str]], ends: bool) -> None:
        self.replies = deque(replies)
        self.ends = ends
        self.client = self
        self.sizes: list[int | None] = []  # the batch size each command asked for
        self.waits: list[int] = []  # each getMore's maxTimeMS

    def start_session(self, **_kw) -> _Session:
        return _Session()

    def command(self, cmd: dict, codec_options=None, session=None) -> RawBSONDocument:
        if "killCursors" in cmd:
            return RawBSONDocument(bson.encode({"ok": 1}))
        self.sizes.append(cmd.get("batchSize", cmd.get("cursor", {}).get("batchSize")))
        if "getMore" in cmd:
            self.waits.append(cmd["maxTimeMS"])
        keys, pbrt = self.replies.popleft() if self.replies else ([], LATER)
        closed = not self.replies and self.ends
        cursor = {"firstBatch" if "aggregate" in cmd else "nextBatch":
                  [{"_id": {"_data": k}, "operationType": "insert", "documentKey": {"_id": k}} for k in keys],
                  "postBatchResumeToken": {"_data": pbrt}, "id": Int64(0 if closed else 7), "ns": "db.coll"}
        return RawBSONDocument(bson.encode({"cursor": cursor, "ok": 1}), codec_options)


BEFORE, LATER = event_token(Timestamp(1, 1)), event_token(Timestamp(10**6, 1))


def _near(i: int) -> str:
    """A high-water-mark-like token between event i-1 and event i."""
    return event_token(Timestamp(9 + 2 * i, 1))


@hst.composite
def scripts(draw):
    """Event tokens in stream order, a start and an end key around or on them; the stream opened at the
    start's time (its events from there on, an invalidate possibly among them, ending the first
    stream), cut into replies (some empty), each promising its last event or up to just before the
    next."""
    n = draw(hst.integers(0, 30))
    tokens = [event_token(Timestamp(10 + 2 * i, 1)) for i in range(n)]
    near = [_near(i) for i in range(n + 1)]
    start = draw(hst.one_of(hst.none(), hst.sampled_from(tokens + near)))
    end = draw(hst.sampled_from(tokens + near))
    first = sum(1 for t in tokens if start is not None and t < start)  # what a stream opened at the start holds
    inval = draw(hst.one_of(hst.none(), hst.integers(first, n - 1))) if n > first else None
    if inval is not None:
        tokens[inval] = event_token(Timestamp(10 + 2 * inval, 1), invalidate=True)
    bounds = [(first, inval + 1), (inval + 1, n)] if inval is not None else [(first, n)]
    streams = []
    for lo, hi in bounds:
        cuts = sorted(draw(hst.lists(hst.integers(lo, hi), max_size=6)))
        replies, promise = [], BEFORE
        for a, b in zip([lo, *cuts], [*cuts, hi]):
            if b > a:
                promise = tokens[b - 1] if b == n or draw(hst.booleans()) else _near(b)
            replies.append((tokens[a:b], promise))
        streams.append(replies)
    return tokens, streams, start, end, inval is not None


def _open(streams: list, ends: bool, read_ahead: bool, until: str | None = None):
    left = deque(streams)

    def open_stream(position: dict | None) -> TokenStream:
        db = ScriptedDb(left.popleft() if left else [], ends and bool(left))
        ts = TokenStream(RawChangeStream(db, 1, {}, [], batch_size=None, await_ms=0, read_ahead=read_ahead,
                                         until=until), None)
        if position is not None:
            ts.start_key = off.offset_sort_key(position)
        return ts

    return open_stream


def events_one_by_one(events: ContinuingStream, end_key: str, on_past):
    """The reference: the events of a micro-batch read one by one (the reader before batches)."""
    while True:
        ev = events.next_event()
        if ev is None:
            if events.closed or (events.pbrt is not None and events.pbrt >= end_key):
                return
            continue
        if ev[0] > end_key:
            on_past(ev[0])
            return
        yield ev
        if ev[0] == end_key:
            return


@settings(max_examples=300, deadline=None)
@given(scripts(), hst.booleans(), hst.booleans())
def test_batches_are_the_events_one_by_one(script, read_ahead, promised):
    """(`promised`: the batch is read with `until` its end, as a planned batch is: the same events.)"""
    tokens, streams, start, end, invalidated = script
    position = off.token_offset(start) if start else None
    past: list[str] = []
    by_batch = ContinuingStream(_open(streams, invalidated, read_ahead, end if promised else None), position)
    got = [(k, r) for keys, raws in batches_through(by_batch, end, time.monotonic() + 60, lambda: "late", past.append)
           for k, r in zip(keys, raws)]
    by_batch.close()
    past_one: list[str] = []
    by_event = ContinuingStream(_open(streams, invalidated, read_ahead), position)
    one_by_one = list(events_one_by_one(by_event, end, past_one.append))
    by_event.close()

    assert got == one_by_one and past == past_one
    assert [k for k, _ in got] == [k for k in tokens if (start is None or k > start) and k <= end]
    assert all(type(r) is bytes and bson.decode(r)["_id"]["_data"] == k for k, r in got)


def test_read_ahead_batches_grow_from_a_small_first_one():
    """Reading a batch (read-ahead): the aggregate and the first getMore ask for 1000 events, then each
    getMore twice as many, up to the batch size; without read-ahead, the batch size throughout."""
    tokens = [event_token(Timestamp(10 + 2 * i, 1)) for i in range(8)]
    for read_ahead, expected in ((True, [1000, 1000, 2000, 4000, 8000, 10_000, 10_000]), (False, [10_000] * 7)):
        db = ScriptedDb([([t], t) for t in tokens[:7]], ends=True)
        cs = RawChangeStream(db, 1, {}, [], batch_size=10_000, await_ms=0, read_ahead=read_ahead)
        got = []
        while cs.alive:
            got += cs.try_next_batch()[0]
        cs.close()
        assert got == tokens[:7] and db.sizes[:7] == expected


def test_a_read_up_to_a_promised_end_neither_waits_nor_reads_ahead_past_it():
    """`until` (a planned batch's end, which the server has promised): the getMores do not wait, and once
    a batch holds the end no getMore is sent ahead; an empty batch short of it ends the shortcut."""
    tokens = [event_token(Timestamp(10 + 2 * i, 1)) for i in range(6)]
    script = [(tokens[0:2], tokens[1]), (tokens[2:4], tokens[3]), (tokens[4:6], tokens[5])]
    for until, commands in ((tokens[3], 2), (None, 3)):
        db = ScriptedDb(list(script), ends=False)
        cs = RawChangeStream(db, 1, {}, [], batch_size=10_000, await_ms=500, read_ahead=True, until=until)
        events = ContinuingStream(lambda _pos, cs=cs: TokenStream(cs, None), None)
        got = [k for keys, _ in batches_through(events, tokens[3], time.monotonic() + 60, lambda: "late") for k in keys]
        cs.close()
        assert got == tokens[:4]
        # the aggregate, the getMore that brought the end, and without `until` one sent ahead of it
        assert len(db.sizes) == commands
        assert db.waits == ([PROMISED_AWAIT_MS] if until else [500, 50])

    # the server promised less than the end: after an empty batch short of it, getMores wait again
    db = ScriptedDb([(tokens[0:1], tokens[0]), ([], tokens[1]), ([], tokens[1])], ends=False)
    cs = RawChangeStream(db, 1, {}, [], batch_size=None, await_ms=500, until=tokens[3])
    for _ in range(3):
        cs.try_next_batch()
    cs.close()
    assert db.waits == [PROMISED_AWAIT_MS, 500]
