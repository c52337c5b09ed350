"""Merging chunks: `mergeChunks` and `mergeAllChunksOnShard` (the server's merge_chunks_command.cpp,
cluster_merge_chunks_cmd.cpp, cluster_merge_all_chunks_on_shard_cmd.cpp, and the config server's
ShardingCatalogManager::commitChunksMerge / commitMergeAllChunksOnShard).

`mergeChunks: <ns>, bounds: [min, max]` (an errmsg command: a malformed `bounds`, or bounds that are not
whole shard keys, answer `ok: 0` with an errmsg and no code).  The router sends it to the shard owning the
chunk of `min`, which checks that chunks of its own exactly fill [min, max): the first starts at `min`,
each next starts where the last ended, the last ends at `max`; otherwise StaleConfig ("... is not owned
by this shard." / "Shard does not contain a sequence of chunks that exactly fills the range ...", which
the router, after refreshing and retrying, hands back).  The config server then commits:

- the first chunk becomes the merged one (its `_id`), `max` the last one's, `lastmod` the collection
  version with the minor version bumped (no shard's major version moves: a router with the old routing
  table still targets correctly, and the shards accept its versions);
- its `onCurrentShardSince` and one-entry `history` are the latest `history[0].validAfter` of the merged
  chunks (since when all of them have been on the shard); the other chunks are deleted;
- a range that is already one chunk is a success that changes nothing (a retried merge);
- a `merge` entry in config.changelog: `prevPlacementVersion`, `mergedVersion`, `owningShard`, `min`,
  `max`, `numChunks`.

`mergeAllChunksOnShard: <ns>, shard [, maxNumberOfChunksToMerge]` merges, on that shard, every run of
two or more contiguous chunks that are mergeable: not jumbo, and on the shard since before the oldest
time the cluster keeps history for (`onCurrentShardSince` older than the config server's time minus
max(minSnapshotHistoryWindowInSeconds, transactionLifetimeLimitSeconds, 10 s) — virtual time in
mongosim, so a test moves its clock past the window).  Each run becomes a new chunk (a new `_id`) whose
`onCurrentShardSince` is the latest of the run's, versions bumped minor by minor, one `merge` entry each;
the scan stops once `maxNumberOfChunksToMerge` chunks are taken.  A run stops at a zone range's bound
(sharding_ddl_util's getMergeAllChunksOnShardInfo: the zone ranges and the gaps between them are
"real zones", and chunks of different ones are not merged).  It answers `{ok: 1}`, merged or not.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bson import ObjectId, Timestamp

from mongosim.oplog.errors import MongoError
from mongosim.router.catalog_cache import Chunk, CollectionRouting
from mongosim.router.command_registry import router_command
from mongosim.router.request import Request
from mongosim.router.sharding import admin_only, config_write
from mongosim.router.sharding_logging import log_change
from mongosim.router.zone_info import ZoneRange, _config_docs, zone_ranges
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.idl_errors import wrong_type
from mongosim.shardsim.query.values import describe_type
from mongosim.shardsim.shard_key import ShardKeyPattern
from mongosim.shardsim.snapshots import HISTORY_WINDOW_S

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

INT_MAX = 2**31 - 1
# ChunkVersion::IGNORED(), the version a shard's chunk-operation checks name as received
_IGNORED = {"e": ObjectId("00000000ffffffffffffffff"), "t": Timestamp(2**32 - 1, 2**32 - 1), "v": Timestamp(0, 0)}


# -- arguments ----------------------------------------------------------------------------------
def fully_qualified_ns(req: Request) -> str:
    """CommandHelpers::parseNsFullyQualified: the first field, a string naming `<db>.<collection>`."""
    ns = req.cmd[req.name]
    if not isinstance(ns, str):
        raise MongoError("BadValue", f"collection name has invalid type {describe_type(ns)}")
    db, _, coll = ns.partition(".")
    if not db or not coll:
        raise MongoError("InvalidNamespace", f"Invalid namespace specified '{ns}'")
    return ns


def idl_field(req: Request, field: str, kind: type, type_name: str, default: Any = None) -> Any:
    """An optional field the IDL types: its value (`default` when absent), or TypeMismatch naming
    `<command>.<field>` when its BSON type is not `type_name`.  The check is on the exact Python type
    the BSON type decodes to: a bool or an Int64 is not an `int` field's 32-bit integer."""
    v = req.cmd.get(field, default)
    if v is not None and type(v) is not kind:
        raise wrong_type(f"{req.name}.{field}", v, type_name)
    return v


def idl_ns(req: Request) -> str:
    """The namespace of a command the IDL parses (`namespace: type`, a namespacestring: any string)."""
    ns = req.cmd[req.name]
    if not isinstance(ns, str):
        raise wrong_type(f"{req.name}.{req.name}", ns, "string")
    return ns


