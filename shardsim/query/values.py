"""BSON value semantics: the total order, equality and type names.

MongoDB compares values of *different* types by a fixed "canonical type
order" and values of the same canonical type by their content:

    MinKey < null < numbers < strings < objects < arrays < BinData
           < ObjectId < bool < Date < Timestamp < regex < MaxKey

All numeric types (int32, int64 `Int64`, double, `Decimal128`) form one
canonical type and compare by mathematical value: `1 == 1.0 == Int64(1)`.
NaN sorts below every other number and equals itself.  Strings compare by
their UTF-8 bytes (for Python `str` that is code-point order, the same
thing).  Objects compare element by element (type, then field name, then
value), arrays element by element, a shorter prefix first.  BinData orders by
length, then subtype, then bytes.  `bool` is *not* a number here: `True != 1`.

Facts from the server's `src/mongo/bson/bsontypes.cpp` (canonicalizeBSONType)
and `bsonelement.cpp` (compareElementValues).

The central tool is :func:`sort_key`: it maps a value to a Python tuple whose
ordering is the BSON order and whose equality/hash is BSON equality, so the
same key serves for sorting, for `compare`, and as a dict key (`hashable`) in
the `_id` index, unique indexes, `$addToSet`, `distinct` and `$group`.  It
leans on Python's exact cross-type numeric comparison and hashing (int, float
and `decimal.Decimal` compare exactly and hash equal when equal).

Hand-written because no maintained library implements BSON's cross-type
order (pymongo's `bson` only encodes/decodes; mongomock's comparison is an
approximation, e.g. it has no canonical order for BinData vs ObjectId).
"""

from __future__ import annotations

import datetime
import re
from decimal import Decimal
from typing import Any

from bson import Binary, Code, DBRef, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.datetime_ms import DatetimeMS, _datetime_to_millis

__all__ = [
    "MISSING",
    "dbref_doc",
    "ALLOWED_DOLLAR_FIELDS",
    "compare",
    "sort_key",
    "hashable",
    "type_name",
    "type_number",
    "canonical_rank",
    "is_number",
    "bson_equal",
    "TYPE_ALIASES",
    "regex_flags",
]


class _Missing:
    """The value of a path that does not exist (the server's EOO element)."""

    __slots__ = ()
    _inst = None

    def __new__(cls):
        if cls._inst is None:
            cls._inst = object.__new__(cls)
        return cls._inst

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self):
        return (_Missing, ())


MISSING: Any = _Missing()

# canonical ranks (bsontypes.cpp canonicalizeBSONType)
R_MINKEY, R_UNDEF, R_NULL, R_NUM, R_STR, R_OBJ, R_ARR, R_BIN, R_OID, R_BOOL, R_DATE, R_TS, R_RE, R_DBREF, R_CODE, R_CODEWS, R_MAXKEY = (
    -1, 0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 47, 50, 55, 60, 65, 127,
)

_EPOCH = datetime.datetime(1970, 1, 1)
_FLAG_CHARS = (("i", re.IGNORECASE), ("l", re.LOCALE), ("m", re.MULTILINE), ("s", re.DOTALL), ("u", re.UNICODE), ("x", re.VERBOSE))


def regex_flags(v) -> str:
    """The BSON option string of a `Regex` or compiled pattern (sorted letters)."""
    flags = v.flags
    if isinstance(flags, str):
        return "".join(sorted(flags))
    out = []
    for ch, bit in _FLAG_CHARS:
        if ch == "u" and isinstance(v, re.Pattern):
            continue  # Python sets UNICODE on every str pattern; BSON has no such default
        if flags & bit:
            out.append(ch)
    return "".join(out)


# Field names a FieldPath may hold although they start with '$' (kAllowedDollarPrefixedFields
# in src/mongo/db/pipeline/field_path.cpp): a DBRef's parts, then metadata fields.
ALLOWED_DOLLAR_FIELDS = frozenset(("$id", "$ref", "$db", "$sortKey", "$recordId", "$searchSortValues", "$searchScore"))


def dbref_doc(r: DBRef) -> dict:
    """The embedded document a DBRef encodes: {$ref, $id[, $db], extra fields...}.

    bson decodes such a sub-document as a `bson.DBRef`; on the server it is a plain
    document, so paths (`vendor.$id`) walk into this form."""
    return dict(r.as_doc())


