"""A time-series collection answers as a plain collection of the same measurements (a differential
property test, both topologies).

Random measurements (a meta value, a time within a few hours, measurement fields of mixed types,
arrays, sub-documents, missing fields) go into a time-series collection — with secondary indexes
on a measurement and the meta field, so queries run as index scans over the buckets after the
bucket-level rewrite — and into a plain collection.  Random queries (comparisons, `$in`, `$exists`,
`$ne`, `$or`, `$and`, `$elemMatch`, dotted paths) must find the same measurements; then random
updates and deletes (multi or single, matched by `_id`-free filters) run on both and the contents
must stay equal, as must n and nModified.  A bucket rewritten by a delete or an update, a schema
change that opens a new bucket, and the updated measurements' new buckets all come up.
"""

from __future__ import annotations

import datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

T0 = datetime.datetime(2024, 3, 1, 12)

_scalar = st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b", "B"]), st.floats(-2.5, 2.5, allow_nan=False),
                    st.booleans(), st.none())
_doc_value = st.fixed_dictionaries({"k": st.integers(-3, 3)})
_indexed = st.one_of(_scalar, _doc_value)  # (x is indexed: an array there is CannotIndexParallelArrays, as on 8.0)
_value = st.one_of(_scalar, st.lists(st.integers(-3, 3), max_size=3), _doc_value)
_meta = st.one_of(st.sampled_from(["s1", "s2"]), st.builds(lambda a: {"a": a, "b": "x"}, st.integers(0, 1)))
# (meta objects in field order: a time-series collection normalizes them, a plain one would not)


@st.composite
def _measurement(draw, i: int) -> dict:
    doc = {"_id": i, "time": T0 + datetime.timedelta(minutes=draw(st.integers(0, 300)))}
    if draw(st.booleans()):
        doc["m"] = draw(_meta)
    for field, values in (("x", _indexed), ("y", _value)):
        if draw(st.integers(0, 3)):
            doc[field] = draw(values)
    return doc


_measurements = st.integers(1, 25).flatmap(lambda n: st.tuples(*[_measurement(i) for i in range(n)]))
_path = st.sampled_from(["x", "y", "x.k", "y.k", "m", "m.a", "time"])
_times = st.integers(0, 300).map(lambda m: T0 + datetime.timedelta(minutes=m))


def _leaf(path: str):
    values = _times if path == "time" else _scalar
    return st.one_of(
        st.builds(lambda op, v: {path: {op: v}}, st.sampled_from(["$eq", "$gt", "$gte", "$lt", "$lte", "$ne"]), values),
        st.builds(lambda vs: {path: {"$in": vs}}, st.lists(values, min_size=1, max_size=3)),
        st.builds(lambda b: {path: {"$exists": b}}, st.booleans()),
        st.builds(lambda v: {path: v}, values),
    )


_leaves = _path.flatmap(_leaf)
_query = st.recursive(_leaves, lambda inner: st.one_of(
    st.builds(lambda xs: {"$and": xs}, st.lists(inner, min_size=1, max_size=3)),
    st.builds(lambda xs: {"$or": xs}, st.lists(inner, min_size=1, max_size=3)),
    st.builds(lambda v: {"y": {"$elemMatch": {"$gte": v}}}, st.integers(-3, 3)),
), max_leaves=4)
_update = st.one_of(
    st.builds(lambda v: {"$set": {"x": v}}, _indexed),
    st.builds(lambda v: {"$set": {"y": v}}, _value),
    st.builds(lambda v: {"$inc": {"n": v}}, st.integers(1, 2)),
    st.just({"$unset": {"y": ""}}),
    st.builds(lambda v: {"$set": {"m": v}}, _meta),
    st.builds(lambda m: {"$set": {"time": T0 + datetime.timedelta(minutes=m)}}, st.integers(0, 300)),
)
_write = st.one_of(
    st.tuples(st.just("delete"), _query, st.booleans()),
    st.tuples(st.just("update"), _query, st.booleans(), _update),
)


def _contents(coll) -> list[dict]:
    return sorted((dict(d) for d in coll.find()), key=lambda d: d["_id"])


@pytest.fixture
def twins(client):
    db = client.ts_twins
    client.drop_database(db.name)
    return db


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=_measurements, queries=st.lists(_query, min_size=1, max_size=4), writes=st.lists(_write, max_size=4),
       options=st.sampled_from([{"metaField": "m", "granularity": "minutes"}, {"metaField": "m"},
                                {"bucketMaxSpanSeconds": 600, "bucketRoundingSeconds": 600}]))
def test_a_timeseries_collection_answers_as_a_plain_one(twins, docs, queries, writes, options):
    db = twins
    for name in db.list_collection_names():
        if not name.startswith("system."):
            db.drop_collection(name)
    db.create_collection("ts", timeseries={"timeField": "time", **options})  # (without a meta field: m is measured)
    db.ts.create_index([("x", 1)])
    db.ts.create_index([("m.a", 1), ("time", 1)])
    db.ts.insert_many([dict(d) for d in docs])
    db.plain.insert_many([dict(d) for d in docs])
    for q in queries:
        assert sorted(d["_id"] for d in db.ts.find(q)) == sorted(d["_id"] for d in db.plain.find(q)), q
        assert db.ts.count_documents(q) == db.plain.count_documents(q), q
    for write in writes:
        if write[0] == "delete":
            _, q, multi = write
            many = db.ts.delete_many if multi else db.ts.delete_one
            if multi:
                assert many(q).deleted_count == db.plain.delete_many(q).deleted_count, q
            else:  # (which one goes may differ: both delete one, or none)
                assert many(q).deleted_count == min(1, db.plain.count_documents(q))
                db.plain.delete_many({"_id": {"$nin": [d["_id"] for d in db.ts.find()]}})
        else:
            _, q, multi, u = write
            if multi:
                a, b = db.ts.update_many(q, u), db.plain.update_many(q, u)
                assert (a.matched_count, a.modified_count) == (b.matched_count, b.modified_count), (q, u)
            else:
                ids = sorted(d["_id"] for d in db.plain.find(q))
                if ids:  # update the same measurement in both
                    a, b = db.ts.update_one({"$and": [q, {"_id": ids[0]}]}, u), db.plain.update_one({"_id": ids[0]}, u)
                    assert (a.matched_count, a.modified_count) == (b.matched_count, b.modified_count), (q, u)
        assert _contents(db.ts) == _contents(db.plain), write
