"""`$convert` and its shorthands `$toString`, `$toInt`, ..., `$toUUID` (the server's ExpressionConvert).

`{$convert: {input, to, format, onError, onNull}}`: a null or missing input gives `onNull` (null
without it); a null `to` gives null.  `to` is a type name, a BSON type number, or (8.0) a document
`{type, subtype}` — the subtype of a BinData target (0 by default: 0-8 or 128-255, else 4341107).
A conversion the server's table has no entry for, or one that fails on the value, is a
ConversionFailure (241), which `onError` replaces; the argument checks are not (FailedToParse for
`to`, 4341114/4341125 for `format`, 4341106-4341108 for `subtype`).

BinData conversions (8.0): a string becomes BinData through a `format` ("base64", "base64url",
"hex", "utf8", "uuid"; "uuid" exactly when the subtype is 4), BinData becomes a string through one
("auto" is "uuid" for a 16-byte subtype-4 value and "base64" otherwise), BinData converts to
BinData of its own subtype only; without a `format` either way is 4341115.  `$toUUID` is
`{$convert: {input, to: {type: "binData", subtype: 4}, format: "uuid"}}`.  The checks and
messages follow src/mongo/db/pipeline/expression_convert.cpp (jstests/aggregation/expressions/
convert_bindata.js).
"""

from __future__ import annotations

import base64
import binascii
import datetime
import math
import re
import uuid
from decimal import Decimal

from bson import Binary, Decimal128, Int64, ObjectId, Regex, Timestamp
from bson.datetime_ms import DatetimeMS
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.expression_core import compile_node, fixed_args, nullish, register, to_bool
from mongosim.shardsim.query.fmt import bson_str, query_error
from mongosim.shardsim.query.values import date_millis, type_name

__all__ = ["to_string"]


def to_string(v) -> str:
    t = type(v)
    if t is str:
        return v
    if t is bool:
        return "true" if v else "false"
    if t is int or t is Int64:
        return str(int(v))
    if t is float:
        if v != v:
            return "NaN"
        if v in (math.inf, -math.inf):
            return "Infinity" if v > 0 else "-Infinity"
        if v == int(v) and abs(v) < 1e15:
            return str(int(v))
        return repr(v)
    if t is Decimal128:
        return str(v)
    if t is ObjectId:
        return str(v)
    if isinstance(v, datetime.datetime):
        return v.strftime("%Y-%m-%dT%H:%M:%S.") + f"{v.microsecond // 1000:03d}Z"
    raise query_error("ConversionFailure", f"Unsupported conversion from {type_name(v)} to string in $convert with no onError value")


def _conv_fail(frm, to):
    return query_error("ConversionFailure", f"Unsupported conversion from {frm} to {to} in $convert with no onError value")


def _to_int_like(v, to: str):
    lo, hi = (-(2**31), 2**31) if to == "int" else (-(2**63), 2**63)
    t = type(v)
    if t is bool:
        r = int(v)
    elif t is int or t is Int64:
        r = int(v)
    elif t is float or t is Decimal128:
        # performCastDoubleToInt/Long, performCastDecimalToInt: NaN and infinity have their own
        # messages; an overflow names the double as streamed ("%g") or the decimal's string.
        f = v.to_decimal() if t is Decimal128 else v
        if f != f:
            raise query_error("ConversionFailure", "Attempt to convert NaN value to integer type in $convert with no onError value")
        if f in (math.inf, -math.inf) or (t is Decimal128 and not f.is_finite()):
            raise query_error("ConversionFailure", "Attempt to convert infinity value to integer type in $convert with no onError value")
        r = int(f)
        fits = (lo <= f <= hi - 1) if to == "int" and t is float else lo <= (f if t is float else r) < hi
        if not fits:  # (a double is compared before truncation, a decimal after)
            shown = f"{v:g}" if t is float else str(f)
            raise query_error("ConversionFailure", f"Conversion would overflow target type in $convert with no onError value: {shown}")
    elif t is str:
        try:
            r = int(v, 10)
        except ValueError:
            raise query_error("ConversionFailure", f'Failed to parse number \'{v}\' in $convert with no onError value: Did not consume whole string.') from None
    elif isinstance(v, datetime.datetime) and to == "long":
        r = date_millis(v)
    else:
        raise _conv_fail(type_name(v), to)
    if not lo <= r < hi:  # (performCastLongToInt names no value)
        raise query_error("ConversionFailure", "Conversion would overflow target type in $convert with no onError value: ")
    return r if to == "int" else Int64(r)


