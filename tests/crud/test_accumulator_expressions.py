"""The {n, input} accumulators, $median/$percentile, $toUUID and BinData $convert as expressions,
through pymongo in both topologies (on the sharded cluster the collection spans both shards, so each
shard evaluates them in its `$project`).

Values from the server's tests: jstests/aggregation/expressions/n_expressions.js and
src/mongo/db/pipeline/expression_test.cpp (ExpressionFromAccumulators FirstNLastN / MinNMaxN) for
the {n, input} family; the approximate-median expression jstest ("approximate median expression
semantics match the percentile expression semantics") for $median; and
jstests/aggregation/expressions/convert_bindata.js for BinData $convert / $toUUID.  The property test
checks each {n, input} expression against its `$group` accumulator (both run the same state).
"""

from __future__ import annotations

import uuid

import pytest
from bson import Binary, ObjectId
from hypothesis import given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

from mongosim.shardsim.query.expressions import evaluate
from mongosim.shardsim.query.stages import run_pipeline
from tests.crud.conftest import shard_two_ways

UUID_STR = "867dee52-c331-484e-92d1-c56479b8e67e"
UUID_BIN = Binary(uuid.UUID(UUID_STR).bytes, 4)
BIN0 = Binary(uuid.UUID(UUID_STR).bytes, 0)
RAW0 = uuid.UUID(UUID_STR).bytes  # (pymongo decodes BinData subtype 0 as bytes)


@pytest.fixture
def coll(client):
    if client.topology_name == "sharded":
        shard_two_ways(client, "ax.c")
    c = client.ax.c
    c.insert_many([
        {"_id": 1, "k": 1, "a": [1, 2, 3, 5, 7, 9], "n": 4, "diff": 2, "u": UUID_STR},
        {"_id": 2, "k": 150, "a": [0, "non-numeric", 1, 2], "n": 1, "diff": 0, "u": "867dee--52-c331-484e-"},
    ])
    return c


def _first(coll, expr, _id=1):
    return next(coll.aggregate([{"$match": {"_id": _id}}, {"$project": {"_id": 0, "out": expr}}]))["out"]


def _code(coll, expr, _id=1) -> int:
    with pytest.raises(OperationFailure) as e:
        _first(coll, expr, _id)
    return e.value.code


def test_n_expressions_as_the_server_jstest(coll):
    """jstests/aggregation/expressions/n_expressions.js, case by case."""
    args = {"n": 3, "input": [5, 4, 3, 2, 1]}
    assert [_first(coll, {op: args}) for op in ("$minN", "$maxN", "$firstN", "$lastN")] == \
        [[1, 2, 3], [5, 4, 3], [5, 4, 3], [3, 2, 1]]
    args = {"n": 3, "input": [None, 2, None, 1]}
    assert [_first(coll, {op: args}) for op in ("$minN", "$maxN", "$firstN", "$lastN")] == \
        [[1, 2], [2, 1], [None, 2, None], [2, None, 1]]
    args = {"n": 3, "input": "$a"}
    assert [_first(coll, {op: args}) for op in ("$minN", "$maxN", "$firstN", "$lastN")] == \
        [[1, 2, 3], [9, 7, 5], [1, 2, 3], [5, 7, 9]]
    args = {"n": "$n", "input": "$a"}
    assert [_first(coll, {op: args}) for op in ("$minN", "$maxN", "$firstN", "$lastN")] == \
        [[1, 2, 3, 5], [9, 7, 5, 3], [1, 2, 3, 5], [3, 5, 7, 9]]
    args = {"n": {"$subtract": ["$n", "$diff"]}, "input": [3, 4, 5]}
    assert [_first(coll, {op: args}) for op in ("$minN", "$maxN", "$firstN", "$lastN")] == \
        [[3, 4], [5, 4], [3, 4], [4, 5]]


