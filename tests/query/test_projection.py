"""Projections: unit tests and a differential test against mongomock's find projection."""

from __future__ import annotations

import copy

import mongomock
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.matcher import Matcher
from mongosim.shardsim.query.projection import compile_projection
from tests.query.strategies import documents, paths
from tests.query._settings import QUERY_SETTINGS

_COLL = mongomock.MongoClient().db.projection_oracle


def test_inclusion_exclusion_and_id():
    doc = {"_id": 1, "a": 1, "b": {"c": 2, "d": 3}, "e": [{"c": 1, "x": 2}, 5]}
    assert compile_projection({"a": 1})(doc) == {"_id": 1, "a": 1}
    assert compile_projection({"a": 1, "_id": 0})(doc) == {"a": 1}
    assert compile_projection({"b.c": 1, "e.c": 1})(doc) == {"_id": 1, "b": {"c": 2}, "e": [{"c": 1}]}
    assert compile_projection({"a": 0, "b.d": 0})(doc) == {"_id": 1, "b": {"c": 2}, "e": [{"c": 1, "x": 2}, 5]}
    assert compile_projection({"_id": 0})(doc) == {"a": 1, "b": {"c": 2, "d": 3}, "e": [{"c": 1, "x": 2}, 5]}
    assert compile_projection({"b": {"c": 1}})(doc) == {"_id": 1, "b": {"c": 2}}
    assert compile_projection({})(doc) is doc


def test_computed_fields_follow_included_fields():
    doc = {"_id": 1, "a": 2, "b": 3}
    out = compile_projection({"s": {"$add": ["$a", "$b"]}, "a": 1, "lit": "x"})(doc)
    assert out == {"_id": 1, "a": 2, "s": 5, "lit": "x"} and list(out) == ["_id", "a", "s", "lit"]


def test_find_operators():
    doc = {"_id": 1, "a": [1, 2, 3, 4], "b": [{"x": 1}, {"x": 2}], "c": 0}
    assert compile_projection({"a": {"$slice": 2}})(doc) == {"_id": 1, "a": [1, 2], "b": doc["b"], "c": 0}
    assert compile_projection({"a": {"$slice": -1}, "c": 1})(doc) == {"_id": 1, "a": [4], "c": 0}
    assert compile_projection({"a": {"$slice": [1, 2]}})(doc)["a"] == [2, 3]
    assert compile_projection({"b": {"$elemMatch": {"x": 2}}})(doc) == {"_id": 1, "b": [{"x": 2}]}
    ok, pos = Matcher({"a": 3}).match_position(doc)
    assert compile_projection({"a.$": 1})(doc, match_position=pos) == {"_id": 1, "a": [3]}
    with pytest.raises(MongoError) as e:
        compile_projection({"a.$": 1})(doc)
    assert e.value.code == 51246


@pytest.mark.parametrize(
    "spec, code, msg",
    [
        ({"a": 1, "b": 0}, 31254, "Cannot do exclusion on field b in inclusion projection"),
        ({"a": 0, "b": 1}, 31253, "Cannot do inclusion on field b in exclusion projection"),
    ],
)
def test_mixed_projection_errors(spec, code, msg):
    with pytest.raises(MongoError) as e:
        compile_projection(spec)
    assert e.value.code == code and e.value.errmsg == msg


def test_path_collision():
    with pytest.raises(MongoError) as e:
        compile_projection({"a": 1, "a.b": 1})
    assert e.value.code in (31249, 31250)


@st.composite
def projections(draw):
    mode = draw(st.sampled_from([0, 1]))
    ps = draw(st.lists(paths(max_parts=2), min_size=1, max_size=3))
    # drop prefix collisions (an error on the server)
    chosen = []
    for p in ps:
        if any(p == q or p.startswith(q + ".") or q.startswith(p + ".") for q in chosen):
            continue
        chosen.append(p)
    spec = {p: mode for p in chosen}
    if draw(st.booleans()):
        spec["_id"] = 0
    return spec


def _no_scalar_arrays(v) -> bool:
    if isinstance(v, list):
        return all(isinstance(e, dict) and _no_scalar_arrays(e) for e in v)
    if isinstance(v, dict):
        return all(_no_scalar_arrays(x) for x in v.values())
    return True


def _numeric_paths(spec) -> bool:
    return any(p.isdigit() for k in spec for p in k.split("."))


def _excludes_below_scalar(doc, spec) -> bool:
    # mongomock drops `a` for {"a.b": 0} when `a` is a scalar; the server keeps it
    for k, v in spec.items():
        parts = k.split(".")
        if v == 0 and len(parts) > 1:
            cur = doc
            for p in parts[:-1]:
                if not isinstance(cur, dict) or p not in cur:
                    break
                cur = cur[p]
                if not isinstance(cur, (dict, list)):
                    return True
    return False


@QUERY_SETTINGS
@given(doc=documents(), spec=projections())
def test_projection_agrees_with_mongomock(doc, spec):
    # mongomock keeps scalars inside arrays for inclusions and treats numeric
    # components as array indexes; the server does neither (both pinned above).
    if not _no_scalar_arrays(doc) or _numeric_paths(spec) or _excludes_below_scalar(doc, spec):
        return
    _COLL.delete_many({})
    _COLL.insert_one(copy.deepcopy(doc))
    try:
        expected = _COLL.find_one({}, copy.deepcopy(spec))
    except Exception:
        return
    assert compile_projection(spec)(doc) == expected, (doc, spec)
