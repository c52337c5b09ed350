"""Sharding administration on the router: databases, shardCollection, chunks, migrations, shards.

Metadata writes go to the config server as ordinary writes on `config.*`
(so they appear in its oplog, where running change streams watch
`config.shards`); the router's catalog cache is refreshed after each change.

A migration (`moveChunk`/`moveRange`) is real: the donor's documents in the
range are cloned to the recipient (`fromMigrate` inserts), the chunk's owner is
committed on the config server, and the donor deletes the range (`fromMigrate`
deletes).  While it runs, the collection is in a critical section: the router
holds writes to it, so no write can fall between clone and commit.  If the
recipient had no chunk of the collection, the donor first writes the
`migrateChunkToNewShard` noop.
"""

from __future__ import annotations

import uuid as _uuid
from dataclasses import replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import trio
from bson import Binary, Int64, MaxKey, MinKey, ObjectId, Timestamp
from mongosim.oplog import bsonutil
from mongosim.oplog.errors import MongoError
from mongosim.router.catalog_cache import Chunk, CollectionRouting
from mongosim.router.collation_targeting import check_default_collation, check_shard_collection_collation
from mongosim.router import initial_split_policy, timeseries_routing, zone_info
from mongosim.router.command_registry import router_command
from mongosim.router.request import Request
from mongosim.router.sharding_catalog_manager import CriticalSections
from mongosim.router.sharding_logging import chunk_version_string, log_change
from mongosim.shardsim.collection_uuid import check_collection_uuid, uuid_arg
from mongosim.shardsim.query.values import type_name
from mongosim.shardsim.shard_key import ShardKeyPattern

if TYPE_CHECKING:
    from mongosim.router.mongos import Router


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _split_ns(ns: Any, what: str = "namespace") -> tuple[str, str]:
    if not isinstance(ns, str) or "." not in ns or ns.startswith(".") or ns.endswith("."):
        raise MongoError("InvalidNamespace", f"Invalid {what}: {ns!r}")
    db, coll = ns.split(".", 1)
    return db, coll


async def config_write(router: Router, cmd: dict) -> dict:
    """A write on the config server's `config` database; raises on write errors."""
    reply = await router.config_remote.command("config", cmd)
    if reply.get("writeErrors"):
        raise MongoError.from_write_error(reply["writeErrors"][0])
    return reply


def critical_sections(router: Router) -> CriticalSections:
    """The cluster's migration critical sections (shared by every router)."""
    return router.manager.critical_sections


# -- databases -------------------------------------------------------------------------
def draining_shards(router: Router) -> set[str]:
    """Shards being removed (`draining: true` in config.shards): no new data goes there."""
    shards = router.config.catalog.collection("config", "shards")
    return {d["_id"] for d in shards.docs.values() if d.get("draining")} if shards else set()


def placeable_shards(router: Router) -> list[str]:
    """The shards new databases and initial chunks may go to: every shard not draining."""
    draining = draining_shards(router)
    return sorted(n for n in router.shards if n not in draining) or sorted(router.shards)


async def choose_primary_shard(router: Router) -> str:
    if not router.shards:
        raise MongoError("ShardNotFound", "No shards found")
    sizes = {}
    candidates = placeable_shards(router)
    for name in candidates:
        total = 0
        for coll in router.shard(name).node.catalog.all_collections():
            total += len(coll)
        sizes[name] = total
    return min(candidates, key=lambda n: (sizes[n], n))


async def ensure_database(router: Router, db: str, primary: str | None = None) -> str:
    """The primary shard of `db`, creating the database's config entry when needed."""
    if db in ("admin", "config"):
        return "config"
    found = router.catalog.primary_of(db)  # (not cached: looked up on the config server)
    if found is not None:
        return found
    if not db or any(c in db for c in '/\\. "$\x00'):
        raise MongoError("InvalidNamespace", f"Invalid database name: '{db}'")
    for other in router.catalog.databases:
        if other.lower() == db.lower() and other != db:
            raise MongoError(13297,  # DatabaseDifferCase
                              f"db already exists with different case already have: [{other}] trying to create [{db}]")
    if primary is None:
        primary = await choose_primary_shard(router)
    elif primary not in router.shards:
        raise MongoError("ShardNotFound", f"Shard {primary} not found")
    version = {"uuid": Binary(_uuid.uuid4().bytes, 4), "timestamp": router.clock.now(), "lastMod": 1}
    try:
        await config_write(router, {"insert": "databases",
                                    "documents": [{"_id": db, "primary": primary, "version": version}]})
    except MongoError as err:
        if err.code_name != "DuplicateKey":
            raise
        # another router created it meanwhile: use theirs
    router.refresh_catalog()
    return router.catalog.primary_of(db) or primary


