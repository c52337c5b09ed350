"""$setWindowFields, $densify and $fill in the query layer: values from the server's jstests
(jstests/aggregation/sources/setWindowFields/*.js, densify/*.js), its parse errors, and a property:
documents-window accumulators equal a naive recomputation of each document's window."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.stage_registry import desugared
from mongosim.shardsim.query.stages import run_pipeline
from tests.query._settings import QUERY_SETTINGS


def agg(docs, pipeline):
    return list(run_pipeline([dict(d) for d in docs], pipeline, variables={}))


def err(docs, pipeline) -> MongoError:
    with pytest.raises(MongoError) as e:
        agg(docs, pipeline)
    return e.value


# --- range windows: jstests/aggregation/sources/setWindowFields/range.js ----------------------

RANGE_DOCS = [{"x": v} for v in (0, 1, 1.5, 2, 3, 100, 100, 101)]


def push_range(lo, hi, docs=RANGE_DOCS):
    out = agg(docs, [{"$setWindowFields": {"partitionBy": "$partition", "sortBy": {"x": 1},
                                           "output": {"y": {"$push": "$x", "window": {"range": [lo, hi]}}}}}])
    return [(d["x"], d["y"]) for d in out]


def test_range_windows_follow_range_js():
    assert push_range(-1, 0) == [(0, [0]), (1, [0, 1]), (1.5, [1, 1.5]), (2, [1, 1.5, 2]), (3, [2, 3]),
                                 (100, [100, 100]), (100, [100, 100]), (101, [100, 100, 101])]
    # 'current' is the current document's position; 0 includes the documents tying with it
    assert push_range("current", "current")[5:7] == [(100, [100]), (100, [100])]
    assert push_range("current", 1)[5:7] == [(100, [100, 100, 101]), (100, [100, 101])]
    assert push_range(-97, "current")[5:7] == [(100, [3, 100]), (100, [3, 100, 100])]
    assert push_range(-1, -1) == [(0, []), (1, [0]), (1.5, []), (2, [1]), (3, [2]), (100, []), (100, []),
                                  (101, [100, 100])]
    assert [y for _x, y in push_range("unbounded", -99)] == [[], [], [], [], [], [0, 1], [0, 1], [0, 1, 1.5, 2]]
    assert [y for _x, y in push_range(99, "unbounded")] == [[100, 100, 101], [100, 100, 101], [101], [101], [], [],
                                                            [], []]
    bad = RANGE_DOCS + [{}, {"x": None}, {"x": ""}, {"x": {}}]
    for lo, hi in ((999, 999), (-999, 999), ("unbounded", "unbounded")):
        e = err(bad, [{"$setWindowFields": {"sortBy": {"x": 1},
                                            "output": {"y": {"$push": "$x", "window": {"range": [lo, hi]}}}}}])
        assert e.code == 5429414 and "Invalid range: Expected the sortBy field to be a number" in str(e)


def test_range_with_unit_over_dates():
    t0 = datetime.datetime(2020, 2, 1)
    docs = [{"p": p, "time": t0 + datetime.timedelta(minutes=m), "temp": v} for p, m, v in
            [(1, 30, 10), (1, 91, 11), (1, 92, 12), (1, 93, 13), (2, 151, 5), (2, 155, 6), (2, 214, 2)]]
    out = agg(docs, [{"$setWindowFields": {"partitionBy": "$p", "sortBy": {"time": 1}, "output": {
        "min": {"$min": "$temp", "window": {"range": [-1, 0], "unit": "hour"}}}}}])
    assert [d["min"] for d in out] == [10, 11, 11, 11, 5, 5, 2]
    e = err([{"time": 5}], [{"$setWindowFields": {"sortBy": {"time": 1}, "output": {
        "m": {"$min": "$x", "window": {"range": [-1, 0], "unit": "hour"}}}}}])
    assert e.code == 5429513
    e = err(docs, [{"$setWindowFields": {"sortBy": {"time": 1}, "output": {
        "m": {"$min": "$x", "window": {"range": [-1, 0]}}}}}])
    assert e.code == 5429413


# --- documents windows, defaults and empty windows ------------------------------------------


def test_first_last_and_empty_windows():
    docs = [{"x": 0, "y": 0}, {"x": 1, "y": 42}, {"x": 2, "y": 67}, {"x": 3, "y": 99}, {"x": 4, "y": 20}]
    out = agg(docs, [{"$setWindowFields": {"sortBy": {"x": 1}, "output": {"first": {"$first": "$y"},
                                                                          "last": {"$last": "$y"}}}}])
    assert [(d["first"], d["last"]) for d in out] == [(0, 20)] * 5  # first.js: default window is unbounded
    docs = [{"x": 1, "y": 5}, {"x": 2, "y": 4}, {"x": 3, "y": 6}]
    out = agg(docs, [{"$setWindowFields": {"sortBy": {"x": 1}, "partitionBy": "$x", "output": {
        "first": {"$first": "$y", "window": {"documents": [-1, -1]}}}}}])
    assert [d["first"] for d in out] == [None, None, None]
    # empty_window.js: $sum's default is 0, the others' null
    out = agg([{"_id": 0, "price": 1000, "ts": 1}], [{"$setWindowFields": {"sortBy": {"ts": 1}, "output": {
        f: {op: "$price", "window": {"documents": ["unbounded", -1]}}
        for f, op in [("sd", "$stdDevPop"), ("s", "$sum"), ("a", "$avg"), ("mn", "$min"), ("mx", "$max")]}}}])
    assert {k: out[0][k] for k in ("sd", "s", "a", "mn", "mx")} == {"sd": None, "s": 0, "a": None, "mn": None,
                                                                   "mx": None}


def test_rank_functions_follow_rank_js():
    docs = [{"_id": i, "double": i // 2} for i in range(12)]
    for i, d in enumerate(docs):
        if i % 4 == 1:
            d["nm"] = None
        elif i % 4 == 2:
            d["nm"] = [None]
        elif i % 4 == 3:
            d["nm"] = ["abc", None]

    def ranks(sort, fn):
        return [d["r"] for d in agg(docs, [{"$setWindowFields": {"sortBy": sort, "output": {"r": {fn: {}}}}}])]

    assert ranks({"double": 1}, "$rank") == [1, 1, 3, 3, 5, 5, 7, 7, 9, 9, 11, 11]
    assert ranks({"double": 1}, "$denseRank") == [i // 2 + 1 for i in range(12)]
    assert ranks({"double": 1}, "$documentNumber") == list(range(1, 13))
    assert ranks({"nm": 1}, "$rank") == [1] * 12 and ranks({"nm": 1}, "$denseRank") == [1] * 12
    base = [{"$setWindowFields": {"sortBy": {"_id": 1}, "output": {"rank": None}}}]
    for spec, code in [({"$rank": {}, "window": []}, 5371601), ({"$rank": "$_id"}, 5371603),
                       ({"$rank": {}, "window": {"documents": [-1, 1]}}, 5371601)]:
        base[0]["$setWindowFields"]["output"]["rank"] = spec
        assert err(docs, base).code == code
    assert err(docs, [{"$setWindowFields": {"output": {"rank": {"$rank": {}}}}}]).code == 5371602


def test_shift_locf_linear_fill_exp_moving_avg_derivative_integral():
    docs = [{"t": t, "v": v} for t, v in [(0, 1), (1, None), (2, None), (3, 4), (4, None)]]
    out = agg(docs, [{"$setWindowFields": {"sortBy": {"t": 1}, "output": {
        "prev": {"$shift": {"output": "$v", "by": -1, "default": "none"}},
        "locf": {"$locf": "$v"}, "lin": {"$linearFill": "$v"}}}}])
    assert [d["prev"] for d in out] == ["none", 1, None, None, 4]
    assert [d["locf"] for d in out] == [1, 1, 1, 4, 4]
    assert [d["lin"] for d in out] == [1, 2.0, 3.0, 4, None]
    assert err([{"t": 1, "v": 1}, {"t": 1, "v": 2}],
               [{"$setWindowFields": {"sortBy": {"t": 1}, "output": {"l": {"$linearFill": "$v"}}}}]).code == 6050106
    docs = [{"t": t, "v": v} for t, v in [(0, 0), (1, 10), (3, 20)]]
    out = agg(docs, [{"$setWindowFields": {"sortBy": {"t": 1}, "output": {
        "ema": {"$expMovingAvg": {"input": "$v", "N": 3}},
        "d": {"$derivative": {"input": "$v"}, "window": {"documents": [-1, 0]}},
        "i": {"$integral": {"input": "$v"}, "window": {"documents": ["unbounded", "current"]}}}}}])
    assert [d["ema"] for d in out] == [0.0, 5.0, 12.5]  # alpha = 2 / (N + 1)
    assert [d["d"] for d in out] == [None, 10.0, 5.0]  # a one-document window: run 0, null
    assert [d["i"] for d in out] == [0, 5.0, 35.0]  # trapezoids
    t0 = datetime.datetime(2021, 1, 1)
    docs = [{"t": t0 + datetime.timedelta(hours=h), "v": v} for h, v in [(0, 0), (2, 10)]]
    out = agg(docs, [{"$setWindowFields": {"sortBy": {"t": 1}, "output": {
        "d": {"$derivative": {"input": "$v", "unit": "hour"}, "window": {"documents": [-1, 0]}}}}}])
    assert [d["d"] for d in out] == [None, 5.0]


def test_n_functions_covariance_percentiles_count():
    docs = [{"x": i, "y": 2 * i} for i in range(1, 5)]
    out = agg(docs, [{"$setWindowFields": {"sortBy": {"x": 1}, "output": {
        "c": {"$count": {}, "window": {"documents": [-1, 0]}},
        "top": {"$topN": {"n": 2, "sortBy": {"y": -1}, "output": "$x"}, "window": {"documents": [-1, 1]}},
        "mins": {"$minN": {"n": 2, "input": "$x"}},
        "cov": {"$covariancePop": ["$x", "$y"]},
        "med": {"$median": {"input": "$x", "method": "approximate"}, "window": {"documents": ["unbounded",
                                                                                             "current"]}}}}}])
    assert [d["c"] for d in out] == [1, 2, 2, 2]
    assert [d["top"] for d in out] == [[2, 1], [3, 2], [4, 3], [4, 3]]
    assert [d["mins"] for d in out] == [[1, 2]] * 4
    assert [d["cov"] for d in out] == [2.5] * 4
    assert [d["med"] for d in out] == [1.0, 1.0, 2.0, 2.0]


def test_partition_by_expression_is_desugared_and_unset():
    docs = [{"_id": i, "g": i % 3, "v": i} for i in range(6)]
    pipe = [{"$setWindowFields": {"partitionBy": {"$mod": ["$g", 2]}, "sortBy": {"_id": 1},
                                  "output": {"s": {"$sum": "$v"}}}}]
    out = agg(docs, pipe)
    assert sorted((d["_id"], d["s"]) for d in out) == [(0, 10), (1, 5), (2, 10), (3, 10), (4, 5), (5, 10)]
    assert all("__internal_setWindowFields_partition_key" not in d for d in out)
    stages = desugared(pipe)
    assert [next(iter(s)) for s in stages] == ["$addFields", "$sort", "$_internalSetWindowFields", "$project"]
    assert stages[1] == {"$sort": {"sortKey": {"__internal_setWindowFields_partition_key": 1, "_id": 1}}}
    assert stages[2]["$_internalSetWindowFields"]["partitionBy"] == "$__internal_setWindowFields_partition_key"
    simple = desugared([{"$setWindowFields": {"partitionBy": "$g", "sortBy": {"g": 1, "v": -1},
                                              "output": {"c": {"$count": {}}}}}])
    assert simple == [{"$sort": {"sortKey": {"g": 1, "v": -1}}}, {"$_internalSetWindowFields": {
        "partitionBy": "$g", "sortBy": {"g": 1, "v": -1},
        "output": {"c": {"$sum": {"$const": 1}, "window": {"documents": ["unbounded", "unbounded"]}}}}}]
    assert err([{"a": [1]}], [{"$setWindowFields": {"partitionBy": "$a", "output": {"c": {"$count": {}}}}}]).code == 14
    assert err([], [{"$setWindowFields": {"partitionBy": [1], "output": {"c": {"$count": {}}}}}]).code == 14


@pytest.mark.parametrize("spec,code,text", [
    ({"output": {"s": {"$sum": "$x", "window": {"range": [-1, 1]}}}}, 5339902, "Range-based bounds require sortBy"),
    ({"sortBy": {"x": 1}, "output": {"s": {"$sum": "$x", "window": {"range": ["a", 1]}}}}, 9,
     "Window bounds must be 'unbounded', 'current', or a number."),
    ({"sortBy": {"x": 1}, "output": {"s": {"$sum": "$x", "window": {"range": [{"$literal": "a"}, 1]}}}}, 9,
     "Range-based bounds expression must be a number"),
    ({"sortBy": {"x": -1}, "output": {"s": {"$sum": "$x", "window": {"range": [-1, 1]}}}}, 8947401, "ascending"),
    ({"output": {"s": {"$sum": "$x", "window": {"documents": [-1, 1]}}}}, 5339901, "Document-based bounds require"),
    ({"sortBy": {"x": 1}, "output": {"s": {"$sum": "$x", "window": {"documents": [1, -1]}}}}, 5339900,
     "Lower bound must not exceed upper bound: [1, -1]"),
    ({"sortBy": {"x": 1}, "output": {"s": {"$sum": "$x", "window": {"documents": [0.5, 1]}}}}, 9,
     "Numeric document-based bounds must be an integer"),
    ({"sortBy": {"x": 1}, "output": {"s": {"$summ": "$x"}}}, 9, "Unrecognized window function, $summ"),
    ({"sortBy": {"x": 1}, "output": {"s": {"window": {}}}}, 9, "Expected a $-prefixed window function, window"),
    ({"sortBy": {"x": 1}, "output": {"s": {"$sum": "$x", "windoww": {}}}}, 9,
     "Window function found an unknown argument: windoww"),
    ({"sortBy": {"x": 1}, "output": {"s": 1}}, 9, "The field 's' must be an object"),
    ({"sortBy": {"x": 1}, "output": {"a": {"$count": {}}, "a.b": {"$count": {}}}}, 6307900, "conflicting paths"),
    ({"sortBy": {"x": 1}}, 40414, "BSON field '$setWindowFields.output' is missing but a required field"),
    ({"sortBy": {"x": 1}, "output": {}, "foo": 1}, 40415, "BSON field '$setWindowFields.foo' is an unknown field."),
    ({"output": {"s": {"$shift": {"output": "$x", "by": 1}}}}, 9, "'$shift' requires a sortBy"),
    ({"sortBy": {"x": 1}, "output": {"s": {"$derivative": {"input": "$x"}}}}, 9,
     "$derivative requires explicit window bounds"),
    ({"sortBy": {"x": 1}, "output": {"s": {"$integral": {"input": "$x", "unit": "month"}}}}, 5490710,
     "unit must be 'week' or smaller"),
    ({"sortBy": {"x": 1}, "output": {"s": {"$expMovingAvg": {"input": "$x", "alpha": 2}}}}, 9,
     "'alpha' must be between 0 and 1 (exclusive)"),
    ({"sortBy": {"x": 1}, "output": {"s": {"$locf": "$x", "window": {}}}}, 9, "'window' field is not allowed in $locf"),
])
def test_set_window_fields_parse_errors_are_the_servers(spec, code, text):
    e = err([{"x": 1}], [{"$setWindowFields": spec}])
    assert e.code == code and text in str(e)


# --- the property: documents windows against a naive recomputation -----------------------------

_OPS = ["$sum", "$min", "$max", "$push", "$avg", "$count", "$first", "$last"]


def _naive(op, window_vals):
    nums = [v for v in window_vals if isinstance(v, int)]
    if op == "$sum":
        return sum(nums)
    if op == "$count":
        return len(window_vals)
    if op in ("$min", "$max"):
        present = [v for v in window_vals if v is not None]
        return (min if op == "$min" else max)(present) if present else None
    if op == "$push":
        return list(window_vals)
    if op == "$avg":
        return sum(nums) / len(nums) if nums else None
    if op == "$first":
        return window_vals[0] if window_vals else None
    return window_vals[-1] if window_vals else None


_bound = st.one_of(st.just("unbounded"), st.just("current"), st.integers(-4, 4))


@QUERY_SETTINGS
@given(values=st.lists(st.tuples(st.integers(0, 2), st.one_of(st.none(), st.integers(-50, 50))), max_size=25),
       lo=_bound, hi=_bound, op=st.sampled_from(_OPS))
def test_documents_windows_equal_a_naive_recomputation(values, lo, hi, op):
    norm = lambda b: 0 if b == "current" else b  # noqa: E731
    if lo != "unbounded" and hi != "unbounded" and norm(lo) > norm(hi):
        lo, hi = hi, lo
    docs = [{"_id": i, "p": p, "v": v} for i, (p, v) in enumerate(values)]
    fn = {"$count": {}} if op == "$count" else {op: "$v"}
    out = agg(docs, [{"$setWindowFields": {"partitionBy": "$p", "sortBy": {"_id": 1}, "output": {
        "w": {**fn, "window": {"documents": [lo, hi]}}}}}])
    assert sorted(d["_id"] for d in out) == list(range(len(docs)))
    for d in out:
        part = [x for x in docs if x["p"] == d["p"]]
        i = next(k for k, x in enumerate(part) if x["_id"] == d["_id"])
        a = 0 if lo == "unbounded" else i + norm(lo)
        b = len(part) - 1 if hi == "unbounded" else i + norm(hi)
        window = [x["v"] for x in part[max(a, 0): max(b + 1, 0)]] if a <= len(part) - 1 and b >= 0 else []
        if op == "$push":
            window_vals = [x["v"] for x in part[max(a, 0): max(b + 1, 0)] if "v" in x] if window else []
            assert d["w"] == window_vals
        else:
            assert d["w"] == _naive(op, window), (d, window)


# --- $densify: jstests/aggregation/sources/densify/doc_on_bound.js ---------------------------

_DAY = datetime.datetime(2023, 9, 12)


def _t(day, hour=0, second=0):
    return _DAY + datetime.timedelta(days=day, hours=hour, seconds=second)


def _times(out):
    return sorted((d["time"], d.get("orig", False)) for d in out)


def test_densify_explicit_bounds_doc_on_bound_js():
    docs = [{"key": 1, "time": _t(d), "orig": True} for d in range(4)]
    spec = {"field": "time", "partitionByFields": ["key"],
            "range": {"step": 6, "unit": "hour", "bounds": [_t(1), _t(4)]}}
    got = _times(agg(docs, [{"$densify": spec}]))
    want = sorted([(_t(d), True) for d in range(4)] + [(_t(d, h), False) for d in (1, 2, 3) for h in (6, 12, 18)])
    assert got == want
    docs.insert(2, {"key": 2, "time": _t(1, second=10), "orig": True})
    del spec["partitionByFields"]
    assert _times(agg(docs, [{"$densify": spec}])) == sorted(want + [(_t(1, second=10), True)])


def test_densify_full_bounds_with_partitions_doc_on_bound_js():
    docs = [{"key": k, "time": t, "orig": True} for k, t in
            [(1, _t(0)), (2, _t(0, 4)), (1, _t(1)), (1, _t(2)), (1, _t(3)), (2, _t(3, 18))]]
    out = agg(docs, [{"$densify": {"field": "time", "partitionByFields": ["key"],
                                   "range": {"step": 6, "unit": "hour", "bounds": "full"}}}])
    assert len(out) == 33
    grid = [_t(d, h) for d in range(4) for h in (0, 6, 12, 18)]
    for key in (1, 2):
        mine = {d["time"] for d in out if d["key"] == key}
        assert set(grid) <= mine
    assert [d for d in out if "orig" not in d and set(d) != {"key", "time"}] == []


def test_densify_numbers_partition_bounds_and_errors():
    out = agg([{"a": 1}, {"a": 3.5}, {"a": 6}, {"a": None}],
              [{"$densify": {"field": "a", "range": {"step": 2, "bounds": "full"}}}])
    assert [d.get("a") for d in out] == [None, 1, 3, 3.5, 5, 6]
    out = agg([{"p": "x", "a": 1}, {"p": "y", "a": 6}, {"p": "x", "a": 4}],
              [{"$densify": {"field": "a", "partitionByFields": ["p"], "range": {"step": 1, "bounds": "partition"}}}])
    assert [(d["p"], d["a"]) for d in out] == [("x", 1), ("x", 2), ("x", 3), ("x", 4), ("y", 6)]
    assert agg([], [{"$densify": {"field": "a", "range": {"step": 2, "bounds": [0, 7]}}}]) == [
        {"a": 0}, {"a": 2}, {"a": 4}, {"a": 6}]
    assert err([{"a": "s"}], [{"$densify": {"field": "a", "range": {"step": 1, "bounds": "full"}}}]).code == 5733201
    for rng, code in [({"step": 0, "bounds": "full"}, 5733401), ({"step": 1, "bounds": [2, 1]}, 5733402),
                      ({"step": 1, "bounds": [1]}, 5733403), ({"step": 1, "bounds": 5}, 5733404),
                      ({"step": 1, "bounds": "partition"}, 5733408), ({"step": 1, "bounds": [1, 2.0]}, 5876900),
                      ({"step": 1, "unit": "hour", "bounds": [1, 2]}, 5733409), ({"step": 1, "bounds": "x"}, 5946802),
                      ({"step": 1.5, "unit": "hour", "bounds": "full"}, 6586400)]:
        assert err([], [{"$densify": {"field": "a", "range": rng}}]).code == code, rng
    assert desugared([{"$densify": {"field": "a", "partitionByFields": ["p"], "range": {"step": 1, "bounds": "full"}}}]
                     ) == [{"$sort": {"sortKey": {"a": 1}}}, {"$_internalDensify": {
                         "field": "a", "partitionByFields": ["p"], "range": {"step": 1, "bounds": "full"}}}]


# --- $fill: desugared into $setWindowFields and $addFields ------------------------------------


def test_fill_methods_values_and_desugaring():
    docs = [{"_id": i, "p": i % 2, "y": v, "z": None} for i, v in enumerate([1, 10, None, None, 5, 30])]
    out = agg(docs, [{"$fill": {"sortBy": {"_id": 1}, "partitionByFields": ["p"],
                                "output": {"y": {"method": "linear"}, "z": {"value": "none"}}}}])
    assert sorted((d["_id"], d["y"], d["z"]) for d in out) == [
        (0, 1, "none"), (1, 10, "none"), (2, 3.0, "none"), (3, 20.0, "none"), (4, 5, "none"), (5, 30, "none")]
    stages = desugared([{"$fill": {"sortBy": {"_id": 1}, "output": {"y": {"method": "locf"}, "z": {"value": 0}}}}])
    assert [next(iter(s)) for s in stages] == ["$sort", "$_internalSetWindowFields", "$addFields"]
    assert stages[2] == {"$addFields": {"z": {"$ifNull": ["$z", 0]}}}
    for spec, code in [({"output": {}}, 6050203), ({"output": {"y": 1}}, 6050200),
                       ({"output": {"y": {"method": "locf", "value": 1}}}, 6050201),
                       ({"output": {"y": {"method": "mean"}}}, 6050202),
                       ({"partitionBy": "$p", "partitionByFields": ["p"], "output": {"y": {"value": 1}}}, 6050204),
                       ({"output": {"y": {"method": "linear"}}}, 605001)]:
        assert err([], [{"$fill": spec}]).code == code, spec


def test_integral_and_shift_follow_integral_js_and_shift_js():
    docs = [{"p": p, "x": x, "y": y} for p, x, y in [(1, 0, 1), (1, 1, 2), (1, 2, 1), (1, 3, 4), (2, 0, 100),
                                                     (2, 2, 105), (2, 4, 107), (2, 6, -100)]]
    out = agg(docs, [{"$setWindowFields": {"partitionBy": "$p", "sortBy": {"x": 1}, "output": {
        "integral": {"$integral": {"input": "$y"}, "window": {"documents": [-1, 0]}}}}}])
    assert [d["integral"] for d in out] == [0, 1.5, 1.5, 2.5, 0, 205, 212, 7]
    t0 = datetime.datetime(2020, 1, 1)
    docs = [{"x": t0 + datetime.timedelta(milliseconds=2 * i), "y": 2 * i} for i in range(4)]
    out = agg(docs, [{"$setWindowFields": {"sortBy": {"x": 1}, "output": {
        "integral": {"$integral": {"input": "$y", "unit": "second"}, "window": {"documents": [-1, 1]}}}}}])
    assert [d["integral"] for d in out] == pytest.approx([0.002, 0.008, 0.016, 0.010])
    mixed = [{"x": 0, "y": 100}, {"x": 1, "y": 100}, {"x": t0, "y": 5}]
    assert err(mixed, [{"$setWindowFields": {"sortBy": {"x": 1}, "output": {"i": {
        "$integral": {"input": "$y", "unit": "second"}, "window": {"documents": [-1, 1]}}}}}]).code == 5423901
    assert err(mixed, [{"$setWindowFields": {"sortBy": {"x": 1}, "output": {"i": {
        "$integral": {"input": "$y"}, "window": {"documents": [-1, 1]}}}}}]).code == 5423902
    # shift.js: a missing value at the shifted position gives the default too
    out = agg([{"_id": 1}, {"_id": 2}], [{"$setWindowFields": {"sortBy": {"_id": 1}, "output": {
        "a": {"$shift": {"output": "$b", "by": 1, "default": "c"}}}}}])
    assert out == [{"_id": 1, "a": "c"}, {"_id": 2, "a": "c"}]
    for by in ("1", {"$sum": [1, 1]}, 1.1):
        assert err([], [{"$setWindowFields": {"sortBy": {"_id": 1}, "output": {
            "a": {"$shift": {"output": "$b", "by": by}}}}}]).code == 9
    assert agg([{"_id": 1, "b": 5}], [{"$setWindowFields": {"sortBy": {"_id": 1}, "output": {
        "a": {"$shift": {"output": "$b", "by": 1.0, "default": {"$add": [1, 1]}}}}}}]) == [{"_id": 1, "b": 5, "a": 2}]


def test_desugaring_follows_desugar_js():
    def d(spec):
        return desugared([{"$setWindowFields": spec}])

    assert d({"output": {}}) == [{"$_internalSetWindowFields": {"output": {}}}]
    assert d({"sortBy": {"ts": 1}, "output": {}}) == [{"$sort": {"sortKey": {"ts": 1}}},
                                                      {"$_internalSetWindowFields": {"sortBy": {"ts": 1}, "output": {}}}]
    assert d({"partitionBy": "$zip", "output": {}}) == [{"$sort": {"sortKey": {"zip": 1}}},
                                                        {"$_internalSetWindowFields": {"partitionBy": "$zip",
                                                                                       "output": {}}}]
    assert d({"partitionBy": "$zip", "sortBy": {"ts": -1, "_id": 1}, "output": {}}) == [
        {"$sort": {"sortKey": {"zip": 1, "ts": -1, "_id": 1}}},
        {"$_internalSetWindowFields": {"partitionBy": "$zip", "sortBy": {"ts": -1, "_id": 1}, "output": {}}}]
    stages = d({"partitionBy": {"$toLower": "$country"}, "sortBy": {"ts": -1, "_id": 1}, "output": {}})
    tmp = next(iter(stages[0]["$addFields"]))
    assert stages[1:] == [{"$sort": {"sortKey": {tmp: 1, "ts": -1, "_id": 1}}},
                          {"$_internalSetWindowFields": {"partitionBy": "$" + tmp, "sortBy": {"ts": -1, "_id": 1},
                                                         "output": {}}},
                          {"$project": {tmp: False, "_id": True}}]


def test_linear_fill_follows_linear_fill_js():
    docs = [{"_id": x, "val": v} for x, v in [(0.5, 0), (1, None), (4.384, None), (9, None), (10.09283, 11.28374)]]
    out = agg(docs, [{"$setWindowFields": {"sortBy": {"_id": 1}, "output": {"val": {"$linearFill": "$val"}}}}])
    assert [d["val"] for d in out] == [0, 0.5881340542884634, 4.5686253337127845, 9.998278922903879, 11.28374]
    day = lambda y: datetime.datetime(y, 12, 28)  # noqa: E731
    docs = [{"borough": b, "y": y, "date": day(yr)} for b, y, yr in [
        ("Manhattan", -1, 2000), ("Manhattan", None, 2001), ("Bronx", -10, 2002), ("Bronx", None, 2003),
        ("Bronx", None, 2004), ("Bronx", 200, 2005), ("Manhattan", -10, 2006), ("Queens", -2, 2007),
        ("Queens", -20, 2008), ("Queens", None, 2009)]]
    out = agg(docs, [{"$setWindowFields": {"partitionBy": "$borough", "sortBy": {"date": 1},
                                           "output": {"y": {"$linearFill": "$y"}}}}])
    assert [(d["borough"], d["y"]) for d in out] == [
        ("Bronx", -10), ("Bronx", 59.93613138686132), ("Bronx", 130.06386861313868), ("Bronx", 200),
        ("Manhattan", -1), ("Manhattan", -2.499315381104519), ("Manhattan", -10), ("Queens", -2), ("Queens", -20),
        ("Queens", None)]
    bad = [{"x": 1, "y": 10}, {"x": 2, "y": None}, {"x": datetime.datetime(2020, 1, 1), "y": 20}]
    assert err(bad, [{"$setWindowFields": {"sortBy": {"x": 1}, "output": {"y": {"$linearFill": "$y"}}}}]).code == 14
    assert err([{"t": None, "v": 0}, {"t": 1, "v": None}],
               [{"$setWindowFields": {"sortBy": {"t": 1}, "output": {"v": {"$linearFill": "$v"}}}}]).code == 14


def test_partitions_and_sets_follow_the_collation():
    from mongosim.shardsim.query.collation import make_collator

    coll = make_collator({"locale": "en", "strength": 2})
    docs = [{"_id": i, "g": g, "s": s} for i, (g, s) in enumerate([("a", "x"), ("A", "X"), ("b", "y")])]
    out = list(run_pipeline([dict(d) for d in docs], [{"$setWindowFields": {
        "partitionBy": "$g", "sortBy": {"_id": 1}, "output": {
            "n": {"$count": {}},
            "set": {"$addToSet": "$s", "window": {"documents": ["current", "current"]}}}}}],
        variables={}, collator=coll))
    assert sorted((d["_id"], d["n"], d["set"]) for d in out) == [(0, 2, ["x"]), (1, 2, ["X"]), (2, 1, ["y"])]


def _pairs(out, key="part"):
    return sorted((d["val"], d[key]) for d in out)


def test_densify_partitions_follow_partitions_js():
    # fullTestThree: "full" densifies every partition over the whole range, off-step documents kept
    docs = [{"val": v, "part": p} for v, p in [(0, 0), (4, 0), (0, 1), (5, 1), (10, 2)]]
    out = agg(docs, [{"$densify": {"field": "val", "range": {"step": 2, "bounds": "full"},
                                   "partitionByFields": ["part"]}}])
    assert _pairs(out) == sorted([(v, p) for v in range(0, 11, 2) for p in range(3)] + [(5, 1)])
    # fullTestTwoDates: years
    docs = [{"val": datetime.datetime(y, 1, 1), "part": p} for y, p in [(2021, 0), (2021, 1), (2031, 2), (2025, 3)]]
    out = agg(docs, [{"$densify": {"field": "val", "range": {"step": 2, "unit": "year", "bounds": "full"},
                                   "partitionByFields": ["part"]}}])
    assert _pairs(out) == sorted((datetime.datetime(2021 + y, 1, 1), p) for y in range(0, 11, 2) for p in range(4))
    # rangeTestOne / rangeTestThree: explicit bounds reach partitions with no document in the range
    out = agg([{"val": 0, "partition": 0}, {"val": 4, "partition": 1}],
              [{"$densify": {"field": "val", "partitionByFields": ["partition"], "range": {"step": 1, "bounds": [2, 3]}}}])
    assert _pairs(out, "partition") == [(0, 0), (2, 0), (2, 1), (4, 1)]
    out = agg([{"val": 0, "partition": 0}, {"val": 10, "partition": 1}],
              [{"$densify": {"field": "val", "partitionByFields": ["partition"], "range": {"step": 2, "bounds": [2, 5]}}}])
    assert _pairs(out, "partition") == [(0, 0), (2, 0), (2, 1), (4, 0), (4, 1), (10, 1)]
    # testThree: two interleaved partitions, "partition" bounds
    docs = [{"val": i, "part": j} for i in range(20) for j in range(2)
            if (i % 4 == 2 and j == 0) or (i % 5 == 0 and j == 1)]
    out = agg(docs, [{"$densify": {"field": "val", "partitionByFields": ["part"],
                                   "range": {"step": 1, "bounds": "partition"}}}])
    assert _pairs(out) == sorted([(i, 0) for i in range(2, 19)] + [(i, 1) for i in range(16)])


_range_bound = st.one_of(st.just("unbounded"), st.just("current"), st.integers(-6, 6), st.floats(-6, 6))


@QUERY_SETTINGS
@given(nulls=st.integers(0, 2), values=st.lists(st.one_of(st.integers(-10, 10), st.floats(-10, 10)), min_size=1,
                                                max_size=15), lo=_range_bound, hi=_range_bound)
def test_range_windows_bisection_equals_the_servers_scan(nulls, values, lo, hi):
    from mongosim.shardsim.query.values import compare
    from mongosim.shardsim.query.window_bounds import PartitionKeys, WindowBounds, endpoints

    norm = lambda b: 0 if b == "current" else b  # noqa: E731
    if lo != "unbounded" and hi != "unbounded" and compare(norm(lo), norm(hi)) > 0:
        lo, hi = hi, lo
    keys = [None] * nulls + sorted(values)
    bounds = WindowBounds("range", lo, hi)
    for i in range(nulls, len(keys)):
        assert endpoints(bounds, i, len(keys), PartitionKeys(keys)) == endpoints(bounds, i, len(keys), list(keys))
