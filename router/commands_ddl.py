"""DDL through the router.

Collection DDL runs on the database's primary shard; for a sharded collection
it also runs on every other shard holding it, marked `fromMigrate` there (the
sharded DDL coordinators do this so a change stream reports one drop, one
rename, one dropDatabase — from the primary shard).  Index DDL is broadcast and
logged by each shard holding the collection; collMod too, for a sharded collection,
the primary shard first (one `modify` event per shard).  The config server's metadata is updated
to match.
"""

from __future__ import annotations

import re

from typing import TYPE_CHECKING, Any

from mongosim.oplog.errors import MongoError
from mongosim.router.command_registry import router_command
from mongosim.router.timeseries_routing import sharded_buckets
from mongosim.router.request import GENERIC_FIELDS, Request
from mongosim.router.shard_versioning import with_database_version
from mongosim.router.sharding import config_write, critical_sections, ensure_database
from mongosim.router.store_possible_cursor import store_possible_cursor
from mongosim.shardsim import coll_mod_request, timeseries, view_catalog
from mongosim.shardsim.collection_uuid import check_collection_uuid, mismatch as uuid_mismatch
from mongosim.shardsim.create_collection import check_namespace
from mongosim.shardsim.ddl import create_options
from mongosim.shardsim.rename_collection import check_namespaces, drop_target_and_stay_temp, expected_uuids

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

_FORWARD_GENERIC = ("lsid", "txnNumber", "writeConcern", "comment")


def _forward(cmd: dict) -> dict:
    return {k: v for k, v in cmd.items() if k not in GENERIC_FIELDS or k in _FORWARD_GENERIC}


def shards_holding(router: Router, db: str, coll: str | None = None) -> list[str]:
    """Shards that have `db.coll` (or any collection of `db`)."""
    out = []
    for name, remote in sorted(router.shards.items()):
        d = remote.node.catalog.db(db)
        if d is None:
            continue
        if coll is None or coll in d.collections:
            out.append(name)
    return out


async def _primary_then_others(router: Router, db: str, holders: list[str], cmd: dict) -> dict:
    primary = router.catalog.primary_of(db)
    others = [s for s in holders if s != primary]
    for s in others:
        await router.shard(s).command(db, {**cmd, "fromMigrate": True})
    reply: dict = {"ok": 1.0}
    if primary is not None and (primary in holders or not holders):
        reply = await router.shard(primary).command(db, cmd)
    return reply


async def _on_shard(router: Router, req: Request, shard: str, cmd: dict | None = None) -> dict:
    """Run the command (`cmd`, else the client's) on `shard`: as a statement of the client's transaction
    when it is one."""
    cmd = _forward(req.cmd) if cmd is None else cmd
    if "autocommit" in req.cmd:
        return await router.txns.run_in_transaction(req, shard, req.db, cmd)
    return await router.shard(shard).command(req.db, cmd)


def _timeseries_ddl(router: Router, req: Request) -> tuple[list[str], dict] | None:
    """(the shards holding its buckets, the command on them) for a time-series collection whose buckets
    are sharded (None otherwise)."""
    ts = sharded_buckets(router, req.db, req.cmd[req.name])
    if ts is None:
        return None
    return shards_holding(router, req.db, ts[0]), {**_forward(req.cmd), req.name: ts[0], "isTimeseriesNamespace": True}


@router_command("create")
async def cmd_create(router: Router, req: Request) -> dict:
    create_options(req.cmd)  # (cluster_create_cmd parses the strict CreateCommand: before the database exists)
    router.refresh_catalog()  # DDL runs on the authoritative metadata (the database may have moved)
    primary = await ensure_database(router, req.db)
    if primary == "config":
        return await router.config_remote.command(req.db, _forward(req.cmd))
    return await _on_shard(router, req, primary)


async def _drop_sharded_metadata(router: Router, ns: str) -> None:
    """A dropped collection's metadata on the config server: its zone ranges, and if sharded its chunks and
    its `config.collections` entry."""
    await config_write(router, {"delete": "tags", "deletes": [{"q": {"ns": ns}, "limit": 0}]})
    r = router.catalog.routing(ns)
    if r is None:
        return
    await config_write(router, {"delete": "chunks", "deletes": [{"q": {"uuid": r.uuid}, "limit": 0}]})
    await config_write(router, {"delete": "collections", "deletes": [{"q": {"_id": ns}, "limit": 0}]})
    router.refresh_catalog()