@router_command("enableSharding", "enablesharding")
async def cmd_enable_sharding(router: Router, req: Request) -> dict:
    admin_only(req)
    db = req.cmd[req.name]
    if not isinstance(db, str) or not db:
        raise MongoError("InvalidNamespace", f"invalid db name specified: {db!r}")
    await ensure_database(router, db, req.cmd.get("primaryShard"))
    return {"ok": 1.0}


def _peer(req: Request) -> str:
    """The client's address, as a process logs it (config.changelog's clientAddr)."""
    return getattr(req.conn, "peer", "") or ""


def admin_only(req: Request) -> None:
    if req.db != "admin":
        raise MongoError("Unauthorized", f"{req.name} may only be run against the admin database.")


def check_expected_uuid(router: Router, req: Request, command: str, db: str, name: str) -> None:
    """The `collectionUUID` shardCollection, refineCollectionShardKey and reshardCollection take (6.0+,
    their coordinators' AutoGetCollection with the expected UUID, on the primary shard): a collection of
    another UUID, none, or a view is CollectionUUIDMismatch — before the collection is found (un)sharded."""
    uuid = req.cmd.get("collectionUUID")
    if uuid is None:
        return
    uuid_arg(f"{command}.collectionUUID", uuid)
    primary = router.catalog.primary_of(db)
    if primary is None:
        return
    node = router.shard(primary).node
    check_collection_uuid(node, db, name, node.catalog.collection(db, name), uuid)


# -- shardCollection -------------------------------------------------------------------
@router_command("shardCollection", "shardcollection")
async def cmd_shard_collection(router: Router, req: Request) -> dict:
    admin_only(req)
    ns = req.cmd[req.name]
    db, name = _split_ns(ns)
    key = req.cmd.get("key")
    if name.startswith(timeseries_routing.BUCKETS):
        raise MongoError(5731501, "Sharding a time-series buckets collection is not allowed; shard the time-series "
                                  "collection itself")
    pattern = ShardKeyPattern(key)
    _presplit_hashed_zones(req)
    if req.cmd.get("unique") and pattern.hashed:
        raise MongoError("InvalidOptions", "hashed shard keys cannot be declared unique.")
    check_shard_collection_collation(req.cmd.get("collation"))
    async with router._ddl_lock:
        router.refresh_catalog()  # DDL runs on the authoritative metadata
        primary = await ensure_database(router, db)
        check_expected_uuid(router, req, "shardCollection", db, name)  # (a time-series collection's: never)
        ts = await timeseries_routing.prepare_shard_collection(router, req, db, name, primary)
        if ts is not None:  # the buckets collection is sharded, on the key the user's translates to
            reply = await _shard(router, req, f"{db}.{timeseries_routing.BUCKETS}{name}", ts.bucket_key, False,
                                 primary, ts)
            return {**reply, "collectionsharded": ns}
        return await _shard(router, req, ns, key, bool(req.cmd.get("unique", False)), primary)


def _presplit_hashed_zones(req: Request) -> bool:
    """The `presplitHashedZones` option (an IDL bool: a bool or absent)."""
    v = req.cmd.get("presplitHashedZones")
    if v is not None and not isinstance(v, bool):
        raise MongoError("TypeMismatch", f"BSON field 'ShardCollection.presplitHashedZones' is the wrong type "
                                         f"'{type_name(v)}', expected type 'bool'")
    return bool(v)


