"""Index bounds: the intervals of index keys a predicate can match (the server's IndexBoundsBuilder).

An *interval* is `[start, end]` (either end open) in BSON order; an ordered
interval list (OIL) is the union of disjoint intervals for one index field.
`{a: 5}` gives `[5, 5]`; `{a: {$gt: 5}}` gives `(5, inf.0]` — comparisons are
*type-bracketed*, so a numeric bound stops at infinity and a string bound at
the first object (`("a", {})`); `{a: null}` gives `[undefined, undefined]`
and `[null, null]` (a missing field and an empty array are indexed as those);
`{a: [1, 2]}` gives `[1, 1]` and `[[ 1, 2 ], [ 1, 2 ]]` (an array is found
through its first element, or whole when nested in another array); a prefix
regex `/^ab/` gives `["ab", "ac")` plus the regex itself.  Bounds are a
*superset* of the keys of the matching documents: the fetched documents are
always filtered again, so a loose bound costs time, never a wrong result.
Each builder also says whether its bounds are *exact* (a key in bounds means
the predicate holds: no filter needed, and a COUNT may count keys).

`explain` prints intervals as the server does (Interval::toString):
`"[1, 1]"`, `"(5, inf.0]"`, `"[MinKey, MaxKey]"`, in index order (reversed for
a descending field or a backward scan).

Source: src/mongo/db/query/index_bounds_builder.cpp, interval.cpp.
Hand-written: these are the server's planning rules.
"""

from __future__ import annotations

import re
from typing import Any

from bson import Binary, Decimal128, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.datetime_ms import DatetimeMS

from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.index_keys import UNDEFINED, key_hash
from mongosim.shardsim.query.values import (
    R_BIN,
    R_BOOL,
    R_DATE,
    R_MAXKEY,
    R_MINKEY,
    R_NULL,
    R_NUM,
    R_OBJ,
    R_OID,
    R_STR,
    R_TS,
    TYPE_ALIASES,
    canonical_rank,
    regex_flags,
)

__all__ = ["Interval", "point", "ALL", "union", "intersect", "complement", "predicate_bounds",
           "oil_strings", "contains_null", "oil_within", "is_point_oil", "is_null_negation"]

MIN_KEY, MAX_KEY = MinKey(), MaxKey()
INF, NINF, NAN = float("inf"), float("-inf"), float("nan")


class Interval:
    """`[start, end]` (or open at either end) over BSON-ordered values; `lo`/`hi` are their keys."""

    __slots__ = ("start", "end", "start_incl", "end_incl", "lo", "hi")

    def __init__(self, start, end, start_incl: bool = True, end_incl: bool = True) -> None:
        self.start, self.end = start, end
        self.start_incl, self.end_incl = start_incl, end_incl
        self.lo, self.hi = key_hash(start), key_hash(end)

    @property
    def is_point(self) -> bool:
        return self.start_incl and self.end_incl and self.lo == self.hi

    @property
    def empty(self) -> bool:
        return self.lo > self.hi or (self.lo == self.hi and not (self.start_incl and self.end_incl))

    def text(self, reverse: bool = False) -> str:
        if reverse:
            return (("[" if self.end_incl else "(") + _show(self.end) + ", " + _show(self.start)
                    + ("]" if self.start_incl else ")"))
        return (("[" if self.start_incl else "(") + _show(self.start) + ", " + _show(self.end)
                + ("]" if self.end_incl else ")"))

    def __repr__(self) -> str:
        return self.text()


def _show(v) -> str:
    if v is UNDEFINED:
        return "undefined"
    if type(v) is DatetimeMS:
        return f"new Date({int(v)})"
    return bson_str(v)


def point(v) -> Interval:
    return Interval(v, v)


def ALL() -> list[Interval]:
    return [Interval(MIN_KEY, MAX_KEY)]


def is_all(oil: list[Interval]) -> bool:
    return len(oil) == 1 and oil[0].lo == (R_MINKEY,) and oil[0].hi == (R_MAXKEY,) and oil[0].start_incl \
        and oil[0].end_incl


