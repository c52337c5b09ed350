"""Differential test of the newer expressions against mongomock, restricted to the
operators and inputs where mongomock follows the server ($sum, $avg, $min over one
array or several arguments, $setEquals, $week, $dateFromParts, $regexMatch, $log).
Where mongomock differs ($max of a one-element argument list, $setUnion's order) the
case is pinned in test_divergences; the rest it does not implement."""

from __future__ import annotations

import datetime as dt

import mongomock
from hypothesis import given
from hypothesis import strategies as st

from mongosim.shardsim.query.stages import run_pipeline
from tests.query._settings import QUERY_SETTINGS

_COLL = mongomock.MongoClient().db.expression_oracle

_ints = st.lists(st.integers(-50, 50), min_size=1, max_size=6)
_exprs = st.one_of(
    st.sampled_from([{"$sum": "$xs"}, {"$avg": "$xs"}, {"$min": "$xs"}, {"$sum": ["$n", 1, 2]},
                     {"$avg": ["$n", 3]}, {"$min": ["$n", 0]}, {"$setEquals": ["$xs", "$ys"]},
                     {"$week": "$d"}, {"$regexMatch": {"input": "$s", "regex": "b+"}},
                     {"$dateFromParts": {"year": 2000, "month": {"$abs": "$n"}, "day": 1}}]),
    st.builds(lambda b: {"$log": [{"$add": [{"$abs": "$n"}, 1]}, b]}, st.sampled_from([2, 10])),
)


@QUERY_SETTINGS
@given(_ints, _ints, st.integers(1, 12), st.datetimes(dt.datetime(1990, 1, 1), dt.datetime(2030, 1, 1)),
       st.sampled_from(["abc", "xyz", "bb"]), _exprs)
def test_expressions_agree_with_mongomock(xs, ys, n, d, s, expr):
    doc = {"_id": 0, "xs": xs, "ys": ys, "n": n, "d": d.replace(microsecond=0), "s": s}
    pipeline = [{"$project": {"_id": 0, "v": expr}}]
    _COLL.delete_many({})
    _COLL.insert_one(dict(doc))
    theirs = list(_COLL.aggregate(pipeline))
    ours = list(run_pipeline([doc], pipeline))
    assert ours == theirs
    assert type(ours[0]["v"]) is type(theirs[0]["v"])
