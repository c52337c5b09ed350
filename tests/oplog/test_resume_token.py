"""Resume tokens: real server tokens byte for byte, round trips, order, errors, fast path."""

import base64
import dataclasses

import pytest
from bson.binary import Binary
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId
from bson.timestamp import Timestamp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mongosim.oplog.errors import MongoError
from mongosim.oplog.resume_token import (
    EVENT_TOKEN_TYPE,
    HIGH_WATER_MARK_TOKEN_TYPE,
    ResumeTokenData,
    decode_resume_token,
    encode_crud_token,
    encode_event_token,
    encode_high_water_mark,
    encode_resume_token,
    event_identifier,
    high_water_mark_data,
    is_high_water_mark,
    make_high_water_mark_token,
)
from tests.oplog.bson_values import compare_sequences, document_keys, documents, same

HYPOTHESIS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def uuid_of(hex_: str) -> Binary:
    return Binary(bytes.fromhex(hex_), 4)


# --- worked examples and real tokens -------------------------------------------------------


def test_reference_high_water_marks():
    assert make_high_water_mark_token(Timestamp(1773154695, 2)) == {"_data": "8269B03187000000022B0429296E1404"}
    assert make_high_water_mark_token(Timestamp(1, 0), version=1) == {"_data": "8200000001000000002B0229296E04"}
    assert encode_high_water_mark((1773154695 << 32) | 2) == "8269B03187000000022B0429296E1404"
    data = decode_resume_token({"_data": "8269B03187000000022B0429296E1404"})
    assert data == ResumeTokenData(Timestamp(1773154695, 2), 2, HIGH_WATER_MARK_TOKEN_TYPE)


REAL_TOKENS = [
    # (token, clusterTime, eventIdentifier, uuid hex) -- tokens written by real servers.
    (  # v2 insert, ObjectId _id (a user's pymongo output, 2024)
        {"_data": "8266B518C6000000012B042C0100296E5A1004CDFFC2D506504F98B11EDBF328641438463C6F7065726174696F6E5479"
         "7065003C696E736572740046646F63756D656E744B65790046645F6964006466B518C657C4C7204E91E80F000004"},
        Timestamp(1723144390, 1),
        {"operationType": "insert", "documentKey": {"_id": ObjectId("66b518c657c4c7204e91e80f")}},
        "CDFFC2D506504F98B11EDBF328641438",
    ),
    (  # v2 insert, the example of the MongoDB manual (via debezium's tests)
        {"_data": "82635019A0000000012B042C0100296E5A1004AB1154ACACD849A48C61756D70D3B21F463C6F7065726174696F6E5479"
         "7065003C696E736572740046646F63756D656E744B65790046645F69640064635019A078BE67426D7CF4D2000004"},
        Timestamp(1666193824, 1),
        {"operationType": "insert", "documentKey": {"_id": ObjectId("635019a078be67426d7cf4d2")}},
        "AB1154ACACD849A48C61756D70D3B21F",
    ),
    (  # v2 update, string _id
        {"_data": "8265580539000000012B042C0100296E5A1004A7F55A5B35BD4C7DB2CD56C6CFEA9C49463C6F7065726174696F6E5479"
         "7065003C7570646174650046646F63756D656E744B657900463C5F6964003C6265657200000004"},
        Timestamp(1700267321, 1),
        {"operationType": "update", "documentKey": {"_id": "beer"}},
        "A7F55A5B35BD4C7DB2CD56C6CFEA9C49",
    ),
    (  # v2 insert, double _id 6.0: type bits (from the server's streams unit tests)
        {"_data": "826470FAD4000000152B042C0100296E5A1004E13815DACBED4169A6BBBC55398347EF463C6F7065726174696F6E5479"
         "7065003C696E736572740046646F63756D656E744B657900461E5F6964002B0C000004",
         "_typeBits": Binary(base64.b64decode("goAA"), 0)},
        Timestamp(1685125844, 21),
        {"operationType": "insert", "documentKey": {"_id": 6.0}},
        "E13815DACBED4169A6BBBC55398347EF",
    ),
    (  # v2 createIndexes (expanded event): operationDescription, double bits in the index key
        {"_data": "82687A09F4000000062B042C0100296E5A100435E288933C8245C6B0E9DE829C0E5056463C6F7065726174696F6E5479"
         "7065003C637265617465496E646578657300466F7065726174696F6E4465736372697074696F6E004650696E6465786573"
         "0050461E76002B04466B657900461E61002B02003C6E616D65003C615F310000461E76002B04466B657900461E62002B0200"
         "3C6E616D65003C625F31000000000004",
         "_typeBits": Binary(base64.b64decode("gwBCAA=="), 0)},
        Timestamp(1752828404, 6),
        {"operationType": "createIndexes", "operationDescription": {"indexes": [
            {"v": 2, "key": {"a": 1.0}, "name": "a_1"}, {"v": 2, "key": {"b": 1.0}, "name": "b_1"}]}},
        "35E288933C8245C6B0E9DE829C0E5056",
    ),
]  # fmt: skip