def test_n_expressions_unit_values(coll):
    """expression_test.cpp: ExpressionFromAccumulators FirstNLastN and MinNMaxN."""
    data = [19, 7, 28, 3, 5]
    assert _first(coll, {"$firstN": {"n": 6, "input": data}}) == data
    assert _first(coll, {"$lastN": {"n": 3, "input": data}}) == [28, 3, 5]
    assert _first(coll, {"$maxN": {"n": 6, "input": data}}) == [28, 19, 7, 5, 3]
    assert _first(coll, {"$minN": {"n": 3, "input": [3, 2.713, 1.1]}}) == [1.1, 2.713, 3]
    assert _first(coll, {"$lastN": {"n": 3, "input": [1, 2, None, 3]}}) == [2, None, 3]


def test_n_expression_errors(coll):
    """The accumulators' own checks (accumulator_multi.cpp); a non-array input is 5788200."""
    assert _code(coll, {"$firstN": {"n": 0, "input": "$a"}}) == 5787908
    assert _code(coll, {"$lastN": {"n": 1.5, "input": "$a"}}) == 5787903
    assert _code(coll, {"$maxN": {"n": "x", "input": "$a"}}) == 5787902
    assert _code(coll, {"$minN": {"n": 2, "input": "$n"}}) == 5788200
    assert _code(coll, {"$firstN": {"n": 2, "input": "$missing"}}) == 5788200
    assert _code(coll, {"$firstN": 3}) == 5787801
    assert _code(coll, {"$maxN": [1]}) == 5787900
    assert _code(coll, {"$firstN": {"n": 2, "input": [1], "x": 1}}) == 5787901
    assert _code(coll, {"$firstN": {"input": [1]}}) == 5787906
    assert _code(coll, {"$lastN": {"n": 1}}) == 5787907


def test_top_bottom_n_have_no_expression_form(coll):
    """accumulator_multi.cpp registers $topN/$bottomN (and $top/$bottom) as accumulators only."""
    for op in ("$topN", "$bottomN"):
        assert _code(coll, {op: {"n": 1, "sortBy": {"a": 1}, "output": "$a"}}) == 168


def test_median_and_percentile(coll):
    """The approximate-median expression jstest, and $percentile with the same input."""
    assert _first(coll, {"$median": {"input": "$a", "method": "approximate"}}, 2) == 1.0
    assert _first(coll, {"$median": {"input": ["non-numeric", [1, 2, 3]], "method": "approximate"}}) is None
    assert _first(coll, {"$median": {"input": ["$n", "$u", "$diff", 9], "method": "approximate"}}) == 4.0
    assert _first(coll, {"$median": {"input": "$u", "method": "approximate"}}) is None
    assert _first(coll, {"$median": {"input": "$n", "method": "approximate"}}) == 4.0
    assert _first(coll, {"$percentile": {"input": "$a", "p": [0.1, 0.5, 1], "method": "approximate"}}) == \
        [1.0, 3.0, 9.0]
    assert _first(coll, {"$percentile": {"input": "$nope", "p": [0.5, 0.9], "method": "approximate"}}) == \
        [None, None]
    assert _code(coll, {"$median": 1}) == 7436201
    assert _code(coll, {"$percentile": "x"}) == 7436200
    assert _code(coll, {"$percentile": {"input": "$a", "p": [1.5], "method": "approximate"}}) == 7750303
    assert _code(coll, {"$percentile": {"input": "$a", "p": "$a", "method": "approximate"}}) == 7750300
    assert _code(coll, {"$median": {"input": "$a", "method": "fancy"}}) == 2  # BadValue
    assert _code(coll, {"$median": {"input": "$a"}}) == 40414  # IDLFailedToParse: method is required


