"""Rendering a CRUD change event straight from the oplog entry's bytes (the transform's fast path).

An insert's `fullDocument` is the entry's `o`, its `documentKey` the entry's
`o2`, byte for byte; a delete's `documentKey` is its `o`; a replacement's
`fullDocument` is its `o`.  So the event is assembled from slices of the entry
(`oplog.layout.crud_layout` finds them) plus a few constant pieces, in the
transform's field order — no decoding of the document, no re-encoding.  Only
an update decodes its (small) diff, to describe it.  `Transform.transform` is
the reference: a property test proves both give the same bytes.
"""

from __future__ import annotations

from struct import pack

from bson import Binary

from mongosim.oplog import bsonutil
from mongosim.oplog.layout import document_at
from mongosim.oplog.oplog import EntryView
from mongosim.shardsim.query.diff import update_description

from mongosim.oplog.resume_token import encode_crud_token, encode_event_token

_DELTA_PREFIX = b"\x10$v\x00\x02\x00\x00\x00"  # a delta update's `o` starts with {$v: 2, ...}


def _cstr_elem(type_byte: bytes, name: str) -> bytes:
    return type_byte + name.encode() + b"\x00"


def _string_elem(name: str, value: str) -> bytes:
    v = value.encode()
    return _cstr_elem(b"\x02", name) + pack("<i", len(v) + 1) + v + b"\x00"


OP_TYPE = {t: _string_elem("operationType", t) for t in ("insert", "update", "replace", "delete")}
ID = _cstr_elem(b"\x03", "_id")
CLUSTER_TIME = _cstr_elem(b"\x11", "clusterTime")
COLLECTION_UUID = _cstr_elem(b"\x05", "collectionUUID") + b"\x10\x00\x00\x00\x04"
WALL_TIME = _cstr_elem(b"\x09", "wallTime")
FULL_DOCUMENT = _cstr_elem(b"\x03", "fullDocument")
DOCUMENT_KEY = _cstr_elem(b"\x03", "documentKey")
UPDATE_DESCRIPTION = _cstr_elem(b"\x03", "updateDescription")
DATA = _cstr_elem(b"\x02", "_data")
TYPE_BITS = _cstr_elem(b"\x05", "_typeBits")
NS_ELEM_CACHE: dict[str, bytes] = {}


def ns_elem(ns: str) -> bytes:
    b = NS_ELEM_CACHE.get(ns)
    if b is None:
        db, _, coll = ns.partition(".")
        b = NS_ELEM_CACHE[ns] = _cstr_elem(b"\x03", "ns") + bsonutil.encode({"db": db, "coll": coll})
        if len(NS_ELEM_CACHE) > 100_000:
            NS_ELEM_CACHE.clear()
    return b


class EventCache:
    """Rendered CRUD events, by (oplog position, showExpandedEvents): rendered once, reused by every
    stream that reads the entry (bounded: the oldest renderings are dropped first)."""

    def __init__(self, capacity: int = 16_384) -> None:
        self.capacity = capacity
        self._events: dict[tuple[int, bool], tuple] = {}
        self.hits = self.misses = 0

    def get(self, key: tuple[int, bool]):
        r = self._events.get(key)
        if r is None:
            self.misses += 1
        else:
            self.hits += 1
        return r

    def put(self, key: tuple[int, bool], rendered: tuple) -> None:
        ev = self._events
        ev[key] = rendered
        if len(ev) > self.capacity:
            for _ in range(len(ev) // 8):  # drop the oldest eighth
                del ev[next(iter(ev))]


def token_bytes(data_hex: str, type_bits: bytes | None) -> bytes:
    d = data_hex.encode()
    inner = DATA + pack("<i", len(d) + 1) + d + b"\x00"
    if type_bits:
        inner += TYPE_BITS + pack("<i", len(type_bits)) + b"\x00" + type_bits
    return pack("<i", len(inner) + 5) + inner + b"\x00"


def render_crud(view: EntryView, expanded: bool, raw_update: bool):
    """(op type, token dict, event bytes, documentKey (None if not decoded), diff or None) of a CRUD
    entry; None to take the slow path."""
    raw = view.raw
    op = view.op
    diff = None
    if op == "i":
        if not view.o2:
            return None  # old-style entry without documentKey: the transform handles it
        op_type = "insert"
        full = document_at(raw, view.o)
        key_raw = document_at(raw, view.o2)
    elif op == "d":
        op_type = "delete"
        full = None
        key_raw = document_at(raw, view.o)
    else:
        o_raw = document_at(raw, view.o)
        if not view.o2:
            return None
        key_raw = document_at(raw, view.o2)
        if o_raw[4:12] == _DELTA_PREFIX:
            if raw_update:
                return None
            op_type = "update"
            full = None
            diff = bsonutil.decode(o_raw)["diff"]
        else:
            op_type = "replace"
            full = o_raw
    fast = encode_crud_token(view.key, view.ui, op_type, key_raw)
    if fast is not None:
        data_hex, type_bits = fast
        document_key = None  # not needed: the token was read from the key's bytes
    else:
        document_key = bsonutil.decode(key_raw)
        data_hex, type_bits = encode_event_token(view.key, 0, view.ui, op_type, document_key, False)
    token = {"_data": data_hex} if type_bits is None else {"_data": data_hex, "_typeBits": Binary(type_bits, 0)}
    parts = [ID, token_bytes(data_hex, type_bits), OP_TYPE[op_type], CLUSTER_TIME, pack("<Q", view.key)]
    if expanded:
        parts += (COLLECTION_UUID, view.ui)
    parts += (WALL_TIME, pack("<q", view.wall))
    if full is not None:
        parts += (FULL_DOCUMENT, full)
    parts += (ns_elem(view.ns), DOCUMENT_KEY, key_raw)
    if diff is not None:
        desc = update_description(diff, show_expanded=expanded)
        parts += (UPDATE_DESCRIPTION, bsonutil.encode_in_order(desc))
    body = b"".join(parts)
    return op_type, token, pack("<i", len(body) + 5) + body + b"\x00", document_key, diff