async def _shard(router: Router, req: Request, ns: str, key: Any, unique: bool, primary: str, ts: Any = None) -> dict:
    """Shard `ns` on `key` (`ts`: the time-series collection whose buckets `ns` holds)."""
    db, name = ns.split(".", 1)
    pattern = ShardKeyPattern(key)
    existing = router.catalog.routing(ns)
    if existing is not None:
        if existing.pattern.key == pattern.key:
            return {"collectionsharded": ns, "ok": 1.0}
        # (8.0's create_collection_coordinator.cpp: the message names the collection only)
        raise MongoError("AlreadyInitialized", f"sharding already enabled for collection {ns}")
    pnode = router.shard(primary).node
    await log_change(router, "shardCollection.start", ns, {"shardKey": dict(pattern.key), "collection": ns,
                                                           "primary": primary}, by=pnode, client_addr=_peer(req))
    coll = pnode.catalog.collection(db, name)
    default_collation = coll.options.get("collation") if coll is not None else None
    check_default_collation(default_collation, req.cmd.get("collation"))
    # the initial chunks (before the collection and its index are made, as the coordinator decides)
    bounds = initial_split_policy.first_chunks(
        router, pattern, zone_info.zone_ranges(router, ns), empty=coll is None or len(coll) == 0,
        presplit=_presplit_hashed_zones(req), primary=primary)
    if coll is None:
        await router.shard(primary).command(db, {"create": name})
        coll = pnode.catalog.collection(db, name)
    # the shard key index (chunks hold binary ranges: only an index of the simple collation serves)
    has_index = any(list(s["key"]) [: len(pattern.fields)] == pattern.fields and "collation" not in s and
                    all(s["key"][f] == pattern.key[f] for f in pattern.fields) for s in coll.indexes)
    if not has_index and not (pattern.fields == ["_id"] and not pattern.hashed):
        if len(coll) and not req.cmd.get("_createIndexIfMissing", True):
            raise MongoError("InvalidOptions", "Please create an index that starts with the proposed shard key before sharding the collection.")
        index_key = dict(pattern.key) if ts is None else ts.user_key  # (a time-series index: the user's key)
        spec: dict[str, Any] = {"key": index_key, "name": "_".join(f"{k}_{v}" for k, v in index_key.items())}
        if unique:
            spec["unique"] = True
        if default_collation:
            spec["collation"] = {"locale": "simple"}
        await router.shard(primary).command(db, {"createIndexes": name if ts is None else ts.name,
                                                 "indexes": [spec]})
    uuid = coll.uuid
    epoch = ObjectId()
    timestamp = router.clock.now()
    owners = sorted({b[2] for b in bounds})
    for shard_name in owners:
        await router.shard(shard_name).command(db, {
            "_shardsvrSetShardKey": ns, "key": pattern.key, "uuid": uuid,
            "options": dict(coll.options), "indexes": [dict(s) for s in coll.indexes],
            "fromMigrate": shard_name != primary,
        })
    if primary not in owners:
        await router.shard(primary).command(db, {"_shardsvrSetShardKey": ns, "key": pattern.key, "uuid": uuid})
    await config_write(router, {"insert": "collections", "documents": [{
        "_id": ns, "lastmodEpoch": epoch, "lastmod": _now(), "timestamp": timestamp, "uuid": uuid,
        "key": dict(pattern.key), "unique": unique, "noBalance": False,
        **({"defaultCollation": default_collation} if default_collation else {}),
        **({"timeseriesFields": ts.fields} if ts is not None else {}),
    }]})
    chunk_docs = []
    for i, (lo, hi, shard_name) in enumerate(bounds):
        chunk_docs.append({
            "_id": ObjectId(), "uuid": uuid, "min": pattern.bound(lo), "max": pattern.bound(hi),
            "shard": shard_name, "lastmod": Timestamp(1, i), "onCurrentShardSince": timestamp,
            "history": [{"validAfter": timestamp, "shard": shard_name}],
        })
    await config_write(router, {"insert": "chunks", "documents": chunk_docs})
    router.refresh_catalog()
    request = {"shardKey": dict(pattern.key), "unique": unique, "presplitHashedZones": _presplit_hashed_zones(req)}
    await router.shard(primary).command(db, {"_shardsvrNotifyShardCollection": ns, "request": request})
    await log_change(router, "shardCollection.end", ns, {
        "uuid": uuid, "placementVersion": chunk_version_string(1, len(bounds) - 1, epoch, timestamp),
        "empty": len(coll) == 0, "numChunks": len(bounds)}, by=pnode, client_addr=_peer(req))
    return {"collectionsharded": ns, "ok": 1.0}


