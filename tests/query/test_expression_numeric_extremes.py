"""Numeric expressions over extreme values (±inf, NaN, ±1e308, int64 limits, Decimal128
extremes, huge exponents) never fail with anything but a MongoError of a real code: no
OverflowError, no complex result, no InternalError (code 1), and no unbounded work.  The
same for operators that take a number as a position, count, precision or date part."""

from __future__ import annotations

import math

import pytest
from bson import Decimal128
from hypothesis import example, given
from hypothesis import strategies as st

from mongosim.oplog.bsonutil import encode
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.expressions import compile_expression
from mongosim.shardsim.query.summation import DoubleDoubleSummation
from mongosim.shardsim.query.values import MISSING
from tests.query._settings import QUERY_SETTINGS
from tests.query.strategies import extreme_numbers, numeric_expressions


@QUERY_SETTINGS
@given(expr=numeric_expressions())
# (what the property found, kept as fixed examples)
@example(expr={"$multiply": [{"$literal": 0}, {"$literal": Decimal128("Infinity")}]})
@example(expr={"$abs": {"$cosh": {"$literal": 711.0}}})
@example(expr={"$pow": [{"$literal": -8.0}, {"$literal": 0.5}]})
@example(expr={"$dateFromParts": {"year": {"$literal": Decimal128("1E+6000")}}})
@example(expr={"$substrCP": ["abc", {"$literal": math.nan}, {"$literal": 1}]})
@example(expr={"$mod": [{"$literal": math.inf}, {"$literal": math.inf}]})
@example(expr={"$indexOfArray": [[1], 1, {"$literal": -1e308}]})
@example(expr={"$add": [{"$literal": Decimal128("Infinity")}, {"$literal": Decimal128("-Infinity")}]})
def test_numeric_expressions_never_fail_internally(expr):
    try:
        r = compile_expression(expr)({})
    except MongoError as e:
        assert e.code != 1, (expr, e)
        return
    if r is not MISSING:
        encode({"r": r})  # (the reply can carry it: no complex number, no int beyond int64)


@QUERY_SETTINGS
@given(xs=st.lists(extreme_numbers | st.sampled_from([1e308, -1e308]), min_size=1, max_size=6))
def test_group_sum_and_avg_never_fail_internally(xs):
    """The `$group` states over any numbers: a value the reply can carry, an overflow is ±Infinity."""
    from mongosim.shardsim.query.accumulators import Avg, Sum

    for state in (Sum(), Avg()):
        for x in xs:
            state.add(x)
        encode({"r": state.result()})


@pytest.mark.parametrize("xs, expected", [
    ([1e308, 1e308], math.inf), ([1e308, 1e308, -1e308], math.inf), ([-1e308, -1e308], -math.inf),
    ([math.inf, -math.inf], "nan"), ([0.1] * 10, 1.0), ([2**53, 1, 1.0], 2.0**53 + 2),
    # getDouble answers the rounded part alone: the 1 cancelled out of it stays in the addend
    ([1e16, 1.0, -1e16], 0.0),
])
def test_double_double_summation(xs, expected):
    """DoubleDoubleSummation as the server's (summation.h): compensated, ±Infinity once a partial sum
    overflows (the plain running sum is answered when the compensated one turned NaN)."""
    dd = DoubleDoubleSummation()
    for x in xs:
        dd.add_int(x) if type(x) is int else dd.add_double(x)
    got = dd.get_double()
    assert math.isnan(got) if expected == "nan" else got == expected
