"""$collStats on a node: a collection's statistics as one document (document_source_coll_stats.cpp).

`{$collStats: {latencyStats: {histograms}, storageStats: {scale, verbose,
waitForLock, numericOnly}, count: {}, queryExecStats: {}}}` — an IDL struct:
IDLUnknownField for another field, TypeMismatch for a non-object option.  The
document: `ns`, `shard` (on a shard of a cluster), `host`, `localTime`, then each
section asked for, in the server's order (latencyStats, storageStats, count,
queryExecStats).  storageStats follows storage_stats.cpp's field order (size,
count, avgObjSize, numOrphanDocs, storageSize, freeStorageSize, capped [max,
maxSize], wiredTiger, nindexes, indexDetails, indexBuilds, totalIndexSize,
indexSizes, totalSize, scaleFactor); sizes are the documents' BSON bytes, and the
on-disk sizes an estimate (mongosim keeps no files: 4 KiB pages, index entries of
their keys' size plus a record id).  A missing collection is NamespaceNotFound.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from bson import Int64

from mongosim.oplog import bsonutil
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.fmt import element_str
from mongosim.shardsim.query.values import is_number, type_name
from mongosim.shardsim.source_stage_registry import register_source, shard_name

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node
    from mongosim.shardsim.operation_context import OpCtx

__all__ = ["coll_stats", "storage_stats", "parse_coll_stats"]

_PAGE = 4096
_OPTIONS = ("latencyStats", "storageStats", "count", "queryExecStats", "$_requestOnTimeseriesView")


def parse_coll_stats(spec: Any) -> dict:
    if not isinstance(spec, dict):
        raise MongoError(40166, f"$collStats must take a nested object but found: {element_str('$collStats', spec)}")
    for k, v in spec.items():
        if k not in _OPTIONS:
            raise MongoError("IDLUnknownField", f"BSON field '$collStats.{k}' is an unknown field.")
        if k != "$_requestOnTimeseriesView" and not isinstance(v, dict):
            raise MongoError("TypeMismatch", f"BSON field '$collStats.{k}' is the wrong type '{type_name(v)}', "
                                             "expected type 'object'")
    scale = (spec.get("storageStats") or {}).get("scale", 1)
    if "storageStats" in spec and "scale" in spec["storageStats"]:
        if not is_number(scale) or isinstance(scale, bool):
            raise MongoError("TypeMismatch", f"BSON field '$collStats.storageStats.scale' is the wrong type "
                                             f"'{type_name(scale)}', expected types '[long, int, decimal, double]'")
        if scale < 1:
            raise MongoError(51024, f"BSON field 'scale' value must be >= 1, actual value '{int(scale)}'")
    return spec


def _pages(n: int) -> int:
    return max(_PAGE, math.ceil(n / _PAGE) * _PAGE)


def storage_stats(coll: Any, scale: int = 1) -> dict:
    """storageStats of a collection, in storage_stats.cpp's order."""
    sizes = [len(bsonutil.encode(d)) for d in coll.docs.values()]
    size = sum(sizes)
    n = len(sizes)
    out: dict[str, Any] = {"size": size // scale, "count": n}
    if n:
        out["avgObjSize"] = size // n
    out["numOrphanDocs"] = 0
    storage = _pages(size)
    out["storageSize"] = storage // scale
    out["freeStorageSize"] = 0
    options = coll.options or {}
    out["capped"] = bool(options.get("capped"))
    if out["capped"]:
        out["max"] = int(options.get("max") or 0)
        out["maxSize"] = int(options.get("size") or 0) // scale
    out["wiredTiger"] = {"metadata": {"formatVersion": 1}, "type": "file",
                         "uri": f"statistics:table:collection-{coll.uuid.hex() if hasattr(coll.uuid, 'hex') else ''}"}
    index_sizes = {}
    for spec in coll.indexes:
        entry = 8 + 16 * len(spec.get("key") or {})  # (a record id, and about 16 bytes a key field)
        index_sizes[spec["name"]] = _pages(n * entry) // scale
    out["nindexes"] = len(coll.indexes)
    out["indexDetails"] = {name: {"metadata": {"formatVersion": 8}, "type": "file"} for name in index_sizes}
    out["indexBuilds"] = []
    total_index = sum(index_sizes.values())
    out["totalIndexSize"] = total_index
    out["indexSizes"] = index_sizes
    out["totalSize"] = (storage // scale) + total_index
    out["scaleFactor"] = scale
    return out


def coll_stats(node: Node, db: str, name: str, spec: dict, local_time) -> dict:
    """The $collStats document of `db.name` on this node."""
    out: dict[str, Any] = {"ns": f"{db}.{name}"}
    shard = shard_name(node)
    if shard is not None:
        out["shard"] = shard
    out["host"] = node.host
    out["localTime"] = local_time
    coll = node.catalog.collection(db, name)
    if "latencyStats" in spec:
        zero = {"latency": Int64(0), "ops": Int64(0)}
        out["latencyStats"] = {"reads": dict(zero), "writes": dict(zero), "commands": dict(zero),
                               "transactions": dict(zero)}
    if "storageStats" in spec:
        if coll is None:
            raise MongoError("NamespaceNotFound", "Unable to retrieve storageStats in $collStats stage :: caused by :: "
                                                  f"Collection [{db}.{name}] not found.")
        out["storageStats"] = storage_stats(coll, int(spec["storageStats"].get("scale", 1)))
    if "count" in spec:
        if coll is None:
            raise MongoError("NamespaceNotFound", "Unable to retrieve count in $collStats stage :: caused by :: "
                                                  f"Collection [{db}.{name}] not found.")
        out["count"] = Int64(len(coll.docs))
    if "queryExecStats" in spec:
        scans = coll.index_usage.get("$collScan", [0])[0] if coll is not None else 0
        out["queryExecStats"] = {"collectionScans": {"total": Int64(scans), "nonTailable": Int64(scans)}}
    return out


@register_source("$collStats")
def _source(node: Node, ctx: OpCtx, coll: str | None, spec: Any) -> list[dict]:
    parse_coll_stats(spec)
    return [coll_stats(node, ctx.db, coll, spec, node.wall.wall())]