def _to_double(v):
    t = type(v)
    if t in (bool, int, Int64, float):
        return float(v)
    if t is Decimal128:
        return float(v.to_decimal())
    if t is str:
        try:
            return float(v)
        except ValueError:
            raise query_error("ConversionFailure", f"Failed to parse number '{v}' in $convert with no onError value: Did not consume whole string.") from None
    if isinstance(v, datetime.datetime):
        return float(date_millis(v))
    raise _conv_fail(type_name(v), "double")


def _to_decimal(v):
    t = type(v)
    if t is Decimal128:
        return v
    if t in (bool, int, Int64):
        return Decimal128(Decimal(int(v)))
    if t is float:
        return Decimal128(Decimal(repr(v)))
    if t is str:
        try:
            return Decimal128(v)
        except Exception:
            raise query_error("ConversionFailure", f"Failed to parse number '{v}' in $convert with no onError value") from None
    if isinstance(v, datetime.datetime):
        return Decimal128(Decimal(date_millis(v)))
    raise _conv_fail(type_name(v), "decimal")


def _to_bool_conv(v):
    if type(v) in (str, dict, list, ObjectId, datetime.datetime, Timestamp) or isinstance(v, (Regex, re.Pattern, bytes)):
        return True
    return to_bool(v)


def _to_object_id(v):
    if type(v) is ObjectId:
        return v
    if type(v) is str:
        try:
            return ObjectId(v)
        except Exception:
            raise query_error("ConversionFailure", f"Failed to parse objectId '{v}' in $convert with no onError value: Invalid string length for parsing to OID, expected 24 but found {len(v)}") from None
    raise _conv_fail(type_name(v), "objectId")


def _to_date(v):
    if isinstance(v, datetime.datetime):
        return v
    if type(v) in (int, Int64, float, Decimal128) and type(v) is not bool:
        # performCastNumberToDate: a double or decimal converts as $toLong does (NaN, infinity
        # and int64 overflow are ConversionFailure); a date beyond year 9999 is a DatetimeMS.
        ms = int(_to_int_like(v, "long")) if type(v) in (float, Decimal128) else int(v)
        try:
            return datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)
        except OverflowError:
            return DatetimeMS(ms)
    if type(v) is ObjectId:
        return v.generation_time.replace(tzinfo=None)
    if type(v) is Timestamp:
        return v.as_datetime().replace(tzinfo=None)
    if type(v) is str:
        try:
            d = datetime.datetime.fromisoformat(v.replace("Z", "+00:00"))
            if d.tzinfo:
                d = d.astimezone(datetime.timezone.utc).replace(tzinfo=None)
            return d
        except ValueError:
            raise query_error("ConversionFailure", f"Error parsing date string '{v}'") from None
    raise _conv_fail(type_name(v), "date")


_CONVERTERS = {
    "string": to_string,
    "int": lambda v: _to_int_like(v, "int"),
    "long": lambda v: _to_int_like(v, "long"),
    "double": _to_double,
    "decimal": _to_decimal,
    "bool": _to_bool_conv,
    "objectId": _to_object_id,
    "date": _to_date,
}


def _conv_unary(name, target):
    def build(arg):
        (a,) = fixed_args(name, arg, 1)
        conv = _CONVERTERS[target]

        def f(vs):
            v = a(vs)
            if nullish(v):
                return None
            return conv(v)

        return f

    return build


for _name, _target in (
    ("$toString", "string"), ("$toInt", "int"), ("$toLong", "long"), ("$toDouble", "double"),
    ("$toDecimal", "decimal"), ("$toBool", "bool"), ("$toObjectId", "objectId"), ("$toDate", "date"),
):
    register(_name)(_conv_unary(_name, _target))



# --- BinData --------------------------------------------------------------------------------

_FORMATS = ("auto", "base64", "base64url", "hex", "utf8", "uuid")
_UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")


