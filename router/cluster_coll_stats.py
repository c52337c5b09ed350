"""$collStats and $shardedDataDistribution through mongos: the collection's statistics, shard by shard.

`$collStats` (first stage of an aggregate on a collection) runs on every shard
that owns a chunk of a sharded collection, or on the database's primary shard
for an unsharded one; each answers its own document (`shard`, `host`,
`storageStats`, ..., shardsim/coll_stats.py), in ShardId order, and the rest of
the pipeline runs here on them.

`$shardedDataDistribution` (8.0; `{aggregate: 1}` on `admin`) answers, for each
sharded collection, each shard's part: `{ns, shards: [{shardName,
numOrphanedDocs, numOwnedDocuments, ownedSizeBytes, orphanedSizeBytes}]}` —
owned documents are those of the chunks the shard owns, orphans the leftovers
of migrations; sizes are counts times the average document size on that
shard.  mongosh's `sh.status()` shows it, `sh.getShardedDataDistribution()`
returns it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bson import Int64

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.coll_stats import STAGE as COLL_STATS
from mongosim.shardsim.timeseries import BUCKETS

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

DATA_DISTRIBUTION = "$shardedDataDistribution"


def coll_stats_targets(router: Router, db: str, coll: str) -> list[str]:
    """The shards $collStats asks: the chunk owners of a sharded collection (of a sharded time-series
    collection: its buckets collection's), else the primary shard."""
    routing = router.catalog.routing(f"{db}.{coll}") or router.catalog.routing(f"{db}.{BUCKETS}{coll}")
    if routing is not None:
        return routing.shards()
    primary = router.catalog.primary_of(db)
    return [primary] if primary is not None and primary in router.shards else []


async def cluster_coll_stats(router: Router, db: str, coll: str, spec: Any) -> list[dict]:
    """One $collStats document per targeted shard, in ShardId order."""
    out = []
    for shard in coll_stats_targets(router, db, coll):
        reply = await router.shard(shard).command(db, {"aggregate": coll, "pipeline": [{COLL_STATS: spec}],
                                                       "cursor": {}})
        out.extend(reply["cursor"]["firstBatch"])
    return out


def leading_data_distribution(pipeline: list, db: str, target: Any) -> Any:
    """The spec of a leading $shardedDataDistribution (None if there is none); refused where it may not run."""
    for i, st in enumerate(pipeline):
        if isinstance(st, dict) and DATA_DISTRIBUTION in st and i > 0:
            raise MongoError(40602, f"{DATA_DISTRIBUTION} is only valid as the first stage in a pipeline")
    if not pipeline or not isinstance(pipeline[0], dict) or DATA_DISTRIBUTION not in pipeline[0]:
        return None
    if db != "admin" or target != 1:
        raise MongoError("InvalidNamespace", f"{DATA_DISTRIBUTION} must be run against the 'admin' database with "
                                             "{aggregate: 1}")
    spec = pipeline[0][DATA_DISTRIBUTION]
    if not isinstance(spec, dict):
        raise MongoError(40414 if spec is None else "TypeMismatch",
                         f"{DATA_DISTRIBUTION} must take a nested object but found: {spec!r}")
    return spec


async def sharded_data_distribution(router: Router) -> list[dict]:
    """Each sharded collection's documents and bytes per shard, owned and orphaned."""
    out = []
    colls = router.config.catalog.collection("config", "collections")
    for doc in sorted(colls.docs.values() if colls is not None else (), key=lambda d: d["_id"]):
        if doc.get("dropped") or doc.get("unsplittable"):
            continue
        ns = doc["_id"]
        db, name = ns.split(".", 1)
        shards = []
        for shard in sorted(router.shards):
            node = router.shard(shard).node
            coll = node.catalog.collection(db, name)
            if coll is None:
                continue
            stats = (await router.shard(shard).command(db, {"aggregate": name, "pipeline": [
                {COLL_STATS: {"storageStats": {}}}], "cursor": {}}))["cursor"]["firstBatch"][0]["storageStats"]
            orphans, count, avg = stats["numOrphanDocs"], stats["count"], stats.get("avgObjSize", 0)
            shards.append({"shardName": shard, "numOrphanedDocs": Int64(orphans),
                           "numOwnedDocuments": Int64(count - orphans), "ownedSizeBytes": Int64((count - orphans) * avg),
                           "orphanedSizeBytes": Int64(orphans * avg)})
        out.append({"ns": ns, "shards": shards})
    return out
