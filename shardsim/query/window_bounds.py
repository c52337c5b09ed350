"""Window bounds of `$setWindowFields` (the server's window_bounds.cpp and PartitionIterator's endpoints).

A window function reads the documents of the current document's window, inside its partition:

- `documents: [lo, hi]`: positions relative to the current document (`"current"` is 0,
  `"unbounded"` the partition's end), clipped to the partition; a window shifted wholly out of
  the partition is empty.
- `range: [lo, hi]` (with `unit` for dates): the documents whose sortBy value lies within
  `[value + lo, value + hi]` of the current document's value (numbers added exactly, dates
  moved by `unit` in UTC); `"current"` means the current document's position (not the documents
  tying with it, which a bound of 0 includes); `"unbounded"` reaches the partition's first (last)
  document whose value has the expected type.  The current document's value must be a number
  (a date with `unit`): 5429414 / 5429513 / 5429413.

`parse_bounds` checks a `window` specification as WindowBounds::parse does (FailedToParse with
the server's messages; 5339900 for inverted bounds; 5339901 document bounds without sortBy;
5339902/8947400/8947401 range bounds without a single ascending field sortBy).  `endpoints`
gives a window's first and last index in its partition, or None when it is empty.
"""

from __future__ import annotations

import bisect
import datetime
from dataclasses import dataclass
from typing import Any

from bson import Decimal128
from mongosim.oplog import _dec128
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.expression_date import UTC_ZONE, date_add
from mongosim.shardsim.query.expression_numeric import as_decimal
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.values import MISSING, compare, date_millis, is_number, sort_key, type_name
from mongosim.shardsim.query.variables import constant_value

__all__ = ["WindowBounds", "UNBOUNDED", "CURRENT", "DEFAULT_BOUNDS", "LEFT_UNBOUNDED_TO_CURRENT", "parse_bounds",
           "parse_time_unit", "endpoints", "TIME_UNITS", "PartitionKeys"]

UNBOUNDED = "unbounded"
CURRENT = "current"
TIME_UNITS = ("year", "quarter", "month", "week", "day", "hour", "minute", "second", "millisecond")
_DEC = _dec128.context()


@dataclass(frozen=True)
class WindowBounds:
    kind: str  # "documents" or "range"
    lower: Any  # UNBOUNDED, CURRENT or a number
    upper: Any
    unit: str | None = None

    @property
    def left_unbounded(self) -> bool:
        return self.lower == UNBOUNDED

    def serialize(self) -> dict:
        out: dict = {self.kind: [self.lower, self.upper]}
        if self.unit is not None:
            out["unit"] = self.unit
        return out


DEFAULT_BOUNDS = WindowBounds("documents", UNBOUNDED, UNBOUNDED)
LEFT_UNBOUNDED_TO_CURRENT = WindowBounds("documents", UNBOUNDED, CURRENT)


def parse_time_unit(v: str) -> str:
    if v not in TIME_UNITS:
        raise MongoError("FailedToParse", f"unknown time unit value: {v}")
    return v


def _constant(elem: Any) -> Any:
    """A bound given as an expression: the server folds it to a constant (else FailedToParse)."""
    v = constant_value(elem)
    if v is MISSING:
        raise MongoError("FailedToParse", "Window bounds expression must be a constant.")
    return v


def _bound(elem: Any, check) -> Any:
    if isinstance(elem, str):
        if elem == UNBOUNDED or elem == CURRENT:
            return elem
        if not elem.startswith("$"):
            raise MongoError("FailedToParse", "Window bounds must be 'unbounded', 'current', or a number.")
    return check(_constant(elem))


def _integral(v) -> bool:
    if not is_number(v):
        return False
    d = as_decimal(v)
    return d.is_finite() and d == d.to_integral_value() and -(2**31) <= d < 2**31


def _check_forward(lower, upper) -> None:
    lo = 0 if lower == CURRENT else lower
    hi = 0 if upper == CURRENT else upper
    if lo != UNBOUNDED and hi != UNBOUNDED and compare(lo, hi) > 0:
        raise MongoError(5339900, f"Lower bound must not exceed upper bound: [{bson_str(lo)}, {bson_str(hi)}]")


