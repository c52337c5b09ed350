"""$bucketAuto's `granularity`: rounding bucket boundaries to a series of preferred numbers.

The server's GranularityRounder (granularity_rounder_preferred_numbers.cpp,
granularity_rounder_powers_of_two.cpp): the Renard series R5..R80, 1-2-5, the E
series E6..E192, each scaled by powers of ten, and POWERSOF2.  `round_up(v)` is the
smallest series number strictly greater than `v` (v itself for 0); `round_down(v)`
the largest strictly smaller.  Only non-negative numbers round (40262/40263/40268
for the series, 40265/40266/40267 for powers of two).  The series are the server's
tables as written there (its R40 has no 335).
"""

from __future__ import annotations

import bisect
import math
from decimal import Decimal
from typing import Callable

from bson import Decimal128, Int64

from mongosim.oplog import _dec128
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.values import is_number, type_name

__all__ = ["rounder", "NAMES"]

_SERIES: dict[str, list[float]] = {
    "R5": [10, 16, 25, 40, 63],
    "R10": [100, 125, 160, 200, 250, 315, 400, 500, 630, 800],
    "R20": [100, 112, 125, 140, 160, 180, 200, 224, 250, 280, 315, 355, 400, 450, 500, 560, 630, 710, 800, 900],
    "R40": [100, 106, 112, 118, 125, 132, 140, 150, 160, 170, 180, 190, 200, 212, 224, 236, 250, 265, 280, 300, 315,
            355, 375, 400, 425, 450, 475, 500, 530, 560, 600, 630, 670, 710, 750, 800, 850, 900, 950],
    "R80": [103, 109, 115, 122, 128, 136, 145, 155, 165, 175, 185, 195, 206, 218, 230, 243, 258, 272, 290, 307, 325,
            345, 365, 387, 412, 437, 462, 487, 515, 545, 575, 615, 650, 690, 730, 775, 825, 875, 925, 975],
    "1-2-5": [10, 20, 50],
    "E6": [10, 15, 22, 33, 47, 68],
    "E12": [10, 12, 15, 18, 22, 27, 33, 39, 47, 56, 68, 82],
    "E24": [10, 11, 12, 13, 15, 16, 18, 20, 22, 24, 27, 30, 33, 36, 39, 43, 47, 51, 56, 62, 68, 75, 82, 91],
    "E48": [100, 105, 110, 115, 121, 127, 133, 140, 147, 154, 162, 169, 178, 187, 196, 205, 215, 226, 237, 249, 261,
            274, 287, 301, 316, 332, 348, 365, 383, 402, 422, 442, 464, 487, 511, 536, 562, 590, 619, 649, 681, 715,
            750, 787, 825, 866, 909, 953],
    "E96": [100, 102, 105, 107, 110, 113, 115, 118, 121, 124, 127, 130, 133, 137, 140, 143, 147, 150, 154, 158, 162,
            165, 169, 174, 178, 182, 187, 191, 196, 200, 205, 210, 215, 221, 226, 232, 237, 243, 249, 255, 261, 267,
            274, 280, 287, 294, 301, 309, 316, 324, 332, 340, 348, 357, 365, 374, 383, 392, 402, 412, 422, 432, 442,
            453, 464, 475, 487, 499, 511, 523, 536, 549, 562, 576, 590, 604, 619, 634, 649, 665, 681, 698, 715, 732,
            750, 768, 787, 806, 825, 845, 866, 887, 909, 931, 953, 976],
    "E192": [100, 101, 102, 104, 105, 106, 107, 109, 110, 111, 113, 114, 115, 117, 118, 120, 121, 123, 124, 126, 127,
             129, 130, 132, 133, 135, 137, 138, 140, 142, 143, 145, 147, 149, 150, 152, 154, 156, 158, 160, 162, 164,
             165, 167, 169, 172, 174, 176, 178, 180, 182, 184, 187, 189, 191, 193, 196, 198, 200, 203, 205, 208, 210,
             213, 215, 218, 221, 223, 226, 229, 232, 234, 237, 240, 243, 246, 249, 252, 255, 258, 261, 264, 267, 271,
             274, 277, 280, 284, 287, 291, 294, 298, 301, 305, 309, 312, 316, 320, 324, 328, 332, 336, 340, 344, 348,
             352, 357, 361, 365, 370, 374, 379, 383, 388, 392, 397, 402, 407, 412, 417, 422, 427, 432, 437, 442, 448,
             453, 459, 464, 470, 475, 481, 487, 493, 499, 505, 511, 517, 523, 530, 536, 542, 549, 556, 562, 569, 576,
             583, 590, 597, 604, 612, 619, 626, 634, 642, 649, 657, 665, 673, 681, 690, 698, 706, 715, 723, 732, 741,
             750, 759, 768, 777, 787, 796, 806, 816, 825, 835, 845, 856, 866, 876, 887, 898, 909, 920, 931, 942, 953,
             965, 976, 988],
}
NAMES = frozenset(_SERIES) | {"POWERSOF2"}


