"""$group's accumulators, $bucket, $bucketAuto (granularity), $sample: the manual's examples and the server's errors."""

from __future__ import annotations

import math

import pytest
from bson import Decimal128, Int64
from hypothesis import given
from hypothesis import strategies as st

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.document_sources.granularity_rounder import NAMES, rounder
from mongosim.shardsim.query.stages import run_pipeline
from tests.query._settings import QUERY_SETTINGS

GAMES = [{"playerId": p, "gameId": g, "score": s} for p, g, s in [
    ("PlayerA", "G1", 31), ("PlayerB", "G1", 33), ("PlayerC", "G1", 99), ("PlayerD", "G1", 1),
    ("PlayerA", "G2", 10), ("PlayerB", "G2", 14), ("PlayerC", "G2", 66), ("PlayerD", "G2", 80)]]


def agg(docs, pipeline):
    return list(run_pipeline(docs, pipeline, variables={}))


def err(docs, pipeline):
    with pytest.raises(MongoError) as e:
        agg(docs, pipeline)
    return e.value


def by_game(acc):
    out = agg(GAMES, [{"$group": {"_id": "$gameId", "r": acc}}, {"$sort": {"_id": 1}}])
    return [d["r"] for d in out]


def test_top_bottom_first_last_max_min_n_manual_examples():
    assert by_game({"$topN": {"output": ["$playerId", "$score"], "sortBy": {"score": -1}, "n": 3}}) == [
        [["PlayerC", 99], ["PlayerB", 33], ["PlayerA", 31]], [["PlayerD", 80], ["PlayerC", 66], ["PlayerB", 14]]]
    assert by_game({"$bottomN": {"output": ["$playerId", "$score"], "sortBy": {"score": -1}, "n": 3}}) == [
        [["PlayerB", 33], ["PlayerA", 31], ["PlayerD", 1]], [["PlayerC", 66], ["PlayerB", 14], ["PlayerA", 10]]]
    assert by_game({"$top": {"output": "$playerId", "sortBy": {"score": -1}}}) == ["PlayerC", "PlayerD"]
    assert by_game({"$bottom": {"output": "$playerId", "sortBy": {"score": -1}}}) == ["PlayerD", "PlayerA"]
    assert by_game({"$firstN": {"input": "$score", "n": 2}}) == [[31, 33], [10, 14]]
    assert by_game({"$lastN": {"input": "$score", "n": 2}}) == [[99, 1], [66, 80]]
    assert by_game({"$maxN": {"input": ["$score", "$playerId"], "n": 2}}) == [
        [[99, "PlayerC"], [33, "PlayerB"]], [[80, "PlayerD"], [66, "PlayerC"]]]
    assert by_game({"$minN": {"input": "$score", "n": 2}}) == [[1, 31], [10, 14]]
    # n may depend on the group key
    assert by_game({"$firstN": {"input": "$score", "n": {"$cond": [{"$eq": ["$_id", "G1"]}, 1, 3]}}}) == [
        [31], [10, 14, 66]]


def test_n_accumulator_rules():
    docs = [{"g": 1, "v": None}, {"g": 1}, {"g": 1, "v": 2}]
    out = agg(docs, [{"$group": {"_id": "$g", "f": {"$firstN": {"input": "$v", "n": 3}},
                                 "m": {"$maxN": {"input": "$v", "n": 3}},
                                 "t": {"$topN": {"output": "$v", "sortBy": {"v": 1}, "n": 2}}}}])
    assert out == [{"_id": 1, "f": [None, None, 2], "m": [2], "t": [None, None]}]
    # a tie keeps the value seen first, for $top and for $bottom
    ties = [{"k": 1, "v": "a"}, {"k": 1, "v": "b"}]
    out = agg(ties, [{"$group": {"_id": None, "t": {"$top": {"output": "$v", "sortBy": {"k": 1}}},
                                 "b": {"$bottom": {"output": "$v", "sortBy": {"k": 1}}}}}])
    assert out == [{"_id": None, "t": "a", "b": "a"}]
    for spec, code in [({"$firstN": {"input": "$v", "n": 0}}, 5787908), ({"$firstN": {"input": "$v", "n": 1.5}}, 5787903),
                       ({"$firstN": {"input": "$v", "n": "x"}}, 5787902), ({"$firstN": {"input": "$v"}}, 5787906),
                       ({"$firstN": {"n": 1}}, 5787907), ({"$firstN": {"n": 1, "input": 1, "x": 1}}, 5787901),
                       ({"$topN": {"output": 1, "n": 1}}, 5788005), ({"$topN": {"sortBy": {"a": 1}, "n": 1}}, 5788004),
                       ({"$topN": {"sortBy": {"a": 1}, "output": 1}}, 5788003), ({"$top": {"n": 1}}, 5788002),
                       ({"$maxN": 1}, 5787900)]:
        assert err([{"v": 1}], [{"$group": {"_id": None, "r": spec}}]).code == code, spec


