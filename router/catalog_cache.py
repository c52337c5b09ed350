"""The router's catalog cache: databases' primary shards and sharded collections' chunk maps.

The truth lives on the config server in `config.databases`, `config.collections`
and `config.chunks`; the router keeps a routing table built from them and
refreshes it after every metadata change it makes, and when a shard tells it
that it routed by a stale table (StaleConfig / StaleDbVersion: another router
changed the metadata; router/shard_versioning.py).  A chunk map is a
SortedKeyList of chunks ordered by their lower bound (compared in BSON order),
so finding the chunk of a shard key is a bisection.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from bson import ObjectId, Timestamp
from sortedcontainers import SortedKeyList

from mongosim.shardsim.shard_key import ShardKeyPattern


@dataclass
class Chunk:
    id: Any
    min: dict
    max: dict
    shard: str
    min_key: tuple
    max_key: tuple
    lastmod: Timestamp


@dataclass
class CollectionRouting:
    ns: str
    uuid: Any
    pattern: ShardKeyPattern
    epoch: ObjectId
    timestamp: Timestamp
    unique: bool
    chunks: SortedKeyList = field(default_factory=lambda: SortedKeyList(key=lambda c: c.min_key))
    # each owning shard's placement version: the highest lastmod of its chunks (the shard versioning protocol)
    placement: dict[str, Timestamp] = field(default_factory=dict)
    default_collation: dict | None = None  # config.collections' defaultCollation (None: simple)
    timeseries_fields: dict | None = None  # config.collections' timeseriesFields (a time-series collection's buckets)
    targeting: Any = field(default=None, compare=False, repr=False)  # router.insert_targeting's cache

    def chunk_for(self, values: tuple) -> Chunk:
        key = ShardKeyPattern.comparable(values)
        i = self.chunks.bisect_key_right(key) - 1
        return self.chunks[max(i, 0)]

    def shard_for(self, values: tuple) -> str:
        return self.chunk_for(values).shard

    def shards(self) -> list[str]:
        return sorted({c.shard for c in self.chunks})

    def chunks_on(self, shard: str) -> list[Chunk]:
        return [c for c in self.chunks if c.shard == shard]

    def find_chunk_with_min(self, min_bound: dict) -> Chunk | None:
        key = ShardKeyPattern.comparable(self.pattern.values_of_bound(min_bound))
        i = self.chunks.bisect_key_left(key)
        if i < len(self.chunks) and self.chunks[i].min_key == key:
            return self.chunks[i]
        return None


@dataclass
class DatabaseRouting:
    name: str
    primary: str
    version: dict


class CatalogCache:
    def __init__(self, config: Callable[[], Any] | None = None) -> None:
        self.databases: dict[str, DatabaseRouting] = {}
        self.collections: dict[str, CollectionRouting] = {}
        self._config = config  # the config server: a database not cached is looked up there
        self._seen = -1  # the config server's oplog position at the last refresh

    def refresh(self, config_catalog: Any) -> None:
        """Rebuild from the config server's catalog (`config.databases/collections/chunks`)."""
        if self._config is not None:
            self._seen = self._config().oplog.end
        dbs = config_catalog.collection("config", "databases")
        colls = config_catalog.collection("config", "collections")
        chunks = config_catalog.collection("config", "chunks")
        self.databases = {}
        for d in (dbs.docs.values() if dbs else ()):
            self.databases[d["_id"]] = DatabaseRouting(d["_id"], d["primary"], d.get("version", {}))
        by_uuid: dict[bytes, CollectionRouting] = {}
        self.collections = {}
        for c in (colls.docs.values() if colls else ()):
            cr = CollectionRouting(
                c["_id"], c["uuid"], ShardKeyPattern(c["key"]), c["lastmodEpoch"], c["timestamp"], bool(c.get("unique"))
            )
            cr.default_collation = c.get("defaultCollation") or None
            cr.timeseries_fields = c.get("timeseriesFields")
            self.collections[c["_id"]] = cr
            by_uuid[bytes(c["uuid"])] = cr
        for ch in (chunks.docs.values() if chunks else ()):
            cr = by_uuid.get(bytes(ch["uuid"]))
            if cr is None:
                continue
            mn = cr.pattern.values_of_bound(ch["min"])
            mx = cr.pattern.values_of_bound(ch["max"])
            cr.chunks.add(Chunk(ch["_id"], ch["min"], ch["max"], ch["shard"],
                                ShardKeyPattern.comparable(mn), ShardKeyPattern.comparable(mx), ch["lastmod"]))
            seen = cr.placement.get(ch["shard"])
            if seen is None or (ch["lastmod"].time, ch["lastmod"].inc) > (seen.time, seen.inc):
                cr.placement[ch["shard"]] = ch["lastmod"]

    def primary_of(self, db: str) -> str | None:
        d = self.databases.get(db)
        if d is None and self._config is not None:  # not cached: look it up (another router may have made it)
            config = self._config()
            if config.oplog.end != self._seen:
                self.refresh(config.catalog)
                d = self.databases.get(db)
        return d.primary if d else None

    def routing(self, ns: str) -> CollectionRouting | None:
        return self.collections.get(ns)

    def sharded_in(self, db: str) -> Iterable[CollectionRouting]:
        prefix = db + "."
        return [c for ns, c in self.collections.items() if ns.startswith(prefix)]
