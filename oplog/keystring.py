"""KeyString V1: the server's order-preserving byte encoding of BSON values (ascending).

The server turns a sequence of BSON values (an index key, or a resume token's fields) into
bytes whose plain `memcmp` order equals the BSON comparison order of the values.  Each value
starts with a "CType" byte that orders the types (MinKey 10 < null 20 < numbers 30..51 <
strings 60 < objects 70 < arrays 80 < BinData 90 < ObjectId 100 < bool 110/111 < Date 120 <
Timestamp 130 < regex 140 < DBPointer 150 < code 160 < code-with-scope 170 < MaxKey 240),
followed by a payload that orders the values of that type:

- numbers of every BSON type share one scale.  The CType says where the value lies (NaN 30,
  <= -2**63 31, negative integers of 8..1 bytes 32..39, (-1, 0) 40, zero 41, (0, 1) 42,
  positive integers of 1..8 bytes 43..50, >= 2**63 51); integers follow as big-endian
  `magnitude << 1` (the low bit flags a fractional part, whose bytes follow), negative values
  are bit-inverted, small/large magnitudes store the double's bits; a Decimal128 that is not
  exactly a double adds a "decimal continuation" (8 more bytes).
- strings: UTF-8 bytes, NUL written 00 FF, terminated by 00.  Objects: per field the value's
  generic CType, the field name, 00, the value; then 00.  Arrays: the values, then 00.
- BinData: length (one byte, or FF + 4 bytes big-endian when >= 255), subtype, bytes.
- Date: int64 ms with the top bit flipped; Timestamp: (t << 32 | i) big-endian.

A key ends with 04.  Since 1, 1.0, NumberLong(1) and NumberDecimal("1.0") encode the same,
the exact type is kept aside in "TypeBits": 1 bit per string (string/symbol), 2 bits per
number (int 00, long 01, double 10, decimal 11 + the low 6 bits of its exponent), more for
special zeros.  Bits are packed LSB-first; an all-zero TypeBits is stored as nothing; a
single byte < 0x80 alone; otherwise a size byte 0x80|n (n <= 127) or 0x80 + 4-byte
little-endian size, then the bytes.

`encode_key(values) -> (key_bytes, type_bits)` and `decode_key(key_bytes, type_bits)` are
the public API.  Decoding errors are the server's (`MongoError` with its codes).
Facts from the server's src/mongo/db/storage/key_string/key_string.{h,cpp}.
"""

from __future__ import annotations

import datetime
import math
import re
import struct
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any, NamedTuple

from bson.binary import Binary
from bson.code import Code
from bson.datetime_ms import DatetimeMS
from bson.dbref import DBRef
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp

from mongosim.oplog import _dec128 as d128
from mongosim.oplog.errors import MongoError

# --- CTypes ------------------------------------------------------------------------------
MIN_KEY = 10
UNDEFINED_TYPE = 15
NULLISH = 20
NUMERIC = 30
STRING_LIKE = 60
OBJECT = 70
ARRAY = 80
BINDATA = 90
OID = 100
BOOL = 110
DATE = 120
TIMESTAMP = 130
REGEX = 140
DBREF = 150
CODE = 160
CODE_WITH_SCOPE = 170
MAX_KEY = 240

NUMERIC_NAN = 30
NUMERIC_NEGATIVE_LARGE = 31  # <= -2**63, including -inf
NUMERIC_NEGATIVE_8_BYTE_INT = 32
NUMERIC_NEGATIVE_1_BYTE_INT = 39
NUMERIC_NEGATIVE_SMALL = 40  # (-1, 0)
NUMERIC_ZERO = 41
NUMERIC_POSITIVE_SMALL = 42  # (0, 1)
NUMERIC_POSITIVE_1_BYTE_INT = 43
NUMERIC_POSITIVE_8_BYTE_INT = 50
NUMERIC_POSITIVE_LARGE = 51  # >= 2**63, including +inf
BOOL_FALSE = 110
BOOL_TRUE = 111

END = 0x04  # end of a key (the "inclusive" discriminator)
LESS = 0x01  # discriminators of query bounds
GREATER = 0xFE

# Decimal continuation markers: the low 2 bits of a number with a fractional part.
DCM_EQUAL_TO_DOUBLE = 0
DCM_CONTINUATION_LESS = 1  # a continuation follows; the value is below the 15-digit rounding
DCM_EQUAL_TO_DOUBLE_15_DIGITS = 2
DCM_CONTINUATION_LARGER = 3

# TypeBits codes.
TB_INT, TB_LONG, TB_DOUBLE, TB_DECIMAL = 0, 1, 2, 3
TB_V1_NEGATIVE_DOUBLE_ZERO = 0x18  # 0b11000
TB_DECIMAL_ZERO_0XXX = 0x1A
STORED_DECIMAL_EXPONENT_BITS = 6
MAX_BYTES_FOR_SHORT_ENCODING = 127

MAX_DEPTH = 200  # BSONDepth::kDefaultMaxAllowableDepth

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_MASK64 = (1 << 64) - 1
_TWO_63 = 2.0**63
_TWO_53 = 2.0**53
_TINIEST_DOUBLE_WITH_2_BIT_DCM = 2.0**-255
_TINY_UPSHIFT = 2.0**256
_TINY_DOWNSHIFT = 2.0**-256
_TINY_UPSHIFT_DEC = d128.from_double(_TINY_UPSHIFT, 34, d128.TOWARD_ZERO)
_TINY_DOWNSHIFT_DEC = d128.from_double(_TINY_DOWNSHIFT, 34, d128.TOWARD_ZERO)
_EPOCH = datetime.datetime(1970, 1, 1)
_EPOCH_AWARE = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_MIN_DATETIME_MS = (datetime.datetime.min - _EPOCH) // datetime.timedelta(milliseconds=1)
_MAX_DATETIME_MS = (datetime.datetime.max - _EPOCH) // datetime.timedelta(milliseconds=1)

