"""Resume tokens: the `_id` of every change event and every postBatchResumeToken.

A token is `{_data: "<hex>", _typeBits?: BinData(0)}`: the uppercase hex of one KeyString
(see `oplog.keystring`) of these values, in this order (server: db/pipeline/resume_token.cpp):

    clusterTime   Timestamp
    version       int            0, 1 or 2 (8.0 writes 2)
    tokenType     int            v1+: 0 = high-water mark, 128 = event
    txnOpIndex    int            (long if it does not fit an int; decoding then refuses it)
    fromInvalidate bool          v1+
    uuid          BinData(4)     the collection UUID; v2 writes null when there is none
    eventIdentifier object       v2: {operationType, documentKey} for CRUD events,
                                 {operationType, operationDescription} for DDL events;
                                 v1: the bare documentKey; absent in high-water marks
    fragmentNum   int            v2, only for the fragments of a split event

`_typeBits` is present only when some type bit is 1 (a long, double or decimal in the key).
Because KeyString preserves BSON order, tokens compare correctly as plain strings on
`_data`, and a high-water mark (tokenType 0) sorts before every event (128) of the same
clusterTime.  Equality of tokens is equality of `_data`.

`encode_event_token` is the hot-path encoder for one change event; it caches the bytes that
only depend on (txnOpIndex, fromInvalidate, uuid, operationType) and agrees byte for byte
with `encode_resume_token`.
"""

from __future__ import annotations

import binascii
import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bson.binary import Binary
from bson.datetime_ms import DatetimeMS
from bson.int64 import Int64
from bson.objectid import ObjectId
from bson.timestamp import Timestamp

from mongosim.oplog import keystring
from mongosim.oplog.errors import MongoError

EVENT_TOKEN_TYPE = 128
HIGH_WATER_MARK_TOKEN_TYPE = 0
DEFAULT_VERSION = 2

# Operation types whose v1 eventIdentifier is the bare documentKey.
CLASSIC_OPERATION_TYPES = frozenset(
    {
        "insert", "update", "replace", "delete", "drop", "rename", "dropDatabase",
        "invalidate", "reshardBegin", "reshardDoneCatchUp", "kNewShardDetected",
    }
)  # fmt: skip

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


@dataclass(frozen=True, slots=True)
class ResumeTokenData:
    """The decoded content of a resume token (server: ResumeTokenData)."""

    cluster_time: Timestamp
    version: int = DEFAULT_VERSION
    token_type: int = EVENT_TOKEN_TYPE
    txn_op_index: int = 0
    from_invalidate: bool = False
    uuid: Binary | None = None  # collection UUID, Binary subtype 4
    event_identifier: Any = None  # v2: {operationType, documentKey | operationDescription}; v1: documentKey
    fragment_num: int | None = None


def event_identifier(
    operation_type: str,
    document_key: Mapping | None = None,
    operation_description: Mapping | None = None,
    version: int = DEFAULT_VERSION,
) -> Any:
    """The eventIdentifier the server builds for an event (v1 classic events: the documentKey)."""
    if document_key is not None and operation_description is not None:
        raise ValueError("both documentKey and operationDescription cannot be present for an event")
    if version <= 1 and operation_type in CLASSIC_OPERATION_TYPES:
        return document_key
    if document_key is not None:
        return {"operationType": operation_type, "documentKey": document_key}
    return {"operationType": operation_type, "operationDescription": operation_description}


def _append_number(n: int) -> int | Int64:
    """BSONObjBuilder::appendNumber(long long): an int when it fits, else a long."""
    return int(n) if _INT32_MIN <= n <= _INT32_MAX else Int64(n)