@router_command("drop")
async def cmd_drop(router: Router, req: Request) -> dict:
    coll = req.cmd["drop"]
    if not isinstance(coll, str):
        raise MongoError("InvalidNamespace", "collection name must be a string")
    ns = f"{req.db}.{coll}"
    if req.db in ("admin", "config"):
        return await router.config_remote.command(req.db, _forward(req.cmd))
    async with router._ddl_lock:
        router.refresh_catalog()  # DDL runs on the authoritative metadata
        primary = router.catalog.primary_of(req.db)
        if primary is None:
            return {"ok": 1.0}
        holders = shards_holding(router, req.db, coll)
        timeseries = sharded_buckets(router, req.db, coll)
        if timeseries is not None:  # the buckets on the other shards, then the collection (view, buckets)
            for s in shards_holding(router, req.db, timeseries[0]):
                if s != primary:
                    await router.shard(s).command(req.db, {"drop": timeseries[0], "fromMigrate": True})
            await _drop_sharded_metadata(router, f"{req.db}.{timeseries[0]}")
            holders = [primary]
        reply = await _primary_then_others(router, req.db, holders, _forward(req.cmd))
        await _drop_sharded_metadata(router, ns)
    req.op_time_key = router.shard(primary).node.oplog.last_key
    reply.setdefault("ok", 1.0)
    if not holders:
        return {"ok": 1.0}
    return reply


@router_command("dropDatabase")
async def cmd_drop_database(router: Router, req: Request) -> dict:
    if req.db in ("admin", "config", "local"):
        raise MongoError("IllegalOperation", f"Cannot drop '{req.db}' database through mongos")
    async with router._ddl_lock:
        router.refresh_catalog()  # DDL runs on the authoritative metadata
        primary = router.catalog.primary_of(req.db)
        if primary is None:
            return {"ok": 1.0}
        holders = shards_holding(router, req.db)
        for ns in [r.ns for r in router.catalog.sharded_in(req.db)]:
            await _drop_sharded_metadata(router, ns)
        await config_write(router, {"delete": "tags", "deletes": [
            {"q": {"ns": {"$regex": f"^{re.escape(req.db)}\\."}}, "limit": 0}]})
        for s in holders:
            if s != primary:
                await router.shard(s).command(req.db, {"dropDatabase": 1, "fromMigrate": True})
        await router.shard(primary).command(req.db, {"dropDatabase": 1})
        await config_write(router, {"delete": "databases", "deletes": [{"q": {"_id": req.db}, "limit": 1}]})
        router.refresh_catalog()
    req.op_time_key = router.shard(primary).node.oplog.last_key
    return {"dropped": req.db, "ok": 1.0}


