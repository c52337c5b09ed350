"""KeyString V1: bytes pinned to the server, round trips, and BSON order."""

import base64
import math

import pytest
from bson.binary import Binary
from bson.code import Code
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mongosim.oplog.errors import MongoError
from mongosim.oplog.keystring import UNDEFINED, DBPointer, Symbol, TypeBits, decode_key, encode_key
from tests.oplog.bson_values import compare_sequences, decimals, numbers, same, values

HYPOTHESIS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def hexkey(*vals):
    key, tb = encode_key(list(vals))
    return key.hex().upper(), tb.hex().upper()


# --- bytes pinned to the server (key_string_test.cpp, resume tokens, the reference) -------


@pytest.mark.parametrize(
    "value, key_hex, type_bits_hex",
    [
        (5.5, "2B0B8000000000000004", "01"),  # key_string_test.cpp ActualBytesDouble (V1)
        (0, "2904", ""),
        (1, "2B0204", ""),
        (128, "2C010004", ""),
        (-1, "27FD04", ""),
        (Int64(1), "2B0204", "02"),
        (1.0, "2B0204", "01"),
        (-0.0, "2904", "03"),
        (6.0, "2B0C04", "01"),
        (Int64(2**63 - 1), "32FFFFFFFFFFFFFFFE04", "02"),
        (Int64(-(2**63)), "1FF83FFFFFFFFFFFFF04", "02"),
        (False, "6E04", ""),
        (True, "6F04", ""),
        (None, "1404", ""),
        (MinKey(), "0A04", ""),
        (MaxKey(), "F004", ""),
        (UNDEFINED, "0F04", ""),
        ("a\x00b", "3C6100FF620004", ""),
        (Symbol("a"), "3C610004", "01"),
        (Timestamp(1773154695, 2), "8269B031870000000204", ""),
        (ObjectId("66b518c657c4c7204e91e80f"), "6466B518C657C4C7204E91E80F04", ""),
        (Binary(b"\x01" * 16, 4), "5A1004" + "01" * 16 + "04", ""),
        (b"x" * 255, "5AFF000000FF00" + "78" * 255 + "04", ""),
        ({"_id": "beer"}, "463C5F6964003C626565720000" + "04", ""),
        ([1, "a"], "502B023C61000004", ""),
        (Regex("ab", "im"), "8C616200696D0004", ""),
        (Code("f"), "A0660004", ""),
        (Code("f", {"x": 1}), "AA66001E78002B020004", ""),
        (DBPointer("a.b", ObjectId("000000000000000000000001")), "9600000003612E62" + "00" * 11 + "0104", ""),
    ],
)
def test_pinned_bytes(value, key_hex, type_bits_hex):
    key, tb = encode_key([value])
    if key_hex is not None:
        assert key.hex().upper() == key_hex
        assert tb.hex().upper() == type_bits_hex
    assert same(decode_key(key, tb)[0], value)


def test_dates_flip_the_sign_bit():
    import datetime

    assert hexkey(datetime.datetime(1970, 1, 1))[0] == "78800000000000000004"
    assert hexkey(datetime.datetime(1969, 12, 31, 23, 59, 59, 999000))[0] == "787FFFFFFFFFFFFFFF04"


# The server's decimal round-trip cases (key_string_test.cpp DecimalNumbers).
SERVER_DECIMALS = [
    "0", "0.0", "-0", "0E5000", "-0.0000E-6172", "NaN", "Infinity", "-Infinity", "1", "2.0",
    "-2.0E1", "1234.56E15", "2.00000000000000000000000", "-9223372036854775808.00000000000000",
    "973555660975280180349468061728768E1", "1.25", "3.141592653584666550159454345703125",
    "-127.50", "243290200817664E4", "9007199254740993", "9223372036854775807",
    "-9223372036854775808", "1.23", "-1.1", "-12345.60", "3.141592653589793238462643383279502",
    "-3.141592653589793115997963468544185", "0.50", "-0.3552713678800500929355621337890625E-14",
    "-0.000000000000001234567890123456789012345678901234E-99", "0.02",
    "1234567890123456789012345678901234E6000", "-19950631168.80758384883742162683585E3000",
    "0.2512388057698744585180135042133610E-6020", "4.940656458412465441765687928682213E-324",
    "-0.8289046058458094980903836776809409E-316",
]  # fmt: skip


@pytest.mark.parametrize("text", SERVER_DECIMALS)
def test_server_decimal_cases_round_trip(text):
    d = Decimal128(text)
    key, tb = encode_key([d, 1])
    assert same(decode_key(key, tb), [d, 1])


def test_decimal_sorts_with_the_double_it_equals():
    assert encode_key([Decimal128("1.5")])[0] == encode_key([1.5])[0]
    assert encode_key([Decimal128("100")])[0] == encode_key([100])[0]
    # The double 0.1 is 0.1000000000000000055...: just above the decimal 0.1.
    assert encode_key([math.nextafter(0.1, 0)])[0] < encode_key([Decimal128("0.1")])[0] < encode_key([0.1])[0]


