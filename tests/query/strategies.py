"""Hypothesis strategies: small BSON documents, filters and updates over a shared field alphabet.

A tiny alphabet (`a`, `b`, `c`, plus numeric names `0`, `1`) makes paths collide
often, so array traversal, numeric components and conflicts are exercised.
"""

from __future__ import annotations

import math
import re

from bson import Decimal128, Int64
from hypothesis import strategies as st

FIELDS = ["a", "b", "c", "0", "1"]
NAMES = st.sampled_from(FIELDS)

ints = st.integers(min_value=-3, max_value=3)
scalars = st.one_of(
    ints,
    st.sampled_from([2**31 - 1, -(2**31), Int64(2), Int64(-1)]),
    st.sampled_from([0.5, -1.5, 2.0, 0.0]),
    st.sampled_from(["", "x", "y", "ab"]),
    st.none(),
    st.booleans(),
)


def values(max_leaves: int = 8):
    return st.recursive(
        scalars,
        lambda children: st.one_of(
            st.lists(children, max_size=3),
            st.dictionaries(NAMES, children, max_size=3),
        ),
        max_leaves=max_leaves,
    )


@st.composite
def documents(draw, max_fields: int = 4):
    body = draw(st.dictionaries(st.sampled_from(["a", "b", "c"]), values(), max_size=max_fields))
    return {"_id": draw(st.integers(0, 5)), **body}


@st.composite
def paths(draw, max_parts: int = 3):
    n = draw(st.integers(1, max_parts))
    first = draw(st.sampled_from(["a", "b", "c"]))
    rest = [draw(NAMES) for _ in range(n - 1)]
    return ".".join([first, *rest])


cmp_values = st.one_of(ints, st.sampled_from(["x", "y", "", 0.5]), st.none())


@st.composite
def leaf_conditions(draw):
    kind = draw(st.sampled_from([
        "eq", "eq", "$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$type",
        "$size", "$all", "$elemMatch", "$not", "$mod", "eqdoc",
    ]))
    if kind == "eq":
        return draw(cmp_values)
    if kind == "eqdoc":
        return draw(st.one_of(st.lists(ints, max_size=2), st.dictionaries(NAMES, ints, max_size=2)))
    if kind in ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte"):
        return {kind: draw(cmp_values)}
    if kind in ("$in", "$nin"):
        return {kind: draw(st.lists(cmp_values, max_size=3))}
    if kind == "$exists":
        return {kind: draw(st.booleans())}
    if kind == "$type":
        return {kind: draw(st.sampled_from(["int", "string", "array", "object", "null", "bool", "double", "number"]))}
    if kind == "$size":
        return {kind: draw(st.integers(0, 2))}
    if kind == "$all":
        return {kind: draw(st.lists(ints, min_size=1, max_size=2))}
    if kind == "$elemMatch":
        return {kind: draw(st.one_of(
            st.builds(lambda v: {"$gt": v}, ints),
            st.builds(lambda k, v: {k: v}, st.sampled_from(["a", "b"]), ints),
        ))}
    if kind == "$not":  # (the indexed negations: a comparison or an $in, null included; and a regex)
        inner = draw(st.sampled_from(["$gt", "$lt", "$eq", "$gte", "$lte", "$in", "$regex"]))
        if inner == "$in":
            return {kind: {inner: draw(st.lists(cmp_values, max_size=3))}}
        if inner == "$regex":
            return {kind: re.compile(draw(st.sampled_from(["^x", "y"])))}
        return {kind: {inner: draw(st.one_of(ints, cmp_values))}}
    if kind == "$mod":
        return {kind: [draw(st.integers(1, 3)), draw(st.integers(0, 2))]}
    raise AssertionError(kind)


@st.composite
def filters(draw, depth: int = 2):
    n = draw(st.integers(0, 2))
    out = {}
    for _ in range(n):
        out[draw(paths())] = draw(leaf_conditions())
    if depth > 0 and draw(st.booleans()):
        op = draw(st.sampled_from(["$and", "$or", "$nor"]))
        out[op] = draw(st.lists(filters(depth=depth - 1), min_size=1, max_size=2))
    return out


update_values = st.one_of(scalars, st.lists(ints, max_size=2), st.dictionaries(NAMES, ints, max_size=2))


