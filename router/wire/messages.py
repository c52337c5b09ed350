"""Parsing and building wire messages: OP_MSG, OP_QUERY, OP_REPLY.

Every message starts with a 16-byte little-endian header
`(messageLength, requestID, responseTo, opCode)`.

OP_MSG (2013): `uint32 flagBits`, then sections — kind 0: one BSON body;
kind 1: `int32 size, cstring identifier, BSON documents...` (a document
sequence such as the `documents` of an insert) — then a CRC-32C checksum if
flag bit 0 is set.  Bit 1 is moreToCome (no reply expected), bit 16
exhaustAllowed.  Unknown bits among 0-15 are "required" and make the message
invalid.

OP_QUERY (2004) survives only for the first handshake (`hello`/`isMaster` on
`<db>.$cmd`) and is answered with OP_REPLY (1).

Errors: a frame whose header cannot be trusted (length out of range) raises
`FrameError` and the connection must close; a frame that is well delimited but
has bad content (bad sections, invalid BSON, bad checksum) becomes an
`UnsupportedRequest` carrying a MongoError, so the server can answer it with an
error reply and keep the connection.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from operator import sub

import crc32c
from bson.errors import BSONError

from mongosim.oplog import bsonutil
from mongosim.oplog.errors import MongoError

OP_REPLY = 1
OP_UPDATE = 2001
OP_INSERT = 2002
OP_QUERY = 2004
OP_GET_MORE = 2005
OP_DELETE = 2006
OP_KILL_CURSORS = 2007
OP_COMPRESSED = 2012
OP_MSG = 2013

CHECKSUM_PRESENT = 1 << 0
MORE_TO_COME = 1 << 1
EXHAUST_ALLOWED = 1 << 16
_KNOWN_FLAGS = CHECKSUM_PRESENT | MORE_TO_COME | EXHAUST_ALLOWED
_REQUIRED_MASK = 0xFFFF

_HEADER = struct.Struct("<iiii")
_INT32 = struct.Struct("<i")
_UINT32 = struct.Struct("<I")

NEED_DATA = object()


class FrameError(Exception):
    """The byte stream cannot be framed any more: close the connection."""


@dataclass(slots=True)
class MsgRequest:
    request_id: int
    flags: int
    body: dict
    db: str
    more_to_come: bool = False
    exhaust_allowed: bool = False
    checksum_present: bool = False
    size: int = 0


@dataclass(slots=True)
class QueryRequest:
    request_id: int
    flags: int
    collection: str
    skip: int
    n_return: int
    query: dict
    fields: dict | None = None
    size: int = 0

    @property
    def db(self) -> str:
        return self.collection.split(".", 1)[0]

    @property
    def is_command(self) -> bool:
        return self.collection.endswith(".$cmd")

    def command(self) -> dict:
        """The command document, unwrapped from `{$query: ...}` when the driver wrapped it."""
        q = self.query
        if "$query" in q:
            return dict(q["$query"])
        if "query" in q and len(q) > 0 and next(iter(q)) == "query":
            return dict(q["query"])
        return dict(q)


@dataclass(slots=True)
class UnsupportedRequest:
    """A delimited frame we answer with an error (and keep the connection)."""

    request_id: int
    op_code: int
    error: MongoError
    reply_with_op_reply: bool = False
    close_after: bool = False
    size: int = 0


Message = MsgRequest | QueryRequest | UnsupportedRequest


def _cstring(buf: memoryview, pos: int, end: int) -> tuple[str, int]:
    nul = bytes(buf[pos:end]).find(b"\x00")
    if nul < 0:
        raise MongoError("InvalidBSON", "Unterminated C string in wire message")
    try:
        s = bytes(buf[pos : pos + nul]).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MongoError("InvalidBSON", f"Invalid UTF-8 in wire message: {exc}") from None
    return s, pos + nul + 1


# The server's limits on a document in a message (BSONObjMaxInternalSize, BSONDepth default).
MAX_DOC_IN_MESSAGE = bsonutil.MAX_BSON_OBJECT_SIZE + 16 * 1024
MAX_NESTED_DEPTH = 200
# Each nesting level costs at least 7 bytes (type, empty name, 5-byte document), so a
# document shorter than this cannot be too deep and is not walked.
_DEPTH_CHECK_MIN_SIZE = 7 * MAX_NESTED_DEPTH


def _too_deep(doc: dict) -> bool:
    """More than MAX_NESTED_DEPTH objects/arrays below the top level (iterative: no recursion)."""
    stack = [(doc, 0)]
    while stack:
        container, depth = stack.pop()
        for v in (container.values() if type(container) is dict else container):
            if type(v) is dict or type(v) is list:
                if depth + 1 > MAX_NESTED_DEPTH:
                    return True
                stack.append((v, depth + 1))
    return False


def _bson_at(buf: memoryview, pos: int, end: int) -> tuple[dict, int]:
    if end - pos < 5:
        raise MongoError("InvalidBSON", "BSON document too short in wire message")
    (size,) = _INT32.unpack_from(buf, pos)
    if size < 5 or pos + size > end:
        raise MongoError("InvalidBSON", f"Invalid BSON document length {size} in wire message")
    if size > MAX_DOC_IN_MESSAGE:
        raise MongoError("BSONObjectTooLarge",
                         f"BSONObj size: {size} (0x{size:X}) is invalid. Size must be between 0 and 16793600(16MB)")
    try:
        doc = bsonutil.decode(buf[pos : pos + size])
    except (BSONError, UnicodeDecodeError, ValueError, OverflowError, TypeError) as exc:
        if "recursion" in str(exc):
            raise MongoError("Overflow", f"BSONObj exceeded maximum nested object depth: {MAX_NESTED_DEPTH}") from None
        raise MongoError("InvalidBSON", f"Invalid BSON in wire message: {exc}") from None
    if size >= _DEPTH_CHECK_MIN_SIZE and _too_deep(doc):
        raise MongoError("Overflow", f"BSONObj exceeded maximum nested object depth: {MAX_NESTED_DEPTH}")
    return doc, pos + size


def _decode_all(buf: memoryview, start: int, end: int, raws: list[bytes]) -> list[dict]:
    """The documents laid end to end in buf[start:end] (their sizes checked), decoded by one call."""
    try:
        docs = bsonutil.decode_all(buf[start:end])
    except (BSONError, UnicodeDecodeError, ValueError, OverflowError, TypeError) as exc:
        if "recursion" in str(exc):
            raise MongoError("Overflow", f"BSONObj exceeded maximum nested object depth: {MAX_NESTED_DEPTH}") from None
        raise MongoError("InvalidBSON", f"Invalid BSON in wire message: {exc}") from None
    for doc, raw in zip(docs, raws):
        if len(raw) >= _DEPTH_CHECK_MIN_SIZE and _too_deep(doc):
            raise MongoError("Overflow", f"BSONObj exceeded maximum nested object depth: {MAX_NESTED_DEPTH}")
    return docs


def _document_sequence(buf: memoryview, p: int, seq_end: int) -> bsonutil.DocumentSequence:
    """A kind-1 section's documents: all decoded in one call, their bytes kept (sliced from one copy of
    the section by their offsets).  When the decoder refuses the section, or a document is over the
    size limit, its documents are walked one by one (`_checked_sequence`) for the error `_bson_at`
    gives, in order."""
    # the documents are sliced from the frame's own bytes where the message is one (no copy of the section)
    region, base = (buf.obj, p) if type(buf.obj) is bytes and buf.nbytes == len(buf.obj) else (bytes(buf[p:seq_end]), 0)
    try:
        docs = bsonutil.decode_all(buf[p:seq_end])
    except (BSONError, UnicodeDecodeError, ValueError, OverflowError, TypeError):
        return _checked_sequence(buf, p, seq_end)
    # the decoder checked every size: the documents tile the section; find where each starts
    starts: list[int] = []
    at = starts.append
    unpack = _INT32.unpack_from
    q, total = base, base + seq_end - p
    while q < total:
        at(q)
        q += unpack(region, q)[0]
    ends = starts[1:]
    ends.append(total)
    largest = max(map(sub, ends, starts), default=0)
    if largest > MAX_DOC_IN_MESSAGE:
        return _checked_sequence(buf, p, seq_end)
    if largest >= _DEPTH_CHECK_MIN_SIZE:
        for doc, start, end in zip(docs, starts, ends):
            if end - start >= _DEPTH_CHECK_MIN_SIZE and _too_deep(doc):
                raise MongoError("Overflow", f"BSONObj exceeded maximum nested object depth: {MAX_NESTED_DEPTH}")
    return bsonutil.DocumentSequence(docs, list(map(region.__getitem__, map(slice, starts, ends))))


def _checked_sequence(buf: memoryview, p: int, seq_end: int) -> bsonutil.DocumentSequence:
    """`_document_sequence`, document by document: each size checked (as `_bson_at` does), their bytes
    kept, all decoded in one call (a bad document's error is the one `_bson_at` gives, in order)."""
    start = p
    raws: list[bytes] = []
    unpack = _INT32.unpack_from
    while p < seq_end:
        bad = None
        if seq_end - p < 5:
            bad = MongoError("InvalidBSON", "BSON document too short in wire message")
        else:
            (size,) = unpack(buf, p)
            if size < 5 or p + size > seq_end:
                bad = MongoError("InvalidBSON", f"Invalid BSON document length {size} in wire message")
            elif size > MAX_DOC_IN_MESSAGE:
                bad = MongoError("BSONObjectTooLarge", f"BSONObj size: {size} (0x{size:X}) is invalid. Size must be "
                                                       "between 0 and 16793600(16MB)")
        if bad is not None:
            _decode_all(buf, start, p, raws)  # an earlier document's error comes first
            raise bad
        raws.append(bytes(buf[p : p + size]))
        p += size
    return bsonutil.DocumentSequence(_decode_all(buf, start, seq_end, raws), raws)


def _parse_op_msg(request_id: int, buf: memoryview, size: int) -> Message:
    (flags,) = _UINT32.unpack_from(buf, 16)
    if flags & _REQUIRED_MASK & ~_KNOWN_FLAGS:
        raise MongoError(
            223,  # IllegalOpMsgFlag
            f"Unrecognized required flags: {flags & _REQUIRED_MASK & ~_KNOWN_FLAGS:#x}",
        )
    end = size
    if flags & CHECKSUM_PRESENT:
        if size < 24:
            raise MongoError(16,  # InvalidLength
                              "OP_MSG too short for its checksum")
        end = size - 4
        (expected,) = _UINT32.unpack_from(buf, end)
        if crc32c.crc32c(bytes(buf[:end])) != expected:
            raise MongoError(288,  # ChecksumMismatch
                              "OP_MSG checksum does not match contents")
    pos = 20
    body: dict | None = None
    sequences: list[tuple[str, list[dict]]] = []
    while pos < end:
        kind = buf[pos]
        pos += 1
        if kind == 0:
            if body is not None:
                raise MongoError(40430, "Multiple body sections in message")
            body, pos = _bson_at(buf, pos, end)
        elif kind == 1:
            if end - pos < 4:
                raise MongoError(40431, "Truncated document sequence in message")
            (seq_size,) = _INT32.unpack_from(buf, pos)
            seq_end = pos + seq_size
            if seq_size < 5 or seq_end > end:
                raise MongoError(40431, f"Invalid document sequence size {seq_size}")
            name, p = _cstring(buf, pos + 4, seq_end)
            sequences.append((name, _document_sequence(buf, p, seq_end)))
            pos = seq_end
        else:
            raise MongoError(40432, f"Unknown section kind {kind}")
    if body is None:
        raise MongoError(40587, "OP_MSG requires a body")
    for name, docs in sequences:
        if name in body:
            raise MongoError(40433, f"Duplicate field name {name} in OP_MSG document sequence and body")
        body[name] = docs
    db = body.get("$db")
    if not isinstance(db, str):
        raise MongoError(40571, "OP_MSG requests require a $db argument")
    return MsgRequest(
        request_id,
        flags,
        body,
        db,
        more_to_come=bool(flags & MORE_TO_COME),
        exhaust_allowed=bool(flags & EXHAUST_ALLOWED),
        checksum_present=bool(flags & CHECKSUM_PRESENT),
        size=size,
    )


def _parse_op_query(request_id: int, buf: memoryview, size: int) -> Message:
    if size < 16 + 4 + 2 + 8 + 5:
        raise MongoError("InvalidBSON", "OP_QUERY message too short")
    (flags,) = _INT32.unpack_from(buf, 16)
    coll, pos = _cstring(buf, 20, size)
    if size - pos < 8:
        raise MongoError("InvalidBSON", "OP_QUERY message truncated")
    skip, n_return = struct.unpack_from("<ii", buf, pos)
    pos += 8
    query, pos = _bson_at(buf, pos, size)
    fields = None
    if pos < size:
        fields, pos = _bson_at(buf, pos, size)
    return QueryRequest(request_id, flags, coll, skip, n_return, query, fields, size=size)


def parse_message(frame: bytes | memoryview) -> Message:
    """Parse one complete, delimited frame (header included)."""
    buf = memoryview(frame)
    size, request_id, _response_to, op_code = _HEADER.unpack_from(buf, 0)
    try:
        if op_code == OP_MSG:
            if size < 21:
                raise MongoError("InvalidBSON", "OP_MSG message too short")
            return _parse_op_msg(request_id, buf, size)
        if op_code == OP_QUERY:
            return _parse_op_query(request_id, buf, size)
        if op_code == OP_COMPRESSED:
            # We never offer compression in `hello`, so a client may not send it.
            return UnsupportedRequest(
                request_id, op_code, MongoError("ProtocolError", "OP_COMPRESSED was not negotiated"), close_after=True
            )
        if op_code == OP_GET_MORE:
            return UnsupportedRequest(
                request_id,
                op_code,
                MongoError(5739101, "OP_GET_MORE is no longer supported. The client driver may require an upgrade."),
                reply_with_op_reply=True,
            )
        if op_code in (OP_INSERT, OP_UPDATE, OP_DELETE, OP_KILL_CURSORS):
            # Fire-and-forget legacy writes: no reply is possible; the server drops them.
            return UnsupportedRequest(
                request_id, op_code, MongoError(5739101, f"legacy opcode {op_code} is no longer supported"), close_after=True
            )
        return UnsupportedRequest(
            request_id, op_code, MongoError("ProtocolError", f"Unknown opCode {op_code}"), close_after=True
        )
    except MongoError as err:
        return UnsupportedRequest(request_id, op_code, err, reply_with_op_reply=(op_code == OP_QUERY), size=size)
    except (struct.error, IndexError) as exc:  # defensive: a truncated field inside a delimited frame
        return UnsupportedRequest(request_id, op_code, MongoError("InvalidBSON", f"Malformed message: {exc}"))


class WireConnection:
    """Sans-IO framing for one connection: feed bytes, pull messages."""

    def __init__(self, max_message_size: int = bsonutil.MAX_MESSAGE_SIZE_BYTES) -> None:
        self._buf = bytearray()
        self._max = max_message_size
        self.closed = False

    def receive_data(self, data: bytes) -> None:
        self._buf += data

    def next_message(self) -> Message | object:
        """The next complete message, or NEED_DATA.  Raises FrameError when framing is lost."""
        if len(self._buf) < 16:
            return NEED_DATA
        (size,) = _INT32.unpack_from(self._buf, 0)
        if size < 16 or size > self._max:
            self.closed = True
            raise FrameError(f"invalid message length {size}")
        if len(self._buf) < size:
            return NEED_DATA
        frame = bytes(memoryview(self._buf)[:size])  # (one copy: the view is gone before the buffer shrinks)
        del self._buf[:size]
        return parse_message(frame)

    def bytes_wanted(self, at_least: int) -> int:
        """How much to read next: what the message being received still lacks, `at_least` else."""
        if len(self._buf) < 4:
            return at_least
        (size,) = _INT32.unpack_from(self._buf, 0)
        return max(at_least, min(size, self._max) - len(self._buf))


def _header(length: int, request_id: int, response_to: int, op_code: int) -> bytes:
    return _HEADER.pack(length, request_id, response_to, op_code)


def encode_op_msg_raw(body: bytes, request_id: int, response_to: int, flags: int = 0) -> bytes:
    """An OP_MSG with one kind-0 section holding already-encoded BSON."""
    length = 16 + 4 + 1 + len(body)
    return b"".join((_header(length, request_id, response_to, OP_MSG), _UINT32.pack(flags), b"\x00", body))


def encode_op_msg_parts(parts: list, body_len: int, request_id: int, response_to: int, flags: int = 0) -> bytes:
    """An OP_MSG with one kind-0 section whose BSON comes in pieces (`bsonutil.encode_reply_parts`):
    the message is built by one join, the only copy of the pieces."""
    length = 16 + 4 + 1 + body_len
    return b"".join([_header(length, request_id, response_to, OP_MSG), _UINT32.pack(flags), b"\x00", *parts])


def encode_op_msg(doc: dict, request_id: int, response_to: int, flags: int = 0) -> bytes:
    return encode_op_msg_raw(bsonutil.encode(doc), request_id, response_to, flags)


def encode_op_reply(docs: list[dict], request_id: int, response_to: int, flags: int = 0, cursor_id: int = 0) -> bytes:
    payload = b"".join(bsonutil.encode(d) for d in docs)
    length = 16 + 20 + len(payload)
    return b"".join(
        (
            _header(length, request_id, response_to, OP_REPLY),
            struct.pack("<iqii", flags, cursor_id, 0, len(docs)),
            payload,
        )
    )