def _parse_format(v):
    if nullish(v):
        return None
    if type(v) is not str:
        raise MongoError(4341114, f"$convert requires that 'format' be a string, found: {type_name(v)} with value "
                                  f"{bson_str(v)}")
    if v not in _FORMATS:
        raise MongoError(4341125, f"Invalid 'format' argument for $convert: {v}")
    return v


def _bin_subtype(v) -> int:
    """The BinData type a numeric `subtype` names (computeBinDataType)."""
    if type(v) in (int, Int64, float, Decimal128) and type(v) is not bool:
        f = float(v.to_decimal()) if type(v) is Decimal128 else float(v)
        if f != f or f in (math.inf, -math.inf) or f != int(f):
            raise MongoError(4341106, "In $convert, numeric 'subtype' argument is not an integer")
        code = int(f)
        if not (0 <= code <= 8 or 128 <= code <= 255):
            raise MongoError(4341107, "In $convert, numeric value for 'subtype' does not correspond to a BinData "
                                      f"type: {code}")
        return code
    raise MongoError(4341108, f"For BinData, $convert's 'subtype' argument must be a number, but is {type_name(v)}")


def _decode_string(s: str, fmt: str) -> bytes:
    if fmt == "base64":
        if len(s) % 4 or not re.fullmatch(r"[A-Za-z0-9+/]*={0,2}", s):
            raise MongoError("FailedToParse", "invalid base64")
        return base64.b64decode(s)
    if fmt == "base64url":
        if len(s) % 4 == 1 or not re.fullmatch(r"[A-Za-z0-9_-]*={0,2}", s):
            raise MongoError("FailedToParse", "invalid base64")
        return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
    if fmt == "hex":
        if len(s) % 2:
            raise MongoError("FailedToParse", "Hex blob with odd digit count")
        try:
            return binascii.unhexlify(s)
        except (binascii.Error, ValueError):
            raise MongoError("FailedToParse", "Hex blob with invalid character") from None
    if fmt == "utf8":
        return s.encode("utf-8", "surrogatepass")
    raise MongoError(4341117, f"Invalid format '{fmt}'")


def _string_to_bindata(s: str, fmt: str, subtype: int) -> Binary:
    try:
        if (fmt == "uuid") != (subtype == 4):
            raise MongoError(4341116, "Only the 'uuid' format is allowed with the UUID subtype")
        if fmt == "uuid":
            if not _UUID_RE.match(s):
                raise MongoError("InvalidUUID", f"Invalid UUID string: {s}")
            return Binary(uuid.UUID(s).bytes, 4)
        return Binary(_decode_string(s, fmt), subtype)
    except MongoError as e:
        raise query_error("ConversionFailure", f"Failed to parse BinData '{s}' in $convert with no onError value: "
                                               f"{e.errmsg}") from None


def _bindata_to_string(b: Binary, fmt: str) -> str:
    data = bytes(b)
    is_uuid = b.subtype == 4 and len(data) == 16
    try:
        if fmt == "uuid" or (fmt == "auto" and is_uuid):
            if not is_uuid:
                raise MongoError(4341121, "BinData does not represent a valid UUID")
            return str(uuid.UUID(bytes=data))
        if fmt in ("auto", "base64"):
            return base64.b64encode(data).decode()
        if fmt == "base64url":
            return base64.urlsafe_b64encode(data).decode().rstrip("=")
        if fmt == "hex":
            return data.hex().upper()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise MongoError(4341122, "BinData does not represent a valid UTF-8 string") from None
    except MongoError as e:
        raise query_error("ConversionFailure", f"Failed to convert '{bson_str(b)}' to string in $convert with no "
                                               f"onError value: {e.errmsg}") from None


def _as_binary(v):
    """A BinData value as a Binary (bson decodes subtype 0 as bytes), else None."""
    if type(v) is Binary:
        return v
    if type(v) is bytes:
        return Binary(v, 0)
    if isinstance(v, uuid.UUID):
        return Binary(v.bytes, 4)
    return None


# --- $convert ---------------------------------------------------------------------------------

_TYPE_NAMES = ("double", "string", "object", "array", "binData", "undefined", "objectId", "bool", "date", "null",
               "regex", "dbPointer", "javascript", "symbol", "javascriptWithScope", "int", "timestamp", "long",
               "decimal", "minKey", "maxKey")
