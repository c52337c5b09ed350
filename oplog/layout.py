"""Where things are inside an oplog entry's BSON, without decoding it.

`locate_o(raw)` walks the entry's top-level elements (skipping each value by
its encoded size) until it has found the `o` and `o2` documents, and returns
their byte offsets.  The change-stream renderer then copies those documents
into an event as they are: an insert's `fullDocument` is the entry's `o`,
byte for byte.  This is the "never decode what passes through" path.
"""

from __future__ import annotations

from struct import unpack_from

_FIXED = {0x01: 8, 0x07: 12, 0x08: 1, 0x09: 8, 0x0A: 0, 0x10: 4, 0x11: 8, 0x12: 8, 0x13: 16, 0x06: 0, 0x7F: 0, 0xFF: 0}


def _value_size(raw: bytes, t: int, v: int) -> int:
    size = _FIXED.get(t)
    if size is not None:
        return size
    if t in (0x02, 0x0D, 0x0E):  # string, javascript, symbol: int32 length + bytes
        return 4 + unpack_from("<i", raw, v)[0]
    if t in (0x03, 0x04, 0x0F):  # document, array, code-with-scope: int32 total size
        return unpack_from("<i", raw, v)[0]
    if t == 0x05:  # binary: int32 length + subtype + bytes
        return 5 + unpack_from("<i", raw, v)[0]
    if t == 0x0B:  # regex: two cstrings
        end = raw.index(0, v)
        return raw.index(0, end + 1) + 1 - v
    if t == 0x0C:  # DBPointer: string + ObjectId
        return 4 + unpack_from("<i", raw, v)[0] + 12
    raise ValueError(f"unknown BSON type {t:#x}")


def locate_o(raw: bytes) -> tuple[int, int]:
    """Byte offsets of the `o` and `o2` documents of an oplog entry (0 when absent)."""
    pos = 4
    o = o2 = 0
    end = len(raw) - 1
    while pos < end:
        t = raw[pos]
        name_end = raw.index(0, pos + 1)
        v = name_end + 1
        if t == 0x03:
            name = raw[pos + 1 : name_end]
            if name == b"o":
                o = v
            elif name == b"o2":
                return o, v
        pos = v + _value_size(raw, t, v)
    return o, o2


def entry_head(raw: bytes) -> tuple[int, str, str]:
    """(ts as its sort key, op, ns) of an oplog entry, from its top-level elements (no value decoded
    but those three; ns "" when absent).

    The walk stops once it has all three: every entry the server writes puts op and ns before o and
    ts after it, so an entry costs a handful of steps whatever its documents hold (a document, an
    array or a binary value is skipped by its length prefix).  A BSON timestamp is a little-endian
    uint64 of (seconds << 32 | increment): its bytes read as one are the key."""
    pos, end = 4, len(raw) - 1
    key = op = ns = None
    while pos < end:
        t = raw[pos]
        name_end = raw.index(0, pos + 1)
        v = name_end + 1
        if name_end == pos + 3:  # a two-letter name: maybe one of the three
            name = raw[pos + 1 : name_end]
            if t == 0x11 and name == b"ts":
                key = unpack_from("<Q", raw, v)[0]
                if op is not None and ns is not None:
                    return key, op, ns
                pos = v + 8
                continue
            if t == 0x02 and (name == b"op" or name == b"ns"):
                size = unpack_from("<i", raw, v)[0]
                if name == b"op":
                    op = raw[v + 4 : v + 3 + size].decode()
                else:
                    ns = raw[v + 4 : v + 3 + size].decode()
                if key is not None and op is not None and ns is not None:
                    return key, op, ns
                pos = v + 4 + size
                continue
        if t == 0x03 or t == 0x04:
            pos = v + unpack_from("<i", raw, v)[0]
        elif t == 0x05:
            pos = v + 5 + unpack_from("<i", raw, v)[0]
        else:
            pos = v + _value_size(raw, t, v)
    if key is None or op is None:
        raise ValueError("an oplog entry without ts or op")
    return key, op, ns or ""


_UI = b"\x05ui\x00\x10\x00\x00\x00\x04"  # the `ui` element header: a 16-byte UUID (subtype 4)
_O2 = b"\x03o2\x00"
_WALL = b"\x09wall\x00"
_FROM_MIGRATE = b"\x08fromMigrate\x00\x01"


def crud_layout(raw: bytes) -> tuple[int, int, int, bytes | None, bool]:
    """(offset of `o`, offset of `o2` or 0, `wall` in ms, `ui` bytes, fromMigrate) of a CRUD entry.

    Entries written by `oplog.entry` put `ui` right before `o`, and after `o2`
    only fixed fields (stmtId, fromMigrate, ts, t, v) come before `wall`, so a
    few byte searches find everything; anything else takes the element walk.
    """
    p = raw.find(_UI, 4)
    if p < 0 or raw[p + 25 : p + 28] != b"\x03o\x00":
        o, o2 = locate_o(raw)
        return o, o2, _wall_after(raw, 4), None, False
    ui = raw[p + 9 : p + 25]
    o = p + 28
    after = o + unpack_from("<i", raw, o)[0]
    o2 = 0
    if raw[after : after + 4] == _O2:
        o2 = after + 4
        after = o2 + unpack_from("<i", raw, o2)[0]
    wall_at = raw.find(_WALL, after)
    from_migrate = raw.find(_FROM_MIGRATE, after, wall_at) >= 0
    wall = unpack_from("<q", raw, wall_at + 6)[0] if wall_at >= 0 else 0
    return o, o2, wall, ui, from_migrate


def _wall_after(raw: bytes, start: int) -> int:
    p = raw.find(_WALL, start)
    return unpack_from("<q", raw, p + 6)[0] if p >= 0 else 0


def document_at(raw: bytes, off: int) -> bytes:
    """The embedded document starting at `off`."""
    return raw[off : off + unpack_from("<i", raw, off)[0]]
