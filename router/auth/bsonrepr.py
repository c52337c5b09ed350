"""BSONObj::toString(), the rendering the server puts in Unauthorized messages.

``not authorized on test to execute command { find: "c", filter: {}, lsid: {
id: UUID("...") }, $db: "test" }``: field names bare, strings in double
quotes without escaping (long ones cut at 150 bytes with ``..."``), doubles
always with a fraction (``1.0``), 64-bit integers as plain numbers, ``{}`` /
``[]`` when empty, ``UUID("...")`` for binary subtype 4, ``BinData(t,
HEX)`` otherwise, ``ObjectId('...')``, ``new Date(ms)``, ``Timestamp(s,
i)``.
"""

from __future__ import annotations

import calendar
import datetime
import math
import re
import uuid
from typing import Any

import bson
from bson.binary import Binary
from bson.code import Code
from bson.decimal128 import Decimal128
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp

__all__ = ["to_string"]

_MAX_STRING = 160  # valuestrsize (with the NUL) above which a string is cut
_CUT_STRING = 150


def _double(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = format(value, ".17g")
    if not any(c in text for c in ".en"):
        text += ".0"
    return text


def _string(value: str) -> str:
    raw = value.encode("utf-8", "surrogatepass")
    if len(raw) + 1 > _MAX_STRING:
        return '"' + raw[:_CUT_STRING].decode("utf-8", "replace") + '..."'
    return f'"{value}"'


_REGEX_FLAGS = (("i", re.IGNORECASE), ("l", re.LOCALE), ("m", re.MULTILINE), ("s", re.DOTALL), ("u", re.UNICODE), ("x", re.VERBOSE))


def _regex_flags(flags: Any) -> str:
    if isinstance(flags, str):
        return flags
    return "".join(letter for letter, bit in _REGEX_FLAGS if flags & bit)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return _double(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, dict) or hasattr(value, "raw"):
        return _object(value)
    if isinstance(value, (list, tuple)):
        return _array(value)
    if isinstance(value, uuid.UUID):
        return f'UUID("{value}")'
    if isinstance(value, Binary):
        if value.subtype == 4 and len(value) == 16:
            return f'UUID("{uuid.UUID(bytes=bytes(value))}")'
        hexed = bytes(value).hex().upper()
        if len(value) > 80:
            return f"BinData({value.subtype}, {bytes(value)[:70].hex().upper()}...)"
        return f"BinData({value.subtype}, {hexed})"
    if isinstance(value, bytes):
        return _value(Binary(value, 0))
    if isinstance(value, ObjectId):
        return f"ObjectId('{value}')"
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        millis = calendar.timegm(value.timetuple()) * 1000 + value.microsecond // 1000
        return f"new Date({millis})"
    if isinstance(value, bson.DatetimeMS):
        return f"new Date({int(value)})"
    if isinstance(value, Timestamp):
        return f"Timestamp({value.time}, {value.inc})"
    if isinstance(value, (Regex, re.Pattern)):
        return f"/{value.pattern}/{_regex_flags(value.flags)}"
    if isinstance(value, Decimal128):
        return f'NumberDecimal("{value}")'
    if isinstance(value, MinKey):
        return "MinKey"
    if isinstance(value, MaxKey):
        return "MaxKey"
    if isinstance(value, Code):
        return str(value)
    return str(value)


def _object(doc: Any) -> str:
    items = list(doc.items())
    if not items:
        return "{}"
    return "{ " + ", ".join(f"{key}: {_value(val)}" for key, val in items) + " }"


def _array(values: Any) -> str:
    if not values:
        return "[]"
    return "[ " + ", ".join(_value(v) for v in values) + " ]"


def to_string(doc: Any) -> str:
    """Render a document (dict or RawBSONDocument) as the server's BSONObj::toString does."""
    return _object(doc)