def date_millis(v) -> int:
    if type(v) is datetime.datetime:
        if v.tzinfo is not None:
            v = v.replace(tzinfo=None) - v.utcoffset()
        return _datetime_to_millis(v)
    if isinstance(v, DatetimeMS):
        return int(v)
    return _datetime_to_millis(v)


def _num_key(x):
    if x != x:  # NaN
        return (R_NUM, 0)
    return (R_NUM, 1, x)


def _dec_key(v: Decimal128):
    d = v.to_decimal()
    if d.is_nan():
        return (R_NUM, 0)
    if d == 0:
        return (R_NUM, 1, 0)
    return (R_NUM, 1, d)


def _float_key(x: float):
    if x != x:
        return (R_NUM, 0)
    return (R_NUM, 1, x)


def _dict_key(d: dict):
    return (R_OBJ, tuple((_rank_of(v), k, sort_key(v)) for k, v in d.items()))


def _list_key(a):
    return (R_ARR, tuple([sort_key(v) for v in a]))


def _bin_key(b):
    subtype = getattr(b, "subtype", 0)
    return (R_BIN, len(b), subtype, bytes(b))


def _uuid_key(u):
    b = u.bytes
    return (R_BIN, 16, 4, b)


def _regex_key(r):
    return (R_RE, r.pattern if isinstance(r.pattern, str) else r.pattern.decode(), regex_flags(r))


def _date_key(v):
    return (R_DATE, date_millis(v))


_KEYS: dict[type, Any] = {
    int: lambda x: (R_NUM, 1, x),
    Int64: lambda x: (R_NUM, 1, int(x)),
    float: _float_key,
    Decimal128: _dec_key,
    str: lambda s: (R_STR, s),
    bool: lambda b: (R_BOOL, b),
    type(None): lambda _: (R_NULL,),
    dict: _dict_key,
    list: _list_key,
    tuple: _list_key,
    Binary: _bin_key,
    bytes: _bin_key,
    ObjectId: lambda o: (R_OID, o.binary),
    datetime.datetime: _date_key,
    DatetimeMS: _date_key,
    Timestamp: lambda t: (R_TS, t.time, t.inc),
    Regex: _regex_key,
    re.Pattern: _regex_key,
    MinKey: lambda _: (R_MINKEY,),
    MaxKey: lambda _: (R_MAXKEY,),
    Code: lambda c: (R_CODE, str(c)) if c.scope is None else (R_CODEWS, str(c), _dict_key(c.scope)),
    DBRef: lambda r: (R_OBJ, _dict_key(r.as_doc())[1]),
    _Missing: lambda _: (R_UNDEF,),
}


def sort_key(v) -> tuple:
    """A Python key whose order is the BSON order and whose equality is BSON equality."""
    f = _KEYS.get(type(v))
    if f is not None:
        return f(v)
    return _slow_key(v)


def _slow_key(v):
    import uuid

    if isinstance(v, bool):
        return (R_BOOL, v)
    if isinstance(v, Code):
        return _KEYS[Code](v)
    if isinstance(v, str):
        return (R_STR, str(v))
    if isinstance(v, int):
        return (R_NUM, 1, int(v))
    if isinstance(v, float):
        return _float_key(v)
    if isinstance(v, Decimal):
        return (R_NUM, 0) if v.is_nan() else (R_NUM, 1, v)
    if isinstance(v, dict):
        return _dict_key(v)
    if isinstance(v, (list, tuple)):
        return _list_key(v)
    if isinstance(v, uuid.UUID):
        return _uuid_key(v)
    if isinstance(v, (bytes, bytearray)):
        return _bin_key(v)
    if isinstance(v, datetime.datetime):
        return _date_key(v)
    if isinstance(v, re.Pattern):
        return _regex_key(v)
    raise TypeError(f"not a BSON value: {type(v).__name__}")


def hashable(v) -> tuple:
    """A hashable value equal iff BSON-equal (1 == 1.0 == Int64(1) == Decimal128("1"); True != 1).

    It is the sort key itself: Python hashes equal numbers of different types equally.
    """
    f = _KEYS.get(type(v))
    if f is not None:
        return f(v)
    return _slow_key(v)