def is_point_oil(oil: list[Interval]) -> bool:
    return bool(oil) and all(iv.is_point for iv in oil)


def union(intervals: list[Interval]) -> list[Interval]:
    """Sorted, merged (IndexBoundsBuilder::unionize)."""
    ivs = sorted((iv for iv in intervals if not iv.empty), key=lambda iv: (iv.lo, not iv.start_incl))
    out: list[Interval] = []
    for iv in ivs:
        if out:
            last = out[-1]
            if iv.lo < last.hi or (iv.lo == last.hi and (iv.start_incl or last.end_incl)):
                if iv.hi > last.hi or (iv.hi == last.hi and iv.end_incl and not last.end_incl):
                    out[-1] = Interval(last.start, iv.end, last.start_incl, iv.end_incl)
                continue
        out.append(iv)
    return out


def intersect(a: list[Interval], b: list[Interval]) -> list[Interval]:
    out = []
    for x in a:
        for y in b:
            if x.lo > y.lo or (x.lo == y.lo and not x.start_incl):
                s, s_incl, slo = x.start, x.start_incl, x.lo
            else:
                s, s_incl, slo = y.start, y.start_incl, y.lo
            if x.hi < y.hi or (x.hi == y.hi and not x.end_incl):
                e, e_incl = x.end, x.end_incl
            else:
                e, e_incl = y.end, y.end_incl
            iv = Interval(s, e, s_incl, e_incl)
            if not iv.empty:
                out.append(iv)
    return union(out)


def complement(oil: list[Interval]) -> list[Interval]:
    """[MinKey, MaxKey] minus `oil`."""
    out = []
    start, start_incl = MIN_KEY, True
    for iv in union(oil):
        gap = Interval(start, iv.start, start_incl, not iv.start_incl)
        if not gap.empty:
            out.append(gap)
        start, start_incl = iv.end, not iv.end_incl
    tail = Interval(start, MAX_KEY, start_incl, True)
    if not tail.empty:
        out.append(tail)
    return out


def contains_null(oil: list[Interval]) -> bool:
    """Whether the key of a missing field (null) lies in the bounds."""
    k = (R_NULL,)
    for iv in oil:
        if (iv.lo < k or (iv.lo == k and iv.start_incl)) and (k < iv.hi or (k == iv.hi and iv.end_incl)):
            return True
    return False


def oil_within(inner: list[Interval], outer: list[Interval]) -> bool:
    """Every interval of `inner` lies inside one of `outer`."""
    for iv in inner:
        ok = False
        for ov in outer:
            lo_ok = ov.lo < iv.lo or (ov.lo == iv.lo and (ov.start_incl or not iv.start_incl))
            hi_ok = iv.hi < ov.hi or (iv.hi == ov.hi and (ov.end_incl or not iv.end_incl))
            if lo_ok and hi_ok:
                ok = True
                break
        if not ok:
            return False
    return True


def oil_strings(oil: list[Interval], reverse: bool = False) -> list[str]:
    if reverse:
        return [iv.text(True) for iv in reversed(oil)]
    return [iv.text() for iv in oil]


# -- the type brackets: the smallest and largest value of each canonical type ---------------------
_BRACKETS: dict[int, tuple[Any, bool, Any, bool]] = {
    R_NUM: (NAN, True, INF, True),
    R_STR: ("", True, {}, False),
    R_OBJ: ({}, True, [], False),
    R_BIN: (Binary(b"", 0), True, ObjectId("0" * 24), False),
    R_OID: (ObjectId("0" * 24), True, ObjectId("f" * 24), True),
    R_BOOL: (False, True, True, True),
    R_DATE: (DatetimeMS(-(2**63)), True, DatetimeMS(2**63 - 1), True),
    R_TS: (Timestamp(0, 0), True, Timestamp(2**32 - 1, 2**32 - 1), True),
    R_NULL: (None, True, None, True),
}
_TYPE_RANKS = {
    "double": R_NUM, "int": R_NUM, "long": R_NUM, "decimal": R_NUM, "number": R_NUM, "string": R_STR,
    "object": R_OBJ, "binData": R_BIN, "objectId": R_OID, "bool": R_BOOL, "date": R_DATE, "timestamp": R_TS,
    "null": R_NULL,
}
_EXACT_TYPES = {"number", "string", "object", "binData", "objectId", "bool", "date", "timestamp"}