def _as_float(v) -> float:
    return float(v.to_decimal()) if type(v) is Decimal128 else float(v)


def _check(v, codes: tuple[int, int, int]) -> float:
    if not is_number(v) or isinstance(v, bool):
        raise MongoError(codes[0], f"A granularity rounder can only round numeric values, but found type: {type_name(v)}")
    f = _as_float(v)
    if f != f:
        raise MongoError(codes[1], "A granularity rounder cannot round NaN")
    if f < 0:
        raise MongoError(codes[2], "A granularity rounder can only round non-negative numbers")
    return f


class _PreferredNumbers:
    CODES = (40262, 40263, 40268)

    def __init__(self, series: list[float]) -> None:
        self.series = [float(x) for x in series]
        self.dseries = [Decimal(int(x)) for x in series]

    def round_up(self, v):
        f = _check(v, self.CODES)
        if f == 0.0:
            return v
        if type(v) is Decimal128:
            return Decimal128(self._up([d for d in self.dseries], v.to_decimal(), Decimal(1), Decimal(10)))
        return self._up(self.series, f, 1.0, 10.0)

    def round_down(self, v):
        f = _check(v, self.CODES)
        if f == 0.0:
            return v
        if type(v) is Decimal128:
            return Decimal128(self._down(self.dseries, v.to_decimal(), Decimal(1), Decimal(10)))
        return self._down(self.series, f, 1.0, 10.0)

    @staticmethod
    def _mul(a, b):
        return _dec128.multiply(a, b, _dec128.HALF_EVEN) if isinstance(a, Decimal) else a * b

    @staticmethod
    def _div(a, b):
        return _dec128.context().divide(a, b) if isinstance(a, Decimal) else a / b

    def _up(self, series, x, one, ten):
        m = one
        while x >= self._mul(series[-1], m):
            m = self._mul(m, ten)
        while x < self._mul(series[0], m):
            previous_min = self._mul(series[0], m)
            m = self._div(m, ten)
            if x >= self._mul(series[-1], m):
                return previous_min
        scaled = [self._mul(s, m) for s in series]
        return scaled[bisect.bisect_right(scaled, x)]

    def _down(self, series, x, one, ten):
        m = one
        while x <= self._mul(series[0], m):
            m = self._div(m, ten)
        while x > self._mul(series[-1], m):
            previous_max = self._mul(series[-1], m)
            m = self._mul(m, ten)
            if x <= self._mul(series[0], m):
                return previous_max
        scaled = [self._mul(s, m) for s in series]
        return scaled[bisect.bisect_left(scaled, x) - 1]


class _PowersOfTwo:
    CODES = (40265, 40266, 40267)

    def round_up(self, v):
        f = _check(v, self.CODES)
        if f == 0.0:
            return v
        if type(v) is float:
            return _pow2(math.floor(math.log2(f)) + 1)
        if type(v) is Decimal128:
            return Decimal128(Decimal(2) ** (math.floor(math.log2(f)) + 1))
        return _pow2(int(v).bit_length())

    def round_down(self, v):
        f = _check(v, self.CODES)
        if f == 0.0:
            return v
        if type(v) is float:
            return _pow2(math.ceil(math.log2(f)) - 1)
        if type(v) is Decimal128:
            return Decimal128(_dec128.context().power(Decimal(2), Decimal(math.ceil(math.log2(f)) - 1)))
        n = int(v)
        bits = n.bit_length()
        return _pow2(bits - 2 if n & (n - 1) == 0 else bits - 1)


def _pow2(exp: int):
    """$pow(2, exp) with an int exponent: an int (long when it needs it), a double for a negative one."""
    if exp < 0:
        return 2.0 ** exp
    r = 2 ** exp
    if r < 2**31:
        return r
    return Int64(r) if r < 2**63 else float(r)


def rounder(name: str) -> tuple[Callable, Callable]:
    """(round_up, round_down) of the granularity `name` (40257 for an unknown one)."""
    if name == "POWERSOF2":
        r: _PreferredNumbers | _PowersOfTwo = _PowersOfTwo()
    elif name in _SERIES:
        r = _PreferredNumbers(_SERIES[name])
    else:
        raise MongoError(40257, f"Unknown rounding granularity '{name}'")
    return r.round_up, r.round_down
