"""BSON conventions shared by every layer: one codec, pymongo's C `bson`.

Documents are plain `dict`s in field order; int64 stays `Int64`, UUIDs stay
`Binary` subtype 4, datetimes are naive UTC (`DatetimeMS` when out of range) so
that decode -> encode reproduces the same bytes.
"""

from __future__ import annotations

from operator import itemgetter

import bson
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.raw_bson import RawBSONDocument

CODEC = CodecOptions(document_class=dict, tz_aware=False, datetime_conversion=DatetimeConversion.DATETIME_AUTO)
RAW_CODEC = CodecOptions(document_class=RawBSONDocument, tz_aware=False, datetime_conversion=DatetimeConversion.DATETIME_AUTO)

MAX_BSON_OBJECT_SIZE = 16 * 1024 * 1024
MAX_MESSAGE_SIZE_BYTES = 48_000_000
MAX_WRITE_BATCH_SIZE = 100_000


# bson.encode / decode / decode_all without their wrappers' argument checks (the codec is ours):
# every command and reply goes through these
_dict_to_bson = bson._dict_to_bson
_bson_to_dict = bson._bson_to_dict
_decode_all = bson._decode_all


def encode(doc) -> bytes:
    return _dict_to_bson(doc, False, CODEC)


def encode_in_order(doc) -> bytes:
    """Encode keeping the field order exactly (bson.encode moves a top-level `_id` first).

    Change events need it: the server puts `to` (rename) and `txnNumber`/`lsid`
    (transactions) before `_id`.
    """
    return _dict_to_bson(doc, False, CODEC, False)


def decode(data: bytes | memoryview) -> dict:
    return _bson_to_dict(data, CODEC)


def decode_all(data: bytes | memoryview) -> list[dict]:
    return _decode_all(data, CODEC)


def raw(data: bytes) -> RawBSONDocument:
    """Wrap already-encoded BSON so that it passes through replies without re-encoding."""
    return RawBSONDocument(data, RAW_CODEC)


class DocumentSequence(list):
    """Documents as they came in an OP_MSG document sequence: decoded, with `raws`, the BSON bytes
    each was decoded from (None where a document was changed since).  Write paths that only pass a
    document on (insert: into the oplog entry, to another shard) use the bytes; the rest of the code
    sees a plain list of documents."""

    __slots__ = ("raws",)

    def __init__(self, docs=(), raws: list | None = None) -> None:
        super().__init__(docs)
        self.raws = raws if raws is not None else [None] * len(self)

    def subset(self, indexes: list[int]) -> "DocumentSequence":
        """The documents at `indexes`, with their bytes (picked in one call each: no loop per document)."""
        if len(indexes) == len(self) and indexes == list(range(len(self))):
            return self  # (every document, in order: the sequence itself; it is never changed in place)
        if len(indexes) < 2:
            if not indexes:
                return DocumentSequence()
            i = indexes[0]
            return DocumentSequence([self[i]], [self.raws[i]])
        pick = itemgetter(*indexes)
        return DocumentSequence(pick(self), list(pick(self.raws)))


def raws_of(docs: list) -> list:
    """The BSON bytes of each document of `docs` (a DocumentSequence's where it has them)."""
    raws = getattr(docs, "raws", None)
    if raws is None:
        return [encode(d) for d in docs]
    if None not in raws:
        return raws
    return [r if r is not None else encode(d) for d, r in zip(docs, raws)]


class RawBatch(list):
    """A cursor batch of already-encoded documents (`bytes`), spliced into the reply as-is.

    Change events travel from the shard to the client this way: encoded once on
    the shard, never decoded or re-encoded by the router.
    """


_ELEMENT_HEADERS = [b"\x03" + str(i).encode() + b"\x00" for i in range(10_000)]  # "document element i"
_BATCH_FIELDS = ("firstBatch", "nextBatch")


def _array_of_documents(docs: list[bytes]) -> bytes:
    n = len(docs)
    headers = _ELEMENT_HEADERS[:n] if n <= 10_000 else [b"\x03" + str(i).encode() + b"\x00" for i in range(n)]
    parts: list = [None] * (2 * n)
    parts[0::2] = headers  # interleave headers and documents, then copy once
    parts[1::2] = docs
    body = b"".join(parts)
    return (len(body) + 5).to_bytes(4, "little") + body + b"\x00"


def encode_reply(reply: dict) -> bytes:
    """Encode a command reply; a `RawBatch` in `reply["cursor"]` is spliced in without re-encoding."""
    cur = reply.get("cursor")
    if isinstance(cur, dict):
        for field in _BATCH_FIELDS:
            if isinstance(cur.get(field), RawBatch):
                break
        else:
            return encode(reply)
        array = _array_of_documents(cur[field])
        rest = encode({k: v for k, v in cur.items() if k != field})[4:-1]
        head = b"\x04" + field.encode() + b"\x00" + array
        cursor_bytes = (len(head) + len(rest) + 5).to_bytes(4, "little") + head + rest + b"\x00"
        return encode({**reply, "cursor": RawBSONDocument(cursor_bytes, RAW_CODEC)})
    return encode(reply)


def plain(doc):
    """A document as a dict, whatever form it travels in (dict, bytes, RawBSONDocument)."""
    if isinstance(doc, (bytes, bytearray, memoryview)):
        return decode(doc)
    if isinstance(doc, RawBSONDocument):
        return decode(doc.raw)
    return doc