REAL_V1_TOKENS = [
    (  # v1 insert (4.x): the eventIdentifier is the bare documentKey
        {"_data": "825E4FA224000000012B022C0100296E5A100420D9F949CFC7496EA80E32BA633701A846645F696400645E4FA224A6717"
         "632D6EE2E850004"},
        Timestamp(1582277156, 1),
        {"_id": ObjectId("5e4fa224a6717632d6ee2e85")},
        "20D9F949CFC7496EA80E32BA633701A8",
    ),
    (  # v1 update of {_id: 3.0} (the MongoDB manual): type bits QA== = one double
        {"_data": "825F103644000000042B022C0100296E5A100452A662230D6B4C08B0AF844900F3A335461E5F6964002B060004",
         "_typeBits": Binary(base64.b64decode("QA=="), 0)},
        Timestamp(1594897988, 4),
        {"_id": 3.0},
        "52A662230D6B4C08B0AF844900F3A335",
    ),
]  # fmt: skip


@pytest.mark.parametrize("token, cluster_time, ident, uuid_hex", REAL_TOKENS)
def test_real_v2_tokens(token, cluster_time, ident, uuid_hex):
    data = decode_resume_token(token)
    assert data == ResumeTokenData(cluster_time, 2, EVENT_TOKEN_TYPE, 0, False, uuid_of(uuid_hex), ident)
    assert same(data.event_identifier, ident)
    assert encode_resume_token(data) == token
    if "documentKey" in ident:
        ts_key = (cluster_time.time << 32) | cluster_time.inc
        fast = encode_event_token(ts_key, 0, bytes.fromhex(uuid_hex), ident["operationType"], ident["documentKey"])
        assert fast == (token["_data"], bytes(token["_typeBits"]) if "_typeBits" in token else None)


@pytest.mark.parametrize("token, cluster_time, ident, uuid_hex", REAL_V1_TOKENS)
def test_real_v1_tokens(token, cluster_time, ident, uuid_hex):
    data = decode_resume_token(token)
    assert data == ResumeTokenData(cluster_time, 1, EVENT_TOKEN_TYPE, 0, False, uuid_of(uuid_hex), ident)
    assert same(data.event_identifier, ident)
    assert encode_resume_token(data) == token


def test_event_identifier_by_version():
    key = {"_id": 1}
    assert event_identifier("insert", key) == {"operationType": "insert", "documentKey": key}
    assert event_identifier("insert", key, version=1) == key
    assert event_identifier("create", operation_description={"idIndex": {}}, version=1) == {
        "operationType": "create",
        "operationDescription": {"idIndex": {}},
    }
    assert event_identifier("drop", version=1) is None
    with pytest.raises(ValueError):
        event_identifier("insert", key, {"x": 1})


