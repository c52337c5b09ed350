"""The sans-IO wire codec, checked against pymongo's own encoder and decoder."""

from __future__ import annotations

import struct
from functools import reduce

import bson
import crc32c
import pytest
from bson.codec_options import DEFAULT_CODEC_OPTIONS
from hypothesis import given, settings
from hypothesis import strategies as st
from pymongo.message import _op_msg, _OpMsg

from mongosim.oplog.errors import MongoError
from mongosim.router import wire
from mongosim.router.wire import messages
from mongosim.router.wire.messages import CHECKSUM_PRESENT, MORE_TO_COME

# -- strategies ---------------------------------------------------------------------------
keys = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00$."), min_size=1, max_size=8)
scalars = st.one_of(st.integers(-(2**31), 2**31 - 1), st.booleans(), st.none(), st.text(max_size=20),
                    st.floats(allow_nan=False), st.binary(max_size=16))  # subtype 0 decodes as bytes
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(keys, inner, max_size=4)), max_leaves=12)
bodies = st.dictionaries(keys, values, max_size=6)


def frames(data: bytes):
    conn = wire.WireConnection()
    conn.receive_data(data)
    out = []
    while True:
        m = conn.next_message()
        if m is wire.NEED_DATA:
            return out
        out.append(m)


@given(body=bodies, db=keys)
@settings(max_examples=150, deadline=None)
def test_parses_pymongo_op_msg(body, db):
    cmd = {"ping": 1, **body}
    request_id, msg, _size, _max = _op_msg(0, dict(cmd), db, None, DEFAULT_CODEC_OPTIONS)
    (m,) = frames(msg)
    assert isinstance(m, wire.MsgRequest)
    assert m.request_id == request_id
    assert m.db == db
    assert m.body == {**cmd, "$db": db}


@given(docs=st.lists(st.dictionaries(keys, scalars, max_size=4), min_size=1, max_size=20))
@settings(max_examples=100, deadline=None)
def test_document_sequences_merge_into_the_body(docs):
    # pymongo sends the documents of an insert as a kind-1 section
    _rid, msg, _size, _max = _op_msg(0, {"insert": "c", "documents": docs, "ordered": True}, "db", None, DEFAULT_CODEC_OPTIONS)
    (m,) = frames(msg)
    assert m.body["insert"] == "c"
    assert m.body["documents"] == docs


@given(body=bodies, cuts=st.lists(st.integers(1, 40), max_size=30))
@settings(max_examples=100, deadline=None)
def test_any_fragmentation_yields_the_same_messages(body, cuts):
    msgs = [_op_msg(0, {"ping": i, **body}, "db", None, DEFAULT_CODEC_OPTIONS)[1] for i in range(3)]
    stream = b"".join(msgs)
    conn = wire.WireConnection()
    got = []
    pos = 0
    for c in cuts + [len(stream)]:
        conn.receive_data(stream[pos : pos + c])
        pos += c
        while (m := conn.next_message()) is not wire.NEED_DATA:
            got.append(m.body["ping"])
    assert got == [0, 1, 2]


@given(body=bodies)
@settings(max_examples=100, deadline=None)
def test_reply_is_readable_by_pymongo(body):
    reply = {"ok": 1.0, **body}
    data = wire.encode_op_msg(reply, 7, 42)
    length, rid, response_to, op = struct.unpack_from("<iiii", data)
    assert (length, rid, response_to, op) == (len(data), 7, 42, wire.OP_MSG)
    assert _OpMsg.unpack(data[16:]).unpack_response()[0] == reply


def _raw_op_msg(flags: int, sections: bytes, request_id: int = 1, checksum: bool = False) -> bytes:
    body = struct.pack("<I", flags) + sections
    length = 16 + len(body) + (4 if checksum else 0)
    msg = struct.pack("<iiii", length, request_id, 0, wire.OP_MSG) + body
    if checksum:
        msg += struct.pack("<I", crc32c.crc32c(msg))
    return msg


def test_checksum_is_verified():
    sec = b"\x00" + bson.encode({"ping": 1, "$db": "admin"})
    (ok,) = frames(_raw_op_msg(CHECKSUM_PRESENT, sec, checksum=True))
    assert ok.body["ping"] == 1 and ok.checksum_present
    bad = bytearray(_raw_op_msg(CHECKSUM_PRESENT, sec, checksum=True))
    bad[-1] ^= 0xFF
    (err,) = frames(bytes(bad))
    assert isinstance(err, wire.UnsupportedRequest) and err.error.code == 288


def test_more_to_come_and_unknown_required_flags():
    sec = b"\x00" + bson.encode({"insert": "c", "$db": "d"})
    (m,) = frames(_raw_op_msg(MORE_TO_COME, sec))
    assert m.more_to_come
    (bad,) = frames(_raw_op_msg(1 << 5, sec))
    assert isinstance(bad, wire.UnsupportedRequest) and bad.error.code == 223


