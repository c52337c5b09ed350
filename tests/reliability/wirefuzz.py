"""A wire-protocol fuzzer: hypothesis strategies for hostile frames, and a prober that sends them.

Every generated `Case` says how the server must react:

- "delimited": a frame whose header length is exactly its byte count.  The
  server must answer it (any well-formed reply), stay silent (moreToCome), or
  close the connection (unknown/legacy opcodes) -- promptly.  The prober sends a
  valid `ping` right behind it on the same connection: that ping must be
  answered, or, if the server closed the connection, a new connection's ping.
- "bad_length": the header length is < 16 or > 48 MB: the stream cannot be
  framed any more, the server must close the connection without a reply.
- "disconnect": part of a frame, then the client goes away mid-frame.

Frames: bad lengths, truncated headers and bodies, unknown and legacy opcodes,
OP_COMPRESSED, OP_QUERY variants, broken OP_MSG sections (unknown kinds, bad
sequence sizes, unterminated or non-UTF-8 identifiers, several bodies, no
body), flag bits (required unknown bits, checksums right and wrong,
moreToCome, exhaustAllowed), invalid BSON (byte flips, bad lengths, bad
UTF-8), deeply nested documents, oversized documents, and structurally valid
commands with random arguments of every BSON type.
"""

from __future__ import annotations

import datetime
import functools
import socket
import struct
import time
from collections import Counter
from dataclasses import dataclass, field

import bson
import crc32c
from bson import Binary, Code, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from hypothesis import strategies as st

OP_REPLY, OP_UPDATE, OP_INSERT, OP_QUERY, OP_GET_MORE, OP_DELETE, OP_KILL_CURSORS = 1, 2001, 2002, 2004, 2005, 2006, 2007
OP_COMPRESSED, OP_MSG = 2012, 2013
MAX_MESSAGE = 48_000_000
MAX_BSON_INTERNAL = 16 * 1024 * 1024 + 16 * 1024

_HDR = struct.Struct("<iiii")


@dataclass
class Case:
    kind: str  # "delimited" | "bad_length" | "disconnect"
    data: bytes
    label: str

    def __repr__(self) -> str:  # keep hypothesis' failure reports readable
        shown = self.data if len(self.data) <= 200 else self.data[:200] + b"..."
        return f"Case({self.kind!r}, {self.label!r}, {len(self.data)} bytes: {shown!r})"


def frame(op: int, payload: bytes, request_id: int = 1, response_to: int = 0) -> bytes:
    return _HDR.pack(16 + len(payload), request_id, response_to, op) + payload


def op_msg(body: bytes, flags: int = 0, request_id: int = 1, extra_sections: bytes = b"") -> bytes:
    return frame(OP_MSG, struct.pack("<I", flags) + b"\x00" + body + extra_sections, request_id)


def with_checksum(msg: bytes, correct: bool = True) -> bytes:
    """Append a CRC-32C over the whole message (length fixed up), or a wrong one."""
    size = len(msg) + 4
    msg = struct.pack("<i", size) + msg[4:]
    crc = crc32c.crc32c(msg)
    return msg + struct.pack("<I", crc if correct else (crc ^ 0x5A5A5A5A))


# -- BSON values of every type ------------------------------------------------------------
_keys = st.sampled_from(["a", "b", "x", "_id", "k", "$db", "$set", "$gt", "a.b", "", "$", "ns", "0", "1",
                         "filter", "documents", "pipeline", "cursor", "batchSize"])
_scalars = st.one_of(
    st.integers(-(2**31), 2**31 - 1),
    st.integers(-(2**63), 2**63 - 1).map(Int64),
    st.floats(),
    st.booleans(),
    st.none(),
    st.text(max_size=12),
    st.binary(max_size=12),
    st.binary(min_size=16, max_size=16).map(lambda b: Binary(b, 4)),
    st.builds(ObjectId),
    st.sampled_from([MinKey(), MaxKey(), Decimal128("NaN"), Decimal128("-0"), Decimal128("1E+6144"),
                     Regex("a.*b", "i"), Code("function(){}"), Timestamp(0, 0), Timestamp(2**31, 7),
                     datetime.datetime(1970, 1, 1), datetime.datetime(2200, 1, 1)]),
)
bson_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_keys, inner, max_size=3)),
    max_leaves=4,
)

