"""A correlated $lookup sub-pipeline reads the foreign collection through an index (both topologies).

`{$lookup: {from, let: {v: "$x"}, pipeline: [{$match: {$expr: {$eq: ["$f", "$$v"]}}}, ...]}}` looks
the foreign documents up by an index leading with `f` (the server rewrites the `$expr` into index
bounds, `$_internalExprEq`); the `$match` then applies the `$expr` as written.  The answer must be
the same as without the index, whatever the values: arrays (which `$expr` compares whole and the
index lookup finds by element), null and missing fields, numbers of several types, strings.
"""

from __future__ import annotations

from bson import Int64
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_values = st.one_of(st.integers(-2, 3), st.sampled_from([None, 2.0, Int64(1), "a", "A", [1, 2], [], [None], [[1]]]))
_docs = st.lists(st.fixed_dictionaries({}, optional={"f": _values, "g": st.integers(0, 3)}), max_size=10)


def _pipeline(extra: list) -> list:
    return [{"$lookup": {"from": "foreign", "let": {"v": "$x"},
                         "pipeline": [{"$match": {"$and": [{"$expr": {"$eq": ["$$v", "$f"]}}, *extra]}},
                                      {"$project": {"_id": 1}}],
                         "as": "j"}},
            {"$sort": {"_id": 1}}]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(local=st.lists(_values, max_size=6), foreign=_docs, extra=st.sampled_from([[], [{"g": {"$gte": 1}}]]))
def test_the_index_lookup_answers_as_the_scan(client, local, foreign, extra):
    db = client.lookup_expr
    db.local.drop()
    db.foreign.drop()
    if local:
        db.local.insert_many([{"_id": i, "x": v} for i, v in enumerate(local)])
    if foreign:
        db.foreign.insert_many([{"_id": i, **d} for i, d in enumerate(foreign)])
    scanned = list(db.local.aggregate(_pipeline(extra)))
    db.foreign.create_index("f")
    indexed = list(db.local.aggregate(_pipeline(extra)))
    assert indexed == scanned


def test_a_lookup_by_expr_equality_reads_through_the_index(client):
    """200 lookups into 2,000 foreign documents: each goes through the index (`$indexStats` counts an
    access per lookup), and finds its documents."""
    db = client.lookup_expr_ix
    db.orders.insert_many([{"_id": i, "cust": i % 200} for i in range(2_000)])
    db.custs.insert_many([{"_id": i} for i in range(200)])
    db.orders.create_index("cust")

    def accesses() -> int:
        return sum(s["accesses"]["ops"] for s in db.orders.aggregate([{"$indexStats": {}}]) if s["name"] == "cust_1")

    before = accesses()
    pipeline = [{"$lookup": {"from": "orders", "let": {"c": "$_id"},
                             "pipeline": [{"$match": {"$expr": {"$eq": ["$cust", "$$c"]}}}], "as": "o"}}]
    out = list(db.custs.aggregate(pipeline))
    assert [len(d["o"]) for d in out] == [10] * 200
    assert all(o["cust"] == d["_id"] for d in out for o in d["o"])
    assert accesses() - before >= 200
