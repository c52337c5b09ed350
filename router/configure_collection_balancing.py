"""`configureCollectionBalancing` (cluster_configure_collection_balancing.cpp, which forwards it to the
config server's _configsvrConfigureCollectionBalancing: ShardingCatalogManager::configureCollectionBalancing).

`{configureCollectionBalancing: <ns>, chunkSize: <MB>, enableAutoMerger: <bool>, defragmentCollection:
<bool>}` on admin; the IDL types the fields (`chunkSize` a safeInt: any number; the others booleans;
unknown fields are ignored).  Then, on the config server:

- none of the three given: nothing happens (`{ok: 1}`, no changelog entry);
- `chunkSize` other than 0: `maxChunkSizeBytes: <MB> * 1 MiB` (a long) in config.collections, or
  InvalidOptions "Chunk size '<MB>' out of range [1MB, 1GB]"; `chunkSize: 0` unsets it (back to the
  cluster's chunk size);
- `enableAutoMerger`: `enableAutoMerge: <bool>` in config.collections (the AutoMerger skips a
  collection whose `enableAutoMerge` is false);
- `defragmentCollection: false` aborts a defragmentation (there is none in mongosim: nothing to do,
  but the collection must be in config.collections: NamespaceNotFound "collection <ns> not found");
  `defragmentCollection: true`: mongosim's balancer does not defragment (NotImplemented);
- the update matches the collection's config.collections document or fails NamespaceNotSharded
  "Expected to match one doc for query { _id: "<ns>" } but matched 0"; with it, the collection's
  minor version is bumped (bumpCollectionMinorVersionInTxn: the chunk of the highest `lastmod` gets
  the next minor version), so routers and shards refresh;
- a `configureCollectionBalancing` changelog entry, details `{chunkSizeMB, defragmentCollection}` as
  given (not `enableAutoMerger`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bson import Int64, Timestamp

from mongosim.oplog.errors import MongoError
from mongosim.router.command_registry import router_command
from mongosim.router.merge_chunks import idl_field, idl_ns
from mongosim.router.request import Request
from mongosim.router.sharding import admin_only, config_write
from mongosim.router.sharding_logging import log_change
from mongosim.router.zone_info import _config_docs
from mongosim.shardsim.coll_mod_request import idl_safe_int
from mongosim.shardsim.query.fmt import bson_str

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

MIB = 1024 * 1024


def _max_chunk_size_valid(size: int) -> bool:
    """ChunkSizeSettingsType::checkMaxChunkSizeValid: between 1 MB and 1 GB."""
    return MIB <= size <= 1024 * MIB


async def bump_collection_minor_version(router: Router, uuid: object) -> None:
    """ShardingCatalogManager::bumpCollectionMinorVersionInTxn: the collection's chunk of the highest
    `lastmod` takes the next minor version."""
    docs = [d for d in _config_docs(router, "chunks") if bytes(d["uuid"]) == bytes(uuid)]
    if not docs:
        return
    top = max(docs, key=lambda d: (d["lastmod"].time, d["lastmod"].inc))
    v = top["lastmod"]
    await config_write(router, {"update": "chunks", "updates": [
        {"q": {"_id": top["_id"]}, "u": {"$set": {"lastmod": Timestamp(v.time, v.inc + 1)}}}]})


@router_command("configureCollectionBalancing")
async def cmd_configure_collection_balancing(router: Router, req: Request) -> dict:
    admin_only(req)
    ns = idl_ns(req)
    chunk_mb = req.cmd.get("chunkSize")
    if chunk_mb is not None:
        chunk_mb = idl_safe_int(f"{req.name}.chunkSize", chunk_mb)
    auto_merge = idl_field(req, "enableAutoMerger", bool, "bool")
    defragment = idl_field(req, "defragmentCollection", bool, "bool")
    db, _, coll = ns.partition(".")
    if not db or not coll:
        raise MongoError("InvalidNamespace", f"Invalid namespace specified '{ns}'")
    if chunk_mb is None and auto_merge is None and defragment is None:
        return {"ok": 1.0}
    update: dict = {}
    if chunk_mb:
        size = chunk_mb * MIB
        if not _max_chunk_size_valid(size):
            raise MongoError("InvalidOptions", f"Chunk size '{chunk_mb}' out of range [1MB, 1GB]")
        update.setdefault("$set", {})["maxChunkSizeBytes"] = Int64(size)
    if defragment:
        raise MongoError("NotImplemented", "defragmentCollection is not supported by mongosim")
    if defragment is False and not any(d["_id"] == ns for d in _config_docs(router, "collections")):
        raise MongoError("NamespaceNotFound", f"collection {ns} not found")  # (abortCollectionDefragmentation)
    if auto_merge is not None:
        update.setdefault("$set", {})["enableAutoMerge"] = auto_merge
    if chunk_mb == 0:
        update["$unset"] = {"maxChunkSizeBytes": 0}
    async with router._ddl_lock:
        if update:
            await _commit(router, ns, update)
        await log_change(router, "configureCollectionBalancing", ns, {
            **({"chunkSizeMB": chunk_mb} if chunk_mb is not None else {}),
            **({"defragmentCollection": defragment} if defragment is not None else {})})
    balancer = router.manager.balancer
    if balancer is not None:
        balancer.auto_merger.wake()  # (Balancer::notifyPersistedBalancerSettingsChanged)
    return {"ok": 1.0}


async def _commit(router: Router, ns: str, update: dict) -> None:
    """The config.collections update (it must match the collection's document) and the minor version bump."""
    query = {"_id": ns}
    reply = await config_write(router, {"update": "collections", "updates": [{"q": query, "u": update}]})
    if reply.get("n", 0) != 1:
        raise MongoError("NamespaceNotSharded",
                         f"Expected to match one doc for query {bson_str(query)} but matched {reply.get('n', 0)}")
    doc = next(d for d in _config_docs(router, "collections") if d["_id"] == ns)
    await bump_collection_minor_version(router, doc["uuid"])
    router.refresh_catalog()