# --- TypeBits ----------------------------------------------------------------------------


def test_type_bits_encodings():
    assert TypeBits().serialize() == b""
    tb = TypeBits()
    tb.append_bits(0, 6)
    assert tb.serialize() == b""  # all zeros: omitted
    tb.append_bits(2, 2)  # a double after six zero bits: bit 6 -> 0x40, a single byte
    assert tb.serialize() == b"\x40"
    tb.append_bits(1, 2)  # a long: bit 9
    assert tb.serialize() == b"\x82\x40\x02"
    long_tb = TypeBits()
    long_tb.append_bits(0, 8 * 200)
    long_tb.append_bit(1)
    raw = long_tb.serialize()
    assert raw[:5] == b"\x80" + (201).to_bytes(4, "little") and len(raw) == 206
    assert raw[-1] == 1


def test_long_type_bits_round_trip():
    key, tb = encode_key([[1.5] * 100])  # 200 bits: short form, size byte 0x80 | 25
    assert tb[0] == 0x80 | 25 and len(tb) == 26
    assert decode_key(key, tb) == [[1.5] * 100]
    key, tb = encode_key([[1.5] * 600])  # 1200 bits: 0x80 + little-endian size 150
    assert tb[0] == 0x80 and int.from_bytes(tb[1:5], "little") == 150 and len(tb) == 155
    assert decode_key(key, tb) == [[1.5] * 600]


def test_type_bits_restore_numeric_types():
    vals = [1, Int64(1), 1.0, Decimal128("1"), Decimal128("1.0"), 0, Int64(0), 0.0, -0.0, Decimal128("-0E+3")]
    key, tb = encode_key(vals)
    out = decode_key(key, tb)
    assert same(out, vals)
    assert [type(v) for v in out] == [int, Int64, float, Decimal128, Decimal128, int, Int64, float, float, Decimal128]


def test_real_type_bits_from_a_server_token():
    # createIndexes event token from a real 8.x server: {key: {a: 1.0}} gives double bits.
    data = bytes.fromhex(
        "82687A09F4000000062B042C0100296E5A100435E288933C8245C6B0E9DE829C0E5056463C6F706572617469"
        "6F6E54797065003C637265617465496E646578657300466F7065726174696F6E4465736372697074696F6E00"
        "4650696E64657865730050461E76002B04466B657900461E61002B02003C6E616D65003C615F310000461E76"
        "002B04466B657900461E62002B02003C6E616D65003C625F31000000000004"
    )
    tb = base64.b64decode("gwBCAA==")
    vals = decode_key(data, tb)
    assert vals[-1]["operationDescription"]["indexes"][0] == {"v": 2, "key": {"a": 1.0}, "name": "a_1"}
    assert type(vals[-1]["operationDescription"]["indexes"][0]["key"]["a"]) is float
    assert encode_key(vals) == (data, tb)


# --- properties --------------------------------------------------------------------------


@HYPOTHESIS
@given(st.lists(values, min_size=1, max_size=3))
def test_round_trip(key):
    data, tb = encode_key(key)
    assert same(decode_key(data, tb), key)
    assert encode_key(decode_key(data, tb)) == (data, tb)


@settings(max_examples=800, deadline=None)
@given(st.one_of(numbers, decimals))
def test_numbers_round_trip(n):
    data, tb = encode_key([n])
    assert same(decode_key(data, tb)[0], n)


@HYPOTHESIS
@given(st.lists(values, min_size=1, max_size=2), st.lists(values, min_size=1, max_size=2))
def test_bytes_order_is_bson_order(a, b):
    ka, kb = encode_key(a)[0], encode_key(b)[0]
    assert ((ka > kb) - (ka < kb)) == compare_sequences(a, b)


@settings(max_examples=800, deadline=None)
@given(numbers, numbers)
def test_numbers_order_across_types(a, b):
    ka, kb = encode_key([a])[0], encode_key([b])[0]
    assert ((ka > kb) - (ka < kb)) == compare_sequences([a], [b])


# --- decoding errors ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, tb, code",
    [
        (b"\x00\x00\x00\x00\x00", b"", 50811),  # unknown CType 0
        (bytes([165, 85, 77, 86, 255]), b"", 50811),
        (b"\x3c\x37", b"", 50816),  # string without its terminator
        (b"\x82\x00\x00", b"", "Overflow"),  # truncated Timestamp
        (b"\x2b\x02\x04", b"\x80\x05\x00\x00\x00", 50910),  # overlong type-bits size
        (b"\x2b\x02\x04", bytes([165, 85, 77, 86, 255]), "Overflow"),  # size byte past the end
        (b"\x2b\x02\x2b\x02\x2b\x02\x2b\x02\x2b\x02\x04", b"\x01", 50615),  # bits run out
        (b"\x1e\x04", b"\x02", 50819),  # NaN with long type bits
    ],
)
def test_decoding_errors(data, tb, code):
    with pytest.raises(MongoError) as err:
        decode_key(data, tb)
    expected = MongoError(code, "x").code
    assert err.value.code == expected
