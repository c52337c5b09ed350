"""Test helpers: an independent BSON comparator, exact equality, and hypothesis strategies.

The comparator follows the server's BSON order (bsonelement.cpp compareElementValues and
canonicalizeBSONType) directly on Python values; it shares no code with oplog.keystring.
"""

from __future__ import annotations

import datetime
import math
import re
from fractions import Fraction
from typing import Any

from bson.binary import Binary
from bson.code import Code
from bson.datetime_ms import DatetimeMS
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp
from hypothesis import strategies as st

from mongosim.oplog._dec128 import from_parts
from mongosim.oplog.keystring import UNDEFINED, DBPointer, Symbol

_EPOCH = datetime.datetime(1970, 1, 1)


# --- the comparator ----------------------------------------------------------------------


def canonical_type(v: Any) -> int:
    if isinstance(v, MinKey):
        return -1
    if v is UNDEFINED:
        return 0
    if v is None:
        return 5
    if isinstance(v, bool):
        return 40
    if isinstance(v, (int, float, Decimal128)):
        return 10
    if isinstance(v, Code):
        return 65 if v.scope is not None else 60
    if isinstance(v, str):
        return 15
    if isinstance(v, dict):
        return 20
    if isinstance(v, DBPointer):
        return 55
    if isinstance(v, list):
        return 25
    if isinstance(v, bytes):
        return 30
    if isinstance(v, ObjectId):
        return 35
    if isinstance(v, (datetime.datetime, DatetimeMS)):
        return 45
    if isinstance(v, Timestamp):
        return 47
    if isinstance(v, Regex):
        return 50
    if isinstance(v, MaxKey):
        return 127
    raise TypeError(type(v))


def _sign(x: Any) -> int:
    return (x > 0) - (x < 0)


def _number(v: Any) -> tuple[int, Fraction]:
    """(class, value): class 0 NaN, 1 -inf, 2 finite, 3 +inf."""
    if isinstance(v, Decimal128):
        d = v.to_decimal()
        if d.is_nan():
            return 0, Fraction(0)
        if d.is_infinite():
            return (1 if d < 0 else 3), Fraction(0)
        return 2, Fraction(d)
    if isinstance(v, float):
        if math.isnan(v):
            return 0, Fraction(0)
        if math.isinf(v):
            return (1 if v < 0 else 3), Fraction(0)
        return 2, Fraction(v)
    return 2, Fraction(int(v))


def _ms(v: Any) -> int:
    if isinstance(v, DatetimeMS):
        return int(v)
    return (v - _EPOCH) // datetime.timedelta(milliseconds=1)


def _flags(r: Regex) -> str:
    return "".join(c for c, bit in zip("ilmsux", (re.I, re.L, re.M, re.S, re.U, re.X)) if r.flags & bit)


def compare(a: Any, b: Any) -> int:
    """-1, 0 or 1: BSON order of two values."""
    ta, tb = canonical_type(a), canonical_type(b)
    if ta != tb:
        return _sign(ta - tb)
    if ta == 10:
        return _sign_tuple(_number(a), _number(b))
    if ta in (15, 60):
        return _sign_tuple(str(a).encode(), str(b).encode())
    if ta == 65:
        c = _sign_tuple(str(a).encode(), str(b).encode())
        return c or compare_documents(a.scope, b.scope)
    if ta == 20:
        return compare_documents(a, b)
    if ta == 25:
        for x, y in zip(a, b):
            c = compare(x, y)
            if c:
                return c
        return _sign(len(a) - len(b))
    if ta == 30:
        sa = a.subtype if isinstance(a, Binary) else 0
        sb = b.subtype if isinstance(b, Binary) else 0
        return _sign_tuple((len(a), sa, bytes(a)), (len(b), sb, bytes(b)))
    if ta == 35:
        return _sign_tuple(a.binary, b.binary)
    if ta == 40:
        return _sign(int(a) - int(b))
    if ta == 45:
        return _sign(_ms(a) - _ms(b))
    if ta == 47:
        return _sign_tuple((a.time, a.inc), (b.time, b.inc))
    if ta == 50:
        return _sign_tuple((a.pattern.encode(), _flags(a).encode()), (b.pattern.encode(), _flags(b).encode()))
    if ta == 55:
        na, nb = a.namespace.encode(), b.namespace.encode()
        return _sign_tuple((len(na), na, a.id.binary), (len(nb), nb, b.id.binary))
    return 0  # MinKey, MaxKey, null, undefined


def _sign_tuple(x: Any, y: Any) -> int:
    return (x > y) - (x < y)


def compare_documents(a: dict, b: dict) -> int:
    """Element by element: canonical type, then field name, then value; shorter first."""
    for (ka, va), (kb, vb) in zip(a.items(), b.items()):
        c = _sign(canonical_type(va) - canonical_type(vb))
        if c:
            return c
        c = _sign_tuple(ka.encode(), kb.encode())
        if c:
            return c
        c = compare(va, vb)
        if c:
            return c
    return _sign(len(a) - len(b))


def compare_sequences(a: list, b: list) -> int:
    """Keys: value by value; a key that ends first sorts first."""
    for x, y in zip(a, b):
        c = compare(x, y)
        if c:
            return c
    return _sign(len(a) - len(b))