def sharded_routing(router: Router, ns: str) -> CollectionRouting:
    """CatalogCache::getShardedCollectionRoutingInfo: the routing table, NamespaceNotSharded without one."""
    r = router.catalog.routing(ns)
    if r is None:
        raise MongoError("NamespaceNotSharded", f"Expected collection {ns} to be sharded")
    return r


def is_shard_key(pattern: ShardKeyPattern, obj: Any) -> bool:
    """ShardKeyPattern::isShardKey: every field of the pattern, none an array, and nothing else."""
    return (isinstance(obj, dict) and len(obj) == len(pattern.fields)
            and all(f in obj and not isinstance(obj[f], list) for f in pattern.fields))


def normalize(pattern: ShardKeyPattern, obj: dict) -> dict:
    """ShardKeyPattern::normalizeShardKey: the fields in the pattern's order."""
    return {f: obj[f] for f in pattern.fields}


def range_str(lo: dict, hi: dict) -> str:
    """ChunkRange::toString."""
    return f"[{bson_str(lo)}, {bson_str(hi)})"


def _bounds_errmsg(cmd: dict) -> str | None:
    """FieldParser's extraction of `bounds` (a vector of objects; none is an empty one) and the command's
    own checks."""
    bounds = cmd.get("bounds", [])
    if not isinstance(bounds, list):
        return f"wrong type for 'bounds' field, expected vector array, found bounds: {bson_str(bounds)}"
    for i, b in enumerate(bounds):
        if not isinstance(b, dict):
            return (f"error parsing element {i} of field bounds :: caused by :: wrong type for '' field, "
                    f"expected object, found {i}: {bson_str(b)}")
    if not bounds:
        return "no bounds were specified"
    if len(bounds) != 2:
        return "only a min and max bound may be specified"
    if not bounds[0]:
        return "no min key specified"
    if not bounds[1]:
        return "no max key specified"
    return None


# -- the config server's catalog ------------------------------------------------------------------
def bound_key(r: CollectionRouting, bound: dict) -> tuple:
    """A bound as a comparable key (its values in the pattern's order)."""
    return ShardKeyPattern.comparable(r.pattern.values_of_bound(bound))


def chunk_docs(router: Router, r: CollectionRouting) -> list[dict]:
    """The collection's config.chunks documents, by lower bound."""
    uuid = bytes(r.uuid)
    return sorted((d for d in _config_docs(router, "chunks") if bytes(d["uuid"]) == uuid),
                  key=lambda d: bound_key(r, d["min"]))


def collection_version(docs: list[dict]) -> Timestamp:
    """The collection placement version: the highest `lastmod` of its chunks."""
    return max((d["lastmod"] for d in docs), key=lambda t: (t.time, t.inc))


def _version(r: CollectionRouting, v: Timestamp) -> dict:  # ChunkVersion::serialize
    return {"e": r.epoch, "t": r.timestamp, "v": v}


def _chunk_doc(src: dict, **fields: Any) -> dict:
    """ChunkType::toConfigBSON of `src` changed by `fields`: _id, uuid, min, max, shard, lastmod,
    jumbo (if set), onCurrentShardSince, history; the size estimate is dropped."""
    d = {**src, **fields}
    order = ("_id", "uuid", "min", "max", "shard", "lastmod", "jumbo", "onCurrentShardSince", "history")
    return {k: d[k] for k in order if k in d}


async def _log_merge(router: Router, r: CollectionRouting, prev: Timestamp, merged: Timestamp, shard: str,
                     lo: dict, hi: dict, n: int) -> None:
    await log_change(router, "merge", r.ns, {
        "prevPlacementVersion": _version(r, prev), "mergedVersion": _version(r, merged), "owningShard": shard,
        "min": lo, "max": hi, "numChunks": n})


# -- mergeChunks ------------------------------------------------------------------------------------
def check_range_ownership(r: CollectionRouting, shard: str, lo: dict, hi: dict) -> list[Chunk]:
    """The shard's checkRangeOwnership: its chunks exactly fill [lo, hi); StaleConfig if not."""
    lo_key, hi_key = bound_key(r, lo), bound_key(r, hi)
    wanted = _version(r, r.placement.get(shard, Timestamp(0, 0)))

    def stale(msg: str) -> MongoError:
        return MongoError("StaleConfig", msg, ns=r.ns, vReceived=dict(_IGNORED), vWanted=wanted, shardId=shard)

    run: list[Chunk] = []
    key = lo_key
    while True:
        i = r.chunks.bisect_key_left(key)
        chunk = r.chunks[i] if i < len(r.chunks) else None
        if chunk is None or chunk.min_key != key or chunk.shard != shard:
            raise stale(f"Range with bounds {range_str(lo, hi)} is not owned by this shard.")
        run.append(chunk)
        key = chunk.max_key
        if not key < hi_key:
            break
    if key != hi_key:
        raise stale(f"Shard does not contain a sequence of chunks that exactly fills the range {range_str(lo, hi)}")
    return run