def test_invalidate_fragment_and_txn_op_index_encoding():
    uuid = Binary(b"\x11" * 16, 4)
    ident = event_identifier("drop", operation_description={})
    base = ResumeTokenData(Timestamp(10, 1), uuid=uuid, event_identifier=ident)
    data = encode_resume_token(base)["_data"]
    invalidate = encode_resume_token(ResumeTokenData(Timestamp(10, 1), from_invalidate=True, uuid=uuid, event_identifier=ident))
    assert data[22:32] == "2C0100296E" and invalidate["_data"][22:32] == "2C0100296F"
    assert invalidate["_data"] > data
    in_txn = encode_resume_token(ResumeTokenData(Timestamp(10, 1), txn_op_index=300, uuid=uuid, event_identifier=ident))
    assert in_txn["_data"][22:36] == "2C01002C02586E"  # 300 << 1 == 0x258
    fragment = ResumeTokenData(Timestamp(10, 1), uuid=uuid, event_identifier=ident, fragment_num=3)
    frag = encode_resume_token(fragment)
    assert frag["_data"].endswith("002B0604") and decode_resume_token(frag) == fragment
    no_uuid = ResumeTokenData(Timestamp(10, 1), event_identifier=event_identifier("dropDatabase", operation_description={}))
    assert encode_resume_token(no_uuid)["_data"][32:34] == "14"  # v2: explicit null uuid
    assert decode_resume_token(encode_resume_token(no_uuid)) == no_uuid


# --- type bits ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key, has_type_bits",
    [
        ({"_id": 1}, False),
        ({"_id": "x", "sk": ObjectId()}, False),
        ({"_id": True, "a": None}, False),
        ({"_id": 1.0}, True),
        ({"_id": Int64(1)}, True),
        ({"_id": Decimal128("1")}, True),
        ({"_id": {"a": [1, 2.5]}}, True),
        ({"_id": 2**40}, True),  # a Python int beyond int32 is a BSON long
    ],
)
def test_type_bits_exactly_when_needed(key, has_type_bits):
    token = encode_resume_token(ResumeTokenData(Timestamp(5, 1), uuid=Binary(b"\x00" * 16, 4), event_identifier=event_identifier("insert", key)))
    assert ("_typeBits" in token) == has_type_bits
    decoded = decode_resume_token(token).event_identifier["documentKey"]
    expected = {k: (Int64(v) if type(v) is int and v >= 2**31 else v) for k, v in key.items()}
    assert same(decoded, expected)


def test_decoding_restores_int_long_double():
    key = {"i": 7, "l": Int64(7), "d": 7.0, "n": Decimal128("7.00")}
    token = encode_resume_token(ResumeTokenData(Timestamp(5, 1), uuid=Binary(b"\x00" * 16, 4), event_identifier=event_identifier("insert", key)))
    got = decode_resume_token(token).event_identifier["documentKey"]
    assert [type(v) for v in got.values()] == [int, Int64, float, Decimal128]
    assert str(got["n"]) == "7.00"


# --- properties ----------------------------------------------------------------------------

timestamps = st.builds(Timestamp, st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1))
small_timestamps = st.builds(Timestamp, st.integers(0, 3), st.integers(0, 3))
uuids = st.none() | st.binary(min_size=16, max_size=16).map(lambda b: Binary(b, 4))
small_uuids = st.none() | st.sampled_from([b"\x00" * 16, b"\x00" * 15 + b"\x01", b"\xff" * 16]).map(lambda b: Binary(b, 4))
op_types = st.sampled_from(["insert", "update", "replace", "delete"])


@st.composite
def token_datas(draw, ts=timestamps, uuid_strategy=uuids, keys=document_keys):
    cluster_time = draw(ts)
    if draw(st.integers(0, 4)) == 0:
        return ResumeTokenData(cluster_time, 2, HIGH_WATER_MARK_TOKEN_TYPE)
    if draw(st.booleans()):
        ident = event_identifier(draw(op_types), draw(keys))
    else:
        ident = event_identifier(draw(st.sampled_from(["create", "drop", "rename"])), operation_description=draw(documents))
    return ResumeTokenData(
        cluster_time,
        2,
        EVENT_TOKEN_TYPE,
        draw(st.integers(0, 3) | st.integers(0, 2**31 - 1)),
        draw(st.booleans()),
        draw(uuid_strategy),
        ident,
        draw(st.none() | st.integers(0, 5)),
    )


@HYPOTHESIS
@given(token_datas())
def test_round_trip(data):
    token = encode_resume_token(data)
    back = decode_resume_token(token)
    assert dataclasses.replace(back, event_identifier=None) == dataclasses.replace(data, event_identifier=None)
    assert same(back.event_identifier, data.event_identifier)
    assert encode_resume_token(back) == token


