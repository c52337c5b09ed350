"""A reply with a RawBatch, encoded in pieces (`bsonutil.encode_reply_parts`), is byte for byte the
plain encoding of the same reply, and the wire message built from the pieces is the one built from
the joined body."""

from __future__ import annotations

from bson import Int64, Timestamp
from bson.raw_bson import RawBSONDocument
from hypothesis import given
from hypothesis import strategies as st

from mongosim.oplog import bsonutil
from mongosim.oplog.bsonutil import RawBatch, encode_reply, encode_reply_parts
from mongosim.router.wire.messages import encode_op_msg_parts, encode_op_msg_raw

_scalars = st.one_of(st.integers(-2**31, 2**31 - 1), st.text(max_size=8), st.booleans(), st.none(),
                     st.builds(Timestamp, st.integers(0, 2**31), st.integers(0, 5)))
_docs = st.dictionaries(st.text("abc_", min_size=1, max_size=4), _scalars, max_size=4)
_keys = st.sampled_from(["ok", "operationTime", "$clusterTime", "note", "writeConcernError"])


@given(batch=st.lists(_docs, max_size=40), field=st.sampled_from(["firstBatch", "nextBatch"]),
       before=st.dictionaries(_keys, _scalars, max_size=2), after=st.dictionaries(_keys, _scalars, max_size=3),
       pbrt=st.none() | _docs)
def test_pieces_join_to_the_plain_encoding(batch, field, before, after, pbrt):
    raws = [bsonutil.encode(d) for d in batch]
    cursor = {field: RawBatch(raws), "id": Int64(7), "ns": "db.c"}
    if pbrt is not None:
        cursor["postBatchResumeToken"] = pbrt
    reply = {**before, "cursor": cursor, **{k: v for k, v in after.items() if k not in before}}
    plain = {**reply, "cursor": {**cursor, field: [RawBSONDocument(r) for r in raws]}}
    want = bsonutil.encode(plain)
    parts, total = encode_reply_parts(reply)
    assert b"".join(parts) == want == encode_reply(reply)
    assert total == len(want)
    assert encode_op_msg_parts(parts, total, 5, 9, 2) == encode_op_msg_raw(want, 5, 9, 2)


def test_a_reply_without_a_raw_batch_is_one_piece():
    reply = {"cursor": {"firstBatch": [{"a": 1}], "id": Int64(0), "ns": "d.c"}, "ok": 1.0}
    assert encode_reply_parts(reply) == ([bsonutil.encode(reply)], len(bsonutil.encode(reply)))