async def commit_chunks_merge(router: Router, r: CollectionRouting, shard: str, lo: dict, hi: dict) -> None:
    """ShardingCatalogManager::commitChunksMerge: the shard's chunks in [lo, hi) become one."""
    docs = chunk_docs(router, r)
    lo_key, hi_key = bound_key(r, lo), bound_key(r, hi)
    run = [d for d in docs if d["shard"] == shard and lo_key <= bound_key(r, d["min"]) < hi_key]
    refused = MongoError("IllegalOperation", f"could not merge chunks, shard {shard} does not contain a sequence "
                                             f"of chunks that exactly fills the range {range_str(lo, hi)}")
    if len(run) == 1 and bound_key(r, run[0]["max"]) == hi_key and bound_key(r, run[0]["min"]) == lo_key:
        return  # already merged
    if (not run or bound_key(r, run[0]["min"]) != lo_key or bound_key(r, run[-1]["max"]) != hi_key
            or any(bound_key(r, a["max"]) != bound_key(r, b["min"]) for a, b in zip(run, run[1:]))):
        raise refused
    valid_after = max((d["history"][0]["validAfter"] for d in run if d.get("history")),
                      key=lambda t: (t.time, t.inc), default=Timestamp(0, 0))
    prev = collection_version(docs)
    merged_version = Timestamp(prev.time, prev.inc + 1)
    merged = _chunk_doc(run[0], max=run[-1]["max"], lastmod=merged_version, onCurrentShardSince=valid_after,
                        history=[{"validAfter": valid_after, "shard": shard}])
    await config_write(router, {"update": "chunks", "updates": [{"q": {"_id": merged["_id"]}, "u": merged}]})
    await config_write(router, {"delete": "chunks", "deletes": [
        {"q": {"_id": {"$in": [d["_id"] for d in run[1:]]}}, "limit": 0}]})
    router.refresh_catalog()
    await _log_merge(router, r, prev, merged_version, shard, run[0]["min"], run[-1]["max"], len(run))


def _wake_balancer(router: Router) -> None:
    """A merged chunk may span a zone bound: the balancer splits it again."""
    balancer = router.manager.balancer
    if balancer is not None:
        balancer.wake()


@router_command("mergeChunks")
async def cmd_merge_chunks(router: Router, req: Request) -> dict:
    admin_only(req)
    ns = fully_qualified_ns(req)
    errmsg = _bounds_errmsg(req.cmd)
    if errmsg is not None:
        return {"ok": 0.0, "errmsg": errmsg}
    lo, hi = req.cmd["bounds"]
    async with router._ddl_lock:
        router.refresh_catalog()  # DDL runs on the authoritative metadata
        r = sharded_routing(router, ns)
        if not (is_shard_key(r.pattern, lo) and is_shard_key(r.pattern, hi)):
            return {"ok": 0.0, "errmsg": f"shard key bounds [{bson_str(lo)},{bson_str(hi)}) are not valid for "
                                         f"shard key pattern {bson_str(r.pattern.key)}"}
        lo, hi = normalize(r.pattern, lo), normalize(r.pattern, hi)
        shard = r.chunk_for(r.pattern.values_of_bound(lo)).shard
        check_range_ownership(r, shard, lo, hi)
        await commit_chunks_merge(router, r, shard, lo, hi)
    _wake_balancer(router)
    return {"ok": 1.0}


# -- mergeAllChunksOnShard ------------------------------------------------------------------------------
def history_window_s(router: Router) -> float:
    """getHistoryWindowInSeconds: max(minSnapshotHistoryWindowInSeconds, transactionLifetimeLimitSeconds, 10)."""
    return max(HISTORY_WINDOW_S, router.config.txn_lifetime_s, 10)


def oldest_timestamp_supported_for_history(router: Router) -> Timestamp:
    """getOldestTimestampSupportedForSnapshotHistory: the config server's time less the history window."""
    secs = int(router.config.wall.now() - history_window_s(router))
    return Timestamp(max(secs, 0), 0)


def zone_ends(ranges: list[ZoneRange]) -> list[tuple]:
    """Where the "real zones" end: the collection's zone ranges and the gaps between them, which
    together cover the whole shard key space (the last, after the last range, ends at MaxKey)."""
    ends: list[tuple] = []
    for zr in ranges:
        lo, hi = zr.keys()
        if not ends or lo > ends[-1]:
            ends.append(lo)  # (the gap before this range)
        ends.append(hi)
    return ends


