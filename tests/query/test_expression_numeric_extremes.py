"""Numeric expressions over extreme values (±inf, NaN, ±1e308, int64 limits, Decimal128
extremes, huge exponents) never fail with anything but a MongoError of a real code: no
OverflowError, no complex result, no InternalError (code 1), and no unbounded work.  The
same for operators that take a number as a position, count, precision or date part."""

from __future__ import annotations

import math

from bson import Decimal128, Int64
from hypothesis import example, given
from hypothesis import strategies as st

from mongosim.oplog.bsonutil import encode
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.expressions import compile_expression
from mongosim.shardsim.query.values import MISSING
from tests.query._settings import QUERY_SETTINGS

EXTREMES = [
    0, 1, -1, 2, 3, 10, 63, 64, 400, -400, 2**31 - 1, -(2**31), Int64(2**63 - 1), Int64(-(2**63)), Int64(0),
    10**12, 0.0, -0.0, 0.5, -8.0, 1e308, -1e308, 1.7976931348623157e308, 5e-324, math.inf, -math.inf, math.nan, 1e300,
    Decimal128("NaN"), Decimal128("Infinity"), Decimal128("-Infinity"), Decimal128("9.999999999999999999999999999999999E+6144"),
    Decimal128("-9.999999999999999999999999999999999E+6144"), Decimal128("1E-6176"), Decimal128("0"), Decimal128("-1.5"),
    Decimal128("1E+6000"), None,
]
UNARY = ["$abs", "$ceil", "$floor", "$sqrt", "$exp", "$ln", "$log10", "$round", "$trunc", "$toInt", "$toLong",
         "$toDouble", "$toDecimal", "$toDate", "$toString", "$sin", "$cosh", "$atanh", "$degreesToRadians"]
BINARY = ["$pow", "$log", "$subtract", "$divide", "$mod", "$round", "$trunc", "$atan2"]
NARY = ["$add", "$multiply", "$sum", "$avg", "$max", "$min", "$stdDevPop"]

values = st.sampled_from(EXTREMES) | st.floats() | st.integers(-(2**63), 2**63 - 1)


def expressions(depth=2):
    leaf = values.map(lambda v: {"$literal": v})
    if depth == 0:
        return leaf
    sub = expressions(depth - 1) | leaf
    return st.one_of(
        st.builds(lambda op, a: {op: a}, st.sampled_from(UNARY), sub),
        st.builds(lambda op, a, b: {op: [a, b]}, st.sampled_from(BINARY), sub, sub),
        st.builds(lambda op, xs: {op: xs}, st.sampled_from(NARY), st.lists(sub, min_size=1, max_size=4)),
        st.builds(lambda a, b: {"$convert": {"input": a, "to": b, "onError": "err"}}, sub,
                  st.sampled_from(["int", "long", "double", "decimal", "date", "string", "bool"])),
        st.builds(lambda make, a, b: make(a, b), st.sampled_from(POSITIONAL), sub, sub),
    )


# Operators taking a number as a position, a count, a precision, a date part or a date offset.
POSITIONAL = [
    lambda a, b: {"$substrCP": ["abc", a, b]},
    lambda a, b: {"$substrBytes": ["abc", a, b]},
    lambda a, b: {"$slice": [[1, 2, 3], a, b]},
    lambda a, b: {"$slice": [[1, 2, 3], a]},
    lambda a, b: {"$arrayElemAt": [[1, 2], a]},
    lambda a, b: {"$indexOfArray": [[1, 2], 2, a, b]},
    lambda a, b: {"$indexOfCP": ["abc", "c", a, b]},
    lambda a, b: {"$indexOfBytes": ["abc", "c", a]},
    lambda a, b: {"$filter": {"input": [1, 2], "cond": True, "limit": a}},
    lambda a, b: {"$range": [a, b]},
    lambda a, b: {"$range": [0, a, b]},
    lambda a, b: {"$firstN": {"n": a, "input": [1, 2]}},
    lambda a, b: {"$dateFromParts": {"year": a, "month": b}},
    lambda a, b: {"$dateFromParts": {"isoWeekYear": 2000, "isoWeek": a, "millisecond": b}},
    lambda a, b: {"$dateAdd": {"startDate": {"$toDate": 0}, "unit": "day", "amount": a}},
    lambda a, b: {"$add": [{"$toDate": 0}, a, b]},
    lambda a, b: {"$subtract": [{"$toDate": 0}, a]},
    lambda a, b: {"$year": {"$toDate": a}},
    lambda a, b: {"$dateToString": {"date": {"$toDate": a}}},
    lambda a, b: {"$toString": a},
    lambda a, b: {"$bitAnd": [a, b]},
]


@QUERY_SETTINGS
@given(expr=expressions())
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
@given(op=st.sampled_from(NARY + ["$add"]), xs=st.lists(values, min_size=1, max_size=6))
def test_group_accumulators_never_fail_internally(op, xs):
    from mongosim.shardsim.query.accumulators import Avg, Sum

    for state in (Sum(), Avg()):
        for x in xs:
            state.add(x)
        state.result()