def _bracket(rank: int) -> list[Interval]:
    lo, lo_incl, hi, hi_incl = _BRACKETS[rank]
    return [Interval(lo, hi, lo_incl, hi_incl)]


def _is_nan(v) -> bool:
    if type(v) is float:
        return v != v
    if type(v) is Decimal128:
        return v.to_decimal().is_nan()
    return False


def _exact_value(v) -> bool:
    """Indexability::isExactBoundsGenerating: a key equal to it means the value equals it."""
    r = canonical_rank(v)
    return r not in (R_NULL, R_MINKEY, R_MAXKEY) and type(v) is not list and r != 0


def _null_bounds() -> list[Interval]:
    return [point(UNDEFINED), point(None)]


# what a `$not` may negate and still bound an index: a comparison or an `$in` of plain values (not a regex,
# `$mod`, `$type`, `$elemMatch`, ...: planner_ixselect.cpp's negation rules; arrays and documents as values
# compare as wholes, which a complement of their bounds would not answer)
NEGATABLE = frozenset({"$eq", "$lt", "$lte", "$gt", "$gte", "$in"})


def is_null_negation(lf) -> bool:
    """`{$ne: null}`, or `$nin` with null (a predicate leaf: `op`, `value`): no index multikey on the
    field's path may bound it (planner_ixselect.cpp notEqualsNullCanUseIndex).  Through arrays a
    document matching it may have the key undefined (`{a: []}`: an empty array) or null (`{a: [null]}`
    for "a.b", or a path running into an empty array), which the bounds [MinKey, undefined),
    (null, MaxKey] leave out; a sparse or wildcard index may have no key for it at all.  (Under
    `$elemMatch` the server has exceptions; the leaves mongosim bounds there are the $elemMatch's own.)"""
    op, value = lf.op, lf.value
    if op == "$not" and isinstance(value, dict) and len(value) == 1:  # {$not: {$eq: null}} and its kin
        op, value = next(iter(value.items()))
        return (op in ("$eq", "$gte", "$lte") and value is None) or \
            (op == "$in" and isinstance(value, list) and None in value)
    return (op == "$ne" and value is None) or (op == "$nin" and isinstance(value, list) and None in value)


def _between_undefined_and_null(iv: Interval) -> bool:
    """The open interval (undefined, null): no BSON value lies there (the complement of a null
    equality's [undefined, undefined], [null, null] leaves it, the server's bounds do not show it)."""
    return iv.start is UNDEFINED and iv.end is None and not iv.start_incl and not iv.end_incl


def _eq_bounds(v) -> tuple[list[Interval], bool] | None:
    if v is None:
        return _null_bounds(), False
    if type(v) is list:
        first = point(v[0]) if v else point(UNDEFINED)
        return union([point(v), first]), False
    if isinstance(v, (Regex, re.Pattern)):
        return [point(v)], True
    if isinstance(v, dict) or isinstance(v, (MinKey, MaxKey)):
        return [point(v)], isinstance(v, dict)
    return [point(v)], True


def _regex_prefix(pattern: str, flags: str) -> tuple[str, bool]:
    """IndexBoundsBuilder::simpleRegex: the literal prefix every match starts with ('' if none),
    and whether the regex is exactly "starts with that prefix"."""
    if pattern.startswith("\\A"):
        multiline_ok, rest = True, pattern[2:]
    elif pattern.startswith("^"):
        multiline_ok, rest = False, pattern[1:]
    else:
        return "", False
    if "|" in rest:
        return "", False
    extended = False
    for f in flags:
        if f == "m":
            if not multiline_ok:
                return "", False
        elif f == "s":
            continue
        elif f == "x":
            extended = True
        else:
            return "", False
    out = []
    i = 0
    while i < len(rest):
        c = rest[i]
        i += 1
        if c in "*?":
            return "".join(out[:-1]), False
        if c == "\\":
            if i >= len(rest):
                return "".join(out), False
            c = rest[i]
            i += 1
            if c == "Q":
                end = rest.find("\\E", i)
                quoted = rest[i:] if end < 0 else rest[i:end]
                out.append(quoted)
                i = len(rest) if end < 0 else end + 2
            elif c.isalnum():
                return "".join(out), False
            else:
                out.append(c)
        elif c in "^$.[()+{":
            return "".join(out), False
        elif extended and c == "#":
            return "".join(out), False
        elif extended and c.isspace():
            continue
        else:
            out.append(c)
    return "".join(out), True