def _order_key(d: ResumeTokenData) -> list:
    """The fields in token order, as BSON values; absent trailing fields make a shorter key."""
    key = [d.cluster_time, d.version, d.token_type, d.txn_op_index, d.from_invalidate, d.uuid]
    if d.event_identifier is not None:
        key.append(d.event_identifier)
    if d.fragment_num is not None:
        key.append(d.fragment_num)
    return key


@HYPOTHESIS
@given(token_datas(small_timestamps, small_uuids), token_datas(small_timestamps, small_uuids))
def test_data_string_order_is_field_order(a, b):
    da, db = encode_resume_token(a)["_data"], encode_resume_token(b)["_data"]
    assert ((da > db) - (da < db)) == compare_sequences(_order_key(a), _order_key(b))


@HYPOTHESIS
@given(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1), st.sampled_from([0, 1, 2]))
def test_high_water_mark_fast_path_equals_general_encoder(secs, inc, version):
    """`make_high_water_mark_token` (v2: `encode_high_water_mark`) writes what the general encoder
    writes, and `high_water_mark_data` is what decoding it reads (v1 and v2 have high-water marks)."""
    ts = Timestamp(secs, inc)
    general = ResumeTokenData(ts, version, HIGH_WATER_MARK_TOKEN_TYPE)
    token = make_high_water_mark_token(ts, version)
    assert token == encode_resume_token(general)
    if version >= 1:  # (a v0 token has no tokenType: it reads back as an event's)
        assert decode_resume_token(token) == high_water_mark_data(ts, version) == general


@HYPOTHESIS
@given(token_datas())
def test_high_water_mark_sorts_before_events_at_its_time(data):
    hwm = make_high_water_mark_token(data.cluster_time)
    assert is_high_water_mark(hwm)
    if data.token_type == EVENT_TOKEN_TYPE:
        assert not is_high_water_mark(encode_resume_token(data))
        assert hwm["_data"] < encode_resume_token(data)["_data"]


@HYPOTHESIS
@given(
    st.integers(0, 2**64 - 1),
    st.integers(0, 3) | st.integers(0, 2**40),
    st.none() | st.binary(min_size=16, max_size=16),
    st.sampled_from(["insert", "update", "replace", "delete", "op\x00type"]),
    document_keys,
    st.booleans(),
)
def test_fast_path_equals_general_encoder(ts_key, txn_op_index, uuid, op, key, from_invalidate):
    data = ResumeTokenData(
        Timestamp(ts_key >> 32, ts_key & 0xFFFFFFFF),
        txn_op_index=txn_op_index,
        from_invalidate=from_invalidate,
        uuid=None if uuid is None else Binary(uuid, 4),
        event_identifier=event_identifier(op, key),
    )
    token = encode_resume_token(data)
    expected = (token["_data"], bytes(token["_typeBits"]) if "_typeBits" in token else None)
    assert encode_event_token(ts_key, txn_op_index, uuid, op, key, from_invalidate) == expected


@HYPOTHESIS
@given(
    st.integers(0, 2**64 - 1),
    st.none() | st.binary(min_size=16, max_size=16),
    st.sampled_from(["insert", "update", "replace", "delete"]),
    document_keys | st.fixed_dictionaries({"_id": st.integers(-(2**31), 2**31 - 1) | st.text() | st.builds(ObjectId)},
                                          optional={"k": st.integers(-(2**31), 2**31 - 1) | st.text()}),
)
def test_token_from_the_document_keys_bytes_equals_the_general_encoder(ts_key, uuid, op, key):
    from mongosim.oplog.bsonutil import encode_in_order

    fast = encode_crud_token(ts_key, uuid, op, encode_in_order(key))  # (field order kept, as in `o2`)
    if fast is not None:  # (None: a type with type bits, or NUL in a string — the caller decodes)
        assert fast == encode_event_token(ts_key, 0, uuid, op, key, False)
    elif all(type(v) in (int, str, ObjectId) for v in key.values()):
        assert any(type(v) is str and "\x00" in v for v in key.values()) or \
            any(type(v) is int and not -(2**31) <= v < 2**31 for v in key.values())


# --- bad tokens ----------------------------------------------------------------------------

GOOD = "8269B03187000000022B0429296E1404"


