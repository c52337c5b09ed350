"""Which shard each document of an insert goes to, read from the documents' bytes where it can be.

mongos targets an insert document by document: the chunk holding its shard-key value.  For the
common shapes that needs no decoded document:

- an unsharded collection: every document goes to the database's primary shard;
- a collection sharded on one hashed field that is each document's first field (`{_id: "hashed"}`,
  as drivers put `_id` first): the field's hash (the server's BSONElementHasher, `shard_key.hash64`)
  is an MD5 over the seed, the value's canonical type and its bytes, all of which are the
  document's own bytes (an int32 widened to 8 bytes), and the chunk is found by bisecting the
  chunks' lower bounds as plain integers.

Any other document (another type, the field elsewhere, a range shard key) is targeted from its
decoded form, as before.  A property test checks both give the same shard.
"""

from __future__ import annotations

import hashlib
import struct
from bisect import bisect_right
from functools import lru_cache
from itertools import repeat
from operator import itemgetter
from typing import Any, Callable

from bson import Int64, MinKey, ObjectId

from mongosim.oplog.errors import MongoError
from mongosim.router.catalog_cache import CollectionRouting
from mongosim.shardsim.query.values import canonical_rank

_SEED = struct.pack("<i", 0)  # hash64's seed
# what the MD5 reads before the value's bytes, by BSON type: the seed and the canonical type
_PREFIX = {t: _SEED + struct.pack("<i", canonical_rank(example))
           for t, example in ((0x10, 0), (0x12, Int64(0)), (0x02, ""), (0x07, ObjectId(b"\x00" * 12)))}
_Q = struct.Struct("<q")
_FIXED_SIZE = {0x10: 4, 0x12: 8, 0x07: 12}  # the value sizes of int32, int64, ObjectId
try:  # CPython's own MD5 (HACL*): twice as fast as OpenSSL's for 16 bytes (no EVP context per call)
    from _md5 import md5 as _md5
except ImportError:  # (a build without it)
    _md5 = hashlib.md5
_DIGEST = type(_md5()).digest


@lru_cache(maxsize=64)
def _first_halves(n: int) -> struct.Struct:
    """The first 8 bytes of each of n MD5 digests laid end to end, as signed little-endian integers."""
    return struct.Struct("<" + "q8x" * n)
_MIN = -(2**64)  # below every hash: a chunk whose lower bound is MinKey


class HashedTargeting:
    """The chunk lower bounds of a collection sharded on one hashed field, as integers, and their shards."""

    __slots__ = ("name", "bounds", "shards", "by_position", "single")

    def __init__(self, field_name: str, bounds: list[int], shards: list[str]) -> None:
        self.name = field_name.encode() + b"\x00"  # the element's name (a cstring, after its type byte)
        self.bounds = bounds
        self.shards = shards
        self.by_position = [None, *shards]  # by bisect_right(bounds, hash) (bounds[0] is below every hash)
        self.single = shards[0] if len(set(shards)) == 1 else None

    def shards_of(self, raws: list) -> list[str | None]:
        """The shard of each document whose first field is the hashed one, of a type hashed from its
        bytes (int32, int64, string, ObjectId); None for the others (and for a missing `raw`)."""
        if len(raws) > 1 and None not in raws:
            uniform = self._shards_of_uniform(raws)
            if uniform is not None:
                return uniform
        return self._shards_of_each(raws)

    def _shards_of_uniform(self, raws: list[bytes]) -> list[str] | None:
        """`shards_of` for a batch whose documents all lead with the hashed field of one fixed-size type
        (a driver's batch of int or ObjectId `_id`s), by C calls mapped over the batch: the values
        sliced out (int32s widened to int64 by one unpack and one pack), MD5s, the hashes' first 8
        bytes unpacked by one struct, the chunks found by bisection.  None for any other batch."""
        v = 5 + len(self.name)
        heads = set(map(itemgetter(slice(4, v)), raws))
        if len(heads) != 1:
            return None
        (head,) = heads
        t = head[0]
        if head[1:] != self.name or t not in _FIXED_SIZE:
            return None
        n = len(raws)
        if self.single is not None:
            return [self.single] * n  # every chunk on one shard: no hash needed
        if t == 0x10:
            ints = struct.unpack(f"<{n}i", b"".join(map(itemgetter(slice(v, v + 4)), raws)))
            wide = struct.pack(f"<{n}q", *ints)
            values = map(wide.__getitem__, map(slice, range(0, 8 * n, 8), range(8, 8 * n + 8, 8)))
        else:
            values = map(itemgetter(slice(v, v + _FIXED_SIZE[t])), raws)
        digests = b"".join(map(_DIGEST, map(_md5, map(_PREFIX[t].__add__, values))))
        hashes = _first_halves(n).unpack(digests)
        return list(map(self.by_position.__getitem__, map(bisect_right, repeat(self.bounds), hashes)))

    def _shards_of_each(self, raws: list) -> list[str | None]:
        """`shards_of`, document by document."""
        name = self.name
        v = 5 + len(name)  # the first element's value (after its length, type byte and name)
        bounds, shards, md5, unpack, prefixes = self.bounds, self.shards, hashlib.md5, _Q.unpack_from, _PREFIX
        out: list[str | None] = []
        for raw in raws:
            if raw is None or raw[5:v] != name:
                out.append(None)
                continue
            t = raw[4]
            prefix = prefixes.get(t)
            if prefix is None:
                out.append(None)
                continue
            if t == 0x10:  # int32, hashed as a 64-bit integer
                data = prefix + raw[v : v + 4] + (b"\xff\xff\xff\xff" if raw[v + 3] & 0x80 else b"\x00\x00\x00\x00")
            elif t == 0x12:
                data = prefix + raw[v : v + 8]
            elif t == 0x07:
                data = prefix + raw[v : v + 12]
            else:  # a string: int32 length, bytes, NUL
                data = prefix + raw[v : v + 4 + int.from_bytes(raw[v : v + 4], "little")]
            out.append(shards[bisect_right(bounds, unpack(md5(data).digest())[0]) - 1])
        return out


def hashed_targeting(routing: CollectionRouting) -> HashedTargeting | None:
    """The routing table as integers, for a collection sharded on exactly one hashed field (cached on it)."""
    cached = routing.targeting
    if cached is None:
        pattern = routing.pattern
        cached = False
        if len(pattern.fields) == 1 and pattern.hashed:
            bounds, shards = [], []
            for chunk in routing.chunks:
                (low,) = pattern.values_of_bound(chunk.min)
                if isinstance(low, MinKey):
                    bounds.append(_MIN)
                elif isinstance(low, (int, Int64)) and not isinstance(low, bool):
                    bounds.append(int(low))
                else:
                    bounds = None
                    break
                shards.append(chunk.shard)
            if bounds and bounds[0] == _MIN and bounds == sorted(bounds):
                cached = HashedTargeting(pattern.fields[0], bounds, shards)
        routing.targeting = cached
    return cached or None


def target_documents(routing: CollectionRouting | None, primary: str, docs: list, raws: list,
                     by_document: Callable[[dict], str]) -> list[str | MongoError]:
    """The shard of each document (or the MongoError targeting it raised)."""
    if routing is None:
        return [primary] * len(docs)
    targeting = hashed_targeting(routing)
    out: list[Any] = targeting.shards_of(raws) if targeting is not None else [None] * len(docs)
    if None in out:
        for i, (doc, shard) in enumerate(zip(docs, out)):
            if shard is None:
                try:
                    out[i] = by_document(doc) if isinstance(doc, dict) else primary
                except MongoError as err:
                    out[i] = err
    return out