# -- commands -------------------------------------------------------------------------------
# configureFailPoint and addShard are left out: one would make every later command fail,
# the other adds nodes.  Awaitable hello fields (topologyVersion, maxAwaitTimeMS) are left out
# too: an exhaust hello streams replies forever by design.
COMMANDS = ["ping", "hello", "isMaster", "ismaster", "buildInfo", "find", "insert", "update", "delete",
            "findAndModify", "aggregate", "getMore", "killCursors", "count", "distinct", "create", "drop",
            "createIndexes", "dropIndexes", "listCollections", "listIndexes", "listDatabases", "collMod",
            "renameCollection", "endSessions", "killSessions", "startSession", "serverStatus", "connectionStatus",
            "getParameter", "whatsmyuri", "enableSharding", "split", "listShards", "commitTransaction",
            "abortTransaction", "saslStart", "saslContinue", "logout", "listCommands", "hostInfo",
            "noSuchCommand", "", "$eval", "PING"]
OPTION_KEYS = ["filter", "pipeline", "documents", "updates", "deletes", "cursor", "batchSize", "limit", "sort",
               "projection", "query", "key", "new", "upsert", "ordered", "writeConcern", "readConcern", "lsid",
               "txnNumber", "autocommit", "startTransaction", "maxTimeMS", "comment", "collection", "cursors",
               "indexes", "name", "to", "$clusterTime", "hint", "let", "collation", "update", "remove", "q", "u",
               "multi", "explain", "allowDiskUse", "$readPreference", "nameOnly", "dropTarget", "middle", "find"]
STAGES = ["$match", "$project", "$changeStream", "$group", "$sort", "$limit", "$skip", "$unwind", "$addFields",
          "$set", "$unset", "$replaceRoot", "$count", "$facet", "$bogus", "$documents", "$sample", "$lookup",
          "$redact", "$changeStreamSplitLargeEvent", "$_internalChangeStreamOplogMatch", "$out", "$merge"]
CHANGE_STREAM_OPTS = ["fullDocument", "fullDocumentBeforeChange", "resumeAfter", "startAfter",
                      "startAtOperationTime", "allChangesForCluster", "showExpandedEvents", "showMigrationEvents",
                      "allowToRunOnConfigDB", "bogus"]

targets = st.one_of(st.sampled_from(["c", "d", "fuzz", "", "a.b", "$cmd", "system.views", "x" * 200]),
                    st.integers(-3, 3), st.none(), bson_values)
stage = st.builds(lambda name, v: {name: v}, st.sampled_from(STAGES),
                  st.one_of(bson_values, st.dictionaries(st.sampled_from(CHANGE_STREAM_OPTS), bson_values, max_size=3)))
option_values = st.one_of(_scalars, bson_values, st.lists(stage, max_size=2),
                          st.lists(st.dictionaries(_keys, _scalars, max_size=2), max_size=2))
databases = st.one_of(st.sampled_from(["fuzz", "admin", "config", "local", "test", "", "a.b", "$x", "x" * 80]),
                      st.integers(0, 3), st.none())


_uuids = st.builds(lambda b, subtype: bson.Binary(b, subtype), st.binary(min_size=0, max_size=20),
                   st.sampled_from([4, 4, 4, 0, 3]))
# session ids, well formed or nearly: {id}, child sessions, a missing id, strange fields
lsids = st.dictionaries(st.sampled_from(["id", "id", "uid", "txnNumber", "txnUUID", "zz"]),
                        st.one_of(_uuids, _scalars, st.builds(bson.Int64, st.integers(-2, 5))), max_size=4)


