"""A shard's filtering metadata and the shard side of the shard versioning protocol.

Every router caches the routing table and may be stale: another router may
have moved a chunk, sharded or dropped a collection, or moved a database's
primary since it last looked.  So a router sends, with every command it
targets by that table, the version it routed by:

- `shardVersion: {e: epoch, t: timestamp, v: placementVersion}` — the
  collection's incarnation (epoch and timestamp, new at every shardCollection,
  drop or reshard) and the highest chunk version (`lastmod`) this shard owns
  in the router's view, `Timestamp(0, 0)` when it owns none; for an unsharded
  collection `UNSHARDED` (zero epoch, zero timestamps);
- `databaseVersion: {uuid, timestamp, lastMod}` with a command for an
  unsharded collection, sent to the database's primary shard.

The shard compares them with its own metadata (the server's
CollectionShardingRuntime and DatabaseShardingState) and refuses a mismatch
with StaleConfig (13388: `ns`, `vReceived`, `vWanted`, `shardId`) or
StaleDbVersion (249: `db`, `vReceived`, `vWanted`): the router then refreshes
its cache and retries.  Placement versions are compatible when they name the
same incarnation and the same major version (a split bumps only the minor
version; a migration bumps the major version of the moved chunk and of one
chunk left on the donor, so both the donor and the recipient change version).

The metadata is the authoritative one on the config server (`config.collections`,
`config.chunks`, `config.databases`): a real shard refreshes from it when a
request's version does not match what it holds, and after a migration it
takes part in.  Here the shard reads the config server in-process and keeps
what it read until the config server's oplog moves (any metadata change is a
write there), so it is never behind the config server.

`owns(ns, doc)` is the filtering itself: does this shard own the document's
shard-key value (writes use it to find a shard-key change that moves a
document to another shard).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from bson import ObjectId, Timestamp
from sortedcontainers import SortedKeyList

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.shard_key import ShardKeyPattern

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

ZERO_EPOCH = ObjectId(b"\x00" * 12)
ZERO_TS = Timestamp(0, 0)


def unsharded_version() -> dict:
    """ChunkVersion::UNSHARDED(), as a router sends it for an unsharded collection."""
    return {"e": ZERO_EPOCH, "t": ZERO_TS, "v": ZERO_TS}


@dataclass
class CollectionMetadata:
    """What this shard knows of one sharded collection: its incarnation, every chunk's owner
    (sorted by lower bound, to find the owner of a shard-key value by bisection) and the
    shard's placement version."""

    ns: str
    epoch: ObjectId
    timestamp: Timestamp
    pattern: ShardKeyPattern
    chunks: SortedKeyList  # (min_key, shard)
    placement: Timestamp

    def version(self) -> dict:
        return {"e": self.epoch, "t": self.timestamp, "v": self.placement}

    def owner_of(self, doc: dict) -> str:
        return self.owner_of_values(self.pattern.extract(doc))

    def owner_of_values(self, values: tuple) -> str:
        """The shard owning the chunk of these shard-key values (in chunk space: hashed fields hashed)."""
        key = ShardKeyPattern.comparable(values)
        i = self.chunks.bisect_key_right(key) - 1
        return self.chunks[max(i, 0)][1]

    def owners(self) -> list[str]:
        """Every shard owning a chunk of the collection, in ShardId order."""
        return sorted({shard for _min, shard in self.chunks})


