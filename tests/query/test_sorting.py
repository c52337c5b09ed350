"""Sorting by a sort spec: unit tests and a differential test against mongomock."""

from __future__ import annotations

import mongomock
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.sorting import sort_key_fn
from tests.query._settings import QUERY_SETTINGS

_COLL = mongomock.MongoClient().db.sort_oracle


def ids(docs, spec):
    return [d["_id"] for d in sorted(docs, key=sort_key_fn(spec))]


def test_mixed_types_and_missing():
    docs = [{"_id": 1, "a": "x"}, {"_id": 2, "a": 5}, {"_id": 3}, {"_id": 4, "a": None}, {"_id": 5, "a": {"b": 1}}]
    assert ids(docs, {"a": 1}) == [3, 4, 2, 1, 5]
    assert ids(docs, {"a": -1}) == [5, 1, 2, 3, 4]


def test_arrays_use_min_or_max_element():
    docs = [{"_id": 1, "a": [1, 10]}, {"_id": 2, "a": 5}, {"_id": 3, "a": []}]
    assert ids(docs, {"a": 1}) == [3, 1, 2]
    assert ids(docs, {"a": -1}) == [1, 2, 3]


def test_compound_and_dotted():
    docs = [{"_id": 1, "a": {"b": 2}, "c": 1}, {"_id": 2, "a": {"b": 1}, "c": 2}, {"_id": 3, "a": {"b": 2}, "c": 0}]
    assert ids(docs, {"a.b": 1, "c": -1}) == [2, 1, 3]
    assert ids([{"_id": 1, "a": [{"b": 3}, {"b": 0}]}, {"_id": 2, "a": {"b": 1}}], {"a.b": 1}) == [1, 2]


def test_bad_specs():
    with pytest.raises(MongoError) as e:
        sort_key_fn({"a": 2})
    assert e.value.code == 15975
    with pytest.raises(MongoError):
        sort_key_fn({})


sort_values = st.one_of(st.integers(-3, 3), st.sampled_from([0.5, -1.5]), st.sampled_from(["", "x", "y"]), st.none())


@QUERY_SETTINGS
@given(st.lists(st.tuples(sort_values, sort_values), min_size=1, max_size=8), st.sampled_from([1, -1]), st.sampled_from([1, -1]))
def test_sort_agrees_with_mongomock(rows, da, db):
    docs = [{"_id": i, "a": a, "b": b} for i, (a, b) in enumerate(rows)]
    _COLL.delete_many({})
    _COLL.insert_many([dict(d) for d in docs])
    spec = {"a": da, "b": db}
    expected = [d["_id"] for d in _COLL.find({}, sort=list(spec.items()))]
    assert ids(docs, spec) == expected
