"""The size commands of a mongod: `dbStats`, `collStats` and `dataSize`.

- `{dbStats: 1, scale, freeStorage}` (the server's appendDbStats): `db`, `collections`, `views`,
  `objects`, `avgObjSize` (a double, unscaled), `dataSize`, `storageSize`, (`freeStorageSize`),
  `indexes`, `indexSize`, (`indexFreeStorageSize`), `totalSize`, (`totalFreeStorageSize`),
  `scaleFactor`.  A database the node does not hold answers zeros.
- `{collStats: <coll>, scale}` (deprecated in favour of `$collStats`, still a command in 8.0):
  `ns` and the collection's storage statistics, the same document `$collStats`'s `storageStats`
  is (shardsim/coll_stats.py); a collection that does not exist answers zeros (ok: 1).
- `{dataSize: "<db>.<coll>", keyPattern, min, max, estimate}` (CmdDatasize): the BSON bytes and
  count of the documents, or of those whose `keyPattern` fields fall in [min, max); `size`,
  `numObjects` and `millis` are longs.

Sizes are the documents' and index keys' BSON sizes (no pages, no compression, no free space),
and no `fsUsedSize`/`fsTotalSize` is reported: the data lives in memory, as with the server's
inMemory storage engine.  mongos's forms gather these from the shards
(router/cluster_storage_stats.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bson import Int64

from mongosim.oplog import bsonutil
from mongosim.oplog.errors import MongoError
from mongosim.shardsim import local_database
from mongosim.shardsim.coll_stats import storage_stats, timeseries_buckets
from mongosim.shardsim.command_registry import command
from mongosim.shardsim.create_collection import check_namespace
from mongosim.shardsim.operation_context import OpCtx
from mongosim.shardsim.query.idl_errors import wrong_type
from mongosim.shardsim.query.values import is_number, sort_key

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

__all__ = ["append_number", "parse_scale"]


def append_number(n: int) -> int | Int64:
    """BSONObjBuilder::appendNumber(long long): an int up to 2^30 in magnitude, else a long."""
    return n if -(2**30) <= n <= 2**30 else Int64(n)


def parse_scale(cmd: dict) -> int:
    """The `scale` of dbStats / collStats (1 when absent): a number >= 1."""
    scale = cmd.get("scale", 1)
    if scale is None:
        return 1
    if not is_number(scale) or isinstance(scale, bool):
        raise wrong_type("scale", scale, ("long", "int", "decimal", "double"))
    if scale < 1:
        raise MongoError(51024, f"BSON field 'scale' value must be >= 1, actual value '{int(scale)}'")
    return int(scale)


def _view_count(node: Node, db: str) -> int:
    views = node.catalog.committed_collection(db, "system.views")
    return len(views) if views is not None else 0


@command("dbStats", "dbstats")
def cmd_db_stats(node: Node, ctx: OpCtx) -> dict:
    scale = parse_scale(ctx.cmd)
    free = bool(ctx.cmd.get("freeStorage"))
    database = node.catalog.db(ctx.db)
    member_local = local_database.collections(node, ctx.db)  # (a member's local.oplog.rs, local.system.replset)
    collections = [*member_local, *(c for c in (database.collections.values() if database is not None else ())
                                    if c.name not in {m.name for m in member_local})]
    objects = data = indexes = index_size = 0
    for coll in collections:
        st = storage_stats(node, coll, f"{ctx.db}.{coll.name}", 1)
        objects += st["count"]
        data += st["size"]
        indexes += st["nindexes"]
        index_size += st["totalIndexSize"]
    out: dict[str, Any] = {"db": ctx.db, "collections": append_number(len(collections)),
                           "views": append_number(_view_count(node, ctx.db)), "objects": append_number(objects),
                           "avgObjSize": data / objects if objects else 0.0,
                           "dataSize": append_number(data // scale), "storageSize": append_number(data // scale)}
    if free:
        out["freeStorageSize"] = 0
    out["indexes"] = append_number(indexes)
    out["indexSize"] = append_number(index_size // scale)
    if free:
        out["indexFreeStorageSize"] = 0
    out["totalSize"] = append_number((data + index_size) // scale)
    if free:
        out["totalFreeStorageSize"] = 0
    out["scaleFactor"] = append_number(scale)
    out["ok"] = 1.0
    return out


@command("collStats", "collstats")
def cmd_coll_stats(node: Node, ctx: OpCtx) -> dict:
    name = check_namespace(ctx.db, next(iter(ctx.cmd.values())))
    scale = parse_scale(ctx.cmd)
    ns = f"{ctx.db}.{name}"
    coll = local_database.readable(node, ctx.db, name)
    buckets = timeseries_buckets(node, ctx.db, name) if coll is None else None
    if buckets is not None:  # (a time-series collection: its buckets, with the `timeseries` section)
        return {"ns": ns, **storage_stats(node, buckets, buckets.ns, scale, timeseries=True), "ok": 1.0}
    if coll is None:
        return {"ns": ns, "size": 0, "count": 0, "numOrphanDocs": 0, "storageSize": 0, "totalSize": 0, "nindexes": 0,
                "totalIndexSize": 0, "indexDetails": {}, "indexSizes": {}, "scaleFactor": scale, "ok": 1.0}
    return {"ns": ns, **storage_stats(node, coll, ns, scale), "ok": 1.0}


def _in_range(doc: dict, fields: list[str], lo: list, hi: list) -> bool:
    key = [sort_key(doc.get(f)) for f in fields]
    return (not lo or key >= lo) and (not hi or key < hi)


def data_size_namespace(target) -> tuple[str, str]:
    """The (db, collection) a `dataSize` command names, or its TypeMismatch / InvalidNamespace."""
    if not isinstance(target, str):
        raise wrong_type("dataSize", target, "string")
    db, _, name = target.partition(".")
    if not name:
        raise MongoError("InvalidNamespace", f"Invalid namespace specified '{target}'")
    return db, name


@command("dataSize", "datasize")
def cmd_data_size(node: Node, ctx: OpCtx) -> dict:
    db, name = data_size_namespace(next(iter(ctx.cmd.values())))
    key_pattern = ctx.cmd.get("keyPattern") or {}
    fields = list(key_pattern)
    lo = [sort_key(v) for v in (ctx.cmd.get("min") or {}).values()]
    hi = [sort_key(v) for v in (ctx.cmd.get("max") or {}).values()]
    coll = local_database.readable(node, db, name)
    size = count = 0
    if coll is not None:
        for doc in coll.docs.values():
            if fields and not _in_range(doc, fields, lo, hi):
                continue
            size += len(bsonutil.encode(doc))
            count += 1
    out: dict[str, Any] = {}
    if "estimate" in ctx.cmd:
        out["estimate"] = bool(ctx.cmd["estimate"])
    out.update({"size": Int64(size), "numObjects": Int64(count), "millis": Int64(0), "ok": 1.0})
    return out
