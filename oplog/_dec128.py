"""IEEE 754 decimal128 arithmetic as the server's Decimal128 class does it (for KeyString).

A BSON Decimal128 is 128 bits: sign, a 14-bit biased exponent (bias 6176) and an integer
coefficient below 10**34.  The same value has many representations (1.0 vs 1.00): the
exponent is part of the data.  Python's `decimal` follows the same IEEE rules, so a context
of 34 digits with exponents -6176..6111 ("clamp") reproduces the server's results exactly,
including the exponent of every result.  This module converts between `bson.Decimal128`,
its (sign, coefficient, biased exponent) parts and `decimal.Decimal`, and provides the few
operations KeyString needs: rounding a double to 34 or 15 digits, converting to a double
rounding toward zero, `normalize` (the most digits possible) and exact quantize/add.
"""

from __future__ import annotations

import decimal
import math
import struct
from decimal import Decimal

from bson.decimal128 import Decimal128

BIAS = 6176
MAX_BIASED_EXPONENT = 12287  # 6111 + 6176
MAX_COEFFICIENT = 10**34 - 1
_MASK64 = (1 << 64) - 1

HALF_EVEN = decimal.ROUND_HALF_EVEN
TOWARD_ZERO = decimal.ROUND_DOWN
TOWARD_POSITIVE = decimal.ROUND_CEILING
TOWARD_NEGATIVE = decimal.ROUND_FLOOR

FINITE, INFINITE, NAN = 0, 1, 2

DBL_MAX = 1.7976931348623157e308
DBL_MIN = 2.2250738585072014e-308  # smallest normal double


def context(rounding: str = HALF_EVEN) -> decimal.Context:
    """A fresh decimal128 context: 34 digits, the decimal128 exponent range, no traps."""
    return decimal.Context(prec=34, rounding=rounding, Emin=-6143, Emax=6144, clamp=1, traps=[])


_LARGEST_NEGATIVE_EXPONENT_ZERO = Decimal((0, (0,), -BIAS))


_ctx = context  # a fresh context per operation: flags are per call and thread-safe


# -- representation ----------------------------------------------------------------------


def parts(value: Decimal128) -> tuple[int, int, int, int]:
    """(kind, negative, coefficient, biased exponent) of a Decimal128, from its bits."""
    lo, hi = struct.unpack("<QQ", value.bid)
    negative = hi >> 63
    if (hi >> 61) & 3 == 3:  # combination field 11...: special or (non-canonical) huge coefficient
        if (hi >> 58) & 0x1F == 0x1F:
            return NAN, negative, 0, 0
        if (hi >> 58) & 0x1F == 0x1E:
            return INFINITE, negative, 0, 0
        return FINITE, negative, 0, (hi >> 47) & 0x3FFF  # coefficient >= 2**113: non-canonical zero
    coefficient = ((hi & ((1 << 49) - 1)) << 64) | lo
    if coefficient > MAX_COEFFICIENT:
        coefficient = 0
    return FINITE, negative, coefficient, (hi >> 49) & 0x3FFF


def from_parts(negative: int, coefficient: int, biased_exponent: int) -> Decimal128:
    """The Decimal128 with exactly these parts (coefficient < 2**113, exponent < 2**14)."""
    hi = (negative << 63) | (biased_exponent << 49) | (coefficient >> 64)
    return Decimal128.from_bid(struct.pack("<QQ", coefficient & _MASK64, hi))


def raw_bits(d: Decimal) -> tuple[int, int]:
    """(high64, low64) of the Decimal128 that holds `d` (finite) with `d`'s own exponent."""
    sign, coefficient, exponent = split(d)
    return (sign << 63) | ((exponent + BIAS) << 49) | (coefficient >> 64), coefficient & _MASK64


def from_raw_bits(high: int, low: int) -> Decimal128:
    return Decimal128.from_bid(struct.pack("<QQ", low, high))