def parse_bounds(window: Any, sort_by: list | None) -> WindowBounds:
    """`window` as WindowBounds::parse reads it; `sort_by` is the stage's parsed sortBy
    ([(path, direction)], direction 0 for a $meta sort) or None."""
    if not isinstance(window, dict):
        raise MongoError("FailedToParse", "'window' field must be an object")
    documents = window.get("documents", MISSING)
    rng = window.get("range", MISSING)
    unit = window.get("unit", MISSING)
    if documents is not MISSING and rng is not MISSING:
        raise MongoError("FailedToParse", "Window bounds can specify either 'documents' or 'unit', not both.")
    if rng is MISSING and unit is not MISSING:
        raise MongoError("FailedToParse", "Window bounds can only specify 'unit' with range-based bounds.")
    if rng is MISSING and documents is MISSING:
        if window:
            raise MongoError("FailedToParse", "'window' field can only contain 'documents' as the only argument or "
                                              "'range' with an optional 'unit' field")
        return DEFAULT_BOUNDS

    def unpack(e):
        if not isinstance(e, list) or len(e) != 2:
            raise MongoError("FailedToParse", f"Window bounds must be a 2-element array: "
                                              f"{'documents' if documents is not MISSING else 'range'}: {bson_str(e)}")
        return e

    if documents is not MISSING:
        if len(window) != 1:
            raise MongoError("FailedToParse", "'window' field that specifies documents cannot have other fields")
        lo_e, hi_e = unpack(documents)

        def as_int(v):
            if not _integral(v):
                raise MongoError("FailedToParse", "Numeric document-based bounds must be an integer")
            return int(as_decimal(v))

        lower, upper = _bound(lo_e, as_int), _bound(hi_e, as_int)
        _check_forward(lower, upper)
        bounds = WindowBounds("documents", lower, upper)
        if not (lower == UNBOUNDED and upper == UNBOUNDED) and not sort_by:
            raise MongoError(5339901, "Document-based bounds require a sortBy")
        return bounds
    lo_e, hi_e = unpack(rng)
    if unit is not MISSING:
        if len(window) != 2:
            raise MongoError("FailedToParse", "'window' field that specifies unit cannot have other fields besides "
                                              "'range'")
        if not isinstance(unit, str):
            raise MongoError("FailedToParse", "'unit' must be a string")

        def check(v):
            if not (is_number(v) and as_decimal(v).is_finite() and as_decimal(v) == as_decimal(v).to_integral_value()):
                raise MongoError("FailedToParse", "With 'unit', range-based bounds must be an integer")
            return v

        lower, upper = _bound(lo_e, check), _bound(hi_e, check)
        _check_forward(lower, upper)
        bounds = WindowBounds("range", lower, upper, parse_time_unit(unit))
    else:
        if len(window) != 1:
            raise MongoError("FailedToParse", "'window' field that specifies range cannot have other fields besides "
                                              "'unit'")

        def check(v):
            if not is_number(v):
                raise MongoError("FailedToParse", "Range-based bounds expression must be a number")
            return v

        lower, upper = _bound(lo_e, check), _bound(hi_e, check)
        _check_forward(lower, upper)
        bounds = WindowBounds("range", lower, upper)
    if not sort_by or len(sort_by) != 1:
        raise MongoError(5339902, "Range-based bounds require sortBy a single field")
    if sort_by[0][1] == 0:
        raise MongoError(8947400, "Range-based bounds require a non-expression sortBy")
    if sort_by[0][1] < 0:
        raise MongoError(8947401, "Range-based bounds require an ascending sortBy")
    return bounds


# --- endpoints -------------------------------------------------------------------------


def _type_label(v) -> str:
    return "missing" if v is MISSING else type_name(v)


def endpoints(bounds: WindowBounds, i: int, n: int, keys: list | None) -> tuple[int, int] | None:
    """The window of the document at index `i` of a partition of `n` documents: (first, last)
    indexes, or None when it is empty.  `keys`: the partition's sortBy values (range bounds)."""
    if bounds.kind == "documents":
        lo = None if bounds.lower == UNBOUNDED else (0 if bounds.lower == CURRENT else bounds.lower)
        hi = None if bounds.upper == UNBOUNDED else (0 if bounds.upper == CURRENT else bounds.upper)
        if lo is not None and i + lo > n - 1:
            return None
        if hi is not None and i + hi < 0:
            return None
        first = 0 if lo is None else max(0, i + lo)
        last = n - 1 if hi is None else min(n - 1, i + hi)
        return first, last
    return _range_endpoints(bounds, i, n, keys)