@pytest.mark.parametrize(
    "token, code",
    [
        ({}, 40647),
        ({"somefield": "stuff"}, 40647),
        ({"_data": None}, 40647),
        ({"_data": 0}, 40647),
        ({"_data": b"\xde\xad"}, 40647),
        ({"_data": GOOD, "_typeBits": "string"}, 40648),
        ({"_data": GOOD, "_typeBits": Binary(b"\x00", 4)}, 40648),
        ({"_data": GOOD, "_typeBits": None}, 40648),
        ({"_data": ""}, 40649),
        ({"_data": "0000000000"}, 50811),
        ({"_data": "A5554D56FF"}, 50811),
        ({"_data": GOOD, "_typeBits": Binary(bytes([165, 85, 77, 86, 255]), 0)}, "Overflow"),
        ({"_data": "3C37"}, 50816),
        ({"_data": "nonsense"}, "FailedToParse"),
        ({"_data": "8269B0318700000002"}, 50796),  # clusterTime only
        ({"_data": "8269B03187000000022B0404"}, 51055),  # version 2, nothing else
        ({"_data": "8269B0318700000002" + "2B0604"}, 50795),  # version 3
        ({"_data": "8269B0318700000002" + "3C7600" + "04"}, 50854),  # version is a string
        ({"_data": "8269B03187000000022B04" + "2B0A" + "296E1404"}, 51057),  # tokenType 5
        ({"_data": "8269B03187000000022B04" + "3C7400" + "296E1404"}, 51056),
        ({"_data": "8269B03187000000022B042904"}, 50793),
        ({"_data": "8269B03187000000022B0429" + "27FD" + "6E1404"}, 50794),  # txnOpIndex -1
        ({"_data": "8269B03187000000022B0429" + "2B02" + "6E1404", "_typeBits": Binary(b"\x20", 0)}, 50855),  # a long
        ({"_data": "8269B03187000000022B04292904"}, 50872),
        ({"_data": "8269B03187000000022B042929" + "2B02" + "1404"}, 50870),
        ({"_data": "8269B03187000000022B0429296E04"}, 6189500),  # v2 without the uuid/null
        ({"_data": "8269B03187000000022B0429296E" + "5A0204ABCD" + "04"}, "InvalidUUID"),
        ({"_data": "8269B03187000000022B0429296E14" + "4600" + "04"}, 6189504),  # HWM with an event id
        ({"_data": "8269B03187000000022B042C0100296E1404"}, 6189501),  # event without an event id
        ({"_data": "8269B03187000000022B042C0100296E14" + "2B02" + "04"}, 6189503),
        ({"_data": "8269B03187000000022B042C0100296E14" + "4600" + "27FD" + "04"}, 7182501),
        ({"_data": "8269B03187000000022B042C0100296E14" + "4600" + "2B02" + "2B02" + "04"}, 40646),
    ],
)
def test_bad_tokens(token, code):
    with pytest.raises(MongoError) as err:
        decode_resume_token(token)
    assert err.value.code == MongoError(code, "x").code, err.value


def test_error_messages_match_the_server():
    with pytest.raises(MongoError, match="not a valid hex string"):
        decode_resume_token({"_data": "nonsense"})
    with pytest.raises(MongoError, match="Failed to find null terminator in string"):
        decode_resume_token({"_data": "3C37"})
    with pytest.raises(MongoError, match="^Location40647.*Bad resume token: _data of missing or of wrong type"):
        decode_resume_token({"_data": 1})


def test_lowercase_hex_is_accepted():
    assert decode_resume_token({"_data": GOOD.lower()}) == decode_resume_token({"_data": GOOD})


@pytest.mark.parametrize(
    "data, code",
    [
        (ResumeTokenData(Timestamp(1, 1), token_type=HIGH_WATER_MARK_TOKEN_TYPE, txn_op_index=1), 6189505),
        (ResumeTokenData(Timestamp(1, 1), version=1, event_identifier={"_id": 1}), 50788),
        (ResumeTokenData(Timestamp(1, 1)), 6189502),
        (ResumeTokenData(Timestamp(1, 1), version=1, uuid=Binary(b"\x00" * 16, 4), event_identifier={"_id": 1}, fragment_num=1), 7182504),
    ],
)
def test_invalid_token_data_is_refused(data, code):
    with pytest.raises(MongoError) as err:
        encode_resume_token(data)
    assert err.value.code == code