def hashables(values: list) -> list:
    """`hashable` of each value (of a list of int or str values without a call per value)."""
    types = set(map(type, values))
    if types == {int}:
        return [(R_NUM, 1, x) for x in values]
    if types == {str}:
        return [(R_STR, s) for s in values]
    return list(map(hashable, values))


def compare(a, b) -> int:
    """-1, 0 or 1 as `a` sorts before, with, or after `b` in BSON order."""
    ka = sort_key(a)
    kb = sort_key(b)
    return -1 if ka < kb else (1 if ka > kb else 0)


def bson_equal(a, b) -> bool:
    ta = type(a)
    if ta is type(b) and (ta is str or ta is int):
        return a == b
    return sort_key(a) == sort_key(b)


_RANKS: dict[type, int] = {
    int: R_NUM, Int64: R_NUM, float: R_NUM, Decimal128: R_NUM, str: R_STR, bool: R_BOOL, type(None): R_NULL,
    dict: R_OBJ, list: R_ARR, tuple: R_ARR, Binary: R_BIN, bytes: R_BIN, ObjectId: R_OID,
    datetime.datetime: R_DATE, DatetimeMS: R_DATE, Timestamp: R_TS, Regex: R_RE, re.Pattern: R_RE,
    MinKey: R_MINKEY, MaxKey: R_MAXKEY, DBRef: R_OBJ, _Missing: R_UNDEF,
}


def _rank_of(v) -> int:
    r = _RANKS.get(type(v))
    if r is not None:
        return r
    if type(v) is Code:
        return R_CODE if v.scope is None else R_CODEWS
    return sort_key(v)[0]


canonical_rank = _rank_of


def is_number(v) -> bool:
    t = type(v)
    if t is int or t is float or t is Int64 or t is Decimal128:
        return True
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# --- $type names and numbers -------------------------------------------------------

TYPE_ALIASES: dict[str, int] = {
    "double": 1, "string": 2, "object": 3, "array": 4, "binData": 5, "undefined": 6,
    "objectId": 7, "bool": 8, "date": 9, "null": 10, "regex": 11, "dbPointer": 12,
    "javascript": 13, "symbol": 14, "javascriptWithScope": 15, "int": 16,
    "timestamp": 17, "long": 18, "decimal": 19, "minKey": -1, "maxKey": 127,
}
_NUMBER_TO_NAME = {v: k for k, v in TYPE_ALIASES.items()}


def type_number(v) -> int:
    """The BSON type byte of a Python value as pymongo would encode it."""
    t = type(v)
    if t is bool:
        return 8
    if t is int:
        return 16 if -(2**31) <= v < 2**31 else 18
    if t is Int64:
        return 18
    if t is float:
        return 1
    if t is str:
        return 2
    if t is dict:
        return 3
    if t is list or t is tuple:
        return 4
    if v is None:
        return 10
    if t is Decimal128:
        return 19
    if t is ObjectId:
        return 7
    if isinstance(v, (datetime.datetime, DatetimeMS)):
        return 9
    if t is Timestamp:
        return 17
    if isinstance(v, (Regex, re.Pattern)):
        return 11
    if t is MinKey:
        return -1
    if t is MaxKey:
        return 127
    if isinstance(v, Code):
        return 13 if v.scope is None else 15
    if isinstance(v, DBRef):
        return 3
    if isinstance(v, (bytes, Binary)):
        return 5
    if isinstance(v, str):
        return 2
    if isinstance(v, int):
        return 16 if -(2**31) <= v < 2**31 else 18
    if isinstance(v, dict):
        return 3
    if v is MISSING:
        return 0
    import uuid

    if isinstance(v, uuid.UUID):
        return 5
    raise TypeError(f"not a BSON value: {type(v).__name__}")


def type_name(v) -> str:
    """The `$type` alias of a value: "int", "long", "double", "string", ..."""
    if v is MISSING:
        return "missing"
    return _NUMBER_TO_NAME[type_number(v)]


def describe_type(v) -> str:
    """A value's type for an error message: its `$type` alias, else its Python class name."""
    try:
        return type_name(v)
    except TypeError:
        return type(v).__name__