@router_command("renameCollection")
async def cmd_rename(router: Router, req: Request) -> dict:
    """mongos's renameCollection (cluster_rename_collection_cmd.cpp) and the rename coordinator's checks
    (rename_collection_coordinator.cpp kCheckPreconditions, sharding_ddl_util checkDbPrimariesOnTheSameShard
    and checkRenamePreconditions); the primary shard renames (across databases: shardsim/rename_collection.py).
    The expected UUIDs (`collectionUUID`, `dropTarget` as a UUID): a missing source database with a
    `collectionUUID` is CollectionUUIDMismatch "Database does not exist"; across databases either is
    InvalidOptions; the source's is checked before the source's existence, the target's before the view
    check; the participants get a plain `dropTarget: true`."""
    if req.db != "admin":
        raise MongoError("Unauthorized", "renameCollection may only be run against the admin database.")
    drop_target, _ = drop_target_and_stay_temp(req.cmd)  # (mongos parses the command's IDL first)
    src, dst = req.cmd["renameCollection"], req.cmd.get("to")
    if not isinstance(src, str) or not isinstance(dst, str) or "." not in src or "." not in dst:
        raise MongoError("InvalidNamespace", f"Invalid source or target namespace: {src} -> {dst}")
    if src == dst:
        raise MongoError("IllegalOperation", "Can't rename a collection to itself")
    sdb, scoll = src.split(".", 1)
    ddb, dcoll = dst.split(".", 1)
    source_uuid, target_uuid = expected_uuids(req.cmd)
    async with router._ddl_lock:
        router.refresh_catalog()  # DDL runs on the authoritative metadata
        primary = router.catalog.primary_of(sdb)
        if primary is None:
            if source_uuid is not None:
                raise uuid_mismatch(sdb, source_uuid, scoll, None, "Database does not exist")
            raise MongoError("NamespaceNotFound", f"Source collection {src} does not exist")
        if sdb != ddb:
            await ensure_database(router, ddb, primary)  # (the target database, on the source's primary shard)
        check_namespaces((sdb, scoll), (ddb, dcoll))  # (_shardsvrRenameCollection, before its coordinator)
        if sdb != ddb:
            if source_uuid is not None or target_uuid is not None:
                raise MongoError("InvalidOptions", "Cannot provide an expected collection UUID when renaming between "
                                                   "databases")
        primary_node = router.shard(primary).node
        # (the coordinator's source acquisition expects its UUID: before "doesn't exist" and a view)
        check_collection_uuid(primary_node, sdb, scoll, primary_node.catalog.collection(sdb, scoll), source_uuid)
        holders = shards_holding(router, sdb, scoll)
        r = router.catalog.routing(src)
        if not holders:
            raise MongoError("NamespaceNotFound", f"Collection {src} doesn't exist.")
        if sdb != ddb:
            if r is not None:
                raise MongoError("CommandFailed", "Source and destination collections must be on the same database "
                                                  f"because {src} is sharded.")
            if router.catalog.primary_of(ddb) != primary:
                raise MongoError("CommandFailed", "Source and destination collections must be on same shard")
        target_sharded = router.catalog.routing(dst) is not None
        check_collection_uuid(primary_node, ddb, dcoll, primary_node.catalog.collection(ddb, dcoll), target_uuid)
        if not target_sharded and view_catalog.definition(primary_node, ddb, dcoll) is not None:
            raise MongoError("CommandNotSupportedOnView", f"Can't rename to target collection `{dst}` because it is a "
                                                          "view.")
        if not drop_target and (target_sharded or primary_node.catalog.collection(ddb, dcoll) is not None):
            raise MongoError("NamespaceExists", f"Target collection {dst} exists but dropTarget is not set")
        cmd = {"renameCollection": src, "to": dst, **{k: v for k, v in req.cmd.items() if k in ("dropTarget", "stayTemp")}}
        if "dropTarget" in cmd:  # (a UUID checked above: the participants drop whatever is there)
            cmd["dropTarget"] = drop_target
        for s in holders:
            if s != primary:
                await router.shard(s).command("admin", {**cmd, "fromMigrate": True})
        if primary in holders:
            await router.shard(primary).command("admin", cmd)
        if target_sharded:  # dropped with the rename: its data on the other shards and its metadata go too
            for s in shards_holding(router, ddb, dcoll):
                if s != primary and s not in holders:
                    await router.shard(s).command(ddb, {"drop": dcoll, "fromMigrate": True})
            await _drop_sharded_metadata(router, dst)
        if r is not None:
            await config_write(router, {"delete": "collections", "deletes": [{"q": {"_id": src}, "limit": 1}]})
            await config_write(router, {"insert": "collections", "documents": [{
                "_id": dst, "lastmodEpoch": r.epoch, "lastmod": None, "timestamp": r.timestamp, "uuid": r.uuid,
                "key": dict(r.pattern.key), "unique": r.unique, "noBalance": False}]})
            router.refresh_catalog()
    req.op_time_key = router.shard(primary).node.oplog.last_key
    return {"ok": 1.0}


async def _broadcast_collection_ddl(router: Router, req: Request, create_db: bool = False) -> dict:
    coll = req.cmd[req.name]
    if not isinstance(coll, str):
        raise MongoError("InvalidNamespace", "collection name must be a string")
    ns = f"{req.db}.{coll}"
    await critical_sections(router).wait(ns)
    router.refresh_catalog()  # DDL runs on the authoritative metadata
    if create_db:
        await ensure_database(router, req.db)
    primary = router.catalog.primary_of(req.db)
    if primary is None:
        raise MongoError("NamespaceNotFound", f"ns does not exist: {ns}")
    holders = shards_holding(router, req.db, coll) or [primary]
    cmd = None
    timeseries = _timeseries_ddl(router, req)
    if timeseries is not None:
        holders, cmd = timeseries
    reply: dict = {}
    raw: dict[str, Any] = {}
    for s in holders:
        reply = await _on_shard(router, req, s, cmd)
        raw[s] = {k: v for k, v in reply.items() if k != "ok"}
    req.op_time_key = max(router.shard(s).node.oplog.last_key for s in holders)
    if len(holders) > 1:
        out = {"raw": {f"{s}/{router.shard(s).node.host}": v for s, v in raw.items()}, "ok": 1.0}
        return out
    return reply