def test_bad_content_is_an_error_reply_not_a_closed_connection():
    cases = {
        b"\x00" + b"\x05\x00\x00\x00": 22,  # truncated BSON (size 5 but missing terminator handled as invalid)
        b"\x07" + bson.encode({"a": 1}): 40432,  # unknown section kind
        b"\x00" + bson.encode({"a": 1, "$db": "x"}) + b"\x00" + bson.encode({"b": 1}): 40430,  # two bodies
        b"\x00" + bson.encode({"a": 1}): 40571,  # no $db
        b"\x00" + b"\x0c\x00\x00\x00\x02a\x00\x02\x00\x00\x00\xff\x00\x00": 22,  # bad UTF-8 is invalid BSON
    }
    for sections, code in cases.items():
        (m,) = frames(_raw_op_msg(0, sections))
        assert isinstance(m, wire.UnsupportedRequest), sections
        assert m.error.code == code, (sections, m.error)
    # and the next valid message on the same stream still parses
    good = _raw_op_msg(0, b"\x00" + bson.encode({"ping": 1, "$db": "admin"}))
    ms = frames(_raw_op_msg(0, b"\x07zz") + good)
    assert isinstance(ms[0], wire.UnsupportedRequest) and ms[1].body["ping"] == 1


@pytest.mark.parametrize("have, length, wanted", [(b"", 0, 1024), (b"\x00\x00", 0, 1024), (None, 100_000, 99_996),
                                                   (None, 500, 1024), (None, -1, 1024), (None, 2**31 - 1, 48_000_000 - 4)])
def test_a_read_asks_for_the_rest_of_the_message_being_received(have, length, wanted):
    """The server reads what the message it is receiving lacks in one call (`bytes_wanted`), never
    more than the largest message allowed, at least the usual read size."""
    conn = wire.WireConnection()
    conn.receive_data(struct.pack("<i", length) if have is None else have)
    assert conn.bytes_wanted(1024) == wanted


def test_a_document_sequence_in_a_larger_buffer_parses_as_in_its_own_frame():
    """A message's documents are sliced from the frame's own bytes; from a view of a larger buffer
    (no frame of its own) they are copied out first: the same documents and bytes either way."""
    docs = [{"_id": i, "x": "y" * i} for i in range(5)]
    msg = _op_msg(0, {"insert": "c", "documents": docs}, "db", None, DEFAULT_CODEC_OPTIONS)[1]
    own = wire.parse_message(msg)
    inner = wire.parse_message(memoryview(b"pad" + msg + b"pad")[3:-3])
    for m in (own, inner):
        assert m.body["documents"] == docs
        assert m.body["documents"].raws == [bson.encode(d) for d in docs]


@pytest.mark.parametrize("length", [0, 15, -1, 48_000_001])
def test_untrustworthy_length_closes_the_connection(length):
    conn = wire.WireConnection()
    conn.receive_data(struct.pack("<iiii", length, 1, 0, wire.OP_MSG) + b"\x00" * 8)
    with pytest.raises(wire.FrameError):
        conn.next_message()


def test_legacy_op_query_handshake_and_op_reply():
    q = bson.encode({"isMaster": 1, "helloOk": True})
    body = struct.pack("<i", 0) + b"admin.$cmd\x00" + struct.pack("<ii", 0, -1) + q
    msg = struct.pack("<iiii", 16 + len(body), 9, 0, wire.OP_QUERY) + body
    (m,) = frames(msg)
    assert isinstance(m, wire.QueryRequest) and m.is_command and m.db == "admin"
    assert m.command() == {"isMaster": 1, "helloOk": True}
    wrapped = bson.encode({"$query": {"hello": 1}, "$readPreference": {"mode": "primary"}})
    body2 = struct.pack("<i", 0) + b"admin.$cmd\x00" + struct.pack("<ii", 0, -1) + wrapped
    (m2,) = frames(struct.pack("<iiii", 16 + len(body2), 10, 0, wire.OP_QUERY) + body2)
    assert m2.command() == {"hello": 1}
    reply = wire.encode_op_reply([{"ok": 1.0, "ismaster": True}], 3, 9)
    length, _rid, response_to, op = struct.unpack_from("<iiii", reply)
    flags, cursor_id, start, n = struct.unpack_from("<iqii", reply, 16)
    assert (length, response_to, op, n, cursor_id) == (len(reply), 9, wire.OP_REPLY, 1, 0)
    assert bson.decode(reply[36:]) == {"ok": 1.0, "ismaster": True}


def test_unknown_and_legacy_opcodes():
    for op, close in ((2002, True), (9999, True), (2012, True), (2005, False)):
        body = b"\x00" * 24
        (m,) = frames(struct.pack("<iiii", 16 + len(body), 1, 0, op) + body)
        assert isinstance(m, wire.UnsupportedRequest)
        assert m.close_after == close


def _sequence_outcome(parse, data: bytes):
    try:
        docs = parse(memoryview(data), 0, len(data))
    except MongoError as err:
        return ("error", err.code, str(err))
    return ("ok", list(docs), docs.raws)


deep = st.integers(150, 220).map(lambda d: {"_id": 1, "pad": "x" * 1500,
                                             "a": reduce(lambda v, _: {"a": v}, range(d), 1)})


@given(docs=st.lists(st.one_of(st.dictionaries(keys, values, max_size=5), deep), min_size=1, max_size=8),
       flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=3))
@settings(max_examples=300, deadline=None)
def test_a_document_sequence_parses_as_when_checked_document_by_document(docs, flips):
    """The sequence decoded in one call and sliced by offsets gives the documents, bytes and errors
    (in order) of the document-by-document walk, for valid and corrupted sections alike."""
    data = bytearray(b"".join(bson.encode(d) for d in docs))
    for at, value in flips:
        data[at % len(data)] = value
    data = bytes(data)
    assert (_sequence_outcome(messages._document_sequence, data)
            == _sequence_outcome(messages._checked_sequence, data))