_pack_d = struct.Struct(">d").pack
_unpack_d = struct.Struct(">d").unpack
_pack_Q = struct.Struct(">Q").pack
_unpack_Q = struct.Struct(">Q").unpack
_pack_i = struct.Struct(">i").pack


# --- values with no plain Python type in pymongo -----------------------------------------


class _Undefined:
    """BSON undefined (pymongo decodes it to None; KeyString keeps it apart)."""

    __slots__ = ()
    _instance: _Undefined | None = None

    def __new__(cls) -> _Undefined:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNDEFINED"

    def __reduce__(self) -> str:
        return "UNDEFINED"


UNDEFINED = _Undefined()


class Symbol(str):
    """A BSON symbol: sorts and encodes like a string, TypeBits say "symbol"."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Symbol({str.__repr__(self)})"


class DBPointer(NamedTuple):
    """A BSON DBPointer (deprecated type 0x0C): a namespace and an ObjectId."""

    namespace: str
    id: ObjectId


# --- TypeBits ----------------------------------------------------------------------------


class TypeBits:
    """An append-only bit string, LSB-first, that restores exact BSON types (see module doc)."""

    __slots__ = ("bits", "count")

    def __init__(self, bits: int = 0, count: int = 0) -> None:
        self.bits = bits
        self.count = count

    def append_bit(self, bit: int) -> None:
        if bit:
            self.bits |= 1 << self.count
        self.count += 1

    def append_bits(self, value: int, n: int) -> None:
        """Append the `n` low bits of `value`, most significant first (the server's order)."""
        for shift in range(n - 1, -1, -1):
            if (value >> shift) & 1:
                self.bits |= 1 << self.count
            self.count += 1

    def is_all_zeros(self) -> bool:
        return not self.bits

    def serialize(self) -> bytes:
        """The stored form; b"" when all bits are zero (the server omits it then)."""
        if not self.bits:
            return b""
        size = (self.count + 7) // 8
        data = self.bits.to_bytes(size, "little")
        if size == 1 and data[0] < 0x80:
            return data
        if size <= MAX_BYTES_FOR_SHORT_ENCODING:
            return bytes((0x80 | size,)) + data
        return b"\x80" + struct.pack("<I", size) + data


class _TypeBitsReader:
    __slots__ = ("data", "size", "pos", "all_zeros")

    def __init__(self, raw: bytes) -> None:
        self.pos = 0
        if not raw:
            self.data, self.size, self.all_zeros = b"", 0, True
            return
        first = raw[0]
        if 0 < first < 0x80:
            start, size = 0, 1
        elif first > 0x80:
            start, size = 1, first & 0x7F
        elif first == 0x80:
            if len(raw) < 5:
                raise _overflow(4, len(raw) - 1)
            size = struct.unpack_from("<I", raw, 1)[0]
            if size <= MAX_BYTES_FOR_SHORT_ENCODING:
                raise _format_error(50910, "Invalid overlong encoding.")
            start = 5
        else:
            start, size = 0, 0
        if len(raw) - start < size:
            raise _overflow(size, len(raw) - start)
        self.data = raw[start : start + size]
        self.size = size
        self.all_zeros = size == 0

    def bit(self) -> int:
        if self.all_zeros:
            return 0
        byte, offset = divmod(self.pos, 8)
        self.pos += 1
        if byte >= self.size:
            raise _format_error(50615, "Invalid size byte(s).")
        return (self.data[byte] >> offset) & 1

    def numeric(self) -> int:
        high = self.bit()
        return (high << 1) | self.bit()

    def zero(self) -> int:
        res = self.numeric()
        if res == 3:  # negative or decimal zero: 3 more bits
            res = (res << 1) | self.bit()
            res = (res << 1) | self.bit()
            res = (res << 1) | self.bit()
        if res == TB_V1_NEGATIVE_DOUBLE_ZERO:
            res = 3  # normalized "negative double zero"
        return res

    def decimal_zero(self, zero_type: int) -> int:
        which = (zero_type - TB_DECIMAL_ZERO_0XXX) & 0xFFFFFFFF
        for _ in range(12):
            which = ((which << 1) | self.bit()) & 0xFFFFFFFF
        return which

    def decimal_exponent(self) -> int:
        bits = 0
        for _ in range(STORED_DECIMAL_EXPONENT_BITS):
            bits = (bits << 1) | self.bit()
        return bits


# --- errors ------------------------------------------------------------------------------


def _format_error(code: int | str, msg: str) -> MongoError:
    return MongoError(code, f"KeyString format error: {msg}")


def _overflow(wanted: int, remaining: int) -> MongoError:
    return MongoError("Overflow", f"Invalid advance ({wanted}) past end of buffer[{remaining}] at offset: 0")


# --- encoding ----------------------------------------------------------------------------


def _double_bits(x: float) -> int:
    return _unpack_Q(_pack_d(x))[0]


def _double_from_bits(bits: int) -> float:
    return _unpack_d(_pack_Q(bits))[0]


def _u64(value: int, invert: bool) -> bytes:
    return _pack_Q((value ^ _MASK64) if invert else value)


def datetime_to_ms(value: datetime.datetime) -> int:
    """Milliseconds since the epoch, as pymongo encodes a datetime (naive means UTC)."""
    if value.tzinfo is not None and value.utcoffset() is not None:
        return (value - _EPOCH_AWARE) // datetime.timedelta(milliseconds=1)
    return (value - _EPOCH) // datetime.timedelta(milliseconds=1)


def _regex_flags(flags: int | str) -> str:
    if isinstance(flags, str):
        return flags
    out = ""
    for letter, bit in (("i", re.I), ("l", re.L), ("m", re.M), ("s", re.S), ("u", re.U), ("x", re.X)):
        if flags & bit:
            out += letter
    return out


def c_string(value: str) -> bytes:
    """UTF-8 of a field name, pattern or flags (no NUL allowed)."""
    data = value.encode("utf-8")
    if b"\x00" in data:
        raise ValueError(f"BSON cstrings cannot contain NUL: {value!r}")
    return data


class _Encoder:
    """Appends values to `buf` and their type bits to `tb` (ascending order only)."""

    __slots__ = ("buf", "tb")

    def __init__(self, tb: TypeBits | None = None) -> None:
        self.buf = bytearray()
        self.tb = tb if tb is not None else TypeBits()

    def value(self, v: Any) -> None:
        _KINDS[_kind(v)][1](self, v)

    # -- non-numeric kinds --
    def _min_key(self, v: Any) -> None:
        self.buf.append(MIN_KEY)

    def _max_key(self, v: Any) -> None:
        self.buf.append(MAX_KEY)

    def _null(self, v: Any) -> None:
        self.buf.append(NULLISH)

    def _undefined(self, v: Any) -> None:
        self.buf.append(UNDEFINED_TYPE)

    def _bool(self, v: bool) -> None:
        self.buf.append(BOOL_TRUE if v else BOOL_FALSE)

    def _string(self, v: str) -> None:
        self.tb.append_bit(0)
        self.buf.append(STRING_LIKE)
        self._string_like(v)

    def _symbol(self, v: str) -> None:
        self.tb.append_bit(1)
        self.buf.append(STRING_LIKE)
        self._string_like(v)

    def _string_like(self, v: str) -> None:
        data = v.encode("utf-8")
        if b"\x00" in data:
            data = data.replace(b"\x00", b"\x00\xff")
        self.buf += data
        self.buf.append(0)

    def _code(self, v: Code) -> None:
        if v.scope is not None:
            self.buf.append(CODE_WITH_SCOPE)
            self._string_like(str(v))
            self._bson_body(v.scope)
        else:
            self.buf.append(CODE)
            self._string_like(str(v))

    def _object(self, v: Mapping) -> None:
        self.buf.append(OBJECT)
        self._bson_body(v)

    def _dbref(self, v: DBRef) -> None:
        self._object(v.as_doc())

    def _bson_body(self, doc: Mapping) -> None:
        buf = self.buf
        for name, value in doc.items():
            kind = _KINDS[_kind(value)]
            buf.append(kind[0])
            if type(name) is not str:
                raise TypeError(f"document keys must be str, not {type(name).__name__}")
            buf += c_string(name)
            buf.append(0)
            kind[1](self, value)
        buf.append(0)

    def _array(self, v: Sequence) -> None:
        self.buf.append(ARRAY)
        for item in v:
            self.value(item)
        self.buf.append(0)

    def _bindata(self, v: bytes) -> None:
        subtype = v.subtype if isinstance(v, Binary) else 0
        buf = self.buf
        buf.append(BINDATA)
        n = len(v)
        if n < 0xFF:
            buf.append(n)
        else:
            buf.append(0xFF)
            buf += _pack_i(n)
        buf.append(subtype)
        buf += v

    def _oid(self, v: ObjectId) -> None:
        self.buf.append(OID)
        self.buf += v.binary

    def _date_ms(self, ms: int) -> None:
        self.buf.append(DATE)
        self.buf += _pack_Q((ms & _MASK64) ^ (1 << 63))

    def _datetime(self, v: datetime.datetime) -> None:
        self._date_ms(datetime_to_ms(v))

    def _datetime_ms(self, v: DatetimeMS) -> None:
        self._date_ms(int(v))

    def _timestamp(self, v: Timestamp) -> None:
        self.buf.append(TIMESTAMP)
        self.buf += _pack_Q((v.time << 32) | v.inc)

    def _regex(self, v: Regex | re.Pattern) -> None:
        if isinstance(v, re.Pattern):
            v = Regex.from_native(v)
        pattern = v.pattern if isinstance(v.pattern, str) else v.pattern.decode("utf-8")
        self.buf.append(REGEX)
        self.buf += c_string(pattern)
        self.buf.append(0)
        self.buf += c_string(_regex_flags(v.flags))
        self.buf.append(0)

    def _dbpointer(self, v: DBPointer) -> None:
        ns = v.namespace.encode("utf-8")
        self.buf.append(DBREF)
        self.buf += _pack_i(len(ns))
        self.buf += ns
        self.buf += v.id.binary

    # -- numbers --
    def _int(self, v: int) -> None:
        if _INT32_MIN <= v <= _INT32_MAX:
            self.tb.count += 2  # int: bits 00
        elif _INT64_MIN <= v <= _INT64_MAX:
            self.tb.append_bits(TB_LONG, 2)
        else:
            raise OverflowError("BSON can only handle up to 8-byte ints")
        self._integer(v)

    def _long(self, v: int) -> None:
        self.tb.append_bits(TB_LONG, 2)
        self._integer(int(v))

    def _integer(self, n: int) -> None:
        if n == _INT64_MIN:  # -2**63 is a double exactly, not a positive int64
            self._large_double(float(n), DCM_EQUAL_TO_DOUBLE)
        elif n == 0:
            self.buf.append(NUMERIC_ZERO)
        elif n > 0:
            self._preshifted_integer(n << 1, False)
        else:
            self._preshifted_integer((-n) << 1, True)

    def _preshifted_integer(self, value: int, negative: bool) -> None:
        nbytes = (value.bit_length() + 7) >> 3
        if negative:
            self.buf.append(NUMERIC_NEGATIVE_1_BYTE_INT - (nbytes - 1))
            self.buf += (((1 << (nbytes * 8)) - 1) ^ value).to_bytes(nbytes, "big")
        else:
            self.buf.append(NUMERIC_POSITIVE_1_BYTE_INT + (nbytes - 1))
            self.buf += value.to_bytes(nbytes, "big")

    def _double(self, v: float) -> None:
        if v == 0.0 and math.copysign(1.0, v) < 0:
            self.tb.append_bits(TB_V1_NEGATIVE_DOUBLE_ZERO, 5)
        else:
            self.tb.append_bits(TB_DOUBLE, 2)
        self._double_without_type_bits(v, DCM_EQUAL_TO_DOUBLE)

    def _double_without_type_bits(self, num: float, dcm: int) -> None:
        negative = num < 0.0
        magnitude = -num if negative else num
        if not (magnitude >= 1.0):
            if magnitude > 0.0:
                self._small_double(num, dcm)
            elif num == 0.0:
                self.buf.append(NUMERIC_ZERO)  # -0.0 too: the type bits tell them apart
            else:
                self.buf.append(NUMERIC_NAN)
            return
        if magnitude >= _TWO_63:
            self._large_double(num, dcm)
            return
        integer_part = int(magnitude)
        if integer_part == magnitude and dcm == DCM_EQUAL_TO_DOUBLE:
            self._preshifted_integer(integer_part << 1, negative)
            return
        # A fractional part: 8 bytes in all; the integer part (as `n << 1 | 1`) in the high
        # bytes, the fraction bits below, the decimal continuation marker in the low 2 bits.
        fractional_bytes = (64 - (integer_part << 1).bit_length()) >> 3
        if negative:
            self.buf.append(NUMERIC_NEGATIVE_8_BYTE_INT + fractional_bytes)
        else:
            self.buf.append(NUMERIC_POSITIVE_8_BYTE_INT - fractional_bytes)
        shift = fractional_bytes * 8
        encoding = int(math.ldexp(magnitude, shift)) + ((integer_part + 1) << shift)
        self.buf += _u64(encoding | dcm, negative)

    def _small_double(self, value: float, dcm: int) -> None:
        negative = value < 0
        magnitude = -value if negative else value
        self.buf.append(NUMERIC_NEGATIVE_SMALL if negative else NUMERIC_POSITIVE_SMALL)
        if magnitude >= _TINIEST_DOUBLE_WITH_2_BIT_DCM:  # prefix 0b11
            encoded = (_double_bits(magnitude) << 2) | dcm
        else:  # prefixes 0b01 / 0b10: exponent shifted up by 256, one DCM bit
            encoded = (_double_bits(magnitude * _TINY_UPSHIFT) << 1) | (dcm != DCM_EQUAL_TO_DOUBLE)
            encoded += 1 << 62
        self.buf += _u64(encoded, negative)

    def _large_double(self, value: float, dcm: int) -> None:
        self.buf.append(NUMERIC_POSITIVE_LARGE if value > 0 else NUMERIC_NEGATIVE_LARGE)
        if math.isfinite(value):
            encoded = ((_double_bits(value) << 1) & 0x7FFF_FFFF_FFFF_FFFF) | (dcm != DCM_EQUAL_TO_DOUBLE)
        else:
            encoded = _MASK64
        self.buf += _u64(encoded, not value > 0)

    def _decimal(self, v: Decimal128) -> None:
        kind, negative, coef, bexp = d128.parts(v)
        tb = self.tb
        if kind == d128.FINITE and coef == 0:
            which = bexp + (d128.MAX_BIASED_EXPONENT + 1 if negative else 0)
            tb.append_bits((which >> 12) + TB_DECIMAL_ZERO_0XXX, 5)
            tb.append_bits(which & 0xFFF, 12)
            self.buf.append(NUMERIC_ZERO)
            return
        if kind == d128.NAN:
            self.buf.append(NUMERIC_NAN)
            tb.append_bits(TB_DECIMAL, 2)
            return
        if kind == d128.INFINITE:
            self.buf.append(NUMERIC_NEGATIVE_LARGE if negative else NUMERIC_POSITIVE_LARGE)
            self.buf += _u64(_MASK64, bool(negative))
            tb.append_bits(TB_DECIMAL, 2)
            return
        tb.append_bits(TB_DECIMAL, 2)
        tb.append_bits(bexp & 0x3F, STORED_DECIMAL_EXPONENT_BITS)
        self._decimal_without_type_bits(d128.to_decimal(negative, coef, bexp), bool(negative), coef)

    def _decimal_without_type_bits(self, dec: Decimal, negative: bool, coef: int) -> None:
        binary, inexact = d128.to_double_toward_zero(dec)
        if not inexact:  # the decimal is a double (many integers, 1.5, ...)
            self._double_without_type_bits(binary, DCM_EQUAL_TO_DOUBLE)
            return
        abs_bin = abs(binary)
        if abs_bin < d128.DBL_MIN:
            self._tiny_decimal(dec, negative, binary)
            return
        if abs_bin >= d128.DBL_MAX:
            self._huge_decimal(dec, negative)
            return
        away = d128.TOWARD_NEGATIVE if negative else d128.TOWARD_POSITIVE
        if abs_bin >= _TWO_63:
            self._large_double(binary, DCM_CONTINUATION_LARGER)
            stored = d128.from_double(binary, 34, away)
        elif abs_bin < _TINIEST_DOUBLE_WITH_2_BIT_DCM:
            self._small_double(binary, DCM_CONTINUATION_LARGER)
            stored = d128.from_double(binary, 34, away)
        elif abs_bin >= _TWO_53:
            # The double may have lost integer digits: encode the integer part exactly.
            integer_part = int(dec.copy_abs())  # truncated
            has_fraction = integer_part != dec.copy_abs()
            self._preshifted_integer((integer_part << 1) | has_fraction, negative)
            if not has_fraction:
                return
            if integer_part < (1 << 55):  # 7 integer bytes: one byte holds the DCM
                self.buf.append(DCM_CONTINUATION_LARGER ^ 0xFF if negative else DCM_CONTINUATION_LARGER)
            stored = Decimal((int(negative), tuple(map(int, str(integer_part))), 0))
        elif coef < 10**15:  # at most 15 digits: the double rounded to 15 digits gives it back
            self._double_without_type_bits(binary, DCM_EQUAL_TO_DOUBLE_15_DIGITS)
            return
        else:
            from_bin = d128.from_double(binary, 15, away)
            if from_bin == dec:
                self._double_without_type_bits(binary, DCM_EQUAL_TO_DOUBLE_15_DIGITS)
                return
            dcm = DCM_CONTINUATION_LESS if (dec < from_bin) != negative else DCM_CONTINUATION_LARGER
            self._double_without_type_bits(binary, dcm)
            stored = d128.from_double(binary, 34, away)
        stored = d128.normalize(stored)
        difference = d128.subtract(dec, stored)
        self.buf += _u64(d128.coefficient(difference), negative)

    def _tiny_decimal(self, dec: Decimal, negative: bool, binary: float) -> None:
        magnitude = dec.copy_abs()
        self.buf.append(NUMERIC_NEGATIVE_SMALL if negative else NUMERIC_POSITIVE_SMALL)
        if binary == 0.0:  # below the smallest subnormal: store the decimal itself
            high, low = d128.raw_bits(d128.normalize(magnitude))
            self.buf += _u64(high, negative) + _u64(low, negative)
            return
        scaled_dec = d128.multiply(magnitude, _TINY_UPSHIFT_DEC, d128.TOWARD_ZERO)
        scaled_bin = max(d128.to_double_toward_zero(scaled_dec)[0], abs(binary) * _TINY_UPSHIFT)
        encoded = ((_double_bits(scaled_bin) << 1) | 1) + (1 << 62)
        self.buf += _u64(encoded, negative)
        stored = d128.from_double(scaled_bin, 34, d128.TOWARD_ZERO)
        stored = d128.normalize(d128.multiply(stored, _TINY_DOWNSHIFT_DEC, d128.TOWARD_ZERO))
        self.buf += _u64(d128.coefficient(d128.subtract(magnitude, stored)), negative)

    def _huge_decimal(self, dec: Decimal, negative: bool) -> None:
        high, low = d128.raw_bits(d128.normalize(dec.copy_abs()))
        self.buf.append(NUMERIC_NEGATIVE_LARGE if negative else NUMERIC_POSITIVE_LARGE)
        self.buf += _u64(high | (1 << 63), negative) + _u64(low, negative)


# Kinds of Python values: index -> (generic CType, encoder method).
(
    K_MIN_KEY, K_MAX_KEY, K_NULL, K_UNDEFINED, K_BOOL, K_INT, K_LONG, K_DOUBLE, K_DECIMAL,
    K_STRING, K_SYMBOL, K_CODE, K_CODE_WITH_SCOPE, K_OBJECT, K_DBREF, K_ARRAY, K_BINDATA,
    K_OID, K_DATETIME, K_DATETIME_MS, K_TIMESTAMP, K_REGEX, K_DBPOINTER,
) = range(23)  # fmt: skip

_KINDS: list[tuple[int, Any]] = [
    (MIN_KEY, _Encoder._min_key),
    (MAX_KEY, _Encoder._max_key),
    (NULLISH, _Encoder._null),
    (UNDEFINED_TYPE, _Encoder._undefined),
    (BOOL, _Encoder._bool),
    (NUMERIC, _Encoder._int),
    (NUMERIC, _Encoder._long),
    (NUMERIC, _Encoder._double),
    (NUMERIC, _Encoder._decimal),
    (STRING_LIKE, _Encoder._string),
    (STRING_LIKE, _Encoder._symbol),
    (CODE, _Encoder._code),
    (CODE_WITH_SCOPE, _Encoder._code),
    (OBJECT, _Encoder._object),
    (OBJECT, _Encoder._dbref),
    (ARRAY, _Encoder._array),
    (BINDATA, _Encoder._bindata),
    (OID, _Encoder._oid),
    (DATE, _Encoder._datetime),
    (DATE, _Encoder._datetime_ms),
    (TIMESTAMP, _Encoder._timestamp),
    (REGEX, _Encoder._regex),
    (DBREF, _Encoder._dbpointer),
]

# Exact types (Code is not here: its kind depends on the scope).
_KIND_BY_TYPE: dict[type, int] = {
    MinKey: K_MIN_KEY,
    MaxKey: K_MAX_KEY,
    type(None): K_NULL,
    _Undefined: K_UNDEFINED,
    bool: K_BOOL,
    int: K_INT,
    Int64: K_LONG,
    float: K_DOUBLE,
    Decimal128: K_DECIMAL,
    str: K_STRING,
    Symbol: K_SYMBOL,
    dict: K_OBJECT,
    list: K_ARRAY,
    tuple: K_ARRAY,
    bytes: K_BINDATA,
    Binary: K_BINDATA,
    ObjectId: K_OID,
    datetime.datetime: K_DATETIME,
    DatetimeMS: K_DATETIME_MS,
    Timestamp: K_TIMESTAMP,
    Regex: K_REGEX,
    re.Pattern: K_REGEX,
    DBPointer: K_DBPOINTER,
    DBRef: K_DBREF,
}

# Subclass checks, most specific first (Code and Symbol are str, Int64 and bool are int).
_SUBCLASS_ORDER: list[tuple[type | tuple[type, ...], int]] = [
    (bool, K_BOOL),
    (Int64, K_LONG),
    (int, K_INT),
    (float, K_DOUBLE),
    (Decimal128, K_DECIMAL),
    (Symbol, K_SYMBOL),
    (str, K_STRING),
    (DBRef, K_DBREF),
    (Mapping, K_OBJECT),
    (DBPointer, K_DBPOINTER),
    ((list, tuple), K_ARRAY),
    ((bytes, bytearray, memoryview), K_BINDATA),
    (ObjectId, K_OID),
    (DatetimeMS, K_DATETIME_MS),
    (datetime.datetime, K_DATETIME),
    (Timestamp, K_TIMESTAMP),
    ((Regex, re.Pattern), K_REGEX),
    (MinKey, K_MIN_KEY),
    (MaxKey, K_MAX_KEY),
]


def _kind(v: Any) -> int:
    kind = _KIND_BY_TYPE.get(type(v))
    if kind is not None:
        return kind
    if isinstance(v, Code):
        return K_CODE if v.scope is None else K_CODE_WITH_SCOPE
    for cls, k in _SUBCLASS_ORDER:
        if isinstance(v, cls):
            return k
    raise TypeError(f"cannot encode object {v!r} of type {type(v)} in a KeyString")


def generic_ctype(v: Any) -> int:
    """The CType written before an object field holding `v` (one per BSON type)."""
    return _KINDS[_kind(v)][0]


def encode_key(values: Sequence[Any], *, end: bool = True) -> tuple[bytes, bytes]:
    """(KeyString bytes, serialized TypeBits) of a key: a sequence of BSON values.

    The key ends with the 04 byte unless `end` is false.  TypeBits are b"" when all zero.
    """
    enc = _Encoder()
    for v in values:
        enc.value(v)
    if end:
        enc.buf.append(END)
    return bytes(enc.buf), enc.tb.serialize()


def encode_value(v: Any, tb: TypeBits) -> bytes:
    """The KeyString bytes of one value, appending its type bits to `tb`."""
    enc = _Encoder(tb)
    enc.value(v)
    return bytes(enc.buf)


# --- decoding ----------------------------------------------------------------------------


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if end > len(self.data):
            raise _overflow(n, len(self.data) - self.pos)
        out = self.data[self.pos : end]
        self.pos = end
        return out

    def byte(self) -> int:
        pos = self.pos
        try:
            b = self.data[pos]
        except IndexError:
            raise _overflow(1, 0) from None
        self.pos = pos + 1
        return b

    def u64(self, inverted: bool = False) -> int:
        v = _unpack_Q(self.take(8))[0]
        return v ^ _MASK64 if inverted else v

    def c_string(self) -> bytes:
        end = self.data.find(b"\x00", self.pos)
        if end < 0:
            raise _format_error(50816, "Failed to find null terminator in string.")
        out = self.data[self.pos : end]
        self.pos = end + 1
        return out

    def c_string_with_nuls(self) -> bytes:
        out = self.c_string()
        if self.pos < len(self.data) and self.data[self.pos] == 0xFF:
            parts = [out]
            while self.pos < len(self.data) and self.data[self.pos] == 0xFF:
                self.pos += 1
                parts.append(self.c_string())
            out = b"\x00".join(parts)
        return out


def check_type_bits(type_bits: bytes) -> None:
    """Parse serialized TypeBits only for their errors (the server reads them before the key)."""
    _TypeBitsReader(bytes(type_bits))


def decode_key(data: bytes, type_bits: bytes = b"") -> list[Any]:
    """The values of a KeyString (ascending), with exact types restored from `type_bits`.

    Reading stops at the end byte (04).  Raises MongoError with the server's codes.
    """
    reader = _Reader(bytes(data))
    tbr = _TypeBitsReader(bytes(type_bits or b""))
    out = []
    while reader.remaining():
        ctype = reader.byte()
        if ctype == LESS or ctype == GREATER:
            ctype = reader.byte()
        if ctype == END:
            break
        out.append(_read_value(ctype, reader, tbr, 1))
    return out


def _utf8(data: bytes) -> str:
    return data.decode("utf-8")


def _date_from_ms(ms: int) -> datetime.datetime | DatetimeMS:
    if _MIN_DATETIME_MS <= ms <= _MAX_DATETIME_MS:
        return _EPOCH + datetime.timedelta(milliseconds=ms)
    return DatetimeMS(ms)


def _read_object(reader: _Reader, tbr: _TypeBitsReader, depth: int) -> dict:
    out: dict[str, Any] = {}
    while reader.byte() != 0:
        name = _utf8(reader.c_string())
        out[name] = _read_value(reader.byte(), reader, tbr, depth)
    return out


def _read_value(ctype: int, reader: _Reader, tbr: _TypeBitsReader, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise _format_error("Overflow", "KeyString encoding exceeded maximum allowable BSON nesting depth")
    # The most frequent types first.
    if NUMERIC_NAN <= ctype <= NUMERIC_POSITIVE_LARGE:
        return _read_number(ctype, reader, tbr)
    if ctype == STRING_LIKE:
        symbol = tbr.bit()
        text = _utf8(reader.c_string_with_nuls())
        return Symbol(text) if symbol else text
    if ctype == OBJECT:
        return _read_object(reader, tbr, depth + 1)
    if ctype == OID:
        return ObjectId(reader.take(12))
    if ctype == TIMESTAMP:
        raw = reader.u64()
        return Timestamp(raw >> 32, raw & 0xFFFFFFFF)
    if ctype == BINDATA:
        size = reader.byte()
        if size == 0xFF:
            size = struct.unpack(">I", reader.take(4))[0]
        subtype = reader.byte()
        payload = reader.take(size)
        return payload if subtype == 0 else Binary(payload, subtype)
    if ctype == NULLISH:
        return None
    if ctype == BOOL_TRUE:
        return True
    if ctype == BOOL_FALSE:
        return False
    if ctype == DATE:
        raw = reader.u64() ^ (1 << 63)
        return _date_from_ms(raw - (1 << 64) if raw >= 1 << 63 else raw)
    if ctype == ARRAY:
        items = []
        while (elem := reader.byte()) != 0:
            items.append(_read_value(elem, reader, tbr, depth + 1))
        return items
    if ctype == MIN_KEY:
        return MinKey()
    if ctype == MAX_KEY:
        return MaxKey()
    if ctype == UNDEFINED_TYPE:
        return UNDEFINED
    if ctype == CODE:
        return Code(_utf8(reader.c_string_with_nuls()))
    if ctype == CODE_WITH_SCOPE:
        code = _utf8(reader.c_string_with_nuls())
        return Code(code, _read_object(reader, tbr, depth + 2))
    if ctype == REGEX:
        pattern = _utf8(reader.c_string())
        flags = _utf8(reader.c_string())
        return Regex(pattern, flags)
    if ctype == DBREF:
        size = struct.unpack(">I", reader.take(4))[0]
        ns = _utf8(reader.take(size))
        return DBPointer(ns, ObjectId(reader.take(12)))
    raise _format_error(50811, f"Unknown type: {ctype}")


def _int32(value: int) -> int:
    """C's conversion of an int64 to int (two's complement wrap)."""
    return ((value + 2**31) % 2**32) - 2**31


def _read_number(ctype: int, reader: _Reader, tbr: _TypeBitsReader) -> Any:
    if ctype == NUMERIC_NAN:
        kind = tbr.numeric()
        if kind == TB_DOUBLE:
            return math.nan
        if kind != TB_DECIMAL:
            raise _format_error(50819, "Invalid type bits for numeric NaN")
        return d128.NAN_VALUE
    if ctype == NUMERIC_ZERO:
        zero = tbr.zero()
        if zero == TB_DOUBLE:
            return 0.0
        if zero == TB_INT:
            return 0
        if zero == TB_LONG:
            return Int64(0)
        if zero == 3:
            return -0.0
        which = tbr.decimal_zero(zero)
        negative = which > d128.MAX_BIASED_EXPONENT
        exponent = which - (d128.MAX_BIASED_EXPONENT + 1) if negative else which
        if not 0 <= exponent <= d128.MAX_BIASED_EXPONENT:
            raise _format_error(50846, "Invalid numeric zero decimal.")
        return d128.from_parts(int(negative), 0, exponent)
    if ctype in (NUMERIC_NEGATIVE_LARGE, NUMERIC_POSITIVE_LARGE):
        return _read_large(ctype == NUMERIC_NEGATIVE_LARGE, reader, tbr)
    if ctype in (NUMERIC_NEGATIVE_SMALL, NUMERIC_POSITIVE_SMALL):
        return _read_small(ctype == NUMERIC_NEGATIVE_SMALL, reader, tbr)
    negative = ctype < NUMERIC_ZERO
    inverted = negative
    nbytes = (NUMERIC_NEGATIVE_1_BYTE_INT - ctype + 1) if negative else (ctype - NUMERIC_POSITIVE_1_BYTE_INT + 1)
    kind = tbr.numeric()
    raw = reader.take(nbytes)
    encoded = int.from_bytes(raw, "big")
    if inverted:
        encoded ^= (1 << (8 * nbytes)) - 1
    integer_part = encoded >> 1
    if not encoded & 1:
        value = -integer_part if negative else integer_part
        if kind == TB_DOUBLE:
            return float(value)
        if kind == TB_INT:
            return _int32(value)
        if kind == TB_LONG:
            return Int64(value)
        return d128.to_decimal128(_adjust_decimal_exponent(tbr, Decimal(value)))
    # A fractional part: 8 bytes in all (V1).
    frac_bytes = 8 - nbytes
    encoded_fraction = integer_part
    for b in reader.take(frac_bytes):
        encoded_fraction = (encoded_fraction << 8) | (b ^ 0xFF if inverted else b)
    binary = math.ldexp(float(encoded_fraction & ~3), -8 * frac_bytes)
    if kind == TB_DOUBLE:
        return -binary if negative else binary
    dcm = (encoded_fraction & 3) if frac_bytes else DCM_CONTINUATION_LARGER
    if kind != TB_DECIMAL:
        raise _format_error(50810, "Expected type Decimal.")
    if dcm == DCM_EQUAL_TO_DOUBLE_15_DIGITS:
        dec = d128.from_double(binary, 15, d128.TOWARD_POSITIVE)
    elif dcm == DCM_EQUAL_TO_DOUBLE:
        dec = d128.from_double(binary, 34, d128.TOWARD_POSITIVE)
    else:
        if integer_part > (1 << 53):
            dec = Decimal(integer_part)
        else:
            dec = d128.from_double(binary, 34, d128.TOWARD_POSITIVE)
        dec = _read_decimal_continuation(reader, inverted, dec)
    return d128.to_decimal128(_adjust_decimal_exponent(tbr, dec.copy_negate() if negative else dec))


def _read_large(negative: bool, reader: _Reader, tbr: _TypeBitsReader) -> Any:
    inverted = negative
    kind = tbr.numeric()
    encoded = reader.u64(inverted)
    has_continuation = False
    if not encoded & (1 << 63):  # a finite double
        has_continuation = bool(encoded & 1)
        binary = _double_from_bits((encoded >> 1) | (1 << 62))
        if negative:
            binary = -binary
    elif encoded == _MASK64:
        binary = -math.inf if negative else math.inf
    else:  # a huge decimal, stored directly
        if kind != TB_DECIMAL:
            raise _format_error(50818, "Invalid type bits for decimal number.")
        low = reader.u64(inverted)
        raw = d128.from_raw_bits((encoded & ~(1 << 63)) | (int(negative) << 63), low)
        kind_, _, coef, bexp = d128.parts(raw)
        if kind_ != d128.FINITE:
            return raw
        dec = d128.to_decimal(int(negative), coef, bexp)
        return d128.to_decimal128(_adjust_decimal_exponent(tbr, dec))
    if kind == TB_DOUBLE:
        return binary
    if kind == TB_LONG:
        if binary != -_TWO_63:
            raise _format_error(50821, "Unexpected value for large number.")
        return Int64(_INT64_MIN)
    if kind != TB_DECIMAL:
        raise _format_error(50826, "Unexpected type of large number.")
    if math.isinf(binary):
        return d128.NEGATIVE_INFINITY if negative else d128.POSITIVE_INFINITY
    dec = d128.from_double(binary, 34, d128.TOWARD_NEGATIVE if negative else d128.TOWARD_POSITIVE)
    if has_continuation:
        dec = _read_decimal_continuation(reader, inverted, dec)
    return d128.to_decimal128(_adjust_decimal_exponent(tbr, dec))


def _read_small(negative: bool, reader: _Reader, tbr: _TypeBitsReader) -> Any:
    inverted = negative
    kind = tbr.numeric()
    encoded = reader.u64(inverted)
    prefix = encoded >> 62
    if prefix == 0:  # a decimal below the smallest subnormal double, stored directly
        low = reader.u64(inverted)
        _, _, coef, bexp = d128.parts(d128.from_raw_bits(encoded, low))
        dec = _adjust_decimal_exponent(tbr, d128.to_decimal(0, coef, bexp))
        return d128.to_decimal128(dec.copy_negate() if negative else dec)
    if prefix in (1, 2):  # tiny: exponent shifted by 256
        has_continuation = bool(encoded & 1)
        scaled_bin = _double_from_bits((encoded - (1 << 62)) >> 1)
        if kind == TB_DOUBLE:
            if has_continuation:
                raise _format_error(50822, "Unexpected decimal continuation.")
            binary = scaled_bin * _TINY_DOWNSHIFT
            return -binary if negative else binary
        if not (kind == TB_DECIMAL and has_continuation):
            raise _format_error(50823, "Expected decimal continuation.")
        if scaled_bin < d128.DBL_MIN * _TINY_UPSHIFT:
            scaled_dec = d128.from_double(scaled_bin, 34, d128.TOWARD_ZERO)
            dec = d128.multiply(scaled_dec, _TINY_DOWNSHIFT_DEC, d128.TOWARD_ZERO)
        else:
            dec = d128.from_double(scaled_bin * _TINY_DOWNSHIFT, 34, d128.TOWARD_POSITIVE)
        dec = _read_decimal_continuation(reader, inverted, dec)
        return d128.to_decimal128(_adjust_decimal_exponent(tbr, dec.copy_negate() if negative else dec))
    # prefix 0b11: a small double, 2**-255 or more in magnitude
    dcm = encoded & 3
    binary = _double_from_bits(encoded >> 2)
    if kind == TB_DOUBLE:
        if dcm != DCM_EQUAL_TO_DOUBLE:
            raise _format_error(50824, "Decimal contuation mismatch.")
        return -binary if negative else binary
    if kind != TB_DECIMAL:
        raise _format_error(50825, "Unexpected type for small number, expected decimal.")
    if dcm == DCM_EQUAL_TO_DOUBLE_15_DIGITS:
        dec = d128.from_double(binary, 15, d128.TOWARD_POSITIVE)
    else:
        dec = d128.from_double(binary, 34, d128.TOWARD_POSITIVE)
        if dcm != DCM_EQUAL_TO_DOUBLE:
            dec = _read_decimal_continuation(reader, inverted, dec)
    return d128.to_decimal128(_adjust_decimal_exponent(tbr, dec.copy_negate() if negative else dec))


def _read_decimal_continuation(reader: _Reader, inverted: bool, num: Decimal) -> Decimal:
    continuation = reader.u64(inverted)
    num = d128.normalize(num)
    sign = 1 if num.is_signed() else 0
    result, inexact = d128.add_exact(num, Decimal((sign, tuple(map(int, str(continuation))), num.as_tuple().exponent)))
    if inexact:
        raise _format_error(50815, "Unexpected inexact flag set after Decimal addition.")
    return result


def _adjust_decimal_exponent(tbr: _TypeBitsReader, num: Decimal) -> Decimal:
    """`num` with its exponent moved to the one whose low 6 bits the type bits stored."""
    if num.is_zero():
        raise _format_error(50829, "Expected non-zero number for decimal.")
    orig = d128.biased_exponent(num)
    stored = tbr.decimal_exponent()
    high = (orig & ~0x3F) | stored
    if high < orig:
        high += 1 << STORED_DECIMAL_EXPONENT_BITS
    if high == orig:
        return num
    if high <= orig + 33 and (d128.coefficient(num) >= (1 << 64) or high <= orig + 19):
        if high > d128.MAX_BIASED_EXPONENT:
            raise _format_error(50845, "Unexpected exponent values after adjusting Decimal.")
        num, ok = d128.quantize_exact(num, high)
        if not ok:
            raise _format_error(50813, "Unexpected signaling flag for Decimal quantization.")
    else:
        low = high - (1 << STORED_DECIMAL_EXPONENT_BITS)
        if orig < 33 or low < orig - 33 or not 0 <= low <= d128.MAX_BIASED_EXPONENT:
            raise _format_error(50814, "Unexpected exponent values after adjusting Decimal.")
        num, _ = d128.add_exact(num, Decimal((0, (0,), low - d128.BIAS)))
    if d128.biased_exponent(num) & 0x3F != high & 0x3F:
        raise _format_error(50830, "Unexpected biased exponent in decimal.")
    return num