@st.composite
def operator_updates(draw):
    ops = {}
    n = draw(st.integers(1, 3))
    for _ in range(n):
        op = draw(st.sampled_from([
            "$set", "$set", "$unset", "$inc", "$mul", "$min", "$max", "$push", "$addToSet",
            "$pull", "$pullAll", "$pop", "$rename", "$setOnInsert",
        ]))
        path = draw(paths(max_parts=2))
        if op == "$set" or op == "$setOnInsert":
            arg = draw(update_values)
        elif op == "$unset":
            arg = ""
        elif op in ("$inc", "$mul"):
            arg = draw(st.one_of(ints, st.sampled_from([1.5, Int64(2)])))
        elif op in ("$min", "$max"):
            arg = draw(cmp_values)
        elif op == "$push":
            arg = draw(st.one_of(
                ints,
                st.builds(lambda e: {"$each": e}, st.lists(ints, max_size=3)),
                st.builds(lambda e, s: {"$each": e, "$slice": s}, st.lists(ints, max_size=3), st.integers(-2, 2)),
                st.builds(lambda e, s: {"$each": e, "$sort": s}, st.lists(ints, max_size=3), st.sampled_from([1, -1])),
                st.builds(lambda e, p: {"$each": e, "$position": p}, st.lists(ints, max_size=2), st.integers(-2, 3)),
            ))
        elif op == "$addToSet":
            arg = draw(st.one_of(ints, st.builds(lambda e: {"$each": e}, st.lists(ints, max_size=3))))
        elif op == "$pull":
            arg = draw(st.one_of(ints, st.builds(lambda v: {"$gte": v}, ints)))
        elif op == "$pullAll":
            arg = draw(st.lists(ints, max_size=3))
        elif op == "$pop":
            arg = draw(st.sampled_from([1, -1]))
        elif op == "$rename":
            arg = draw(paths(max_parts=2))
        ops.setdefault(op, {})[path] = arg
    return ops


@st.composite
def pipeline_updates(draw):
    stages = []
    for _ in range(draw(st.integers(1, 2))):
        kind = draw(st.sampled_from(["$set", "$unset", "$replaceWith", "$project"]))
        if kind == "$set":
            stages.append({"$set": {draw(paths(max_parts=2)): {"$literal": draw(update_values)}}})
        elif kind == "$unset":
            stages.append({"$unset": draw(paths(max_parts=2))})
        elif kind == "$project":
            stages.append({"$project": {draw(st.sampled_from(["a", "b", "c"])): draw(st.sampled_from([0, 1]))}})
        else:
            stages.append({"$replaceWith": {"$literal": draw(st.dictionaries(st.sampled_from(["a", "b", "c"]), values(), max_size=3))}})
    return stages


# --- extreme numbers in expressions (tests/query/test_expression_numeric_extremes.py, tests/crud/test_expression_limits.py)

_EXTREMES = [
    0, 1, -1, 2, 3, 10, 63, 64, 400, -400, 2**31 - 1, -(2**31), Int64(2**63 - 1), Int64(-(2**63)), Int64(0),
    10**12, 0.0, -0.0, 0.5, -8.0, 1e308, -1e308, 1.7976931348623157e308, 5e-324, math.inf, -math.inf, math.nan, 1e300,
    Decimal128("NaN"), Decimal128("Infinity"), Decimal128("-Infinity"), Decimal128("9.999999999999999999999999999999999E+6144"),
    Decimal128("-9.999999999999999999999999999999999E+6144"), Decimal128("1E-6176"), Decimal128("0"), Decimal128("-1.5"),
    Decimal128("1E+6000"), None,
]
_UNARY = ["$abs", "$ceil", "$floor", "$sqrt", "$exp", "$ln", "$log10", "$round", "$trunc", "$toInt", "$toLong",
          "$toDouble", "$toDecimal", "$toDate", "$toString", "$sin", "$cosh", "$atanh", "$degreesToRadians"]
_BINARY = ["$pow", "$log", "$subtract", "$divide", "$mod", "$round", "$trunc", "$atan2"]
NARY_NUMERIC = ["$add", "$multiply", "$sum", "$avg", "$max", "$min", "$stdDevPop"]

extreme_numbers = st.sampled_from(_EXTREMES) | st.floats() | st.integers(-(2**63), 2**63 - 1)


# Operators taking a number as a position, a count, a precision, a date part or a date offset.
_POSITIONAL = [
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

def numeric_expressions(depth=2):
    """Numeric expressions nested `depth` deep over extreme numbers (±inf, NaN, ±1e308, int64 and
    Decimal128 limits), with the operators that take a number as a position, count or date part."""
    leaf = extreme_numbers.map(lambda v: {"$literal": v})
    if depth == 0:
        return leaf
    sub = numeric_expressions(depth - 1) | leaf
    return st.one_of(
        st.builds(lambda op, a: {op: a}, st.sampled_from(_UNARY), sub),
        st.builds(lambda op, a, b: {op: [a, b]}, st.sampled_from(_BINARY), sub, sub),
        st.builds(lambda op, xs: {op: xs}, st.sampled_from(NARY_NUMERIC), st.lists(sub, min_size=1, max_size=4)),
        st.builds(lambda a, b: {"$convert": {"input": a, "to": b, "onError": "err"}}, sub,
                  st.sampled_from(["int", "long", "double", "decimal", "date", "string", "bool"])),
        st.builds(lambda make, a, b: make(a, b), st.sampled_from(_POSITIONAL), sub, sub),
    )