_TYPE_BY_NUMBER = {1: "double", 2: "string", 3: "object", 4: "array", 5: "binData", 6: "undefined", 7: "objectId",
                   8: "bool", 9: "date", 10: "null", 11: "regex", 12: "dbPointer", 13: "javascript", 14: "symbol",
                   15: "javascriptWithScope", 16: "int", 17: "timestamp", 18: "long", 19: "decimal", -1: "minKey",
                   127: "maxKey"}


def _target_type(to):
    """(type name, subtype value) of `to`: a name, a number, or `{type, subtype}`."""
    subtype = 0
    if isinstance(to, dict):
        subtype = to.get("subtype", 0)
        to = to.get("type")
    if type(to) is str:
        if to not in _TYPE_NAMES:
            raise MongoError("BadValue", f"Unknown type name: {to}")
        return to, subtype
    if type(to) in (int, Int64, float, Decimal128) and type(to) is not bool:
        f = float(to.to_decimal()) if type(to) is Decimal128 else float(to)
        if f != f or f in (math.inf, -math.inf) or f != int(f):
            raise MongoError("FailedToParse", "In $convert, numeric 'to' argument is not an integer")
        name = _TYPE_BY_NUMBER.get(int(f))
        if name is None:
            raise MongoError("FailedToParse", f"In $convert, numeric value for 'to' does not correspond to a BSON "
                                              f"type: {int(f)}")
        return name, subtype
    raise MongoError("FailedToParse", f"$convert's 'to' argument must be a string or number, but is {type_name(to)}")


def _perform(v, target: str, subtype, fmt):
    b = _as_binary(v)
    if target == "binData":
        st = _bin_subtype(subtype)
        if type(v) is str:
            if fmt is None:
                raise MongoError(4341115, "Format must be speficied when converting from 'string' to 'binData'")
            return _string_to_bindata(v, fmt, st)
        if b is not None:
            if b.subtype != st:
                raise query_error("ConversionFailure", "Conversions between different BinData subtypes are not "
                                                       "supported")
            return b
        raise _conv_fail(type_name(v), "binData")
    if b is not None:
        if target == "bool":
            return True
        if target == "string":
            if fmt is None:
                raise MongoError(4341115, "Format must be speficied when converting from 'binData' to 'string'")
            return _bindata_to_string(b, fmt)
        raise _conv_fail("binData", target)
    conv = _CONVERTERS.get(target)
    if conv is None:
        raise _conv_fail(type_name(v), target)
    return conv(v)


def _convert_fn(inp, to, fmt, on_error, on_null):
    def f(vs):
        v = inp(vs)
        target = to(vs)
        format_value = fmt(vs) if fmt is not None else None
        if nullish(v):
            return on_null(vs) if on_null is not None else None
        if nullish(target):
            return None
        name, subtype = _target_type(target)
        try:
            return _perform(v, name, subtype, _parse_format(format_value))
        except MongoError as e:
            if on_error is not None and e.code == 241:
                return on_error(vs)
            raise

    return f


@register("$convert")
def _convert(arg):
    if not isinstance(arg, dict):
        raise MongoError("FailedToParse", f"$convert expects an object of named arguments but found: {type_name(arg)}")
    parts = {}
    for k, v in arg.items():
        if k not in ("input", "to", "format", "onError", "onNull"):
            raise MongoError("FailedToParse", f"$convert found an unknown argument: {k}")
        parts[k] = compile_node(v)
    if "input" not in parts:
        raise MongoError("FailedToParse", "Missing 'input' parameter to $convert")
    if "to" not in parts:
        raise MongoError("FailedToParse", "Missing 'to' parameter to $convert")
    return _convert_fn(parts["input"], parts["to"], parts.get("format"), parts.get("onError"), parts.get("onNull"))


@register("$toUUID")
def _to_uuid(arg):
    """`{$toUUID: expr}`: `$convert` to BinData subtype 4 with the "uuid" format."""
    (a,) = fixed_args("$toUUID", arg, 1)
    return _convert_fn(a, lambda vs: {"type": "binData", "subtype": 4}, lambda vs: "uuid", None, None)
