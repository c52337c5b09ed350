"""Differential test of the change-stream-compatible stages against mongomock's aggregate.

Restricted to top-level fields: mongomock's $addFields replaces an array when given a
dotted path through it, where the server adds the field to each element (the server's
ProjectionNode::applyExpressionsToValue; covered in test_stages.py).
"""

from __future__ import annotations

import copy

import mongomock
from hypothesis import given
from hypothesis import strategies as st

from mongosim.shardsim.query.stages import run_pipeline
from tests.query.strategies import documents
from tests.query._settings import QUERY_SETTINGS

_COLL = mongomock.MongoClient().db.stage_oracle
TOP = st.sampled_from(["a", "b", "c", "x"])

exprs = st.one_of(
    st.integers(-3, 3),
    # a path to a missing field removes the field on the server (like $$REMOVE), while
    # mongomock keeps the old value: pinned in test_divergences, so paths here always exist
    st.sampled_from(["lit", "$_id"]),
    st.builds(lambda f, n: {"$cond": [{"$gt": [f, n]}, "big", "small"]}, st.sampled_from(["$a", "$b"]), st.integers(-2, 2)),
    st.builds(lambda f: {"$ifNull": [f, "none"]}, st.sampled_from(["$a", "$b", "$x"])),
    st.builds(lambda f: {"$type": f}, st.sampled_from(["$a", "$b", "$x"])),
    # on a field that always exists: mongomock yields missing for $eq on a missing field (pinned)
    # (wrapped in $cond: a bool result would meet mongomock's False == 0 in a later $match)
    st.builds(lambda g: {"$cond": [{"$eq": ["$_id", g]}, "y", "n"]}, st.sampled_from([0, 2, None])),
)


@st.composite
def stages(draw):
    kind = draw(st.sampled_from(["$match", "$addFields", "$set", "$project", "$unset", "$projectx"]))
    if kind == "$match":
        return {"$match": {draw(TOP): draw(st.one_of(st.integers(-3, 3), st.sampled_from(["x", "y"]), st.builds(lambda v: {"$gte": v}, st.integers(-3, 3))))}}
    if kind in ("$addFields", "$set"):
        return {kind: draw(st.dictionaries(TOP, exprs, min_size=1, max_size=2))}
    if kind == "$project":
        fields = draw(st.lists(TOP, min_size=1, max_size=2, unique=True))
        spec = {f: 1 for f in fields}
        if draw(st.booleans()):
            spec["_id"] = 0
        return {"$project": spec}
    if kind == "$projectx":
        return {"$project": {draw(TOP): 0}}
    return {"$unset": draw(st.lists(TOP, min_size=1, max_size=2, unique=True))}


def _plain(v) -> bool:
    """Scalars mongomock evaluates like the server (no bools mixed with numbers)."""
    if isinstance(v, bool):
        return False
    if isinstance(v, dict):
        return all(_plain(x) for x in v.values())
    if isinstance(v, list):
        return all(_plain(x) for x in v)
    return True


def _reads_id_after_dropping_it(pipeline: list[dict]) -> bool:
    """A `$project` with `_id: 0` and then an expression on `$_id`: the path is missing there,
    where the two differ (pinned in test_divergences), not a field that always exists."""
    for i, stage in enumerate(pipeline):
        if stage.get("$project", {}).get("_id") == 0:
            return "'$_id'" in repr(pipeline[i + 1:])
    return False


@QUERY_SETTINGS
@given(docs=st.lists(documents(), max_size=3, unique_by=lambda d: d["_id"]), pipeline=st.lists(stages(), min_size=1, max_size=3))
def test_stages_agree_with_mongomock(docs, pipeline):
    if not all(_plain(d) for d in docs) or _reads_id_after_dropping_it(pipeline):
        return
    _COLL.delete_many({})
    if docs:
        _COLL.insert_many(copy.deepcopy(docs))
    try:
        expected = list(_COLL.aggregate(copy.deepcopy(pipeline)))
    except Exception:
        return
    got = list(run_pipeline(copy.deepcopy(docs), pipeline))
    assert got == expected, (docs, pipeline)