class FilteringMetadata:
    """One shard's filtering metadata, read from the config server."""

    def __init__(self, shard: str, config: Callable[[], "Node"]) -> None:
        self.shard = shard
        self._config = config  # the config server's primary
        self._seen = -1  # the config oplog position the caches were read at
        self._collections: dict[str, CollectionMetadata | None] = {}
        self._databases: dict[str, dict | None] = {}
        self._primaries: dict[str, str | None] = {}

    # -- reading the config server ---------------------------------------------------------
    def _catalog(self) -> Any:
        cfg = self._config()
        end = cfg.oplog.end
        if end != self._seen:  # the config server changed: read again what is asked next
            self._seen = end
            self._collections.clear()
            self._databases.clear()
            self._primaries.clear()
        return cfg.catalog

    def _cached(self, cache: dict, key: str, read: Callable[[Any, str], Any]) -> Any:
        """`cache[key]`, read from the config server's catalog when the config server moved."""
        catalog = self._catalog()
        try:
            return cache[key]
        except KeyError:
            value = cache[key] = read(catalog, key)
            return value

    def collection(self, ns: str) -> CollectionMetadata | None:
        """The sharded collection's metadata, or None when `ns` is not sharded."""
        return self._cached(self._collections, ns, self._read_collection)

    def _read_collection(self, catalog: Any, ns: str) -> CollectionMetadata | None:
        colls = catalog.collection("config", "collections")
        doc = colls.get(ns) if colls is not None else None
        if doc is None:
            return None
        pattern = ShardKeyPattern(doc["key"])
        uuid = bytes(doc["uuid"])
        chunks = SortedKeyList(key=lambda c: c[0])
        placement = ZERO_TS
        coll_chunks = catalog.collection("config", "chunks")
        for ch in (coll_chunks.docs.values() if coll_chunks is not None else ()):
            if bytes(ch["uuid"]) != uuid:
                continue
            chunks.add((ShardKeyPattern.comparable(pattern.values_of_bound(ch["min"])), ch["shard"]))
            if ch["shard"] == self.shard and _major_minor(ch["lastmod"]) > _major_minor(placement):
                placement = ch["lastmod"]
        return CollectionMetadata(ns, doc["lastmodEpoch"], doc["timestamp"], pattern, chunks, placement)

    def database_version(self, db: str) -> dict | None:
        """The database's version when this shard is its primary (the only shard that holds one)."""
        return self._cached(self._databases, db, self._read_database_version)

    def _read_database_version(self, catalog: Any, db: str) -> dict | None:
        dbs = catalog.collection("config", "databases")
        doc = dbs.get(db) if dbs is not None else None
        return doc.get("version") if doc is not None and doc.get("primary") == self.shard else None

    def primary_shard(self, db: str) -> str | None:
        """The database's primary shard (where its unsharded collections live), as config.databases says."""
        return self._cached(self._primaries, db, self._read_primary)

    @staticmethod
    def _read_primary(catalog: Any, db: str) -> str | None:
        dbs = catalog.collection("config", "databases")
        doc = dbs.get(db) if dbs is not None else None
        return doc.get("primary") if doc is not None else None

    # -- filtering ---------------------------------------------------------------------------
    def owns(self, ns: str, doc: dict) -> bool:
        meta = self.collection(ns)
        return meta is None or not meta.chunks or meta.owner_of(doc) == self.shard

    # -- the shard versioning check -------------------------------------------------------------
    def check(self, db: str, cmd: dict) -> None:
        """Refuse a command routed by a stale routing table (StaleConfig / StaleDbVersion); a bulkWrite
        carries the versions of each of its namespaces in `nsInfo`."""
        name = next(iter(cmd))
        if name == "bulkWrite":
            for entry in cmd.get("nsInfo") or ():
                ns = entry.get("ns") if isinstance(entry, dict) else None
                if isinstance(ns, str) and "." in ns:
                    if "shardVersion" in entry:
                        self._check_collection(ns, entry["shardVersion"])
                    if "databaseVersion" in entry:
                        self._check_database(ns.split(".", 1)[0], entry["databaseVersion"])
            return
        received = cmd.get("shardVersion")
        if received is not None:
            coll = cmd[name]
            if isinstance(coll, str):
                self._check_collection(f"{db}.{coll}", received)
        received_db = cmd.get("databaseVersion")
        if received_db is not None:
            self._check_database(db, received_db)

    def _check_collection(self, ns: str, received: Any) -> None:
        if not isinstance(received, dict):
            raise MongoError("TypeMismatch", "BSON field 'shardVersion' is the wrong type, expected type 'object'")
        meta = self.collection(ns)
        if meta is not None:  # the common case first, without building the wanted version
            r_v = received.get("v")
            if (received.get("e") == meta.epoch and received.get("t") == meta.timestamp
                    and isinstance(r_v, Timestamp) and r_v.time == meta.placement.time):
                return
        wanted = meta.version() if meta is not None else unsharded_version()
        r_inc, w_inc = (received.get("e"), received.get("t")), (wanted["e"], wanted["t"])
        r_v, w_v = received.get("v"), wanted["v"]
        r_major = r_v.time if isinstance(r_v, Timestamp) else None
        if r_inc == w_inc and r_major == w_v.time:
            return
        if r_inc != w_inc:
            why = f"timestamp mismatch detected for {ns}"
        elif _is_set(r_v) and not _is_set(w_v):
            why = f"this shard no longer contains chunks for {ns}, the collection may have been dropped"
        elif _is_set(w_v) and not _is_set(r_v):
            why = f"this shard contains chunks for {ns}, but the client expects unsharded collection"
        else:
            why = f"placement version mismatch detected for {ns}"
        raise MongoError("StaleConfig", why, ns=ns, vReceived=received, vWanted=wanted, shardId=self.shard)

    def _check_database(self, db: str, received: Any) -> None:
        wanted = self.database_version(db)
        if wanted is None:
            raise MongoError("StaleDbVersion", f"No cached info for the database {db}", db=db, vReceived=received)
        if not isinstance(received, dict) or received != wanted:
            raise MongoError("StaleDbVersion", f"Version mismatch for the database {db}",
                             db=db, vReceived=received, vWanted=wanted)


def _major_minor(ts: Timestamp) -> tuple[int, int]:
    return ts.time, ts.inc


def _is_set(v: Any) -> bool:
    return isinstance(v, Timestamp) and (v.time or v.inc) != 0
