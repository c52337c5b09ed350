"""$collStats on a node: one document describing a collection (DocumentSourceCollStats).

`{$collStats: {latencyStats: {histograms}, storageStats: {scale}, count: {}, queryExecStats: {}}}`
must be the first stage of an aggregate on a collection; the node answers one
document — `ns`, `shard` (on a shard), `host`, `localTime`, then a section for
each option asked — and the rest of the pipeline runs on it.  Through mongos
every shard that holds the collection answers its own document
(router/cluster_coll_stats.py): that is how mongosh's
`db.c.getShardDistribution()` sees each shard's part.

storageStats follows CollectionStorageStats in the server's field order:
`size` (the documents' BSON bytes), `count`, `numOrphanDocs` (documents this
shard holds but whose chunk another shard owns: a migration's leftovers, not yet
range-deleted), `avgObjSize` (when there are documents), `storageSize`,
`freeStorageSize`, `capped` (and `max`/`maxSize` for a capped collection),
`nindexes`, `indexBuilds`, `totalIndexSize`, `totalSize`, `indexSizes`,
`scaleFactor`.  The emulator stores no pages: storage and index sizes are the
documents' and keys' own sizes (no compression, no free space).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mongosim.oplog import bsonutil
from mongosim.oplog.errors import MongoError

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

STAGE = "$collStats"
_OPTIONS = ("latencyStats", "storageStats", "count", "queryExecStats")


def _parse(spec: Any) -> dict:
    if not isinstance(spec, dict):
        raise MongoError(40166, f"$collStats must take a nested object but found: {spec!r}")
    for k, v in spec.items():
        if k not in _OPTIONS:
            raise MongoError(40415, f"BSON field '$collStats.{k}' is an unknown field.")
        if not isinstance(v, dict):
            raise MongoError("TypeMismatch", f"BSON field '$collStats.{k}' is the wrong type '{type(v).__name__}', "
                                             "expected type 'object'")
    scale = (spec.get("storageStats") or {}).get("scale", 1)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or scale < 1:
        raise MongoError(51024, "BSON field 'scale' value must be >= 1, actual value '" + str(scale) + "'")
    return spec


def _storage_stats(node: Node, coll: Any, ns: str, scale: int) -> dict:
    docs = list(coll.docs.values())
    sizes = [len(bsonutil.encode(d)) for d in docs]
    size = sum(sizes)
    owns = node.owns
    orphans = sum(1 for d in docs if owns is not None and not owns(ns, d))
    index_sizes = {spec["name"]: 0 for spec in coll.indexes}
    for spec in coll.indexes:  # an index's size: its keys (one per document, as a first approximation)
        fields = list(spec["key"])
        index_sizes[spec["name"]] = sum(len(bsonutil.encode({f: d.get(f) for f in fields})) for d in docs)
    total_index = sum(index_sizes.values())
    out: dict[str, Any] = {"size": size // scale, "count": len(docs), "numOrphanDocs": orphans}
    if docs:
        out["avgObjSize"] = size // len(docs)
    out["storageSize"] = size // scale
    out["freeStorageSize"] = 0
    out["capped"] = bool(coll.options.get("capped"))
    if out["capped"]:
        out["max"] = int(coll.options.get("max", 0))
        out["maxSize"] = int(coll.options.get("size", 0)) // scale
    out["nindexes"] = len(coll.indexes)
    out["indexBuilds"] = []
    out["totalIndexSize"] = total_index // scale
    out["totalSize"] = (size + total_index) // scale
    out["indexSizes"] = {name: n // scale for name, n in index_sizes.items()}
    out["scaleFactor"] = scale
    return out


def coll_stats_document(node: Node, db: str, coll_name: str, spec: Any) -> dict:
    """The one document $collStats answers for `db.coll_name` on this node."""
    spec = _parse(spec)
    ns = f"{db}.{coll_name}"
    coll = node.catalog.collection(db, coll_name)
    doc: dict[str, Any] = {"ns": ns}
    if node.filtering is not None:
        doc["shard"] = node.name
    doc["host"] = node.host
    doc["localTime"] = node.wall.wall()
    if "latencyStats" in spec:
        zero = {"latency": 0, "ops": 0, "queryableEncryptionLatencyMicros": 0}
        doc["latencyStats"] = {k: dict(zero) for k in ("reads", "writes", "commands", "transactions")}
    if "storageStats" in spec:
        if coll is None:
            raise MongoError("NamespaceNotFound", "Unable to retrieve storageStats in $collStats stage :: caused by "
                                                  f":: Collection [{ns}] not found.")
        doc["storageStats"] = _storage_stats(node, coll, ns, int(spec["storageStats"].get("scale", 1)))
    if "count" in spec:
        if coll is None:
            raise MongoError("NamespaceNotFound", f"Unable to retrieve count in $collStats stage :: caused by :: "
                                                  f"Collection [{ns}] not found.")
        doc["count"] = len(coll)
    if "queryExecStats" in spec:
        doc["queryExecStats"] = {"collectionScans": {"total": 0, "nonTailable": 0}}
    return doc


def leading_coll_stats(pipeline: list, target: Any) -> Any:
    """The spec of a leading $collStats (None if the pipeline does not start with one); refused elsewhere."""
    for i, st in enumerate(pipeline):
        if isinstance(st, dict) and STAGE in st and i > 0:
            raise MongoError(40602, f"{STAGE} is only valid as the first stage in a pipeline")
    if not pipeline or not isinstance(pipeline[0], dict) or STAGE not in pipeline[0]:
        return None
    if not isinstance(target, str):
        raise MongoError("InvalidNamespace", f"{STAGE} cannot be used with the collectionless aggregate form")
    return pipeline[0][STAGE]
