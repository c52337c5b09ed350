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

__all__ = ["numeric_kind", "numeric_result", "as_decimal", "to_decimal128", "int_to_double"]


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