# -- chunks ----------------------------------------------------------------------------
def _routing(router: Router, ns: Any) -> CollectionRouting:
    _split_ns(ns)
    r = router.catalog.routing(ns)
    if r is None:
        raise MongoError("NamespaceNotSharded", f"{ns} is not sharded")
    return r


def _chunk_containing(r: CollectionRouting, find: dict) -> Chunk:
    values = tuple(find.get(f) for f in r.pattern.fields)
    if any(f not in find for f in r.pattern.fields):
        raise MongoError("ShardKeyNotFound", f"Shard key {r.pattern.key} not found in {find}")
    values = tuple(v if f not in r.pattern.hashed or isinstance(v, (MinKey, MaxKey)) else v for f, v in zip(r.pattern.fields, values))
    return r.chunk_for(values)


def _chunk_by_bounds(r: CollectionRouting, bounds: list) -> Chunk:
    if not isinstance(bounds, list) or len(bounds) != 2:
        raise MongoError("BadValue", "bounds must be an array of two objects")
    chunk = r.find_chunk_with_min(bounds[0])
    if chunk is None or ShardKeyPattern.comparable(r.pattern.values_of_bound(bounds[1])) != chunk.max_key:
        raise MongoError("BadValue", f"no chunk found with the shard key bounds [{bounds[0]}, {bounds[1]})")
    return chunk


async def split_chunk(router: Router, r: CollectionRouting, chunk: Chunk, middle: dict) -> None:
    mid_vals = r.pattern.values_of_bound(middle)
    mk = ShardKeyPattern.comparable(mid_vals)
    if not (chunk.min_key < mk < chunk.max_key):
        raise MongoError("InvalidOptions", f"split key {middle} not strictly inside chunk [{chunk.min}, {chunk.max})")
    major = max(c.lastmod.time for c in r.chunks)
    minor = max(c.lastmod.inc for c in r.chunks if c.lastmod.time == major)
    await config_write(router, {"update": "chunks", "updates": [{
        "q": {"_id": chunk.id}, "u": {"$set": {"max": middle, "lastmod": Timestamp(major, minor + 1)}}}]})
    await config_write(router, {"insert": "chunks", "documents": [{
        "_id": ObjectId(), "uuid": r.uuid, "min": middle, "max": chunk.max, "shard": chunk.shard,
        "lastmod": Timestamp(major, minor + 2), "onCurrentShardSince": router.clock.now(),
        "history": [{"validAfter": router.clock.now(), "shard": chunk.shard}],
    }]})
    router.refresh_catalog()

    def version(major: int, minor: int) -> dict:  # ChunkVersion::serializeToBSON
        return {"e": r.epoch, "t": r.timestamp, "v": Timestamp(major, minor)}
    await log_change(router, "split", r.ns, {
        "before": {"min": chunk.min, "max": chunk.max, "lastmod": version(major, minor)},
        "left": {"min": chunk.min, "max": middle, "lastmod": version(major, minor + 1)},
        "right": {"min": middle, "max": chunk.max, "lastmod": version(major, minor + 2)},
        "owningShard": chunk.shard})


