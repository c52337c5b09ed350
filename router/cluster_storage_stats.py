"""`dbStats`, `collStats` and `dataSize` through mongos: the shards' sizes, summed.

- dbStats (cluster_db_stats_cmd.cpp) asks every shard (scale passed on) and answers `raw` — each
  shard's reply keyed by its connection string (`shard00/host:port,...`), as appendRawResponses
  keys them — then `db` and the sums of `collections`, `views`, `objects`, `dataSize`,
  `storageSize`, `indexes`, `indexSize`, `totalSize` (and the free-storage sizes when asked),
  `avgObjSize` the shards' averages weighted by their objects (unscaled), and `scaleFactor`.
- collStats (cluster_coll_stats_cmd.cpp) asks the shards owning chunks of a sharded collection
  (the primary shard of an unsharded one) without `scale`, then scales the sums itself:
  `sharded` (with `primary` when unsharded), `capped`/`max`/`wiredTiger`/`indexDetails` copied from
  the first shard, `ns`, the sums of `count`, `size`, `storageSize`, `totalIndexSize`, `totalSize`,
  `indexSizes` per index, `avgObjSize` (a double), `maxSize`, `nindexes`, `scaleFactor`,
  `nchunks` and `shards` (each shard's reply, scaled).  scale: 4390200 below 1, 4390201 if not a
  number.
- dataSize (cluster_data_size_cmd.cpp) asks the shards of the collection and sums `size`,
  `numObjects` and `millis`.
The node's side is shardsim/storage_stats.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bson import Int64

from mongosim.oplog.errors import MongoError
from mongosim.router.cluster_coll_stats import coll_stats_targets
from mongosim.router.command_registry import router_command
from mongosim.router.request import GENERIC_FIELDS, Request
from mongosim.router.sharding import shard_document
from mongosim.shardsim.create_collection import check_namespace
from mongosim.shardsim.query.values import is_number
from mongosim.shardsim.storage_stats import append_number, data_size_namespace, parse_scale
from mongosim.shardsim.timeseries import BUCKETS

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

_DB_SUMS = ("collections", "views", "objects", "dataSize", "storageSize", "freeStorageSize", "indexes", "indexSize",
            "indexFreeStorageSize", "totalSize", "totalFreeStorageSize")
_SCALED = ("size", "storageSize", "totalIndexSize", "totalSize")
_FIRST_SHARD = ("userFlags", "capped", "max", "paddingFactorNote", "indexDetails", "wiredTiger")


def _passthrough(req: Request) -> dict:
    return {k: v for k, v in req.cmd.items() if k not in GENERIC_FIELDS}


def _reply_body(reply: dict) -> dict:
    return {k: v for k, v in reply.items() if k not in ("$clusterTime", "operationTime") and not k.startswith("_")}


@router_command("dbStats", "dbstats")
async def cmd_db_stats(router: Router, req: Request) -> dict:
    scale = parse_scale(req.cmd)
    cmd = _passthrough(req)
    raw: dict[str, dict] = {}
    replies = []
    for shard in sorted(router.shards):
        reply = _reply_body(await router.shard(shard).command(req.db, dict(cmd)))
        raw[shard_document(router, shard)["host"]] = reply
        replies.append(reply)
    sums = {k: sum(int(r.get(k, 0)) for r in replies) for k in _DB_SUMS}
    unscaled = sum(float(r.get("avgObjSize", 0)) * int(r.get("objects", 0)) for r in replies)
    free = any("freeStorageSize" in r for r in replies)
    out: dict[str, Any] = {"raw": raw, "db": req.db}
    for k in ("collections", "views", "objects"):
        out[k] = append_number(sums[k])
    out["avgObjSize"] = unscaled / sums["objects"] if sums["objects"] else 0.0
    for k in ("dataSize", "storageSize", "freeStorageSize", "indexes", "indexSize", "indexFreeStorageSize",
              "totalSize", "totalFreeStorageSize"):
        if k in ("freeStorageSize", "indexFreeStorageSize", "totalFreeStorageSize") and not free:
            continue
        out[k] = append_number(sums[k])
    out["scaleFactor"] = append_number(scale)
    out["ok"] = 1.0
    return out


def _scale_shard_reply(reply: dict, scale: int) -> dict:
    """A shard's collStats, its sizes divided by `scale` (scaleIndividualShardStatistics)."""
    out = {}
    for k, v in reply.items():
        if k in ("size", "storageSize", "freeStorageSize", "totalIndexSize", "totalSize", "maxSize") and is_number(v):
            out[k] = type(v)(int(v) // scale) if isinstance(v, (int, Int64)) else v / scale
        elif k == "indexSizes" and isinstance(v, dict):
            out[k] = {name: type(n)(int(n) // scale) for name, n in v.items()}
        elif k == "scaleFactor":
            out[k] = scale
        else:
            out[k] = v
    return out


def _add_timeseries(total: dict[str, Any], section: dict) -> None:
    """Add a shard's `timeseries` section to the sums (aggregateTimeseriesStats in cluster_coll_stats_cmd.cpp:
    the numbers summed, the buckets' bytes from each shard's average and count)."""
    for k, v in section.items():
        if k == "bucketsNs":
            total[k] = v
        elif k == "avgBucketSize":
            total["$bytes"] = total.get("$bytes", 0) + int(v) * int(section.get("bucketCount", 0))
        elif is_number(v):
            total[k] = total.get(k, 0) + int(v)


def _timeseries_section(total: dict[str, Any]) -> dict:
    """The summed `timeseries` section (appendTimeseriesInfoToResult): `bucketsNs`, then every counter in
    name order, `avgBucketSize` among them (the buckets' bytes over their count)."""
    numbers = {k: v for k, v in total.items() if k not in ("bucketsNs", "$bytes")}
    numbers["avgBucketSize"] = total.get("$bytes", 0) // numbers["bucketCount"] if numbers.get("bucketCount") else 0
    return {"bucketsNs": total.get("bucketsNs"), **{k: append_number(v) for k, v in sorted(numbers.items())}}


@router_command("collStats", "collstats")
async def cmd_coll_stats(router: Router, req: Request) -> dict:
    name = check_namespace(req.db, req.cmd[req.name])
    ns = f"{req.db}.{name}"
    scale = req.cmd.get("scale")
    if is_number(scale) and not isinstance(scale, bool):
        if int(scale) < 1:
            raise MongoError(4390200, "scale has to be >= 1")
        scale = int(scale)
    elif scale:
        raise MongoError(4390201, "scale has to be a number >= 1")
    else:
        scale = 1
    routing = router.catalog.routing(ns) or router.catalog.routing(f"{req.db}.{BUCKETS}{name}")
    out: dict[str, Any] = {"sharded": routing is not None}
    if routing is None:
        primary = router.catalog.primary_of(req.db)
        if primary is None:
            raise MongoError("NamespaceNotFound", f"Database {req.db} not found")
        out["primary"] = primary
    cmd = {k: v for k, v in _passthrough(req).items() if k != "scale"}
    counts: dict[str, int] = {}
    index_sizes: dict[str, int] = {}
    unscaled = 0
    nindexes = 0
    max_size = 0
    shards: dict[str, dict] = {}
    timeseries: dict[str, Any] = {}  # (a time-series collection's: the shards' counters summed)
    for shard in coll_stats_targets(router, req.db, name):
        reply = _reply_body(await router.shard(shard).command(req.db, dict(cmd)))
        count = int(reply.get("count", 0))
        for k, v in reply.items():
            if k in _FIRST_SHARD:
                out.setdefault(k, v)
            elif k in ("count", *_SCALED):
                counts[k] = counts.get(k, 0) + int(v)
            elif k == "avgObjSize":
                unscaled += int(v) * count
            elif k == "indexSizes":
                for idx, n in v.items():
                    index_sizes[idx] = index_sizes.get(idx, 0) + int(n)
            elif k == "timeseries":
                _add_timeseries(timeseries, v)
            elif k == "nindexes":
                if nindexes and int(v) != nindexes and "warning" not in out:
                    out["warning"] = "indexes don't all match - ok if ensureIndex is running"
                nindexes = max(nindexes, int(v))
        shards[shard] = _scale_shard_reply(reply, scale)
    out["ns"] = ns
    for k in sorted(counts):
        out[k] = append_number(counts[k] // scale if k in _SCALED else counts[k])
    if timeseries:
        out["timeseries"] = _timeseries_section(timeseries)
    out["indexSizes"] = {idx: append_number(n // scale) for idx, n in sorted(index_sizes.items())}
    out["avgObjSize"] = unscaled / counts["count"] if counts.get("count") else 0.0
    out["maxSize"] = Int64(max_size // scale)
    out["nindexes"] = nindexes
    out["scaleFactor"] = scale
    out["nchunks"] = len(routing.chunks) if routing is not None else 1
    out["shards"] = shards
    out["ok"] = 1.0
    return out


@router_command("dataSize", "datasize")
async def cmd_data_size(router: Router, req: Request) -> dict:
    db, name = data_size_namespace(req.cmd[req.name])
    size = count = millis = 0
    for shard in coll_stats_targets(router, db, name):
        reply = await router.shard(shard).command(req.db, _passthrough(req))
        size += int(reply["size"])
        count += int(reply["numObjects"])
        millis += int(reply["millis"])
    return {"size": Int64(size), "numObjects": Int64(count), "millis": Int64(millis), "ok": 1.0}