def _key_values(data: ResumeTokenData) -> list[Any]:
    """The sequence of values the server encodes as the token's KeyString."""
    values: list[Any] = [data.cluster_time, int(data.version)]
    if data.version >= 1:
        values.append(int(data.token_type))
    values.append(_append_number(data.txn_op_index))
    if data.version >= 1:
        values.append(bool(data.from_invalidate))
    if data.token_type == HIGH_WATER_MARK_TOKEN_TYPE and (
        data.txn_op_index > 0 or data.from_invalidate or data.uuid is not None or data.event_identifier is not None
    ):
        raise MongoError(6189505, "Invalid high water mark token")
    if data.uuid is None and data.event_identifier is not None and data.version < 2:
        raise MongoError(50788, "Unexpected resume token with a eventIdentifier but no UUID")
    if data.token_type == EVENT_TOKEN_TYPE and data.event_identifier is None and data.version >= 2:
        raise MongoError(6189502, "Expected an eventIdentifier for an event resume token")
    if data.uuid is not None:
        values.append(data.uuid if isinstance(data.uuid, Binary) else Binary(bytes(data.uuid), 4))
    elif data.version >= 2:
        values.append(None)
    if data.event_identifier is not None:
        values.append(data.event_identifier)
    if data.fragment_num is not None:
        if data.version < 2:
            raise MongoError(7182504, f"Tokens of version {data.version} cannot have a fragmentNum")
        values.append(_append_number(data.fragment_num))
    return values


def _token(data_hex: str, type_bits: bytes | None) -> dict:
    if type_bits:
        return {"_data": data_hex, "_typeBits": Binary(type_bits, 0)}
    return {"_data": data_hex}


def encode_resume_token(data: ResumeTokenData) -> dict:
    """`{_data, _typeBits?}` exactly as the server writes it."""
    key, type_bits = keystring.encode_key(_key_values(data))
    return _token(key.hex().upper(), type_bits)


def make_high_water_mark_token(cluster_time: Timestamp, version: int = DEFAULT_VERSION) -> dict:
    """The high-water-mark token at `cluster_time` (sorts before every event at that time).  A v2 mark
    is written by `encode_high_water_mark` (a stream opened over N shards starts N shard cursors, each
    with a mark as its first postBatchResumeToken)."""
    if type(version) is int and version == DEFAULT_VERSION:  # (a bool or Int64 encodes otherwise)
        return {"_data": encode_high_water_mark((cluster_time.time << 32) | cluster_time.inc)}
    return encode_resume_token(ResumeTokenData(cluster_time, version, HIGH_WATER_MARK_TOKEN_TYPE))


def high_water_mark_data(cluster_time: Timestamp, version: int = DEFAULT_VERSION) -> ResumeTokenData:
    """What `decode_resume_token` reads from `make_high_water_mark_token(cluster_time, version)`."""
    return ResumeTokenData(cluster_time, version, HIGH_WATER_MARK_TOKEN_TYPE)


def is_high_water_mark(token: Mapping) -> bool:
    data = decode_resume_token(token)
    return data == high_water_mark_data(data.cluster_time, data.version)


# --- decoding ----------------------------------------------------------------------------


def _render(value: Any) -> str:
    """A short rendering of a token document for error messages (like Document::toString)."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_render(v)}" for k, v in value.items()) + "}"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bytes):
        subtype = value.subtype if isinstance(value, Binary) else 0
        return f"BinData({subtype}, {value.hex().upper()})"
    if value is None:
        return "null"
    return repr(value)


def _type_bits_of(token: Mapping) -> bytes:
    if "_typeBits" not in token:
        return b""
    tb = token["_typeBits"]
    if isinstance(tb, bytes) and (not isinstance(tb, Binary) or tb.subtype == 0):
        return bytes(tb)
    raise MongoError(40648, f"Bad resume token: _typeBits of wrong type {_render(token)}")


def _is_int(v: Any) -> bool:
    return type(v) is int


def _cluster_time(v: Any) -> Timestamp:
    """BSONElement::timestamp(): a Timestamp, a Date's raw 8 bytes, else Timestamp(0, 0)."""
    if isinstance(v, Timestamp):
        return v
    if isinstance(v, (datetime.datetime, DatetimeMS)):
        ms = int(v) if isinstance(v, DatetimeMS) else keystring.datetime_to_ms(v)
        u = ms & 0xFFFF_FFFF_FFFF_FFFF
        return Timestamp(u >> 32, u & 0xFFFFFFFF)
    return Timestamp(0, 0)


