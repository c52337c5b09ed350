"""$collStats on a node: one document describing a collection (DocumentSourceCollStats).

`{$collStats: {latencyStats: {histograms}, storageStats: {scale, verbose,
waitForLock, numericOnly}, count: {}, queryExecStats: {}}}` — an IDL struct
(IDLUnknownField 40415 for another field, TypeMismatch for a non-object option) —
must be the first stage of an aggregate on a collection (or a view, unexpanded:
see `coll_stats_document`); the node answers one
document — `ns`, `shard` (on a shard), `host`, `localTime`, then a section for
each option asked, in the server's order (latencyStats, storageStats, count,
queryExecStats) — and the rest of the pipeline runs on it.  Through mongos
every shard that holds the collection answers its own document
(router/cluster_coll_stats.py): that is how mongosh's
`db.c.getShardDistribution()` sees each shard's part.

storageStats follows storage_stats.cpp's field order: `size` (the documents'
BSON bytes), `count`, `avgObjSize` (when there are documents), `numOrphanDocs`
(documents this shard holds but whose chunk another shard owns: a migration's
leftovers, not yet range-deleted), `storageSize`, `freeStorageSize`, `capped`
(and `max`/`maxSize` for a capped collection), `wiredTiger`, `nindexes`,
`indexDetails`, `indexBuilds`, `totalIndexSize`, `indexSizes`, `totalSize`,
`scaleFactor`.  The emulator stores no pages: storage and index sizes are the
documents' and keys' own sizes (no compression, no free space).  queryExecStats
counts the collection scans the planner chose (`coll.index_usage`, as
CollectionIndexUsageTracker does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bson import Int64

from mongosim.oplog import bsonutil
from mongosim.oplog.errors import MongoError
from mongosim.shardsim import local_database
from mongosim.shardsim.query.fmt import element_str
from mongosim.shardsim.query.idl_errors import wrong_type
from mongosim.shardsim.query.values import is_number

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

__all__ = ["STAGE", "coll_stats_document", "leading_coll_stats", "parse_coll_stats", "storage_stats"]

STAGE = "$collStats"
_OPTIONS = ("latencyStats", "storageStats", "count", "queryExecStats", "$_requestOnTimeseriesView")


def parse_coll_stats(spec: Any) -> dict:
    """Check a $collStats spec as its IDL parser does."""
    if not isinstance(spec, dict):
        raise MongoError(40166, f"$collStats must take a nested object but found: {element_str(STAGE, spec)}")
    for k, v in spec.items():
        if k not in _OPTIONS:
            raise MongoError("IDLUnknownField", f"BSON field '$collStats.{k}' is an unknown field.")
        if k != "$_requestOnTimeseriesView" and not isinstance(v, dict):
            raise wrong_type(f"$collStats.{k}", v, "object")
    if "scale" in (spec.get("storageStats") or {}):
        scale = spec["storageStats"]["scale"]
        if not is_number(scale) or isinstance(scale, bool):
            raise wrong_type("$collStats.storageStats.scale", scale, ("long", "int", "decimal", "double"))
        if scale < 1:
            raise MongoError(51024, f"BSON field 'scale' value must be >= 1, actual value '{int(scale)}'")
    return spec


def storage_stats(node: Node, coll: Any, ns: str, scale: int, timeseries: bool = False) -> dict:
    """A collection's storageStats (storage_stats.cpp): also the body of the collStats command
    (`timeseries`: `coll` is a time-series collection's buckets)."""
    docs = list(coll.docs.values())
    size = sum(len(bsonutil.encode(d)) for d in docs)
    owns = node.owns
    index_sizes = {}
    for spec in coll.indexes:  # an index's size: its keys (one per document, as a first approximation)
        fields = list(spec["key"])
        index_sizes[spec["name"]] = sum(len(bsonutil.encode({f: d.get(f) for f in fields})) for d in docs)
    total_index = sum(index_sizes.values())
    out: dict[str, Any] = {"size": size // scale}
    if timeseries:
        out["timeseries"] = timeseries_stats(coll, size)
    else:
        out["count"] = len(docs)
        if docs:
            out["avgObjSize"] = size // len(docs)
    out["numOrphanDocs"] = sum(1 for d in docs if owns is not None and not owns(ns, d))
    out["storageSize"] = size // scale
    out["freeStorageSize"] = 0
    out["capped"] = bool(coll.options.get("capped"))
    if out["capped"]:
        out["max"] = int(coll.options.get("max") or 0)
        out["maxSize"] = int(coll.options.get("size") or 0) // scale
    out["wiredTiger"] = {"metadata": {"formatVersion": 1}, "type": "file",
                         "uri": f"statistics:table:collection-{coll.uuid.hex() if hasattr(coll.uuid, 'hex') else ''}"}
    out["nindexes"] = len(coll.indexes)
    out["indexDetails"] = {name: {"metadata": {"formatVersion": 8}, "type": "file"} for name in index_sizes}
    out["indexBuilds"] = []
    out["totalIndexSize"] = total_index // scale
    out["indexSizes"] = {name: n // scale for name, n in index_sizes.items()}
    out["totalSize"] = (size + total_index) // scale
    out["scaleFactor"] = scale
    return out


def timeseries_buckets(node: Node, db: str, name: str) -> Any:
    """The buckets collection of the time-series collection `db.name` (None if `name` is not one).  A shard
    that owns chunks of a sharded time-series collection without being its primary holds the buckets
    collection alone (no view): its `timeseries` options say what it is."""
    from mongosim.shardsim import timeseries
    from mongosim.shardsim.view_catalog import definition

    view = definition(node, db, name)
    if view is not None:
        return node.catalog.collection(db, view["viewOn"]) if timeseries.options_of(node, db, view) else None
    buckets = node.catalog.collection(db, timeseries.BUCKETS + name)
    return buckets if buckets is not None and "timeseries" in buckets.options else None


def timeseries_stats(coll: Any, size: int) -> dict:
    """storageStats' `timeseries` section (storage_stats.cpp _appendRecordStats): the buckets collection's
    namespace and buckets, then the bucket catalog's execution counters (appendExecutionStatsToBuilder, as
    8.0 has them with compressed buckets always on; this emulator keeps no such counters: zeros)."""
    out: dict[str, Any] = {"bucketsNs": coll.ns, "bucketCount": len(coll)}
    if len(coll):
        out["avgBucketSize"] = size // len(coll)
    out.update({name: 0 for name in _BUCKET_CATALOG_COUNTERS})
    return out


_BUCKET_CATALOG_COUNTERS = (
    "numBucketInserts", "numBucketUpdates", "numBucketsOpenedDueToMetadata", "numBucketsClosedDueToCount",
    "numBucketsClosedDueToSchemaChange", "numBucketsClosedDueToSize", "numBucketsClosedDueToTimeForward",
    "numBucketsClosedDueToTimeBackward", "numBucketsClosedDueToMemoryThreshold", "numCommits",
    "numMeasurementsGroupCommitted", "numWaits", "numMeasurementsCommitted", "numBucketsClosedDueToReopening",
    "numBucketsArchivedDueToMemoryThreshold", "numBucketsArchivedDueToTimeBackward", "numBucketsReopened",
    "numBucketsKeptOpenDueToLargeMeasurements", "numBucketsClosedDueToCachePressure", "numBucketsFrozen",
    "numCompressedBucketsConvertedToUnsorted", "numBucketsFetched", "numBucketsQueried", "numBucketFetchesFailed",
    "numBucketQueriesFailed", "numBucketReopeningsFailed", "numDuplicateBucketsReopened")


def coll_stats_document(node: Node, db: str, coll_name: str, spec: Any) -> dict:
    """The one document $collStats answers for `db.coll_name` on this node.  A view's namespace is not
    expanded (run_aggregate.cpp): on a plain view the stage finds no collection (storageStats and count
    are NamespaceNotFound); on a time-series collection it reads the buckets collection, and storageStats
    has the `timeseries` section in place of `count`/`avgObjSize`."""
    spec = parse_coll_stats(spec)
    ns = f"{db}.{coll_name}"
    coll = local_database.readable(node, db, coll_name)  # (a member's local.oplog.rs too)
    buckets = timeseries_buckets(node, db, coll_name) if coll is None else None
    if buckets is not None:
        coll = buckets
    doc: dict[str, Any] = {"ns": ns}
    if node.filtering is not None and not node.is_config:
        doc["shard"] = node.name
    doc["host"] = node.host
    doc["localTime"] = node.wall.wall()
    if "latencyStats" in spec:
        doc["latencyStats"] = node.top.latency_stats(ns, bool(spec["latencyStats"].get("histograms")))
    if "storageStats" in spec:
        if coll is None:
            raise MongoError("NamespaceNotFound", "Unable to retrieve storageStats in $collStats stage :: caused by "
                                                  f":: Collection [{ns}] not found.")
        doc["storageStats"] = storage_stats(node, coll, coll.ns if buckets is not None else ns,
                                            int(spec["storageStats"].get("scale", 1)), timeseries=buckets is not None)
    if "count" in spec:
        if coll is None:
            raise MongoError("NamespaceNotFound", f"Unable to retrieve count in $collStats stage :: caused by :: "
                                                  f"Collection [{ns}] not found.")
        doc["count"] = Int64(len(coll))
    if "queryExecStats" in spec:
        scans = coll.index_usage.get("$collScan", [0])[0] if coll is not None else 0
        doc["queryExecStats"] = {"collectionScans": {"total": Int64(scans), "nonTailable": Int64(scans)}}
    return doc


def leading_coll_stats(pipeline: list, target: Any) -> Any:
    """The (checked) spec of a leading $collStats (None if the pipeline does not start with one);
    refused elsewhere."""
    for i, st in enumerate(pipeline):
        if isinstance(st, dict) and STAGE in st and i > 0:
            raise MongoError(40602, f"{STAGE} is only valid as the first stage in a pipeline")
    if not pipeline or not isinstance(pipeline[0], dict) or STAGE not in pipeline[0]:
        return None
    if not isinstance(target, str):
        raise MongoError("InvalidNamespace", f"{STAGE} cannot be used with the collectionless aggregate form")
    return parse_coll_stats(pipeline[0][STAGE])
