"""The server's `toString()` rendering of BSON values, used inside error messages.

`{ a: 1, b: "x" }`, `[ 1, 2 ]`, `ObjectId('…')`, `new Date(0)`,
`Timestamp(1, 2)`, `2.0`, `NumberDecimal("1")` — error messages quote
documents this way (e.g. `Cannot create field 'b' in element {a: 1}`), so
clients and tests comparing messages see the server's spelling.  Also
`query_error`, which names codes the shared table does not list yet.

Hand-written: the format is the server's (src/mongo/bson/bsonelement.cpp
toString, util/str.h appendDoubleNice); pymongo's `json_util` renders
Extended JSON instead.
"""

from __future__ import annotations

import datetime
import re

from bson import Binary, Code, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp

from mongosim.shardsim.query.values import MISSING, date_millis, regex_flags

__all__ = ["bson_str", "element_str", "value_str"]


def _double(x: float) -> str:
    """StringBuilder::appendDoubleNice: "%.16g", plus ".0" when that has no '.', 'E' or 'N'."""
    s = "%.16g" % x
    if "." not in s and "E" not in s and "N" not in s:
        s += ".0"
    return s


def value_str(v) -> str:
    """Value::toString: as bson_str, except that a double is streamed as std::ostream prints it
    (six significant digits, "%g": 1.5, 1e+300, inf, nan)."""
    return f"{v:g}" if type(v) is float else bson_str(v)


def bson_str(v) -> str:
    t = type(v)
    if t is bool:
        return "true" if v else "false"
    if t is int or t is Int64:
        return str(int(v))
    if t is float:
        return _double(v)
    if t is str:
        return '"' + v + '"'
    if v is None:
        return "null"
    if v is MISSING:
        return "EOO"
    if isinstance(v, dict):
        if not v:
            return "{}"
        return "{ " + ", ".join(f"{k}: {bson_str(x)}" for k, x in v.items()) + " }"
    if isinstance(v, (list, tuple)):
        if not v:
            return "[]"
        return "[ " + ", ".join(bson_str(x) for x in v) + " ]"
    if t is ObjectId:
        return f"ObjectId('{v}')"
    if t is Decimal128:
        return f'NumberDecimal("{v}")'
    if isinstance(v, datetime.datetime):
        return f"new Date({date_millis(v)})"
    if t is Timestamp:
        return f"Timestamp({v.time}, {v.inc})"
    if isinstance(v, (Regex, re.Pattern)):
        return f"/{v.pattern}/{regex_flags(v)}"
    if isinstance(v, Code):
        return str(v)
    if t is MinKey:
        return "MinKey"
    if t is MaxKey:
        return "MaxKey"
    if isinstance(v, (bytes, Binary)):
        sub = getattr(v, "subtype", 0)
        return f"BinData({sub}, {bytes(v).hex().upper()})"
    return repr(v)


def element_str(name: str, v) -> str:
    """`name: value` as BSONElement::toString() prints an element."""
    return f"{name}: {bson_str(v)}"


# codes the shared table (oplog/error_codes.py) does not list yet
_EXTRA_CODES = {
    "NotSingleValueField": 54,
    "EmptyFieldName": 56,
    "InvalidPipelineOperator": 168,
    "ConversionFailure": 241,
    "BadValue": 2,
}


def query_error(name_or_code, errmsg: str, **extra):
    """A MongoError with the right codeName even for codes missing from the shared table."""
    from mongosim.oplog.errors import MongoError
    from mongosim.oplog.error_codes import CODES

    if isinstance(name_or_code, str) and name_or_code not in CODES:
        err = MongoError(_EXTRA_CODES[name_or_code], errmsg, **extra)
        err.code_name = name_or_code
        err.args = (f"{name_or_code} ({err.code}): {errmsg}",)
        return err
    return MongoError(name_or_code, errmsg, **extra)