NAN_VALUE = from_raw_bits(0x7C << 56, 0)
POSITIVE_INFINITY = from_raw_bits(0x78 << 56, 0)
NEGATIVE_INFINITY = from_raw_bits(0xF8 << 56, 0)


def to_decimal(negative: int, coefficient: int, biased_exponent: int) -> Decimal:
    return Decimal((negative, tuple(map(int, str(coefficient))), biased_exponent - BIAS))


def split(d: Decimal) -> tuple[int, int, int]:
    """(sign, integer coefficient, unbiased exponent) of a finite Decimal."""
    sign, digits, exponent = d.as_tuple()
    return sign, int("".join(map(str, digits))) if digits else 0, exponent


def biased_exponent(d: Decimal) -> int:
    return d.as_tuple().exponent + BIAS


def coefficient(d: Decimal) -> int:
    return split(d)[1]


def to_decimal128(d: Decimal) -> Decimal128:
    """The Decimal128 holding `d` with its exponent (NaN/inf handled)."""
    if d.is_nan():
        return NAN_VALUE
    if d.is_infinite():
        return NEGATIVE_INFINITY if d.is_signed() else POSITIVE_INFINITY
    sign, coef, exponent = split(d)
    return from_parts(sign, coef, exponent + BIAS)


# -- operations --------------------------------------------------------------------------


def normalize(d: Decimal) -> Decimal:
    """`d` with as many digits as possible (server: add 0E-6176): one representation per value."""
    return _ctx(HALF_EVEN).add(d, _LARGEST_NEGATIVE_EXPONENT_ZERO)


def from_double(x: float, digits: int, rounding: str) -> Decimal:
    """The server's Decimal128(double, kRoundTo34Digits | kRoundTo15Digits, rounding).

    34 digits: the exact binary value rounded to 34 digits; an exact result keeps the exponent
    closest to 0 (integers get exponent 0).  15 digits: that, quantized to exactly 15
    significant digits.
    """
    converted = _ctx(rounding).create_decimal_from_float(x)
    if digits == 34 or x == 0.0 or math.isinf(x) or math.isnan(x):
        return converted
    base2_exp = math.frexp(x)[1] - 1
    base10_exp = (base2_exp * 30103) // 100000
    result = _ctx(rounding).quantize(converted, Decimal((0, (1,), base10_exp - 14)))
    if coefficient(result) > 10**15 - 1:
        result = _ctx(rounding).quantize(converted, Decimal((0, (1,), base10_exp - 13)))
    return result


def to_double_toward_zero(d: Decimal) -> tuple[float, bool]:
    """(double, inexact): `d` rounded toward zero to a double, like bid128_to_binary64(RZ)."""
    f = float(d)  # correctly rounded to nearest
    if math.isinf(f):
        return math.copysign(DBL_MAX, f), True
    exact = Decimal(f)
    if exact.copy_abs() > d.copy_abs():  # (abs() would round to the thread's context)
        f = math.nextafter(f, 0.0)
        exact = Decimal(f)
    return f, exact != d


def multiply(a: Decimal, b: Decimal, rounding: str) -> Decimal:
    return _ctx(rounding).multiply(a, b)


def subtract(a: Decimal, b: Decimal) -> Decimal:
    return _ctx(HALF_EVEN).subtract(a, b)


def add_exact(a: Decimal, b: Decimal) -> tuple[Decimal, bool]:
    """(a + b, inexact)."""
    ctx = _ctx(HALF_EVEN)
    result = ctx.add(a, b)
    return result, bool(ctx.flags[decimal.Inexact])


def quantize_exact(a: Decimal, biased_exp: int) -> tuple[Decimal, bool]:
    """(a quantized to 1E<exp>, ok) where ok means no flag was raised (exact, in range)."""
    ctx = _ctx(HALF_EVEN)
    result = ctx.quantize(a, Decimal((0, (1,), biased_exp - BIAS)))
    bad = ctx.flags[decimal.Inexact] or ctx.flags[decimal.InvalidOperation]
    return result, not bad