def decode_resume_token(token: Mapping) -> ResumeTokenData:
    """Parse and validate a token the way the server does (same error codes and messages)."""
    data_hex = token.get("_data") if isinstance(token, Mapping) else None
    if not isinstance(data_hex, str):
        raise MongoError(
            40647,
            f"Bad resume token: _data of missing or of wrong type. Expected string, got {_render(token)}",
        )
    type_bits = _type_bits_of(token)
    keystring.check_type_bits(type_bits)  # the server reads the type bits first
    try:
        if len(data_hex) % 2:
            raise ValueError
        raw = binascii.unhexlify(data_hex)
    except (ValueError, binascii.Error):
        raise MongoError("FailedToParse", "resume token string was not a valid hex string") from None
    values = keystring.decode_key(raw, type_bits)
    return _data_from_values(values)


def _data_from_values(values: list[Any]) -> ResumeTokenData:
    it = iter(values)
    missing = object()

    def more() -> Any:
        return next(it, missing)

    first = more()
    if first is missing:
        raise MongoError(40649, "invalid empty resume token")
    cluster_time = _cluster_time(first)
    version = more()
    if version is missing:
        raise MongoError(50796, "Resume Token does not contain version")
    if not _is_int(version):
        raise MongoError(50854, "Invalid resume token: wrong type for version")
    if version not in (0, 1, 2):
        raise MongoError(50795, "Invalid Resume Token: only supports version 0, 1 and 2")
    token_type = EVENT_TOKEN_TYPE
    if version >= 1:
        token_type = more()
        if token_type is missing:
            raise MongoError(51055, "Resume Token does not contain tokenType")
        if not _is_int(token_type):
            raise MongoError(51056, "Resume Token tokenType is not an int.")
        if token_type not in (EVENT_TOKEN_TYPE, HIGH_WATER_MARK_TOKEN_TYPE):
            raise MongoError(51057, f"Token type {token_type} not recognized")
    txn_op_index = more()
    if txn_op_index is missing:
        raise MongoError(50793, "Resume Token does not contain txnOpIndex")
    if not _is_int(txn_op_index):
        raise MongoError(50855, "Resume Token txnOpIndex is not an integer")
    if txn_op_index < 0:
        raise MongoError(50794, "Invalid Resume Token: txnOpIndex should be non-negative")
    from_invalidate = False
    if version >= 1:
        from_invalidate = more()
        if from_invalidate is missing:
            raise MongoError(50872, "Resume Token does not contain fromInvalidate")
        if type(from_invalidate) is not bool:
            raise MongoError(50870, "Resume Token fromInvalidate is not a boolean.")
    result = dict(
        cluster_time=cluster_time,
        version=version,
        token_type=token_type,
        txn_op_index=txn_op_index,
        from_invalidate=from_invalidate,
    )
    uuid = more()
    if uuid is missing:
        if version > 1:
            raise MongoError(6189500, "Expected UUID or null")
        return ResumeTokenData(**result)
    if uuid is not None:
        if not (isinstance(uuid, Binary) and uuid.subtype == 4 and len(uuid) == 16):
            raise MongoError("InvalidUUID", "uuid must be a 16-byte binary field with UUID (4) subtype")
        result["uuid"] = uuid
    ident = more()
    if token_type == HIGH_WATER_MARK_TOKEN_TYPE and ident is not missing:
        raise MongoError(6189504, "Invalid high water mark token")
    if ident is missing:
        if token_type == EVENT_TOKEN_TYPE and version >= 2:
            raise MongoError(6189501, "Expected an eventIdentifier for an event resume token")
        return ResumeTokenData(**result)
    if not isinstance(ident, dict):
        raise MongoError(6189503, "Resume Token eventIdentifier is not an object")
    result["event_identifier"] = ident
    extra = more()
    if extra is not missing and version >= 2:
        if not (_is_int(extra) and extra >= 0):
            raise MongoError(7182501, "Resume token 'fragmentNum' must be a non-negative integer.")
        result["fragment_num"] = extra
        extra = more()
    if extra is not missing:
        raise MongoError(40646, "invalid oversized resume token")
    return ResumeTokenData(**result)