def _regex_bounds(pattern: str, flags: str, rx) -> list[Interval]:
    prefix, _exact = _regex_prefix(pattern, flags)
    if prefix:
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        strings = Interval(prefix, end, True, False)
    else:
        strings = Interval("", {}, True, False)
    return union([strings, point(rx)])


def _cmp_bounds(op: str, v) -> tuple[list[Interval], bool] | None:
    t = type(v)
    if t is list or isinstance(v, (Regex, re.Pattern)):
        return None
    if v is None:
        return (_null_bounds(), False) if op in ("$gte", "$lte") else None
    rank = canonical_rank(v)
    if rank == R_MINKEY:
        return (ALL(), True) if op in ("$gt", "$gte") else None
    if rank == R_MAXKEY:
        return (ALL(), True) if op in ("$lt", "$lte") else None
    if _is_nan(v):
        return ([point(NAN)], True) if op in ("$gte", "$lte") else ([], True)
    if rank not in _BRACKETS or rank == R_NULL:
        return None
    lo, lo_incl, hi, hi_incl = _BRACKETS[rank]
    if rank == R_NUM:
        lo, lo_incl = NINF, True
    if op == "$gt":
        iv = Interval(v, hi, False, hi_incl)
    elif op == "$gte":
        iv = Interval(v, hi, True, hi_incl)
    elif op == "$lt":
        iv = Interval(lo, v, lo_incl, False)
    else:
        iv = Interval(lo, v, lo_incl, True)
    return ([] if iv.empty else [iv]), _exact_value(v)


def type_names(arg) -> list:
    """A `$type` operand's type names (codes read as their aliases; None for an unknown one)."""
    out = []
    for n in (arg if isinstance(arg, list) else [arg]):
        if isinstance(n, (int, float)) and not isinstance(n, bool):
            n = next((k for k, code in TYPE_ALIASES.items() if code == n), None)
        out.append(n)
    return out


_NUMBER_TYPES = frozenset({"int", "long", "double", "decimal"})


def type_tightness(arg) -> str:
    """computeTightnessForTypeSet: "exact" when the type brackets are the matches, "keys" when the keys
    in them decide (some but not all number types: INEXACT_COVERED), "documents" when only the documents
    do (an array, null or undefined, or a type mongosim's brackets do not tell apart)."""
    names = type_names(arg)
    if any(n == "array" or n not in _TYPE_RANKS or n in ("null", "undefined") for n in names):
        return "documents"
    numbers = _NUMBER_TYPES & set(names)
    if numbers and "number" not in names and numbers != _NUMBER_TYPES:
        return "keys"
    if all(n in _EXACT_TYPES or n in _NUMBER_TYPES for n in names):
        return "exact"
    return "documents"


def _type_bounds(arg) -> tuple[list[Interval], bool]:
    out = []
    for n in type_names(arg):
        if n == "array" or n not in _TYPE_RANKS:
            return ALL(), False
        out.extend(_bracket(_TYPE_RANKS[n]))
    return union(out), type_tightness(arg) == "exact"


_INTERNAL_EXPR = {"$_internalExprEq": (None, None), "$_internalExprGt": (None, MAX_KEY),
                  "$_internalExprGte": (None, MAX_KEY), "$_internalExprLt": (MIN_KEY, None),
                  "$_internalExprLte": (MIN_KEY, None)}  # op -> the interval's fixed ends (None: the value)


