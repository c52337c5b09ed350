"""Offsets of the `mongodb-changestream` source: resume tokens, never a client clock.

An offset is a JSON dict (Spark writes it with `json.dumps` into the
checkpoint's `offsets/<batch>` file) of one of two forms:

- `{"token": "<_data>"}` — a resume token's `_data` (uppercase hex KeyString).
  The batch that starts at this offset holds exactly the events *after* this
  token; the batch that ends at it holds the events up to *and including* it.
  An event token ends a batch at that event; a high-water-mark token (a
  postBatchResumeToken) ends it at a point in cluster time.
- `{"operationTime": {"t": <seconds>, "i": <increment>}}` — only as the initial
  offset of a query started with `startAtOperationTime`: the events with
  `clusterTime >= T` (what `startAtOperationTime: T` opens).
- `{"after": "<_data>"}` — shards mode only, one shard's position: another
  shard's event token (or the user's start token, whose shard is unknown), a
  point in the merged order this shard has been read up to.  Like a token, but
  not required to be in this shard's stream.

Shards mode's offset is a vector of such positions, `{"shards": {<shard>:
<position>, ...}}` (see `shards_reader.py`).

Tokens are ordered by comparing `_data` as plain strings (the server's
KeyString is built so that string order is event order).  An operation time
T sorts like a high-water-mark token at T: before every event at T.

Nothing here depends on mongosim: the streaming source works against any
MongoDB deployment through pymongo.
"""

from __future__ import annotations

from typing import Any

from bson import Timestamp

_TS_TYPE = "82"  # KeyString type byte of a BSON Timestamp: every resume token starts with it


def token_offset(data: str) -> dict:
    return {"token": data}


def after_offset(data: str) -> dict:
    return {"after": data}


def optime_offset(ts: Timestamp) -> dict:
    return {"operationTime": {"t": int(ts.time), "i": int(ts.inc)}}


def parse_operation_time(value: str) -> Timestamp:
    """`"<seconds>,<increment>"`, or `"<seconds>"` for the whole second (increment 0)."""
    parts = [p.strip() for p in str(value).split(",")]
    try:
        if len(parts) == 1:
            return Timestamp(int(parts[0]), 0)
        if len(parts) == 2:
            return Timestamp(int(parts[0]), int(parts[1]))
    except (ValueError, TypeError, OverflowError):
        pass
    raise ValueError(f"startAtOperationTime must be '<seconds>,<increment>' or '<seconds>', got {value!r}")


def token_cluster_time(data: str) -> Timestamp:
    """The clusterTime a token's `_data` starts with (KeyString: 0x82 + 8 bytes big-endian)."""
    if len(data) < 18 or data[:2].upper() != _TS_TYPE:
        raise ValueError(f"not a resume token's _data: {data!r}")
    return Timestamp(int(data[2:10], 16), int(data[10:18], 16))


def offset_cluster_time(offset: dict) -> Timestamp:
    if "token" in offset or "after" in offset:
        return token_cluster_time(offset.get("token") or offset["after"])
    ot = offset["operationTime"]
    return Timestamp(int(ot["t"]), int(ot["i"]))


def offset_sort_key(offset: dict) -> str:
    """A string that orders offsets like tokens (an operation time as a high-water mark at it).

    Only the ordering against event tokens matters: an operation time T gives
    `82<T>` followed by `2B` — the version byte a high-water-mark token has
    next; every event token at T continues `2B..2C` and sorts after it.
    """
    if "token" in offset or "after" in offset:
        return offset.get("token") or offset["after"]
    ts = offset_cluster_time(offset)
    return f"{_TS_TYPE}{ts.time:08X}{ts.inc:08X}"


def watch_start_kwargs(offset: dict) -> dict[str, Any]:
    """pymongo `watch()` arguments that open a stream at or just before `offset`.

    The stream opens at the offset's clusterTime (`startAtOperationTime`), and
    the reader skips the events up to the token itself (`TokenStream`).  Not
    `startAfter`: a stream resumed from an event token may not advance its
    postBatchResumeToken past that token until a later event arrives (the
    router keeps it there until it has confirmed the token), and the reader
    needs the promise to know that a batch ending at a high-water mark is
    complete.  An invalidate token does go to `startAfter`: only that opens
    the stream after the invalidation.
    """
    if "token" in offset and token_kind(offset["token"]) == "invalidate":
        return {"start_after": {"_data": offset["token"]}}
    return {"start_at_operation_time": offset_cluster_time(offset)}


def describe(offset: dict | None) -> str:
    if offset is None:
        return "<none>"
    if "shards" in offset:
        return "{" + ", ".join(f"{k}: {describe(v)}" for k, v in sorted(offset["shards"].items())) + "}"
    if "token" in offset or "after" in offset:
        kind = "token" if "token" in offset else "after"
        ts = token_cluster_time(offset[kind])
        return f"{kind} {offset[kind]} (clusterTime {ts.time},{ts.inc})"
    ts = offset_cluster_time(offset)
    return f"operationTime {ts.time},{ts.inc}"


def token_kind(data: str) -> str:
    """"hwm" (a high-water mark), "invalidate" (an invalidate event's token) or "event".

    Decoded with the project's KeyString codec (v1 and v2 tokens); a token it
    cannot read counts as an event token.
    """
    try:
        from mongosim.oplog.resume_token import decode_resume_token

        d = decode_resume_token({"_data": data})
    except Exception:  # noqa: BLE001 - unknown format: the conservative answer
        return "event"
    if d.token_type == 0:
        return "hwm"
    return "invalidate" if d.from_invalidate else "event"