def test_sum_avg_std_dev_median_percentile_merge_objects():
    docs = [{"v": 1}, {"v": Int64(2)}, {"v": 2.5}, {"v": "x"}, {}]
    out = agg(docs, [{"$group": {"_id": None, "s": {"$sum": "$v"}, "a": {"$avg": "$v"},
                                 "sd": {"$stdDevPop": "$v"}, "ss": {"$stdDevSamp": "$v"},
                                 "med": {"$median": {"input": "$v", "method": "approximate"}},
                                 "p": {"$percentile": {"input": "$v", "p": [0, 0.5, 1], "method": "approximate"}},
                                 "mo": {"$mergeObjects": {"k": "$v"}}}}])[0]
    assert out["s"] == 5.5 and type(out["s"]) is float
    assert out["a"] == pytest.approx(5.5 / 3)
    assert out["sd"] == pytest.approx(math.sqrt(((1 - 11 / 6) ** 2 + (2 - 11 / 6) ** 2 + (2.5 - 11 / 6) ** 2) / 3))
    assert out["ss"] == pytest.approx(math.sqrt(((1 - 11 / 6) ** 2 + (2 - 11 / 6) ** 2 + (2.5 - 11 / 6) ** 2) / 2))
    assert out["med"] == 2.0 and out["p"] == [1.0, 2.0, 2.5]
    assert out["mo"] == {"k": "x"}  # (the last document's {k: missing} is {}: it adds nothing)
    # int overflows to long, a long to double; decimals win
    assert agg([{"v": 2**31 - 1}, {"v": 1}], [{"$group": {"_id": 0, "s": {"$sum": "$v"}}}])[0]["s"] == Int64(2**31)
    assert type(agg([{"v": Int64(2**63 - 1)}, {"v": 1}], [{"$group": {"_id": 0, "s": {"$sum": "$v"}}}])[0]["s"]) is float
    assert agg([{"v": Decimal128("1.1")}, {"v": 2}], [{"$group": {"_id": 0, "s": {"$sum": "$v"}}}])[0]["s"] == \
        Decimal128("3.1")
    empty = agg([{"v": "x"}], [{"$group": {"_id": 0, "s": {"$sum": "$v"}, "a": {"$avg": "$v"}, "sd": {"$stdDevSamp": "$v"},
                                           "m": {"$median": {"input": "$v", "method": "approximate"}}}}])[0]
    assert empty == {"_id": 0, "s": 0, "a": None, "sd": None, "m": None}
    assert err([{"v": 1}], [{"$group": {"_id": 0, "m": {"$mergeObjects": "$v"}}}]).code == 40400
    assert err([], [{"$group": {"_id": 0, "m": {"$median": {"input": 1, "method": "exact"}}}}]).code == 2
    assert err([], [{"$group": {"_id": 0, "m": {"$percentile": {"input": 1, "p": [2], "method": "approximate"}}}}]).code == 7750303
    assert err([], [{"$group": {"_id": 0, "m": {"$percentile": {"input": 1, "method": "approximate"}}}}]).code == 40414
    assert err([], [{"$group": {"_id": 0, "m": {"$foo": 1}}}]).code == 15952
    assert err([], [{"$group": {"_id": 0, "m": {"$sum": 1, "$avg": 1}}}]).code == 40238
    assert err([], [{"$group": {"_id": 0, "m": {"$accumulator": {}}}}]).code == 4544707  # (missing init)


def test_bucket_manual_example():
    artists = [{"year_born": y, "name": n} for y, n in [(1853, "Munch"), (1863, "Munch2"), (1867, "Klimt"),
                                                          (1879, "Hodler"), (1886, "Kokoschka"), (1892, "Grosz"),
                                                          (1864, "Kahlo2"), (1907, "Kahlo")]]
    out = agg(artists, [{"$bucket": {"groupBy": "$year_born", "boundaries": [1840, 1850, 1860, 1870, 1880],
                                     "default": "Other", "output": {"count": {"$sum": 1},
                                                                    "artists": {"$push": "$name"}}}}])
    assert out == [{"_id": 1850, "count": 1, "artists": ["Munch"]},
                   {"_id": 1860, "count": 3, "artists": ["Munch2", "Klimt", "Kahlo2"]},
                   {"_id": 1870, "count": 1, "artists": ["Hodler"]},
                   {"_id": "Other", "count": 3, "artists": ["Kokoschka", "Grosz", "Kahlo"]}]
    e = err([{"v": 100}], [{"$bucket": {"groupBy": "$v", "boundaries": [0, 5]}}])
    assert e.code == 40066


@pytest.mark.parametrize("spec, code", [
    (1, 40201), ({"groupBy": "v", "boundaries": [0, 1]}, 40202), ({"groupBy": "$v", "boundaries": 1}, 40200),
    ({"groupBy": "$v", "boundaries": [0]}, 40192), ({"groupBy": "$v", "boundaries": [0, "$x"]}, 40191),
    ({"groupBy": "$v", "boundaries": [0, "a"]}, 40193), ({"groupBy": "$v", "boundaries": [2, 1]}, 40194),
    ({"groupBy": "$v", "boundaries": [0, 5], "default": 3}, 40199),
    ({"groupBy": "$v", "boundaries": [0, 5], "default": "$x"}, 40195),
    ({"groupBy": "$v", "boundaries": [0, 5], "output": 1}, 40196), ({"groupBy": "$v", "boundaries": [0, 5], "x": 1}, 40197),
    ({"groupBy": "$v"}, 40198),
])
def test_bucket_errors(spec, code):
    assert err([], [{"$bucket": spec}]).code == code