@router_command("createIndexes")
async def cmd_create_indexes(router: Router, req: Request) -> dict:
    return await _broadcast_collection_ddl(router, req, create_db=True)


@router_command("dropIndexes", "deleteIndexes")
async def cmd_drop_indexes(router: Router, req: Request) -> dict:
    return await _broadcast_collection_ddl(router, req)


@router_command("planCacheClear")
async def cmd_plan_cache_clear(router: Router, req: Request) -> dict:
    """cluster_plan_cache_clear_cmd.cpp: run on every shard holding the collection (shardsim/
    plan_cache_commands.py); the first error is the reply."""
    coll = check_namespace(req.db, req.cmd["planCacheClear"])
    router.refresh_catalog()
    for shard in shards_holding(router, req.db, coll):
        await router.shard(shard).command(req.db, _forward(req.cmd))
    return {"ok": 1.0}


@router_command("convertToCapped")
async def cmd_convert_to_capped(router: Router, req: Request) -> dict:
    """cluster_convert_to_capped_cmd.cpp: a sharded collection is refused; an unsharded one converts on its
    database's primary shard (shardsim/capped_utils.py)."""
    name = check_namespace(req.db, req.cmd["convertToCapped"])
    router.refresh_catalog()
    if router.catalog.routing(f"{req.db}.{name}") is not None:
        raise MongoError("IllegalOperation", "You can't convertToCapped a sharded collection")
    primary = router.catalog.primary_of(req.db)
    if primary is None:
        raise MongoError("NamespaceNotFound", f"database {req.db} not found")
    async with router._ddl_lock:
        reply = await _on_shard(router, req, primary)
    req.op_time_key = router.shard(primary).node.oplog.last_key
    return reply


@router_command("collMod")
async def cmd_coll_mod(router: Router, req: Request) -> dict:
    """mongos's collMod (cluster_collection_mod_cmd.cpp) and the primary shard's CollModCoordinator
    (collmod_coordinator.cpp): the request parsed as the shards parse it; a missing database with a
    `collectionUUID` is CollectionUUIDMismatch "Database does not exist"; no validator on config.settings;
    the coordinator's own checks (the UUID against the primary's collection, time-series options on a
    collection that is not one: 6201808, the bucketing transition); then an unsharded collection is
    modified on the primary shard alone (its reply passed through), a sharded one on the primary shard
    first, then on every other shard holding it, each logging its own entry (so a change stream reports
    one `modify` per shard, as on 8.0), the reply being the first shard's fields (no `raw`: SERVER-84560)."""
    name = check_namespace(req.db, req.cmd["collMod"])
    request = coll_mod_request.parse(req.cmd, req.db, name)
    ns = f"{req.db}.{name}"
    router.refresh_catalog()  # DDL runs on the authoritative metadata
    primary = router.catalog.primary_of(req.db)
    if primary is None:
        if "collectionUUID" in request:
            raise uuid_mismatch(req.db, request["collectionUUID"], name, None, "Database does not exist")
        raise MongoError("NamespaceNotFound", f"ns does not exist: {ns}")
    if ns == "config.settings" and any(k in request for k in ("validator", "validationLevel", "validationAction")):
        raise MongoError("InvalidOptions", f"Document validators not allowed on system collection {ns}")
    await critical_sections(router).wait(ns)
    primary_node = router.shard(primary).node
    coll = primary_node.catalog.collection(req.db, name)
    check_collection_uuid(primary_node, req.db, name, coll, request.get("collectionUUID"))
    ts_options = _timeseries_options(primary_node, req.db, name)
    if any(k in request.get("timeseries", {}) for k in ("granularity", "bucketMaxSpanSeconds", "bucketRoundingSeconds")):
        if ts_options is None:
            raise MongoError(6201808, "Cannot use time-series options for a non-timeseries collection")
        timeseries.modified_options(ts_options, request["timeseries"])
    cmd = _forward(req.cmd)
    if router.catalog.routing(ns) is None:
        reply = await router.shard(primary).command(req.db, cmd)
        req.op_time_key = primary_node.oplog.last_key
        return reply
    holders = shards_holding(router, req.db, name)
    first: dict | None = None
    for s in sorted(holders, key=lambda s: s != primary):
        reply = await router.shard(s).command(req.db, cmd)
        if first is None:
            first = {k: v for k, v in reply.items() if k != "ok"}
    req.op_time_key = max(router.shard(s).node.oplog.last_key for s in holders)
    return {**(first or {}), "ok": 1.0}


