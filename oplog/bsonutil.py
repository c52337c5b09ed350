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
_HEADER_BYTES = [0]  # _HEADER_BYTES[n]: the bytes of the first n element headers
for _h in _ELEMENT_HEADERS:
    _HEADER_BYTES.append(_HEADER_BYTES[-1] + len(_h))
_BATCH_FIELDS = ("firstBatch", "nextBatch")
_CURSOR_NAME = b"\x03cursor\x00"
_I32 = 4


def _int32(n: int) -> bytes:
    return n.to_bytes(4, "little")


def encode_reply_parts(reply: dict) -> tuple[list, int]:
    """A command reply's BSON as pieces, and their total length: joined, they are `encode_reply(reply)`.

    A `RawBatch` in `reply["cursor"]` is not copied here: its documents are pieces of their own,
    between their array element headers, and every length around them is summed, not measured
    on copies.  The wire joins the pieces once, into the message (a 1000-event batch is half a
    megabyte, which the plain way copied about eight times)."""
    cur = reply.get("cursor")
    if isinstance(cur, dict):
        for field in _BATCH_FIELDS:
            batch = cur.get(field)
            if isinstance(batch, RawBatch):
                break
        else:
            body = encode(reply)
            return [body], len(body)
        n = len(batch)
        if n <= 10_000:
            headers, header_bytes = _ELEMENT_HEADERS[:n], _HEADER_BYTES[n]
        else:
            headers = [b"\x03" + str(i).encode() + b"\x00" for i in range(n)]
            header_bytes = sum(map(len, headers))
        elements: list = [None] * (2 * n)
        elements[0::2] = headers  # interleave headers and documents
        elements[1::2] = batch
        array_len = _I32 + header_bytes + sum(map(len, batch)) + 1
        name = b"\x04" + field.encode() + b"\x00"
        rest = encode({k: v for k, v in cur.items() if k != field})[4:-1]
        cursor_len = _I32 + len(name) + array_len + len(rest) + 1
        keys = list(reply)
        at = keys.index("cursor")
        pre = encode({k: reply[k] for k in keys[:at]})[4:-1] if at else b""
        post = encode({k: reply[k] for k in keys[at + 1:]})[4:-1]
        total = _I32 + len(pre) + len(_CURSOR_NAME) + cursor_len + len(post) + 1
        return [_int32(total), pre, _CURSOR_NAME, _int32(cursor_len), name, _int32(array_len), *elements,
                b"\x00", rest, b"\x00", post, b"\x00"], total
    body = encode(reply)
    return [body], len(body)


def encode_reply(reply: dict) -> bytes:
    """Encode a command reply; a `RawBatch` in `reply["cursor"]` is spliced in without re-encoding."""
    parts, _total = encode_reply_parts(reply)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def plain(doc):
    """A document as a dict, whatever form it travels in (dict, bytes, RawBSONDocument)."""
    if isinstance(doc, (bytes, bytearray, memoryview)):
        return decode(doc)
    if isinstance(doc, RawBSONDocument):
        return decode(doc.raw)
    return doc