def test_bucket_auto_granularity_manual_examples():
    things = [{"_id": i} for i in range(100)]
    r5 = agg(things, [{"$bucketAuto": {"groupBy": "$_id", "buckets": 5, "granularity": "R5"}}])
    assert r5 == [{"_id": {"min": 0, "max": 25.0}, "count": 25}, {"_id": {"min": 25.0, "max": 63.0}, "count": 38},
                  {"_id": {"min": 63.0, "max": 100.0}, "count": 37}]
    p2 = agg(things, [{"$bucketAuto": {"groupBy": "$_id", "buckets": 5, "granularity": "POWERSOF2"}}])
    assert p2 == [{"_id": {"min": 0, "max": 32}, "count": 32}, {"_id": {"min": 32, "max": 64}, "count": 32},
                  {"_id": {"min": 64, "max": 128}, "count": 36}]
    plain = agg(things[:10], [{"$bucketAuto": {"groupBy": "$_id", "buckets": 3, "output": {"ids": {"$push": "$_id"}}}}])
    assert plain == [{"_id": {"min": 0, "max": 3}, "ids": [0, 1, 2]}, {"_id": {"min": 3, "max": 6}, "ids": [3, 4, 5]},
                     {"_id": {"min": 6, "max": 9}, "ids": [6, 7, 8, 9]}]
    # equal values never straddle two buckets
    same = agg([{"v": 1}] * 3 + [{"v": 2}], [{"$bucketAuto": {"groupBy": "$v", "buckets": 2}}])
    assert same == [{"_id": {"min": 1, "max": 2}, "count": 3}, {"_id": {"min": 2, "max": 2}, "count": 1}]


@pytest.mark.parametrize("spec, code", [
    (1, 40240), ({"groupBy": "v", "buckets": 1}, 40239), ({"groupBy": "$v", "buckets": "1"}, 40241),
    ({"groupBy": "$v", "buckets": 1.5}, 40242), ({"groupBy": "$v", "buckets": 0}, 40243),
    ({"groupBy": "$v", "buckets": 1, "output": 1}, 40244), ({"groupBy": "$v", "buckets": 1, "x": 1}, 40245),
    ({"groupBy": "$v"}, 40246), ({"groupBy": "$v", "buckets": 1, "granularity": 1}, 40261),
    ({"groupBy": "$v", "buckets": 1, "granularity": "R7"}, 40257),
])
def test_bucket_auto_errors(spec, code):
    assert err([], [{"$bucketAuto": spec}]).code == code


def test_bucket_auto_granularity_needs_non_negative_numbers():
    assert err([{"v": "a"}], [{"$bucketAuto": {"groupBy": "$v", "buckets": 1, "granularity": "E6"}}]).code == 40258
    assert err([{"v": -1}], [{"$bucketAuto": {"groupBy": "$v", "buckets": 1, "granularity": "E6"}}]).code == 40260


@QUERY_SETTINGS
@given(name=st.sampled_from(sorted(NAMES)), x=st.one_of(st.floats(1e-6, 1e9), st.integers(1, 10**12)))
def test_rounders_bracket_every_value(name, x):
    up, down = rounder(name)
    assert float(up(x)) > x > float(down(x))


@QUERY_SETTINGS
@given(vals=st.lists(st.integers(-5, 5), max_size=30), buckets=st.integers(1, 6))
def test_bucket_auto_partitions_the_sorted_input(vals, buckets):
    out = agg([{"v": v} for v in vals], [{"$bucketAuto": {"groupBy": "$v", "buckets": buckets,
                                                          "output": {"vs": {"$push": "$v"}}}}])
    assert [v for b in out for v in b["vs"]] == sorted(vals)
    assert len(out) <= buckets
    for b, nxt in zip(out, out[1:]):
        assert b["_id"]["max"] == nxt["_id"]["min"] and max(b["vs"]) < min(nxt["vs"])
    for b in out:
        assert b["_id"]["min"] == min(b["vs"]) and b["_id"]["max"] >= max(b["vs"])


def test_sample():
    docs = [{"_id": i} for i in range(10)]
    out = agg(docs, [{"$sample": {"size": 4}}])
    assert len(out) == 4 and len({d["_id"] for d in out}) == 4
    assert sorted(d["_id"] for d in agg(docs, [{"$sample": {"size": 50}}])) == list(range(10))
    assert agg(docs, [{"$sample": {"size": 0}}]) == []
    for spec, code in [(1, 28745), ({"size": "1"}, 28746), ({"size": -1}, 28747), ({"size": 1, "x": 1}, 28748), ({}, 28749)]:
        assert err(docs, [{"$sample": spec}]).code == code