@st.composite
def commands(draw) -> dict:
    cmd: dict = {draw(st.sampled_from(COMMANDS)): draw(targets)}
    for k in draw(st.lists(st.sampled_from(OPTION_KEYS), max_size=3, unique=True)):
        cmd[k] = draw(st.one_of(lsids, option_values) if k == "lsid" else option_values)
    if "lsid" in cmd and draw(st.booleans()):
        cmd["txnNumber"] = bson.Int64(draw(st.integers(0, 3)))
    if draw(st.booleans()):
        cmd["$db"] = draw(databases)
    else:
        cmd["$db"] = "fuzz"
    return cmd


def encode_cmd(cmd: dict) -> bytes:
    try:
        return bson.encode(cmd, check_keys=False)
    except Exception:
        return bson.encode({"ping": 1, "$db": "admin"})


# -- byte-level corruption ---------------------------------------------------------------
@st.composite
def mutated(draw, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        if not b:
            break
        how = draw(st.sampled_from(["flip", "set", "int32", "cut", "insert", "utf8"]))
        pos = draw(st.integers(0, len(b) - 1))
        if how == "flip":
            b[pos] ^= 1 << draw(st.integers(0, 7))
        elif how == "set":
            b[pos] = draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF, 0x13, 0x0A]))
        elif how == "int32":
            v = draw(st.sampled_from([0, 1, 4, 5, -1, 2**31 - 1, -(2**31), len(b), len(b) + 1, 17 * 1024 * 1024]))
            b[pos:pos + 4] = struct.pack("<i", v)[: max(0, min(4, len(b) - pos))]
        elif how == "cut":
            del b[pos:]
        elif how == "insert":
            b[pos:pos] = draw(st.binary(min_size=1, max_size=6))
        else:
            b[pos:pos] = draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80",
                                               b"\xc0\xaf"]))
    return bytes(b)


def bson_raw_elements(elements: list[tuple[int, bytes, bytes]]) -> bytes:
    """A BSON document from raw (type, key bytes, value bytes) elements: keys/values may be invalid."""
    body = b"".join(bytes([t]) + k + b"\x00" + v for t, k, v in elements) + b"\x00"
    return struct.pack("<i", len(body) + 4) + body


def bson_string(s: bytes) -> bytes:
    return struct.pack("<i", len(s) + 1) + s + b"\x00"