def _timeseries_options(node, db: str, name: str) -> dict | None:
    """timeseries::getTimeseriesOptions: the options of the time-series collection `db.name`, if it is one."""
    view = view_catalog.definition(node, db, name)
    options = timeseries.options_of(node, db, view) if view is not None else None
    return options["timeseries"] if options is not None else None


@router_command("listCollections")
async def cmd_list_collections(router: Router, req: Request) -> dict:
    if req.db == "config":
        return await router.config_remote.command(req.db, _forward(req.cmd))
    primary = router.catalog.primary_of(req.db)
    if primary is None:
        return {"cursor": {"firstBatch": [], "id": 0, "ns": f"{req.db}.$cmd.listCollections"}, "ok": 1.0}
    reply = await router.shard(primary).command(req.db, with_database_version(router, req.db, _forward(req.cmd), primary))
    return store_possible_cursor(router, primary, req.db, reply)


@router_command("listIndexes")
async def cmd_list_indexes(router: Router, req: Request) -> dict:
    from mongosim.shardsim.create_collection import check_namespace

    check_namespace(req.db, req.cmd["listIndexes"])  # before it is used as a name
    primary = router.catalog.primary_of(req.db)
    if primary is None:
        raise MongoError("NamespaceNotFound", f"ns does not exist: {req.db}.{req.cmd['listIndexes']}")
    holders = shards_holding(router, req.db, req.cmd["listIndexes"])
    cmd = _forward(req.cmd)
    timeseries = _timeseries_ddl(router, req)
    if timeseries is not None:
        holders, cmd = timeseries
    target = primary if (primary in holders or not holders) else holders[0]
    reply = await router.shard(target).command(req.db, with_database_version(router, req.db, cmd, target))
    return store_possible_cursor(router, target, req.db, reply)


@router_command("listDatabases")
async def cmd_list_databases(router: Router, req: Request) -> dict:
    """mongos's listDatabases (cluster_list_databases_cmd.cpp): every shard's and the config server's own
    list (the `filter` applied by each to its entries), `admin` from the config server only, `local`
    never; per database the sum of the sizes (a size of 1 counts once), `empty` when that sum is 1,
    and `shards`: each holder's size."""
    from bson import Int64

    from mongosim.router.authn import conn_auth
    from mongosim.shardsim.reads import database_items

    flt = req.cmd.get("filter")
    name_only = bool(req.cmd.get("nameOnly"))
    holders = [(name, router.shards[name].node) for name in sorted(router.shards)] + [("config", router.config)]
    sizes: dict[str, int] = {}
    on: dict[str, dict[str, Int64]] = {}
    for shard, node in holders:
        # (the config server's own databases include `admin`: its system.version, as every member's)
        for item in database_items(node, flt, member_databases=shard == "config"):
            name = item["name"]
            if name == "admin" and shard != "config":
                continue
            size = 0 if name_only else int(item["sizeOnDisk"])  # (asked for names, a shard sends no size)
            total = sizes.get(name, 0)
            sizes[name] = (1 if total <= 1 else total) if size == 1 else total + size
            on.setdefault(name, {})[shard] = Int64(size)
    keep = router.auth.list_databases_filter(req.cmd, conn_auth(router, req.conn)) if router.auth.enabled else None
    dbs: list[dict] = []
    total = 0
    for name in sorted(sizes):
        if name == "local" or (keep is not None and not keep(name)):
            continue
        if name_only:
            dbs.append({"name": name})
            continue
        dbs.append({"name": name, "sizeOnDisk": Int64(sizes[name]), "empty": sizes[name] == 1, "shards": on[name]})
        total += sizes[name]
    out: dict[str, Any] = {"databases": dbs}
    if not name_only:
        out["totalSize"] = Int64(total)
        out["totalSizeMb"] = Int64(total >> 20)
    out["ok"] = 1.0
    return out
