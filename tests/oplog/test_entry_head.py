"""`layout.entry_head`: an oplog entry's (ts key, op, ns) read from its bytes equals what decoding it gives,
whatever the entry's other fields hold and wherever they stand."""

from __future__ import annotations

import pytest
from bson import Int64, Timestamp
from hypothesis import given, settings
from hypothesis import strategies as st

from mongosim.oplog import bsonutil
from mongosim.oplog.clock import ts_key
from mongosim.oplog.layout import entry_head
from tests.oplog.bson_values import names, no_nul_text

leaves = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False), no_nul_text,
                   st.binary(max_size=20), st.builds(Timestamp, st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1)))
values = st.recursive(leaves, lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(names, c, max_size=3)),
                      max_leaves=8)
documents = st.dictionaries(names, values, max_size=4)
ops = st.sampled_from(["i", "u", "d", "c", "n"])
stamps = st.builds(Timestamp, st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1))
# fields whose names or values could be mistaken for op, ns or ts by a walk that did not skip them whole
decoys = st.dictionaries(st.one_of(names, st.sampled_from(["o", "o2", "ui", "t", "v", "wall", "lsid", "tx"])),
                         st.one_of(values, stamps, documents.map(lambda d: {"ts": Timestamp(1, 2), "op": "x", **d})),
                         max_size=5)


@st.composite
def entries(draw) -> dict:
    head = {"op": draw(ops), "ts": draw(stamps)}
    if draw(st.booleans()):
        head["ns"] = draw(no_nul_text)
    fields = list(draw(decoys).items()) + list(head.items())
    fields = [(k, v) for k, v in fields if k not in head or v is head[k]]
    order = draw(st.permutations(fields))
    return dict(order)


@settings(max_examples=400, deadline=None)
@given(entries())
def test_entry_head_is_what_decoding_gives(entry: dict) -> None:
    raw = bsonutil.encode(entry)
    decoded = bsonutil.decode(raw)
    assert entry_head(raw) == (ts_key(decoded["ts"]), decoded["op"], decoded.get("ns", ""))


def test_an_entry_without_ts_or_op_is_refused() -> None:
    with pytest.raises(ValueError):
        entry_head(bsonutil.encode({"op": "i", "ns": "a.b", "o": {"ts": Timestamp(1, 1)}}))
    with pytest.raises(ValueError):
        entry_head(bsonutil.encode({"ts": Timestamp(1, 1), "t": Int64(1)}))