# --- the hot path ------------------------------------------------------------------------

_EVENT_V2_HEAD = b"\x2b\x04\x2c\x01\x00"  # version 2, tokenType 128
_OPERATION_TYPE_FIELD = b"\x46\x3coperationType\x00\x3c"
_DOCUMENT_KEY_FIELD = b"\x46documentKey\x00\x46"
_TAIL_HEX = "000004"  # end of documentKey, end of eventIdentifier, end of key
_PREFIX_CACHE: dict[tuple, tuple[str, int]] = {}
_PREFIX_CACHE_MAX = 4096
_NAME_CACHE: dict[str, bytes] = {}
_POSITIVE_INT_CTYPE = [b""] + [bytes((keystring.NUMERIC_POSITIVE_1_BYTE_INT + i,)) for i in range(8)]


def _prefix(txn_op_index: int, from_invalidate: bool, uuid_bytes: bytes | None, operation_type: str) -> tuple[str, int]:
    """Hex of everything between the clusterTime and the documentKey's fields, and its type bits."""
    key = (txn_op_index, from_invalidate, uuid_bytes, operation_type)
    hit = _PREFIX_CACHE.get(key)
    if hit is not None:
        return hit
    tb = keystring.TypeBits(0, 4)  # version and tokenType: ints
    head = keystring.encode_value(_append_number(txn_op_index), tb)
    uuid_part = keystring.encode_value(None if uuid_bytes is None else Binary(uuid_bytes, 4), tb)
    op = keystring.encode_value(operation_type, tb)[1:]  # the string's bytes after its CType
    raw = _EVENT_V2_HEAD + head + (b"\x6f" if from_invalidate else b"\x6e") + uuid_part
    raw += _OPERATION_TYPE_FIELD + op + _DOCUMENT_KEY_FIELD
    hit = (raw.hex().upper(), tb.bits)
    if len(_PREFIX_CACHE) >= _PREFIX_CACHE_MAX:
        _PREFIX_CACHE.clear()
    _PREFIX_CACHE[key] = hit
    return hit


def _field_name(name: str) -> bytes:
    encoded = _NAME_CACHE.get(name)
    if encoded is None:
        encoded = keystring.c_string(name) + b"\x00"
        if len(_NAME_CACHE) < _PREFIX_CACHE_MAX:
            _NAME_CACHE[name] = encoded
    return encoded


def _document_key_fields(document_key: Mapping) -> bytes | None:
    """The documentKey's fields when every type bit they add is 0 (ObjectId, int, str...)."""
    parts = []
    for name, value in document_key.items():
        t = type(value)
        if t is ObjectId:
            parts.append(b"\x64" + _field_name(name) + b"\x64" + value.binary)
        elif t is int:
            if value > 0 and value <= _INT32_MAX:
                shifted = value << 1
                n = (shifted.bit_length() + 7) >> 3
                parts.append(b"\x1e" + _field_name(name) + _POSITIVE_INT_CTYPE[n] + shifted.to_bytes(n, "big"))
            elif _INT32_MIN <= value <= _INT32_MAX:
                parts.append(b"\x1e" + _field_name(name) + keystring.encode_value(value, keystring.TypeBits()))
            else:
                return None
        elif t is str:
            data = value.encode("utf-8")
            if b"\x00" in data:
                return None
            parts.append(b"\x3c" + _field_name(name) + b"\x3c" + data + b"\x00")
        else:
            return None
    return b"".join(parts)