@router_command("split")
async def cmd_split(router: Router, req: Request) -> dict:
    admin_only(req)
    ns = req.cmd["split"]
    async with router._ddl_lock:
        router.refresh_catalog()  # DDL runs on the authoritative metadata
        r = _routing(router, ns)
        if "middle" in req.cmd:
            middle = req.cmd["middle"]
            chunk = _chunk_containing(r, middle)
        elif "find" in req.cmd or "bounds" in req.cmd:
            chunk = _chunk_containing(r, req.cmd["find"]) if "find" in req.cmd else _chunk_by_bounds(r, req.cmd["bounds"])
            db, _ = ns.split(".", 1)
            reply = await router.shard(chunk.shard).command(db, {
                "_shardsvrCountInRange": ns, "key": r.pattern.key, "min": chunk.min, "max": chunk.max})
            keys = reply["keys"]
            if len(keys) < 2:
                raise MongoError(87,  # CannotSplit
                                  "chunk has too few documents to be split")
            middle = r.pattern.bound(tuple(keys[len(keys) // 2]))
        else:
            raise MongoError("InvalidOptions", "need to specify 'middle', 'find' or 'bounds'")
        await split_chunk(router, r, chunk, middle)
    return {"ok": 1.0}


async def migrate_chunk(router: Router, r: CollectionRouting, chunk: Chunk, to: str) -> None:
    """Move `chunk` to shard `to`: clone, commit, delete the range on the donor."""
    if to not in router.shards:
        raise MongoError("ShardNotFound", f"Could not find shard {to}")
    donor = chunk.shard
    if donor == to:
        return
    db, name = r.ns.split(".", 1)
    cs = critical_sections(router)
    cs.acquire(r.ns)
    try:
        donor_remote, recipient = router.shard(donor), router.shard(to)
        bounds = {"min": chunk.min, "max": chunk.max, "from": donor, "to": to}
        donor_steps, recipient_steps = MigrationTimings(6), MigrationTimings(8)  # MoveTimingHelper
        donor_steps.done(1)
        await log_change(router, "moveChunk.start", r.ns, dict(bounds), by=donor_remote.node,
                         client_addr=router.config.host)
        donor_steps.done(2)
        if not r.chunks_on(to):
            await donor_remote.command(db, {"_notifyMigrateChunkToNewShard": r.ns, "fromShardId": donor, "toShardId": to})
        clone = await donor_remote.command(db, {"_migrateClone": r.ns, "key": r.pattern.key, "min": chunk.min, "max": chunk.max})
        donor_steps.done(3)
        recipient_steps.done(1, 2, 3)
        if recipient.node.catalog.collection(db, name) is None:
            await recipient.command(db, {"_shardsvrSetShardKey": r.ns, "key": r.pattern.key, "uuid": clone["uuid"],
                                         "options": clone["options"], "indexes": clone["indexes"], "fromMigrate": True})
        recipient_steps.done(4)
        if clone["documents"]:
            await recipient.command(db, {"_recvChunkDocs": r.ns, "documents": clone["documents"]})
        recipient_steps.done(5, 6, 7, 8)
        await log_change(router, "moveChunk.to", r.ns, recipient_steps.details(chunk.min, chunk.max, to, donor),
                         by=recipient.node, client_addr=donor_remote.node.host)
        donor_steps.done(4)
        major = max(c.lastmod.time for c in r.chunks) + 1
        now = router.clock.now()
        updates = [{
            "q": {"_id": chunk.id},
            "u": {"$set": {"shard": to, "lastmod": Timestamp(major, 0), "onCurrentShardSince": now},
                  "$push": {"history": {"$each": [{"validAfter": now, "shard": to}], "$position": 0}}},
        }]
        # the control chunk: one chunk left on the donor takes the new major version too, so the
        # donor's placement version changes and a router that missed the migration is refused there
        left = [c for c in r.chunks if c.shard == donor and c.id != chunk.id]
        if left:
            control = max(left, key=lambda c: (c.lastmod.time, c.lastmod.inc))
            updates.append({"q": {"_id": control.id}, "u": {"$set": {"lastmod": Timestamp(major, 1)}}})
        await config_write(router, {"update": "chunks", "updates": updates})
        router.refresh_catalog()
        donor_steps.done(5)
        counts = {"cloned": Int64(len(clone["documents"])),
                  "clonedBytes": Int64(sum(len(bsonutil.encode(d)) for d in clone["documents"])),
                  "catchup": Int64(0), "steady": Int64(0)}
        await log_change(router, "moveChunk.commit", r.ns, {**bounds, "counts": counts}, by=donor_remote.node,
                         client_addr=router.config.host)
        await _delete_range(donor_remote, db, {"_deleteRange": r.ns, "key": r.pattern.key, "min": chunk.min, "max": chunk.max})
        donor_steps.done(6)
        await log_change(router, "moveChunk.from", r.ns, donor_steps.details(chunk.min, chunk.max, to, donor),
                         by=donor_remote.node, client_addr=router.config.host)
    finally:
        cs.release(r.ns)


class MigrationTimings:
    """MoveTimingHelper: how long each step of one side of a migration took ("step i of n": ms), and at
    the end the chunk, the shards and whether every step was done (`note`: "success" / "aborted")."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.timings: dict[str, int] = {}
        self._last = trio.current_time()

    def done(self, *steps: int) -> None:
        now = trio.current_time()
        for step in steps:
            self.timings[f"step {step} of {self.steps}"] = int((now - self._last) * 1000)
            self._last = now

    def details(self, mn: dict, mx: dict, to: str, frm: str) -> dict:
        note = "success" if len(self.timings) == self.steps else "aborted"
        return {**self.timings, "min": mn, "max": mx, "to": to, "from": frm, "note": note}


async def _delete_range(donor: Any, db: str, cmd: dict) -> None:
    """The range deleter: retried until it succeeds, so a committed migration leaves no orphans."""
    delay = 0.01
    for attempt in range(100):
        try:
            await donor.command(db, cmd)
            return
        except MongoError:
            if attempt == 99:
                raise
            await trio.sleep(delay)
            delay = min(delay * 2, 1.0)


@router_command("moveChunk", "movechunk")
async def cmd_move_chunk(router: Router, req: Request) -> dict:
    admin_only(req)
    ns = req.cmd[req.name]
    to = req.cmd.get("to")
    async with router._ddl_lock:
        router.refresh_catalog()  # DDL runs on the authoritative metadata
        r = _routing(router, ns)
        if "find" in req.cmd:
            chunk = _chunk_containing(r, req.cmd["find"])
        elif "bounds" in req.cmd:
            chunk = _chunk_by_bounds(r, req.cmd["bounds"])
        else:
            raise MongoError("InvalidOptions", "need to specify either a find query, or both lower and upper bounds.")
        zone_info.check_receiver(router, r, chunk, to)
        await migrate_chunk(router, r, chunk, to)
    return {"millis": 0, "ok": 1.0}


@router_command("moveRange")
async def cmd_move_range(router: Router, req: Request) -> dict:
    admin_only(req)
    ns = req.cmd["moveRange"]
    to = req.cmd.get("toShard")
    mn, mx = req.cmd.get("min"), req.cmd.get("max")
    if mn is None:
        raise MongoError("InvalidOptions", "moveRange needs a 'min' bound")
    async with router._ddl_lock:
        router.refresh_catalog()  # DDL runs on the authoritative metadata
        r = _routing(router, ns)
        chunk = r.find_chunk_with_min(mn)
        # the range that would move, checked before anything is split
        whole = chunk if chunk is not None else _chunk_containing(r, mn)
        hi = whole.max_key if mx is None else min(whole.max_key, ShardKeyPattern.comparable(r.pattern.values_of_bound(mx)))
        zone_info.check_receiver(router, r, replace(whole, min_key=ShardKeyPattern.comparable(r.pattern.values_of_bound(mn)),
                                                    max_key=hi), to)
        if chunk is None:
            chunk = _chunk_containing(r, mn)
            await split_chunk(router, r, chunk, mn)
            r = _routing(router, ns)
            chunk = r.find_chunk_with_min(mn)
        if mx is not None and ShardKeyPattern.comparable(r.pattern.values_of_bound(mx)) < chunk.max_key:
            await split_chunk(router, r, chunk, mx)
            r = _routing(router, ns)
            chunk = r.find_chunk_with_min(mn)
        await migrate_chunk(router, r, chunk, to)
    return {"ok": 1.0}


# -- shards ----------------------------------------------------------------------------
def shard_document(router: Router, name: str) -> dict:
    """The shard's `config.shards` entry; `host` names its replica set's members."""
    node = router.shard(name).node
    rs = node.replica_set
    host = rs.connection_string() if rs is not None else f"{name}/{node.host}"
    return {"_id": name, "host": host, "state": 1, "topologyTime": router.clock.now()}


@router_command("addShard", "addshard")
async def cmd_add_shard(router: Router, req: Request) -> dict:
    admin_only(req)
    spec = req.cmd[req.name]
    if not isinstance(spec, str) or not spec:
        raise MongoError("BadValue", "addShard requires a shard name or host string")
    name = req.cmd.get("name") or spec.split("/", 1)[0].split(":", 1)[0]
    async with router._ddl_lock:
        router.refresh_catalog()  # DDL runs on the authoritative metadata
        if name in router.shards:
            return {"shardAdded": name, "ok": 1.0}
        if router.shard_factory is None:
            raise MongoError("IllegalOperation", "this cluster cannot create new shards")
        await add_shard(router, name)
    return {"shardAdded": name, "ok": 1.0}


async def add_shard(router: Router, name: str) -> None:
    """Create a new empty shard and register it in `config.shards` (what running streams notice)."""
    node = router.shard_factory(name)
    node.clock.advance(router.clock.key)
    node.joined_key = router.clock.key + 1  # it held nothing at earlier cluster times (snapshot reads)
    router.registry.register(name, node)
    doc = shard_document(router, name)
    await config_write(router, {"insert": "shards", "documents": [doc]})
    await log_change(router, "addShard", "", {"name": name, "host": doc["host"]})


@router_command("listShards", "listshards")
async def cmd_list_shards(router: Router, req: Request) -> dict:
    admin_only(req)
    coll = router.config.catalog.collection("config", "shards")
    shards = [dict(d) for d in coll.docs.values()] if coll else []
    return {"shards": shards, "ok": 1.0}


@router_command("flushRouterConfig", "flushrouterconfig")
async def cmd_flush_router_config(router: Router, req: Request) -> dict:
    router.refresh_catalog()
    return {"flushed": True, "ok": 1.0}


# -- refine and reshard ------------------------------------------------------------------
@router_command("refineCollectionShardKey")
async def cmd_refine_shard_key(router: Router, req: Request) -> dict:
    """Extend a shard key with more fields; chunk bounds get MinKey (MaxKey at the top) for them."""
    admin_only(req)
    ns = req.cmd["refineCollectionShardKey"]
    new_key = req.cmd.get("key")
    async with router._ddl_lock:
        router.refresh_catalog()  # DDL runs on the authoritative metadata
        check_expected_uuid(router, req, "refineCollectionShardKey", *_split_ns(ns))
        r = _routing(router, ns)
        new = ShardKeyPattern(new_key)
        old = r.pattern
        if new.fields[: len(old.fields)] != old.fields or any(new.key[f] != old.key[f] for f in old.fields):
            raise MongoError("InvalidOptions", f"refineCollectionShardKey: new key {new_key} must extend the current shard key {old.key}")
        extra = new.fields[len(old.fields):]
        db, name = ns.split(".", 1)
        primary = router.catalog.primary_of(db)
        pcoll = router.shard(primary).node.catalog.collection(db, name)
        if pcoll is None or not any(list(ix["key"])[: len(new.fields)] == new.fields for ix in pcoll.indexes):
            raise MongoError("InvalidOptions", "refineCollectionShardKey: please create an index that starts with "
                                               f"the proposed shard key {new.key} before refining the shard key")
        chunks = router.config.catalog.collection("config", "chunks")
        updates = []
        for ch in list(chunks.docs.values()):
            if bytes(ch["uuid"]) != bytes(r.uuid):
                continue
            top = all(isinstance(v, MaxKey) for v in ch["max"].values())
            mn = {**ch["min"], **{f: MinKey() for f in extra}}
            mx = {**ch["max"], **{f: (MaxKey() if top else MinKey()) for f in extra}}
            updates.append({"q": {"_id": ch["_id"]}, "u": {"$set": {"min": mn, "max": mx}}})
        if updates:
            await config_write(router, {"update": "chunks", "updates": updates})
        await config_write(router, {"update": "collections", "updates": [{"q": {"_id": ns}, "u": {"$set": {"key": dict(new.key)}}}]})
        router.refresh_catalog()
        for s in sorted({c.shard for c in r.chunks}):
            if s != primary:
                await router.shard(s).command(db, {"_shardsvrSetShardKey": ns, "key": dict(new.key), "uuid": r.uuid})
        await router.shard(primary).command(db, {"_shardsvrNotifyRefineShardKey": ns, "shardKey": dict(new.key),
                                                 "oldShardKey": dict(old.key)})
    return {"ok": 1.0}


@router_command("reshardCollection")
async def cmd_reshard_collection(router: Router, req: Request) -> dict:
    """Move a collection to a new shard key (and a new UUID), as resharding does.

    Documents move to their new owners with `fromMigrate` writes (resharding's
    temporary collections are invisible to change streams); the primary shard
    then logs the `reshardCollection` noop under the old UUID.
    """
    admin_only(req)
    ns = req.cmd["reshardCollection"]
    new = ShardKeyPattern(req.cmd.get("key"))
    unique = bool(req.cmd.get("unique", False))
    async with router._ddl_lock:
        router.refresh_catalog()  # DDL runs on the authoritative metadata
        check_expected_uuid(router, req, "reshardCollection", *_split_ns(ns))
        r = _routing(router, ns)
        db, name = ns.split(".", 1)
        primary = router.catalog.primary_of(db)
        cs = critical_sections(router)
        cs.acquire(ns)
        try:
            new_uuid = Binary(_uuid.uuid4().bytes, 4)
            names = placeable_shards(router)
            if new.hashed and len(names) > 1:
                bounds = initial_split_policy.even_hashed_chunks(new, names)
            else:
                bounds = [(tuple(MinKey() for _ in new.fields), tuple(MaxKey() for _ in new.fields), primary)]
            owners = sorted({b[2] for b in bounds})
            # every document to its new owner
            holders = [s for s in sorted(router.shards) if router.shard(s).node.catalog.collection(db, name) is not None]
            spec = {"key": dict(new.key), "name": "_".join(f"{k}_{v}" for k, v in new.key.items())}
            for s in holders:  # built on resharding's hidden temporary collection: no event
                await router.shard(s).command(db, {"createIndexes": name, "indexes": [spec], "fromMigrate": True})
            moves: dict[str, list] = {}
            for s in holders:
                node = router.shard(s).node
                coll = node.catalog.collection(db, name)
                for doc in list(coll.docs.values()):
                    key = ShardKeyPattern.comparable(new.extract(doc))
                    target = next(b[2] for b in bounds if ShardKeyPattern.comparable(b[0]) <= key < ShardKeyPattern.comparable(b[1]))
                    if target != s:
                        moves.setdefault(s, []).append((target, doc))
            for s, docs in moves.items():
                for target, doc in docs:
                    if router.shard(target).node.catalog.collection(db, name) is None:
                        src = router.shard(s).node.catalog.collection(db, name)
                        await router.shard(target).command(db, {"_shardsvrSetShardKey": ns, "key": dict(r.pattern.key),
                                                                "uuid": src.uuid, "options": dict(src.options),
                                                                "indexes": [dict(x) for x in src.indexes], "fromMigrate": True})
                    await router.shard(target).command(db, {"_recvChunkDocs": ns, "documents": [doc]})
                    await router.shard(s).command(db, {"delete": name, "deletes": [{"q": {"_id": doc["_id"]}, "limit": 1}],
                                                       "fromMigrate": True})
            await router.shard(primary).command(db, {"_shardsvrNotifyReshardCollection": ns, "reshardUUID": new_uuid,
                                                     "shardKey": dict(new.key), "oldShardKey": dict(r.pattern.key),
                                                     "unique": unique})
            for s in sorted(set(holders) | set(owners)):
                await router.shard(s).command(db, {"_shardsvrReshardCommit": ns, "uuid": new_uuid, "key": dict(new.key)})
            await config_write(router, {"delete": "chunks", "deletes": [{"q": {"uuid": r.uuid}, "limit": 0}]})
            now = router.clock.now()
            await config_write(router, {"insert": "chunks", "documents": [{
                "_id": ObjectId(), "uuid": new_uuid, "min": new.bound(lo), "max": new.bound(hi), "shard": s,
                "lastmod": Timestamp(1, i), "onCurrentShardSince": now, "history": [{"validAfter": now, "shard": s}],
            } for i, (lo, hi, s) in enumerate(bounds)]})
            await config_write(router, {"update": "collections", "updates": [{"q": {"_id": ns}, "u": {"$set": {
                "key": dict(new.key), "uuid": new_uuid, "lastmodEpoch": ObjectId(), "timestamp": now, "unique": unique}}}]})
            router.refresh_catalog()
        finally:
            cs.release(ns)
    return {"ok": 1.0}
