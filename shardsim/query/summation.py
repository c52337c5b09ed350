"""DoubleDoubleSummation: the server's compensated sum of doubles (src/mongo/util/summation.h).

The sum is kept as an unevaluated pair `(_sum, _addend)`: each added double goes
through Fast2Sum against the addend and 2Sum against the sum, so about 107 bits are
kept and sums of 64-bit integers are exact below 2**106.  Python floats are IEEE
doubles with the same rounding, so the results agree with the server's to the bit,
overflow included: once a partial sum overflows, `_sum` becomes inf or NaN and the
plain running sum `_special` is answered instead (`1e308 + 1e308` is Infinity;
`inf + -inf` NaN).  Nothing here raises.
"""

from __future__ import annotations

import math
from decimal import Decimal

__all__ = ["DoubleDoubleSummation"]


class DoubleDoubleSummation:
    __slots__ = ("_sum", "_addend", "_special")

    def __init__(self) -> None:
        self._sum = 0.0
        self._addend = 0.0
        self._special = 0.0  # a simple sum, answered when the compensated one turned NaN

    def add_double(self, x: float) -> None:
        self._special += x
        # Fast2Sum(x, addend): the addend is tinier than the sum.
        s = x + self._addend
        z = s - x
        self._addend = self._addend - z
        x = s
        # 2Sum(sum, x): x may be larger than the sum.
        s = self._sum + x
        a2 = s - x
        b2 = s - a2
        t = (self._sum - a2) + (x - b2)
        self._sum = s
        self._addend += t

    def add_long(self, x: int) -> None:
        """Split a 64-bit integer into two exactly representable doubles (truncating division)."""
        q = abs(x) >> 32
        high = (q if x >= 0 else -q) << 32
        self.add_double(float(x - high))
        self.add_double(float(high))

    def add_int(self, x: int) -> None:
        if -(2**63) <= x < 2**63:
            self.add_long(x)
        else:  # (never from BSON; an exact Python int beyond int64)
            self.add_double(float(x) if abs(x) < 2**1024 else math.copysign(math.inf, x))

    def get_double(self) -> float:
        return self._special if self._sum != self._sum else self._sum

    def get_decimal(self, to_decimal34) -> Decimal:
        """The sum as a 34-digit decimal: `to_decimal34(double)` rounds one double."""
        if not math.isfinite(self._sum):
            return to_decimal34(self._special)
        return to_decimal34(self._sum) + to_decimal34(self._addend)