def bson_document_key_fields(raw: bytes) -> bytes | None:
    """`_document_key_fields` read straight from the documentKey's BSON bytes (no decode):
    ObjectId, int32 and string fields; None for any other type (the caller decodes)."""
    parts = []
    pos, end = 4, len(raw) - 1
    while pos < end:
        t = raw[pos]
        name_end = raw.index(0, pos + 1)
        name = raw[pos + 1 : name_end]
        v = name_end + 1
        if t == 0x07:  # ObjectId
            parts.append(b"\x64" + name + b"\x00\x64" + raw[v : v + 12])
            pos = v + 12
        elif t == 0x10:  # int32
            value = int.from_bytes(raw[v : v + 4], "little", signed=True)
            if value > 0:
                shifted = value << 1
                n = (shifted.bit_length() + 7) >> 3
                parts.append(b"\x1e" + name + b"\x00" + _POSITIVE_INT_CTYPE[n] + shifted.to_bytes(n, "big"))
            else:
                parts.append(b"\x1e" + name + b"\x00" + keystring.encode_value(value, keystring.TypeBits()))
            pos = v + 4
        elif t == 0x02:  # string
            size = int.from_bytes(raw[v : v + 4], "little")
            data = raw[v + 4 : v + 3 + size]
            if b"\x00" in data:
                return None
            parts.append(b"\x3c" + name + b"\x00\x3c" + data + b"\x00")
            pos = v + 4 + size
        else:
            return None
    return b"".join(parts)


def crud_token_prefix(uuid_bytes: bytes | None, operation_type: str) -> bytes | None:
    """The KeyString bytes of a CRUD event token (txnOpIndex 0) between its clusterTime and its
    documentKey's fields; None when they carry type bits (take `encode_event_token` then).  A token's
    `_data` is the hex of `82 <clusterTime, 8 bytes big-endian> <this> <documentKey fields> 00 00 04`."""
    prefix_hex, bits = _prefix(0, False, uuid_bytes, operation_type)
    return None if bits else bytes.fromhex(prefix_hex)


def encode_crud_token(ts_key: int, uuid_bytes: bytes | None, operation_type: str,
                      document_key_bson: bytes) -> tuple[str, bytes | None] | None:
    """`encode_event_token` (txnOpIndex 0) from the documentKey's BSON bytes, when its fields
    are of the types that add no type bits; None otherwise (decode and use `encode_event_token`)."""
    prefix_hex, bits = _prefix(0, False, uuid_bytes, operation_type)
    if bits:
        return None
    fields = bson_document_key_fields(document_key_bson)
    if fields is None:
        return None
    return "82" + format(ts_key, "016X") + prefix_hex + fields.hex().upper() + _TAIL_HEX, None


def encode_event_token(
    ts_key: int,
    txn_op_index: int,
    uuid_bytes: bytes | None,
    operation_type: str,
    document_key: Mapping,
    from_invalidate: bool = False,
) -> tuple[str, bytes | None]:
    """(`_data`, `_typeBits` or None) of a v2 CRUD event token, as `encode_resume_token` would.

    `ts_key` is the clusterTime as `(secs << 32) | inc`.
    """
    prefix_hex, bits = _prefix(txn_op_index, from_invalidate, uuid_bytes, operation_type)
    if not bits:  # (a txnOpIndex beyond int32 sets a bit)
        fields = _document_key_fields(document_key)
        if fields is not None:
            return "82" + format(ts_key, "016X") + prefix_hex + fields.hex().upper() + _TAIL_HEX, None
    # Other types: the general encoder for the documentKey's body, after the prefix's type bits.
    tb = keystring.TypeBits(bits, 7)
    body = keystring.encode_value(document_key, tb)[1:]  # without the object's CType
    data_hex = "82" + format(ts_key, "016X") + prefix_hex + body.hex().upper() + "0004"
    return data_hex, tb.serialize() or None


def encode_high_water_mark(ts_key: int) -> str:
    """`_data` of the v2 high-water mark at `ts_key` (`(secs << 32) | inc`)."""
    return "82" + format(ts_key, "016X") + "2B0429296E1404"