BAD_UTF8 = [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\xc0\xaf", b"ok\x80", b"\xe2\x82"]


@st.composite
def bad_utf8_body(draw) -> bytes:
    bad = draw(st.sampled_from(BAD_UTF8))
    where = draw(st.sampled_from(["key", "value", "db", "cmdname", "nested"]))
    if where == "key":
        return bson_raw_elements([(0x10, b"ping", struct.pack("<i", 1)), (0x10, bad, struct.pack("<i", 1)),
                                  (0x02, b"$db", bson_string(b"admin"))])
    if where == "value":
        return bson_raw_elements([(0x02, b"find", bson_string(bad)), (0x02, b"$db", bson_string(b"fuzz"))])
    if where == "db":
        return bson_raw_elements([(0x10, b"ping", struct.pack("<i", 1)), (0x02, b"$db", bson_string(bad))])
    if where == "cmdname":
        return bson_raw_elements([(0x10, bad, struct.pack("<i", 1)), (0x02, b"$db", bson_string(b"admin"))])
    inner = bson_raw_elements([(0x02, b"x", bson_string(bad))])
    return bson_raw_elements([(0x02, b"insert", bson_string(b"c")),
                              (0x04, b"documents", bson_raw_elements([(0x03, b"0", inner)])),
                              (0x02, b"$db", bson_string(b"fuzz"))])


@functools.lru_cache(maxsize=64)
def nested_bson(depth: int, array: bool) -> bytes:
    """`depth` levels of {a: {a: ...}} (or [[...]]) inside one document, as raw BSON (built in O(depth))."""
    key = b"0" if array else b"a"
    t = b"\x04" if array else b"\x03"
    heads = []
    size = 5
    for _ in range(depth):
        size += 4 + 1 + len(key) + 1 + 1 - 4 + 4  # length, type, key, nul ... closing nul
        heads.append(struct.pack("<i", size) + t + key + b"\x00")
    heads.reverse()
    return b"".join(heads) + b"\x05\x00\x00\x00\x00" + b"\x00" * depth


@st.composite
def deep_body(draw) -> bytes:
    depth = draw(st.one_of(st.integers(150, 260), st.integers(260, 3000), st.just(100_000 // 8)))
    nested = nested_bson(depth, draw(st.booleans()))
    name = draw(st.sampled_from(["ping", "find", "insert", "aggregate", "update"]))
    field_name = draw(st.sampled_from([b"filter", b"x", b"documents", b"pipeline", b"comment"]))
    t = 0x04 if nested[4] == 0x04 and field_name in (b"documents", b"pipeline") else 0x03
    return bson_raw_elements([(0x02, name.encode(), bson_string(b"c")), (t, field_name, nested),
                              (0x02, b"$db", bson_string(b"fuzz"))])


# -- frames -------------------------------------------------------------------------------------
flags_values = st.sampled_from([0, 0, 0, 2, 1 << 16, 1 << 5, 1 << 15, 1 << 17, 1 << 31, 0xFFFFFFFF, 2 | (1 << 16)])


@st.composite
def good_command_frames(draw) -> Case:
    cmd = draw(commands())
    flags = draw(flags_values)
    msg = op_msg(encode_cmd(cmd), flags & ~1, request_id=draw(st.integers(-(2**31), 2**31 - 1)))
    if flags & 1 or draw(st.integers(0, 9)) == 0:
        msg = with_checksum(op_msg(encode_cmd(cmd), (flags | 1)), correct=draw(st.booleans()))
    return Case("delimited", msg, "command")


@st.composite
def mutated_body_frames(draw) -> Case:
    body = draw(mutated(encode_cmd(draw(commands()))))
    return Case("delimited", op_msg(body), "mutated-body")


@st.composite
def mutated_frame_frames(draw) -> Case:
    """Corrupt anywhere after the length field; the length is then fixed up to stay delimited."""
    msg = op_msg(encode_cmd(draw(commands())))
    tail = draw(mutated(msg[4:]))
    data = struct.pack("<i", 4 + len(tail)) + tail
    if len(data) < 16:
        return Case("disconnect", data, "mutated-short")
    return Case("delimited", data, "mutated-frame")


@st.composite
def section_frames(draw) -> Case:
    parts = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from([0, 0, 1, 1, 2, 3, 255]))
        if kind == 0:
            parts.append(b"\x00" + draw(st.one_of(st.just(encode_cmd(draw(commands()))),
                                                  st.binary(max_size=12))))
        elif kind == 1:
            ident = draw(st.sampled_from([b"documents\x00", b"updates\x00", b"ping\x00", b"\xff\xfe\x00",
                                          b"unterminated", b"\x00", b"$db\x00"]))
            docs = b"".join(draw(st.lists(st.one_of(st.just(bson.encode({"_id": 1})), st.binary(max_size=8),
                                                    st.just(b"\x05\x00\x00\x00\x00")), max_size=3)))
            size = 4 + len(ident) + len(docs)
            size = draw(st.sampled_from([size, size, size - 1, size + 1, 0, 3, 4, -1, 2**31 - 1]))
            parts.append(b"\x01" + struct.pack("<i", size) + ident + docs)
        else:
            parts.append(bytes([kind]) + draw(st.binary(max_size=8)))
    payload = struct.pack("<I", draw(st.sampled_from([0, 0, 2, 1 << 16]))) + b"".join(parts)
    return Case("delimited", frame(OP_MSG, payload), "sections")


@st.composite
def bad_utf8_frames(draw) -> Case:
    body = draw(bad_utf8_body())
    if draw(st.booleans()):
        return Case("delimited", op_msg(body), "bad-utf8")
    ident = draw(st.sampled_from(BAD_UTF8)) + b"\x00"
    seq = ident + bson.encode({"_id": 1})
    section = b"\x01" + struct.pack("<i", 4 + len(seq)) + seq
    return Case("delimited", op_msg(bson.encode({"insert": "c", "$db": "fuzz"}), extra_sections=section),
                "bad-utf8-identifier")


@st.composite
def deep_frames(draw) -> Case:
    return Case("delimited", op_msg(draw(deep_body())), "deep")


@st.composite
def oversized_frames(draw) -> Case:
    extra = draw(st.sampled_from([0, 1, 1024 * 1024]))
    where = draw(st.sampled_from(["body", "sequence"]))
    blob = b"x" * (MAX_BSON_INTERNAL + extra)
    doc = bson_raw_elements([(0x02, b"_id", bson_string(b"big")), (0x02, b"pad", bson_string(blob))])
    if where == "body":
        body = bson_raw_elements([(0x02, b"insert", bson_string(b"c")),
                                  (0x04, b"documents", bson_raw_elements([(0x03, b"0", doc)])),
                                  (0x02, b"$db", bson_string(b"fuzz"))])
        return Case("delimited", op_msg(body), "oversized-body")
    seq = b"documents\x00" + doc
    section = b"\x01" + struct.pack("<i", 4 + len(seq)) + seq
    return Case("delimited", op_msg(bson.encode({"insert": "c", "$db": "fuzz"}), extra_sections=section),
                "oversized-sequence")


@st.composite
def op_query_frames(draw) -> Case:
    coll = draw(st.sampled_from([b"admin.$cmd\x00", b"fuzz.c\x00", b"\xff.$cmd\x00", b"admin.$cmd", b"\x00",
                                 b"x" * 100 + b"\x00"]))
    q = draw(st.one_of(st.just(bson.encode({"isMaster": 1})), st.just(bson.encode({"hello": 1, "helloOk": True})),
                       st.just(bson.encode({"$query": {"ismaster": 1}})), st.just(bson.encode({"$query": 5})),
                       st.just(bson.encode({"query": "x"})), st.just(bson.encode({"find": "c"})),
                       st.builds(encode_cmd, commands()), st.binary(max_size=10)))
    q = draw(st.one_of(st.just(q), mutated(q)))
    fields = draw(st.sampled_from([b"", bson.encode({"a": 1}), b"\x05\x00"]))
    payload = struct.pack("<i", draw(st.integers(-1, 255))) + coll + struct.pack("<ii", draw(st.integers(-5, 5)),
                                                                              draw(st.integers(-5, 5))) + q + fields
    if draw(st.integers(0, 3)) == 0:
        payload = payload[: draw(st.integers(0, len(payload)))]
    return Case("delimited", frame(OP_QUERY, payload), "op-query")


@st.composite
def opcode_frames(draw) -> Case:
    op = draw(st.one_of(st.sampled_from([OP_REPLY, OP_UPDATE, OP_INSERT, OP_GET_MORE, OP_DELETE, OP_KILL_CURSORS,
                                         OP_COMPRESSED, 2010, 2011, 0, -1, 2**31 - 1, 1000]),
                        st.integers(-(2**31), 2**31 - 1)))
    payload = draw(st.one_of(st.binary(max_size=64), st.just(struct.pack("<I", 0) + b"\x00" + bson.encode({"ping": 1}))))
    return Case("delimited", frame(op, payload), "opcode")


@st.composite
def bad_length_frames(draw) -> Case:
    length = draw(st.one_of(st.integers(-(2**31), 15), st.integers(MAX_MESSAGE + 1, 2**31 - 1)))
    rest = draw(st.binary(min_size=12, max_size=40))
    return Case("bad_length", struct.pack("<i", length) + rest, "bad-length")


@st.composite
def disconnect_frames(draw) -> Case:
    msg = op_msg(encode_cmd(draw(commands())))
    cut = draw(st.integers(0, len(msg) - 1))
    data = msg[:cut]
    if draw(st.booleans()) and len(data) >= 4:  # promise much more than is sent
        data = struct.pack("<i", draw(st.integers(len(msg), MAX_MESSAGE))) + data[4:]
    return Case("disconnect", data, "disconnect")


@st.composite
def pipelined_frames(draw) -> Case:
    cases = draw(st.lists(st.one_of(good_command_frames(), mutated_body_frames(), section_frames(),
                                    bad_utf8_frames()), min_size=2, max_size=5))
    return Case("delimited", b"".join(c.data for c in cases), "pipelined")


def fuzz_frames(oversized: bool = True) -> st.SearchStrategy[Case]:
    parts = [good_command_frames(), good_command_frames(), mutated_body_frames(), mutated_frame_frames(),
             section_frames(), bad_utf8_frames(), deep_frames(), op_query_frames(), opcode_frames(),
             bad_length_frames(), disconnect_frames(), pipelined_frames()]
    if oversized:
        # rare: each one is > 16 MB on the wire
        parts.append(st.integers(0, 199).flatmap(lambda n: oversized_frames() if n == 0 else good_command_frames()))
    return st.one_of(parts)


# -- the prober ----------------------------------------------------------------------------------
PING_ID = 0x7E57_0001


class ServerHung(AssertionError):
    pass


class Conn:
    """A client socket with its own receive buffer (replies may arrive back to back)."""

    def __init__(self, addr: tuple[str, int], timeout: float) -> None:
        self.sock = socket.create_connection(addr, timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def sendall(self, data: bytes) -> None:
        self.sock.sendall(data)

    def close(self) -> None:
        self.sock.close()

    def read_frame(self, deadline: float) -> bytes | None:
        """One whole frame, or None at EOF/reset.  Raises ServerHung past the deadline."""
        while True:
            if len(self.buf) >= 4:
                need = struct.unpack_from("<i", self.buf)[0]
                assert 16 <= need <= MAX_MESSAGE, f"server sent a bad frame length {need}"
                if len(self.buf) >= need:
                    data, self.buf = self.buf[:need], self.buf[need:]
                    return data
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ServerHung("no reply before the deadline")
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(1 << 20)
            except socket.timeout:
                raise ServerHung("no reply before the deadline") from None
            except (ConnectionResetError, BrokenPipeError):
                return None
            if not chunk:
                assert not self.buf, "server closed the connection in the middle of a reply"
                return None
            self.buf += chunk


def parse_reply(data: bytes) -> dict:
    """Check a server frame is well formed; return its (first) document."""
    length, _rid, response_to, op = _HDR.unpack_from(data)
    assert length == len(data)
    if op == OP_MSG:
        (flags,) = struct.unpack_from("<I", data, 16)
        assert data[20] == 0, "reply's first section is not a body"
        doc = bson.decode(data[21:])
        doc["__flags"] = flags
    elif op == OP_REPLY:
        _flags, _cid, _start, n = struct.unpack_from("<iqii", data, 16)
        docs = bson.decode_all(data[36:])
        assert len(docs) == n
        doc = docs[0] if docs else {}
    else:
        raise AssertionError(f"server replied with opcode {op}")
    doc["__response_to"] = response_to
    return doc


def ping_frame() -> bytes:
    return op_msg(bson.encode({"ping": 1, "$db": "admin"}), request_id=PING_ID)


@dataclass
class Stats:
    frames: int = 0
    replies: int = 0
    closes: int = 0
    reconnects: int = 0
    codes: Counter = field(default_factory=Counter)
    labels: Counter = field(default_factory=Counter)
    internal_errors: list = field(default_factory=list)


class Prober:
    """Sends cases to one server; keeps one reusable connection and one idle bystander."""

    def __init__(self, host: str, port: int, reply_timeout: float = 10.0) -> None:
        self.addr = (host, port)
        self.timeout = reply_timeout
        self.conn: Conn | None = None
        self.bystander = Conn(self.addr, reply_timeout)
        self.stats = Stats()
        self._to_kill: list[tuple[str, str, object]] = []
        self.current: Case | None = None

    def _conn(self) -> Conn:
        if self.conn is None:
            self.conn = Conn(self.addr, self.timeout)
            self.stats.reconnects += 1
        return self.conn

    def _drop(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            finally:
                self.conn = None

    def request(self, conn: Conn, cmd: dict, request_id: int = PING_ID) -> dict:
        conn.sendall(op_msg(bson.encode(cmd), request_id=request_id))
        return self.wait_for(conn, request_id)

    def wait_for(self, conn: Conn, request_id: int, deadline: float | None = None) -> dict:
        deadline = deadline or time.monotonic() + self.timeout
        while True:
            data = conn.read_frame(deadline)
            assert data is not None, "server closed a healthy connection"
            doc = parse_reply(data)
            if doc["__response_to"] == request_id:
                return doc
            self._note(doc)

    def ping(self, conn: Conn) -> None:
        doc = self.request(conn, {"ping": 1, "$db": "admin"})
        assert doc.get("ok") == 1, doc

    def check_health(self) -> None:
        """The bystander connection and a brand-new connection both answer ping."""
        self.ping(self.bystander)
        fresh = Conn(self.addr, self.timeout)
        try:
            self.ping(fresh)
        finally:
            fresh.close()

    def run(self, case: Case) -> None:
        self.current = case
        self.stats.frames += 1
        conn = self._conn()
        if case.kind == "disconnect":
            try:
                conn.sendall(case.data)
            except OSError:
                pass
            self._drop()
            return
        if case.kind == "bad_length":
            try:
                conn.sendall(case.data)
            except OSError:
                self._drop()
                return
            data = conn.read_frame(time.monotonic() + self.timeout)
            assert data is None, f"server answered an unframeable message: {data[:64]!r}"
            self.stats.closes += 1
            self._drop()
            return
        try:
            conn.sendall(case.data + ping_frame())
        except OSError:  # the server may close before reading everything (e.g. after a bad opcode)
            self._closed()
            return
        deadline = time.monotonic() + self.timeout + len(case.data) / 5e6
        while True:
            data = conn.read_frame(deadline)
            if data is None:
                self._closed()
                return
            doc = parse_reply(data)
            if doc["__response_to"] == PING_ID:
                assert doc.get("ok") == 1, doc
                break
            self._note(doc)
        self._kill_cursors(conn)

    def _closed(self) -> None:
        self.stats.closes += 1
        self._drop()
        conn = self._conn()
        self.ping(conn)  # a new connection answers the next request
        self._kill_cursors(conn)

    def _note(self, doc: dict) -> None:
        self.stats.replies += 1
        if not doc.get("ok"):
            self.stats.codes[(doc.get("code"), doc.get("codeName"))] += 1
            for label in doc.get("errorLabels", []):
                self.stats.labels[label] += 1
            if doc.get("code") == 1:
                case = self.current
                self.stats.internal_errors.append((doc.get("errmsg"), case.label if case else None,
                                                   case.data[:400] if case else None))
        cur = doc.get("cursor")
        if isinstance(cur, dict) and cur.get("id"):
            db, _, coll = str(cur.get("ns", "x.y")).partition(".")
            self._to_kill.append((db, coll, cur["id"]))

    def _kill_cursors(self, conn: Conn) -> None:
        """Do not leave fuzzed cursors (e.g. change streams) behind."""
        while self._to_kill:
            db, coll, cid = self._to_kill.pop()
            self.request(conn, {"killCursors": coll, "cursors": [cid], "$db": db}, PING_ID - 1)

    def close(self) -> None:
        self._drop()
        self.bystander.close()