def predicate_bounds(op: str, value, *, hashed=None) -> tuple[list[Interval], bool] | None:
    """(bounds, exact) of one predicate `{path: {op: value}}` on an index field, or None when an
    index cannot serve it.  `hashed` (the hash function) for a hashed field: equalities only."""
    if hashed is not None:
        return _hashed_bounds(op, value, hashed)
    if op == "$eq":
        return _eq_bounds(value)
    if op == "$in":
        if not isinstance(value, list):
            return None
        ivs: list[Interval] = []
        exact = True
        for v in value:
            if isinstance(v, (Regex, re.Pattern)):
                ivs.extend(_regex_bounds(v.pattern if isinstance(v.pattern, str) else v.pattern.decode(),
                                         regex_flags(v), v))
                exact = False
                continue
            b = _eq_bounds(v)
            ivs.extend(b[0])
            exact = exact and b[1]
        return union(ivs), exact
    if op in ("$gt", "$gte", "$lt", "$lte"):
        return _cmp_bounds(op, value)
    if op in _INTERNAL_EXPR:  # (the whole BSON order, no type bracket; an array matches: not exact)
        if isinstance(value, list):
            return None
        low, high = _INTERNAL_EXPR[op]
        iv = Interval(value if low is None else low, value if high is None else high,
                      op != "$_internalExprGt", op != "$_internalExprLt")
        return ([] if iv.empty else [iv]), False
    if op == "$regex":
        pattern, flags, rx = value
        return _regex_bounds(pattern, flags, rx), False
    if op == "$exists":
        return (ALL(), False) if value else ([point(None)], False)
    if op == "$type":
        return _type_bounds(value)
    if op == "$mod":
        return _bracket(R_NUM), False
    if op in ("$ne", "$nin"):
        inner = predicate_bounds("$eq" if op == "$ne" else "$in", value)
        if inner is None or (op == "$nin" and any(isinstance(v, (Regex, re.Pattern, list)) for v in value)) \
                or (op == "$ne" and isinstance(value, (list, Regex, re.Pattern))):
            return None
        # (the planner keeps a null negation off an index multikey on its path: query_planner
        # not_equals_null_can_use_index)
        return [iv for iv in complement(inner[0]) if not _between_undefined_and_null(iv)], False
    if op == "$not":  # a NOT is indexed by its child's bounds, complemented (IndexBoundsBuilder::translate)
        if not (isinstance(value, dict) and len(value) == 1):
            return None
        inner_op, inner_v = next(iter(value.items()))
        if inner_op not in NEGATABLE:
            return None
        operands = inner_v if inner_op == "$in" else [inner_v]
        if not isinstance(operands, list) or any(isinstance(v, (dict, list, Regex, re.Pattern)) for v in operands):
            return None
        inner = predicate_bounds(inner_op, inner_v)
        if inner is None:
            return None
        return [iv for iv in complement(inner[0]) if not _between_undefined_and_null(iv)], False
    if op == "$all":
        if isinstance(value, list) and value and not (isinstance(value[0], dict) and "$elemMatch" in value[0]):
            first = _eq_bounds(value[0]) if not isinstance(value[0], (Regex, re.Pattern)) else None
            return (first[0], False) if first else None
        return None
    if op == "$elemMatch":  # value form: every operator holds for one element, so their bounds intersect
        acc = None
        for sub_op, sub_v in value.items():
            b = predicate_bounds(sub_op, sub_v)
            if b is None:
                continue
            acc = b[0] if acc is None else intersect(acc, b[0])
        return (acc, False) if acc is not None else None
    return None


def _hashed_bounds(op: str, value, hash64) -> tuple[list[Interval], bool] | None:
    def eq(v):
        if isinstance(v, (list, Regex, re.Pattern)):
            return None
        if v is None:
            return [point(hash64(None))]  # (a missing field hashes as null; undefined never occurs)
        return [point(hash64(v))]

    if op == "$eq":
        b = eq(value)
        return (b, False) if b is not None else None
    if op == "$in" and isinstance(value, list):
        ivs = []
        for v in value:
            b = eq(v)
            if b is None:
                return None
            ivs.extend(b)
        return union(ivs), False
    return None

