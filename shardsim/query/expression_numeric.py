"""Numeric widening shared by the arithmetic expressions and the accumulators.

The server's arithmetic keeps the widest operand type (int < long < double <
decimal) and widens an integer result that overflows: int -> long -> double
(src/mongo/db/pipeline/expression.cpp, ExpressionAdd; accumulator_sum.cpp).  Here a
result is computed exactly (Python int, `decimal.Decimal`, `math.fsum`) and then
wrapped in the kind it should have.
"""

from __future__ import annotations

import math
from decimal import Decimal

from bson import Decimal128, Int64
from mongosim.oplog import _dec128
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.values import type_name

__all__ = ["numeric_kind", "numeric_result", "as_decimal", "to_decimal128", "int_to_double", "integral32", "coerce_to_long"]


def numeric_kind(v) -> int:
    """0 for a non-number, else the width: 1 int, 2 long, 3 double, 4 decimal."""
    t = type(v)
    if t is int:
        return 1 if -(2**31) <= v < 2**31 else 2
    if t is Int64:
        return 2
    if t is float:
        return 3
    if t is Decimal128:
        return 4
    return 0


_DEC = _dec128.context()


def to_decimal128(d) -> Decimal128:
    """An exact result as a Decimal128: rounded to 34 digits, overflowing to Infinity (never raises)."""
    return _dec128.to_decimal128(_DEC.plus(d if isinstance(d, Decimal) else Decimal(d)))


def int_to_double(r: int) -> float:
    """An exact integer as the nearest double; beyond the double range, ±Infinity."""
    try:
        return float(r)
    except OverflowError:
        return math.inf if r > 0 else -math.inf


def numeric_result(r, kind):
    """Wrap an exact result in the widest kind, overflowing int -> long -> double."""
    if kind == 4:
        return to_decimal128(r)
    if kind == 3:
        return int_to_double(r) if type(r) is int else float(r)
    r = int(r)
    if kind == 1 and -(2**31) <= r < 2**31:
        return r
    if -(2**63) <= r < 2**63:
        return Int64(r)
    return int_to_double(r)


def as_decimal(v) -> Decimal:
    """A number as an exact `decimal.Decimal` (a double by its shortest repr)."""
    if type(v) is Decimal128:
        return v.to_decimal()
    if type(v) is float:
        return Decimal(repr(v)) if v == v and v not in (math.inf, -math.inf) else Decimal(str(v))
    return Decimal(int(v))


def integral32(v):
    """Value::integral(): the number as an int when it is whole and fits 32 bits, else None."""
    k = numeric_kind(v)
    if not k:
        return None
    if k in (1, 2):
        n = int(v)
    else:
        d = v.to_decimal() if k == 4 else v
        if k == 3 and not math.isfinite(d) or k == 4 and not d.is_finite():
            return None
        if d != int(d):
            return None
        n = int(d)
    return n if -(2**31) <= n < 2**31 else None


def coerce_to_long(v) -> int:
    """Value::coerceToLong: a number truncated toward zero; 31109 out of int64 (NaN included),
    16004 for a non-number."""
    k = numeric_kind(v)
    if k in (1, 2):
        return int(v)
    if k == 3:
        if not (-(2.0**63) <= v < 2.0**63):
            raise MongoError(31109, f"Can't coerce out of range value {v:g} to long")
        return int(v)
    if k == 4:
        d = v.to_decimal()
        if not d.is_finite() or not -(2**63) <= d.to_integral_value() < 2**63:
            raise MongoError(31109, f"Can't coerce out of range value {d} to long")
        return int(d.to_integral_value(rounding="ROUND_HALF_EVEN"))
    raise MongoError(16004, f"can't convert from BSON type {type_name(v)} to long")
