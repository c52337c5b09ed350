"""$merge against a model of its modes (a property test, both topologies; sharded target on mongos).

For random targets and results, every supported whenMatched / whenNotMatched
pair must leave the target as the model says (merge: the fields set over the
old ones; replace: the result; keepExisting: the old one; a pipeline: the old
one with `m` taken from `$$new`; insert / discard / fail for the unmatched),
and fail exactly when the model says (11000 for whenMatched fail, 13113 for
whenNotMatched fail).  The writes are unordered, so what does not fail is
written even when another result fails, as on the server.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

from tests.crud.conftest import shard_two_ways

PIPELINE = [{"$set": {"m": "$$new.v"}}]
MODES = [("merge", "insert"), ("merge", "discard"), ("merge", "fail"), ("replace", "insert"), ("replace", "discard"),
         ("replace", "fail"), ("keepExisting", "insert"), ("fail", "insert"), ("pipeline", "insert"),
         ("pipeline", "discard"), ("pipeline", "fail")]
_doc = st.builds(lambda i, v, w: {"_id": i, "k": [1, 150][i % 2], "v": v, **({"w": w} if w is not None else {})},
                 st.integers(0, 5), st.integers(0, 9), st.none() | st.integers(0, 9))


def _unique(docs):
    return list({d["_id"]: d for d in docs}.values())


def model(target: dict, results: list[dict], matched: str, not_matched: str):
    out = {i: dict(d) for i, d in target.items()}
    error = None
    for r in results:
        old = out.get(r["_id"])
        if old is not None:
            if matched == "merge":
                out[r["_id"]] = {**old, **r}
            elif matched == "replace":
                out[r["_id"]] = dict(r)
            elif matched == "pipeline":
                out[r["_id"]] = {**old, "m": r["v"]}
            elif matched == "fail":
                error = error or 11000
        elif not_matched == "insert":
            out[r["_id"]] = dict(r)
        elif not_matched == "fail":
            error = error or 13113
    return out, error


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(target=st.lists(_doc, max_size=4).map(_unique), results=st.lists(_doc, min_size=1, max_size=4).map(_unique),
       mode=st.sampled_from(MODES))
def test_merge_follows_the_model(client, target, results, mode):
    db = client.mp
    if client.topology_name == "sharded" and "mp.t" not in {c["_id"] for c in client.config.collections.find()}:
        shard_two_ways(client, "mp.t", split=100)
    db.t.delete_many({})
    if target:
        db.t.insert_many(target)
    matched, not_matched = mode
    spec = {"into": "t", "whenMatched": PIPELINE if matched == "pipeline" else matched, "whenNotMatched": not_matched}
    want, error = model({d["_id"]: d for d in target}, results, matched, not_matched)
    try:
        db.aggregate([{"$documents": results}, {"$merge": spec}])
        got_error = None
    except OperationFailure as exc:
        got_error = exc.code
    assert got_error == error
    got = {d["_id"]: d for d in db.t.find()}
    assert {i: sorted(d.items()) for i, d in got.items()} == {i: sorted(d.items()) for i, d in want.items()}
