"""Robustness: arbitrary BSON values never make the engine fail with anything but MongoError,
and every update's diff still rebuilds the post-image (NaN, Decimal128, dates, ObjectIds...)."""

from __future__ import annotations

import datetime

from bson import Binary, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from hypothesis import given
from hypothesis import strategies as st

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.diff import apply_diff, update_description
from mongosim.shardsim.query.matcher import Matcher
from mongosim.shardsim.query.projection import compile_projection
from mongosim.shardsim.query.sorting import sort_key_fn
from mongosim.shardsim.query.update import apply_update
from tests.query._settings import QUERY_SETTINGS
from tests.query.strategies import NAMES, filters, operator_updates, paths

wild_scalars = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([Decimal128("NaN"), Decimal128("1.5"), Decimal128("-0"), Int64(7)]),
    st.text(max_size=3),
    st.none(),
    st.booleans(),
    st.sampled_from([ObjectId("0123456789ab0123456789ab"), datetime.datetime(2020, 1, 1), Timestamp(5, 1)]),
    st.sampled_from([Binary(b"\x00", 0), Binary(b"1234567890123456", 4), Regex("^a", "i"), MinKey(), MaxKey()]),
)
wild_values = st.recursive(
    wild_scalars,
    lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(NAMES, c, max_size=3)),
    max_leaves=8,
)
wild_docs = st.builds(lambda i, b: {"_id": i, **b}, st.integers(0, 3), st.dictionaries(st.sampled_from(["a", "b", "c"]), wild_values, max_size=3))


@QUERY_SETTINGS
@given(doc=wild_docs, flt=filters())
def test_matcher_never_crashes(doc, flt):
    try:
        m = Matcher(flt)
    except MongoError:
        return
    assert m.matches(doc) in (True, False)
    ok, pos = m.match_position(doc)
    assert ok == m.matches(doc) and (pos is None or isinstance(pos, int))


@QUERY_SETTINGS
@given(doc=wild_docs, update=operator_updates(), value=wild_values, path=paths(max_parts=2))
def test_updates_never_crash_and_round_trip(doc, update, value, path):
    update = {**update, "$set": {**update.get("$set", {}), path: value}} if "$set" in update else update
    try:
        res = apply_update(doc, update)
    except MongoError:
        return
    if res.diff is not None:
        assert apply_diff(doc, res.diff) == res.doc or _has_nan(res.doc)
        update_description(res.diff, show_expanded=True)


@QUERY_SETTINGS
@given(docs=st.lists(wild_docs, max_size=4), field=paths(max_parts=2), direction=st.sampled_from([1, -1]))
def test_sort_and_projection_never_crash(docs, field, direction):
    sorted(docs, key=sort_key_fn({field: direction}))
    for d in docs:
        compile_projection({field: 1})(d)
        compile_projection({field: 0})(d)


def _has_nan(v) -> bool:
    if isinstance(v, float):
        return v != v
    if isinstance(v, Decimal128):
        return v.to_decimal().is_nan()
    if isinstance(v, dict):
        return any(_has_nan(x) for x in v.values())
    if isinstance(v, list):
        return any(_has_nan(x) for x in v)
    return False
