"""Shard keys: extracting a document's shard key, hashing, and ordering chunk bounds.

A shard key pattern such as `{region: 1, _id: 1}` or `{user: "hashed"}` names
the fields that place a document on a chunk.  For a hashed field the chunk
space holds the field's 64-bit hash (`hash64`: the server's BSONElementHasher,
an MD5 over the seed, the value's canonical type and its bytes, numbers
squashed to int64).  Chunk bounds are compared field by field in BSON order,
with MinKey/MaxKey at the ends.
"""

from __future__ import annotations

import hashlib
import math
import struct
from typing import Any

import bson
from bson import Decimal128, Int64, MaxKey, MinKey, Regex

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.values import canonical_rank, sort_key

_MISSING = object()


def _safe_long(v: Any) -> int:
    if isinstance(v, Decimal128):
        v = float(v.to_decimal())
    if isinstance(v, float):
        if math.isnan(v):
            return 0
        if v >= 2.0**63:
            return 2**63 - 1
        if v < -(2.0**63):
            return -(2**63)
        return int(v)
    return int(v)


def _element_value_bytes(v: Any) -> bytes:
    """The BSON value bytes of `v` (what follows the type byte and field name)."""
    raw = bson.encode({"": v})
    # layout: int32 size, type byte, "" NUL, value..., doc NUL
    return raw[4 + 1 + 1 : -1]


def _hash_element(md5: "hashlib._Hash", v: Any, name: str | None) -> None:
    md5.update(struct.pack("<i", canonical_rank(v)))  # canonicalizeBSONType
    if name is not None:
        md5.update(name.encode() + b"\x00")
    if isinstance(v, (dict, list, tuple)):
        items = v.items() if isinstance(v, dict) else ((str(i), x) for i, x in enumerate(v))
        for k, x in items:
            _hash_element(md5, x, k)
        md5.update(struct.pack("<i", 0))  # the EOO element: canonical type 0
        md5.update(b"\x00")  # ... and its empty field name
    elif isinstance(v, (bool,)):
        md5.update(b"\x01" if v else b"\x00")
    elif isinstance(v, (int, float, Decimal128)):
        md5.update(struct.pack("<q", _safe_long(v)))
    elif v is None or isinstance(v, (MinKey, MaxKey)):
        pass
    else:
        md5.update(_element_value_bytes(v))


def hash64(value: Any, seed: int = 0) -> Int64:
    """The server's hashed-index value of `value` (BSONElementHasher::hash64)."""
    md5 = hashlib.md5(struct.pack("<i", seed))
    _hash_element(md5, value, None)
    return Int64(struct.unpack("<q", md5.digest()[:8])[0])


def _get(doc: dict, path: str) -> Any:
    cur: Any = doc
    for part in path.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            return _MISSING
    return cur


class ShardKeyPattern:
    """A shard key pattern: field order, which field (if any) is hashed."""

    def __init__(self, key: dict) -> None:
        if not isinstance(key, dict) or not key:
            raise MongoError("BadValue", "Shard key pattern must be a non-empty object")
        self.key = dict(key)
        self.fields = list(key)
        self.hashed = [f for f, v in key.items() if v == "hashed"]
        for f, v in key.items():
            if v != "hashed" and v not in (1, 1.0):
                raise MongoError("BadValue", f"Unsupported shard key pattern {key}. Pattern must either be a single hashed field, or a list of ascending fields")
        if len(self.hashed) > 1:
            raise MongoError("BadValue", "Shard key pattern may only have one hashed field")

    def extract(self, doc: dict) -> tuple:
        """The key values of `doc` in chunk space (missing -> null; hashed fields hashed)."""
        out = []
        for f in self.fields:
            v = _get(doc, f)
            if v is _MISSING:
                v = None
            if isinstance(v, list):
                raise MongoError("ShardKeyNotFound", f"Shard key cannot contain an array: {f}")
            out.append(hash64(v) if f in self.hashed else v)
        return tuple(out)

    def extract_from_query(self, query: dict) -> tuple | None:
        """Key values when `query` has an equality on every shard key field, else None."""
        out = []
        for f in self.fields:
            if f in query:
                v = query[f]
            else:
                v = _get(query, f)
                if v is _MISSING:
                    return None
            if isinstance(v, dict):
                if len(v) == 1 and "$eq" in v:
                    v = v["$eq"]
                elif any(k.startswith("$") for k in v):
                    return None
            if isinstance(v, (list, Regex)) or hasattr(v, "pattern"):
                return None
            out.append(hash64(v) if f in self.hashed else v)
        return tuple(out)

    def bound(self, values: tuple) -> dict:
        return dict(zip(self.fields, values))

    def values_of_bound(self, bound: dict) -> tuple:
        return tuple(bound[f] for f in self.fields)

    def min_bound(self) -> dict:
        return {f: MinKey() for f in self.fields}

    def max_bound(self) -> dict:
        return {f: MaxKey() for f in self.fields}

    @staticmethod
    def comparable(values: tuple) -> tuple:
        return tuple(sort_key(v) for v in values)