def mergeable_runs(r: CollectionRouting, docs: list[dict], shard: str, oldest: Timestamp,
                   limit: int, ends: Sequence[tuple] = ()) -> list[list[dict]]:
    """The runs of contiguous mergeable chunks on `shard` (two or more each), taking at most `limit`
    chunks in all: a chunk is mergeable when not jumbo and on the shard since before `oldest`.  A run
    does not cross from one real zone to the next (`ends`, from zone_ends): a chunk belongs to the
    first real zone whose end is at or after its max."""
    def old(d: dict) -> bool:  # (`onCurrentShardSince: {$lt: oldest}`: a chunk without one is not taken)
        t = d.get("onCurrentShardSince")
        return isinstance(t, Timestamp) and (t.time, t.inc) < (oldest.time, oldest.inc)

    candidates = [d for d in docs if d["shard"] == shard and d.get("jumbo") is not True and old(d)]
    runs: list[list[dict]] = []
    run: list[dict] = []
    taken = 0
    zone = -1
    for d in candidates:
        zone, prev_zone = bisect_left(ends, bound_key(r, d["max"])), zone
        if run and (bound_key(r, run[-1]["max"]) != bound_key(r, d["min"]) or zone != prev_zone):
            if len(run) > 1:
                runs.append(run)
                taken += len(run)
            run = []
        run.append(d)
        if taken + len(run) == limit:
            break
    if len(run) > 1:
        runs.append(run)
    return runs


async def commit_merge_all_chunks_on_shard(router: Router, r: CollectionRouting, shard: str, limit: int) -> int:
    """ShardingCatalogManager::commitMergeAllChunksOnShard; returns how many chunks were merged."""
    docs = chunk_docs(router, r)
    runs = mergeable_runs(r, docs, shard, oldest_timestamp_supported_for_history(router), limit,
                          zone_ends(zone_ranges(router, r.ns)))
    if not runs:
        return 0
    prev = collection_version(docs)
    version = prev
    new_docs = []
    for run in runs:
        version = Timestamp(version.time, version.inc + 1)
        since = max((d["onCurrentShardSince"] for d in run), key=lambda t: (t.time, t.inc))
        new_docs.append({"_id": ObjectId(), "uuid": r.uuid, "min": run[0]["min"], "max": run[-1]["max"],
                         "shard": shard, "lastmod": version, "onCurrentShardSince": since,
                         "history": [{"validAfter": since, "shard": shard}]})
    # (the server replaces them in one transaction; the new ones go in first, so no reader finds a hole)
    await config_write(router, {"insert": "chunks", "documents": new_docs})
    await config_write(router, {"delete": "chunks", "deletes": [
        {"q": {"_id": {"$in": [d["_id"] for run in runs for d in run]}}, "limit": 0}]})
    router.refresh_catalog()
    for run, new in zip(runs, new_docs):
        await _log_merge(router, r, prev, new["lastmod"], shard, new["min"], new["max"], len(run))
        prev = new["lastmod"]
    return sum(len(run) for run in runs)


async def merge_all_chunks_on_shard(router: Router, ns: str, shard: str, limit: int) -> int:
    """The shard's mergeAllChunksOnShard, under the cluster's DDL lock: ConflictingOperationInProgress when
    the collection is no longer sharded; returns how many chunks were merged (the AutoMerger's answer)."""
    async with router._ddl_lock:
        router.refresh_catalog()
        r = router.catalog.routing(ns)
        if r is None:
            raise MongoError("ConflictingOperationInProgress", f"Sharded collection '{ns}' no longer exists")
        merged = await commit_merge_all_chunks_on_shard(router, r, shard, limit)
    if merged:
        _wake_balancer(router)
    return merged


@router_command("mergeAllChunksOnShard")
async def cmd_merge_all_chunks_on_shard(router: Router, req: Request) -> dict:
    admin_only(req)
    ns = idl_ns(req)
    if "shard" not in req.cmd:
        raise MongoError("IDLFailedToParse", f"BSON field '{req.name}.shard' is missing but a required field")
    shard = req.cmd["shard"]
    if type(shard) is not str:
        raise wrong_type(f"{req.name}.shard", shard, "string")
    if not shard:
        raise MongoError("NoSuchKey", "Shard ID cannot be empty")
    limit = idl_field(req, "maxNumberOfChunksToMerge", int, "int", INT_MAX)
    idl_field(req, "maxTimeProcessingChunksMS", int, "int", INT_MAX)  # (mongosim finds the chunks at once)
    router.shard(shard)  # ShardNotFound for a shard the registry does not know
    await merge_all_chunks_on_shard(router, ns, shard, limit)
    return {"ok": 1.0}
