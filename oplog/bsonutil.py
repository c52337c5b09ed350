"""BSON conventions shared by every layer: one codec, pymongo's C `bson`.

Documents are plain `dict`s in field order; int64 stays `Int64`, UUIDs stay
`Binary` subtype 4, datetimes are naive UTC (`DatetimeMS` when out of range) so
that decode -> encode reproduces the same bytes.
"""

from __future__ import annotations

import bson
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.raw_bson import RawBSONDocument

CODEC = CodecOptions(document_class=dict, tz_aware=False, datetime_conversion=DatetimeConversion.DATETIME_AUTO)
RAW_CODEC = CodecOptions(document_class=RawBSONDocument, tz_aware=False, datetime_conversion=DatetimeConversion.DATETIME_AUTO)

MAX_BSON_OBJECT_SIZE = 16 * 1024 * 1024
MAX_MESSAGE_SIZE_BYTES = 48_000_000
MAX_WRITE_BATCH_SIZE = 100_000


def encode(doc) -> bytes:
    return bson.encode(doc, codec_options=CODEC)


def encode_in_order(doc) -> bytes:
    """Encode keeping the field order exactly (bson.encode moves a top-level `_id` first).

    Change events need it: the server puts `to` (rename) and `txnNumber`/`lsid`
    (transactions) before `_id`.
    """
    return bson._dict_to_bson(doc, False, CODEC, False)


def decode(data: bytes | memoryview) -> dict:
    return bson.decode(data, codec_options=CODEC)


def decode_all(data: bytes | memoryview) -> list[dict]:
    return bson.decode_all(data, codec_options=CODEC)


def raw(data: bytes) -> RawBSONDocument:
    """Wrap already-encoded BSON so that it passes through replies without re-encoding."""
    return RawBSONDocument(data, RAW_CODEC)