def test_to_uuid_and_bindata_convert(coll):
    """jstests/aggregation/expressions/convert_bindata.js."""
    assert _first(coll, {"$toUUID": "$u"}) == UUID_BIN
    assert _first(coll, {"$toUUID": "$missing"}) is None
    assert _code(coll, {"$toUUID": "$u"}, 2) == 241  # ConversionFailure: Invalid UUID string
    assert _code(coll, {"$toUUID": "$n"}) == 241
    conv = lambda inp, to, fmt=None: {"$convert": {"input": inp, "to": to, **({"format": fmt} if fmt else {})}}
    b0 = {"type": "binData", "subtype": 0}
    assert _first(coll, conv("hn3uUsMxSE6S0cVkebjmfg==", b0, "base64")) == RAW0
    assert _first(coll, conv("hn3uUsMxSE6S0cVkebjmfg", b0, "base64url")) == RAW0
    assert _first(coll, conv("867DEE52C331484E92D1C56479B8E67E", b0, "hex")) == RAW0
    assert _first(coll, conv("🙂😎", b0, "utf8")) == b"\xf0\x9f\x99\x82\xf0\x9f\x98\x8e"
    assert _first(coll, conv({"$literal": UUID_BIN}, "string", "uuid")) == UUID_STR
    assert _first(coll, conv({"$literal": UUID_BIN}, "string", "auto")) == UUID_STR
    assert _first(coll, conv({"$literal": BIN0}, "string", "auto")) == "hn3uUsMxSE6S0cVkebjmfg=="
    assert _first(coll, conv({"$literal": BIN0}, "string", "base64url")) == "hn3uUsMxSE6S0cVkebjmfg"
    assert _first(coll, conv({"$literal": BIN0}, "string", "hex")) == "867DEE52C331484E92D1C56479B8E67E"
    assert _first(coll, conv({"$literal": BIN0}, "binData")) == RAW0
    assert _first(coll, conv(1.9, {"type": "int"})) == 1
    # the illegal conversions are ConversionFailure (241), which onError replaces
    for inp, to, fmt in ((ObjectId("0123456789abcdef01234567"), {"type": "binData", "subtype": 4}, None),
                         (UUID_STR, b0, "uuid"), ("hn3uUsMxSE6S0cVkebjmfg==", {"type": "binData", "subtype": 4}, "base64"),
                         ("867dee--52-c331-484e-zx", b0, "hex"), ({"$literal": UUID_BIN}, b0, None),
                         ({"$literal": BIN0}, {"type": "binData", "subtype": 4}, None)):
        assert _code(coll, conv(inp, to, fmt)) == 241
        assert _first(coll, {"$convert": {**conv(inp, to, fmt)["$convert"], "onError": "bad"}}) == "bad"
    # the argument checks are not conversion failures
    assert _code(coll, conv("x", {"type": "binData", "subtype": 1000}, "base64")) == 4341107
    assert _code(coll, conv("x", {"type": "binData", "subtype": 127}, "base64")) == 4341107
    assert _code(coll, conv(123, {"type": -2})) == 9  # FailedToParse
    assert _code(coll, conv("x", b0)) == 4341115  # a format is required
    assert _code(coll, conv("x", b0, "base32")) == 4341125
    assert _code(coll, conv("x", "dinosaur")) == 2  # BadValue: Unknown type name


# --- the expression forms against the accumulator forms ------------------------------------

_values = st.lists(st.one_of(st.none(), st.integers(-50, 50), st.sampled_from(["a", "b", 2.5])), max_size=12)


@settings(max_examples=150)
@given(values=_values, n=st.integers(1, 14), op=st.sampled_from(["$firstN", "$lastN", "$maxN", "$minN"]))
def test_n_expression_equals_its_accumulator(values, n, op):
    """`{op: {n, input: array}}` answers what `$group` with `{op: {n, input: "$v"}}` answers over one
    document per element, in the array's order."""
    expr = evaluate({op: {"n": n, "input": {"$literal": values}}}, {})
    docs = [{"_id": i, "v": v} for i, v in enumerate(values)]
    grouped = list(run_pipeline(iter(docs), [{"$group": {"_id": None, "out": {op: {"n": n, "input": "$v"}}}}]))
    assert expr == (grouped[0]["out"] if grouped else [])
