"""The first chunks of a collection being sharded (the server's InitialSplitPolicy,
initial_split_policy.cpp, chosen as 8.0's create collection coordinator does it:
create_collection_util::createPolicy).

The policy:

- `presplitHashedZones: true` — PresplitHashedZonesSplitPolicy, whatever else holds (so that its own
  checks give the error): the collection must be empty, have zone ranges and a hashed shard key
  (31387); a hashed-prefix key allows one range only, over the whole key space (31412); otherwise
  every range's lower bound has a value (not MinKey/MaxKey) for each field before the hashed one
  (31388), differs from the upper bound in one of them (31390), and is MinKey from the hashed field
  on (31389, 31391).  Each range is then split, on the hashed field, into one chunk per shard of
  its zone (with the range's prefix values; calculateHashedSplitPoints), each on one of them;
- an empty collection without zone ranges and a key whose FIRST field is hashed: one chunk per shard
  of the cluster (SplitPointsBasedSplitPolicy: getNumShards counts draining shards too) between the
  symmetric calculateHashedSplitPoints, the i-th chunk in key order on the (i mod k)-th of the k
  non-draining shards in getAllNonDrainingShardIdsShuffled's order (below).  A hashed field after
  the first (`{a: 1, h: "hashed"}`) gets no presplit: one chunk on the primary shard;
- an empty collection with zone ranges: one chunk per range, on a shard of the range's zone taken
  round-robin over the zone's shards (in `config.shards` order) from one range of the zone to the
  next (SingleChunkPerTagSplitPolicy); every gap before, between and after the ranges is one chunk,
  the gaps taken round-robin over the non-draining shards in the order
  getAllNonDrainingShardIdsShuffled gives them (`std::shuffle` with a default-seeded
  `std::default_random_engine`: a fixed order for a given shard list, reproduced here);
- anything else (a collection with documents, zones or not): one chunk on the primary shard.

Whatever the policy, the collection's zone ranges must match the proposed key first
(validateShardKeyAgainstExistingZones, InvalidOptions): the same fields in the same order, and
NumberLong/MinKey/MaxKey bounds for a hashed field.  (A range defined before the collection was
sharded is stored as given, so a range over a prefix of the key does not match.)  The chunks are
numbered 1|0, 1|1, ... in key order (appendChunk's incMinor).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bson import Int64, MaxKey, MinKey

from mongosim.oplog.errors import MongoError
from mongosim.router.zone_info import ZoneRange, _config_docs
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.shard_key import ShardKeyPattern

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

Chunks = list[tuple[tuple, tuple, str]]  # (min values, max values, shard) in key order

_LLONG_MAX = 2**63 - 1


# -- the shard orders the server's policies use ---------------------------------------------
def default_engine_shuffle(items: list) -> list:
    """`std::shuffle(items, std::default_random_engine{})` as libstdc++ (the 8.0 toolchain's) does it:
    minstd_rand0 seeded with 1, `uniform_int_distribution` scaling its draws down (rejecting the
    top), and two swap positions drawn at once while the engine's range allows."""
    out = list(items)
    state = 1

    def draw() -> int:  # minstd_rand0: x = 16807 x mod (2^31 - 1), in [1, 2^31 - 2]
        nonlocal state
        state = state * 16807 % 2147483647
        return state

    engine_range = 2147483646 - 1

    def uniform(lo: int, hi: int) -> int:
        span = hi - lo + 1
        scaling = engine_range // span
        past = span * scaling
        while True:
            r = draw() - 1
            if r < past:
                return lo + r // scaling

    n = len(out)
    if n < 2:
        return out
    if engine_range // n >= n:
        i = 1
        if n % 2 == 0:
            j = uniform(0, 1)
            out[i], out[j] = out[j], out[i]
            i += 1
        while i != n:
            b0 = i + 1
            x = uniform(0, b0 * (b0 + 1) - 1)
            for j in (x // (b0 + 1), x % (b0 + 1)):
                out[i], out[j] = out[j], out[i]
                i += 1
        return out
    for i in range(1, n):  # (more shards than ~46,000: one draw per element)
        j = uniform(0, i)
        out[i], out[j] = out[j], out[i]
    return out


def _shards_in_config_order(router: Router) -> list[dict]:
    """`config.shards` in natural order (the server's finds on it have no sort)."""
    return _config_docs(router, "shards")


def _non_draining_shuffled(router: Router) -> list[str]:
    """getAllNonDrainingShardIdsShuffled: the non-draining shards of `config.shards`, default-engine
    shuffled (mongosim, which lets every shard drain, falls back to all of them rather than divide by 0)."""
    docs = _shards_in_config_order(router)
    return default_engine_shuffle([d["_id"] for d in docs if not d.get("draining")] or [d["_id"] for d in docs])


def _zone_to_shards(router: Router, ranges: list[ZoneRange]) -> dict[str, list[str]]:
    """buildTagsToShardIdsMap: each range's zone and its shards in `config.shards` order (draining or
    not); a zone without a shard is CannotCreateChunkDistribution."""
    out: dict[str, list[str]] = {r.zone: [] for r in ranges}
    for doc in _shards_in_config_order(router):
        for zone in doc.get("tags") or []:
            out.setdefault(zone, []).append(doc["_id"])
    if any(not out[r.zone] for r in ranges):
        raise MongoError("CannotCreateChunkDistribution", "The initial split policy is not able to find a chunk "
                                                          "distribution that satisfies the given set of zones "
                                                          "with the current shards")
    return out


# -- checks ---------------------------------------------------------------------------------
def _is_hashed_value(v: object) -> bool:
    return isinstance(v, (Int64, MinKey, MaxKey))


def validate_zones(pattern: ShardKeyPattern, ranges: list[ZoneRange]) -> None:
    """validateShardKeyAgainstExistingZones: every range's bounds name the key's fields, in order."""
    key = bson_str(dict(pattern.key))
    for r in ranges:
        lo, hi = list(r.min.items()), list(r.max.items())
        for i in range(min(len(lo), len(pattern.fields))):
            if i >= len(hi) or lo[i][0] != hi[i][0]:
                raise MongoError("InvalidOptions", f"the min and max of the existing zone {bson_str(r.min)} -->> "
                                                   f"{bson_str(r.max)} have non-matching keys")
            field = pattern.fields[i]
            more_lo, more_key = i + 1 < len(lo), i + 1 < len(pattern.fields)
            if lo[i][0] != field or more_lo != more_key:
                raise MongoError("InvalidOptions", f"the proposed shard key {key} does not match with the shard key "
                                                   f"of the existing zone {bson_str(r.min)} -->> {bson_str(r.max)}")
            if field in pattern.hashed and not (_is_hashed_value(lo[i][1]) and _is_hashed_value(hi[i][1])):
                raise MongoError("InvalidOptions", f"cannot do hash sharding with the proposed key {key} because there "
                                                   f"exists a zone {bson_str(r.min)} -->> {bson_str(r.max)} whose "
                                                   "boundaries are not of type NumberLong, MinKey or MaxKey")


def _validate_presplit(pattern: ShardKeyPattern, ranges: list[ZoneRange], empty: bool) -> None:
    """PresplitHashedZonesSplitPolicy::_validate."""
    if not (empty and ranges and pattern.hashed):
        raise MongoError(31387, "'presplitHashedZones' is only supported when the collection is empty, zones are "
                                "set up and shard key pattern has a hashed field")
    hashed = pattern.fields.index(pattern.hashed[0])
    if hashed == 0:
        whole = (tuple(MinKey() for _ in pattern.fields), tuple(MaxKey() for _ in pattern.fields))
        if len(ranges) != 1 or ranges[0].keys() != tuple(ShardKeyPattern.comparable(b) for b in whole):
            raise MongoError(31412, "For hashed prefix shard keys, 'presplitHashedZones' is only supported when "
                                    "there is a single zone defined which covers entire shard key range")
        return
    for r in ranges:
        lo, hi = list(r.min.values()), list(r.max.values())
        if any(isinstance(v, (MinKey, MaxKey)) for v in lo[:hashed]):
            raise MongoError(31388, "One or more zones are not defined in a manner that supports hashed "
                                    "pre-splitting. Cannot have MinKey or MaxKey in the lower bound for fields "
                                    f"preceding the hashed field but found one, for zone {r.zone}")
        if ShardKeyPattern.comparable(tuple(lo[:hashed])) == ShardKeyPattern.comparable(tuple(hi[:hashed])):
            raise MongoError(31390, "One or more zones are not defined in a manner that supports hashed "
                                    "pre-splitting. The value preceding hashed field of the upper bound should be "
                                    f"greater than that of lower bound, for zone {r.zone}")
        if not isinstance(lo[hashed], MinKey):
            raise MongoError(31389, "One or more zones are not defined in a manner that supports hashed "
                                    "pre-splitting. The hashed field value for lower bound must be MinKey, for "
                                    f"zone {r.zone}")
        if not all(isinstance(v, MinKey) for v in lo[hashed + 1:]):
            raise MongoError(31391, "One or more zones are not defined in a manner that supports hashed "
                                    "pre-splitting. The fields after the hashed field must have MinKey value, "
                                    f"for zone {r.zone}")


# -- the policies -----------------------------------------------------------------------------
def hashed_split_points(pattern: ShardKeyPattern, prefix: tuple, n: int) -> list[tuple]:
    """calculateHashedSplitPoints: n - 1 hashed values splitting the 64-bit space into n intervals of
    (LLONG_MAX / n) * 2, symmetric around 0; each point is `prefix`, the value, then MinKey."""
    interval = (_LLONG_MAX // n) * 2
    values: list[int] = []
    current = 0
    if n % 2 == 0:
        values.append(0)
        current += interval
    else:
        current += interval // 2
    for _ in range((n - 1) // 2):
        values += [current, -current]
        current += interval
    rest = len(pattern.fields) - len(prefix) - 1
    return [(*prefix, Int64(v), *(MinKey() for _ in range(rest))) for v in sorted(values)]


def split_points_chunks(router: Router, pattern: ShardKeyPattern) -> Chunks:
    """SplitPointsBasedSplitPolicy (a hashed-prefix key, an empty collection, no zones): as many chunks
    as the cluster has shards, draining or not, between calculateHashedSplitPoints with no prefix; the
    chunks in key order go round-robin over the shuffled non-draining shards
    (generateShardCollectionInitialChunks)."""
    n = max(1, len(_shards_in_config_order(router)))
    shards = _non_draining_shuffled(router)
    edges = [tuple(MinKey() for _ in pattern.fields), *hashed_split_points(pattern, (), n),
             tuple(MaxKey() for _ in pattern.fields)]
    return [(edges[i], edges[i + 1], shards[i % len(shards)]) for i in range(n)]


def even_hashed_chunks(pattern: ShardKeyPattern, shards: list[str]) -> Chunks:
    """One chunk per shard of `shards`, in their order, over 2^64 / n wide ranges of the hashed field:
    mongosim's stand-in for resharding's SamplingBasedSplitPolicy, whose split points come from a
    `$sample` of the documents (random, so not reproducible)."""
    n = len(shards)
    points = [-(2**63) + (2**64 * i) // n for i in range(1, n)]
    edges = [None, *points, None]
    out: Chunks = []
    for i, shard_name in enumerate(shards):
        lo = tuple(MinKey() if edges[i] is None else (Int64(edges[i]) if f in pattern.hashed else MinKey())
                   for f in pattern.fields)
        hi = tuple(MaxKey() if edges[i + 1] is None else (Int64(edges[i + 1]) if f in pattern.hashed else MinKey())
                   for f in pattern.fields)
        out.append((lo, hi, shard_name))
    return out


def _zoned_chunks(router: Router, pattern: ShardKeyPattern, ranges: list[ZoneRange], presplit: bool,
                  zone_shards: dict[str, list[str]]) -> Chunks:
    """AbstractTagsBasedSplitPolicy::createFirstChunks: the gaps round-robin over the shuffled
    non-draining shards; each range one chunk on its zone's next shard (SingleChunkPerTag) or, to
    presplit, one chunk per shard of its zone (PresplitHashedZones)."""
    holes = _non_draining_shuffled(router)
    out: Chunks = []
    hole_next = 0
    next_in_zone: dict[str, int] = {}
    last = tuple(MinKey() for _ in pattern.fields)
    for r in ranges:
        lo, hi = tuple(r.min.values()), tuple(r.max.values())
        if ShardKeyPattern.comparable(lo) > ShardKeyPattern.comparable(last):
            out.append((last, lo, holes[hole_next % len(holes)]))
            hole_next += 1
        shards = zone_shards[r.zone]
        if presplit:
            prefix = lo[:pattern.fields.index(pattern.hashed[0])]
            edges = [lo, *hashed_split_points(pattern, prefix, len(shards)), hi]
            out += [(edges[i], edges[i + 1], s) for i, s in enumerate(shards)]
        else:
            i = next_in_zone.get(r.zone, 0)
            next_in_zone[r.zone] = i + 1
            out.append((lo, hi, shards[i % len(shards)]))
        last = hi
    top = tuple(MaxKey() for _ in pattern.fields)
    if ShardKeyPattern.comparable(last) < ShardKeyPattern.comparable(top):
        out.append((last, top, holes[hole_next % len(holes)]))
    return out


def first_chunks(router: Router, pattern: ShardKeyPattern, ranges: list[ZoneRange], *, empty: bool,
                 presplit: bool, primary: str) -> Chunks:
    """The collection's initial chunks (createPolicy + createFirstChunks); `ranges`: its zone ranges in
    key order."""
    validate_zones(pattern, ranges)
    if presplit:
        zone_shards = _zone_to_shards(router, ranges)
        _validate_presplit(pattern, ranges, empty)
        return _zoned_chunks(router, pattern, ranges, True, zone_shards)
    if empty and ranges:
        return _zoned_chunks(router, pattern, ranges, False, _zone_to_shards(router, ranges))
    if empty and pattern.fields[0] in pattern.hashed:  # (ShardKeyPattern::hasHashedPrefix)
        return split_points_chunks(router, pattern)
    whole = (tuple(MinKey() for _ in pattern.fields), tuple(MaxKey() for _ in pattern.fields))
    return [(*whole, primary)]