# --- exact equality (types included) ------------------------------------------------------


def same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if math.isnan(a):
            return math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if isinstance(a, Decimal128):
        if a.to_decimal().is_nan():
            return b.to_decimal().is_nan()
        return a.bid == b.bid
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, Binary):
        return a.subtype == b.subtype and bytes(a) == bytes(b)
    if isinstance(a, Code):
        return str(a) == str(b) and (a.scope is None) == (b.scope is None) and (a.scope is None or same(a.scope, b.scope))
    if isinstance(a, DatetimeMS):
        return int(a) == int(b)
    if isinstance(a, Regex):
        return a.pattern == b.pattern and a.flags == b.flags
    if isinstance(a, (MinKey, MaxKey)):
        return True
    return a == b


# --- strategies --------------------------------------------------------------------------

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
names = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=6)
no_nul_text = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=8)

# Values near each other on the number line, in every numeric type.
_BASES = [0, 1, -1, 2, 127, 128, 255, 256, 2**31 - 1, 2**31, 2**53, 2**53 + 1, 2**63 - 1, -(2**63)]


decimal_parts = st.builds(
    from_parts,
    st.integers(0, 1),
    st.one_of(st.integers(0, 10**34 - 1), st.integers(0, 10**17), st.integers(0, 999)),
    st.one_of(st.integers(0, 12287), st.integers(6176 - 40, 6176 + 20)),
)
decimal_strings = st.sampled_from(
    [
        "0", "-0", "0.0", "1", "1.0", "1.00", "-1", "0.1", "0.5", "0.50", "1.5", "2.5", "-2.5",
        "3.141592653589793238462643383279502", "1E+400", "-1E+400", "1E-400", "9.999E-309",
        "9223372036854775807", "9223372036854775808", "-9223372036854775808", "9007199254740993",
        "1.797693134862315708145274237317044E+308", "1.797693134862315708145274237317043E+308",
        "2.225073858507201E-308", "4.940656458412465441765687928682213E-324", "1E-6176",
        "-9.999999999999999999999999999999999E+6144", "NaN", "Infinity", "-Infinity",
    ]
).map(Decimal128)  # fmt: skip
decimals = st.one_of(decimal_parts, decimal_strings)


def _numbers_around(base: int) -> st.SearchStrategy:
    deltas = st.sampled_from([0, 1, -1])
    def build(delta: int, kind: int) -> Any:
        n = base + delta
        if kind == 0 and -(2**31) <= n < 2**31:
            return n
        if kind <= 1 and -(2**63) <= n < 2**63:
            return Int64(n)
        if kind == 2:
            return float(n)
        return Decimal128(str(n))
    return st.builds(build, deltas, st.integers(0, 3))


numbers = st.one_of(
    INT32,
    INT64.map(Int64),
    st.floats(),
    decimals,
    st.sampled_from(_BASES).flatmap(_numbers_around),
    st.floats(min_value=-1e20, max_value=1e20).map(lambda f: Decimal128(repr(f))),
)

datetimes = st.integers(-(2**62), 2**62).map(
    lambda ms: _EPOCH + datetime.timedelta(milliseconds=ms)
    if -62135596800000 <= ms <= 253402300799999
    else DatetimeMS(ms)
)
binaries = st.one_of(
    st.binary(max_size=20),
    st.builds(Binary, st.binary(max_size=20), st.sampled_from([1, 2, 3, 4, 5, 6, 7, 8, 0x80])),
    st.binary(min_size=250, max_size=300),
)
regexes = st.builds(
    lambda p, f: Regex(p, "".join(sorted(set(f), key="ilmsux".index))),
    no_nul_text,
    st.text(st.sampled_from("ilmsux"), max_size=3),
)

leaves = st.one_of(
    st.just(MinKey()),
    st.just(MaxKey()),
    st.none(),
    st.just(UNDEFINED),
    st.booleans(),
    numbers,
    st.text(max_size=8),
    st.text(max_size=4).map(Symbol),
    st.binary(min_size=12, max_size=12).map(ObjectId),
    datetimes,
    st.builds(Timestamp, st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1)),
    binaries,
    regexes,
    st.builds(Code, st.text(max_size=6)),
    st.builds(DBPointer, st.text(max_size=6), st.binary(min_size=12, max_size=12).map(ObjectId)),
)


def _containers(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(names, children, max_size=4),
        st.builds(Code, st.text(max_size=4), st.dictionaries(names, children, max_size=2)),
    )


values = st.recursive(leaves, _containers, max_leaves=12)
documents = st.dictionaries(names, values, max_size=4)

# documentKey-like values: what real shard keys and _ids hold.
key_leaves = st.one_of(
    INT32, INT64.map(Int64), st.floats(allow_nan=False), st.text(max_size=10),
    st.binary(min_size=12, max_size=12).map(ObjectId), decimals, st.booleans(), st.none(),
    datetimes, st.builds(Binary, st.binary(min_size=16, max_size=16), st.just(4)),
)  # fmt: skip
document_keys = st.dictionaries(
    names, st.recursive(key_leaves, lambda c: st.lists(c, max_size=3) | st.dictionaries(names, c, max_size=3), max_leaves=5),
    min_size=1, max_size=3,
)  # fmt: skip