class PartitionKeys(list):
    """A partition's sortBy values (in sort order), with the search a range window can use: when every
    value is null, missing or of the expected type (numbers, or dates with `unit`), those of the
    expected type are one sorted run, searched by bisection instead of the server's linear scans."""

    __slots__ = ("_runs",)

    def run(self, dates: bool):
        """(the run's sort keys, its first index) or None (other types mixed in: scan)."""
        runs = getattr(self, "_runs", None)
        if runs is None:
            runs = self._runs = {}
        if dates not in runs:
            runs[dates] = self._find_run(dates)
        return runs[dates]

    def _find_run(self, dates: bool):
        start = None
        for j, v in enumerate(self):
            ok = isinstance(v, datetime.datetime) if dates else is_number(v)
            if ok:
                if start is None:
                    start = j
            elif v is None or v is MISSING:
                if start is not None:
                    return None
            else:
                return None
        if start is None:
            return None
        return [sort_key(v) for v in self[start:]], start


def _bisected(bounds: WindowBounds, i: int, first_threshold, last_threshold, run) -> tuple[int, int] | None:
    sks, start = run
    end = start + len(sks) - 1
    lower = bounds.lower
    if lower == CURRENT:
        first = i
    elif lower == UNBOUNDED:
        first = start
    else:
        first = start + bisect.bisect_left(sks, sort_key(first_threshold))
        if first > end:
            return None
    upper = bounds.upper
    if upper == CURRENT:
        last = i
    elif upper == UNBOUNDED:
        last = end
    else:
        last = start + bisect.bisect_right(sks, sort_key(last_threshold)) - 1
    if last < first:
        return None
    return first, last


def _range_endpoints(bounds: WindowBounds, i: int, n: int, keys: list) -> tuple[int, int] | None:
    base = keys[i]
    unit = bounds.unit
    if unit is not None:
        if not isinstance(base, datetime.datetime):
            raise MongoError(5429513, f"Invalid range: Expected the sortBy field to be a Date, but it was "
                                      f"{_type_label(base)}")
        expected = lambda v: isinstance(v, datetime.datetime)  # noqa: E731
    else:
        if isinstance(base, datetime.datetime):
            raise MongoError(5429413, "Invalid range: For windows that involve date or time ranges, a unit must be "
                                      "provided.")
        if not is_number(base):
            raise MongoError(5429414, f"Invalid range: Expected the sortBy field to be a number, but it was "
                                      f"{_type_label(base)}")
        expected = is_number

    def threshold(delta):
        if unit is not None:
            ms = date_add(date_millis(base), unit, int(as_decimal(delta)), UTC_ZONE)
            return datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)
        if type(base) is int and type(delta) is int:
            return base + delta  # (exact: the server's Decimal128 sum of two ints)
        return Decimal128(_DEC.add(as_decimal(base), as_decimal(delta)))

    run = keys.run(unit is not None) if isinstance(keys, PartitionKeys) else None
    if run is not None:
        return _bisected(bounds, i, None if bounds.lower in (CURRENT, UNBOUNDED) else threshold(bounds.lower),
                         None if bounds.upper in (CURRENT, UNBOUNDED) else threshold(bounds.upper), run)
    lower = bounds.lower
    if lower == CURRENT:
        first = i
    elif lower == UNBOUNDED:
        first = next((j for j in range(n) if expected(keys[j])), None)
    else:
        t = threshold(lower)
        j = next((j for j in range(n) if compare(keys[j], t) >= 0), None)
        first = j if j is not None and expected(keys[j]) else None
    if first is None:
        return None
    upper = bounds.upper
    if upper == CURRENT:
        last = i
    elif upper == UNBOUNDED:
        start = max(i, first)
        last = n - 1
        for j in range(start, n):
            if not expected(keys[j]):
                last = j - 1
                break
    else:
        t = threshold(upper)
        last = n - 1
        for j in range(first, n):
            if compare(t, keys[j]) < 0:
                if j == first:
                    return None
                last = j - 1
                break
    if last < first:
        return None
    return first, last
