"""DDL on one node: create, drop, dropDatabase, indexes (collMod: coll_mod.py; renameCollection:
rename_collection.py).

Each writes the command entry the server writes on `<db>.$cmd`:

- create: `{create: coll, ...options, idIndex: {v: 2, key: {_id: 1}, name: "_id_"}}`
- drop: `{drop: coll}` with `o2: {numRecords}`
- dropDatabase: a drop per collection, then `{dropDatabase: 1}`
- renameCollection: `{renameCollection: "db.a", to: "db.b", stayTemp, dropTarget?}` (rename_collection.py)
- createIndexes on an empty collection: `{createIndexes: coll, v, key, name, ...}`;
  on a non-empty one the two-phase build: `startIndexBuild` then
  `commitIndexBuild: coll, indexBuildUUID, indexes: [...]`
- dropIndexes: `{dropIndexes: coll, index: name}` with the dropped spec in `o2`

Views are documents of `<db>.system.views` (`{_id: "db.view", viewOn, pipeline}`, view_catalog.py):
creating one inserts there, collMod (coll_mod.py) replaces it, dropping deletes it, which a change stream reports
as `create`, `modify` and `drop` events.

On a shard that is not the database's primary, the router marks sharded
DDL with `fromMigrate: true` so only the primary shard's entry reaches change
streams — that is how a real cluster reports one drop, not one per shard.
"""

from __future__ import annotations

import uuid as _uuid
from typing import TYPE_CHECKING, Any

from bson import Binary
from mongosim.oplog import entry as E
from mongosim.oplog.errors import MongoError
from mongosim.shardsim import clustered, timeseries, view_catalog
from mongosim.shardsim.capped import normalize_options
from mongosim.shardsim.catalog import Collection
from mongosim.shardsim.collation import index_collation, normalise_option
from mongosim.shardsim.command_registry import command
from mongosim.shardsim.create_collection import (
    check_namespace,
    create_collection,
    ensure_collection,
)
from mongosim.shardsim.document_validation import check_options
from mongosim.shardsim.generic_args import GENERIC_ARGUMENTS
from mongosim.shardsim import index_descriptor
from mongosim.shardsim.index_key_validate import validate_index_spec
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.operation_context import OpCtx
from mongosim.shardsim import uncommitted_catalog_updates as in_transaction

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

# the 8.0 create command's fields (create.idl, strict: any other is 40415); `recordPreImages` left
# create and collMod with SERVER-60919 (change streams' pre-images are changeStreamPreAndPostImages)
KNOWN_CREATE_OPTIONS = {
    "capped", "size", "max", "autoIndexId", "validator", "validationLevel", "validationAction",
    "viewOn", "pipeline", "collation", "changeStreamPreAndPostImages", "clusteredIndex",
    "timeseries", "expireAfterSeconds", "storageEngine", "indexOptionDefaults", "encryptedFields",
    "idIndex", "flags", "temp",
}
_GENERIC_ARGS = GENERIC_ARGUMENTS  # (mongos's internal fields among them: maxTimeMSOpOnly, shardVersion, ...)


def _from_migrate(ctx: OpCtx) -> bool:
    return bool(ctx.cmd.get("fromMigrate"))


def create_options(cmd: dict) -> dict:
    """A `create` command's options, as its strict IDL parse takes them (mongos parses it so too)."""
    return _options_of(cmd, "create")


def _options_of(cmd: dict, first: str) -> dict:
    opts = {}
    for k, v in cmd.items():
        if k == first or k in _GENERIC_ARGS:
            continue
        if k not in KNOWN_CREATE_OPTIONS:
            raise MongoError(40415, f"BSON field 'create.{k}' is an unknown field.")
        opts[k] = v
    return opts


@command("create")
def cmd_create(node: Node, ctx: OpCtx) -> dict:
    name = check_namespace(ctx.db, ctx.cmd["create"])
    opts = normalise_option(_options_of(ctx.cmd, "create"))
    check_options("create", ctx.db, name, opts)
    opts = clustered.normalize_options(normalize_options(opts))
    if "timeseries" in opts:
        return _create_timeseries(node, ctx, name, opts)
    existing = node.catalog.collection(ctx.db, name)
    if ctx.txn is not None:
        in_transaction.check_create(ctx.db, name, opts, existing)
    if "viewOn" in opts:
        return _create_view(node, ctx, name, opts)
    if existing is not None:
        if {k: v for k, v in existing.options.items()} == opts:
            return {"ok": 1.0}
        raise MongoError("NamespaceExists", f"Collection {ctx.db}.{name} already exists with different options: {existing.options}")
    uuid = ctx.cmd.get("$uuid")  # internal: the router makes a sharded collection's UUID equal on every shard
    create_collection(node, ctx, ctx.db, name, opts, uuid=uuid)
    return {"ok": 1.0}


def _create_timeseries(node: Node, ctx: OpCtx, name: str, opts: dict) -> dict:
    opts = timeseries.normalize_options(ctx.db, name, opts)
    if ctx.txn is not None:  # (before its buckets collection, a system collection, could be refused instead)
        raise MongoError("OperationNotSupportedInTransaction",
                         "Cannot create a time-series collection in a multi-document transaction.")
    system_views = node.catalog.collection(ctx.db, "system.views")
    view = system_views.get(f"{ctx.db}.{name}") if system_views is not None else None
    if view is not None or node.catalog.collection(ctx.db, name) is not None:
        existing = timeseries.options_of(node, ctx.db, view) if view is not None else None
        if existing is not None and existing.get("timeseries") == opts["timeseries"]:
            return {"ok": 1.0}
        raise MongoError("NamespaceExists", f"Namespace {ctx.db}.{name} already exists")
    timeseries.create(node, ctx, ctx.db, name, opts)
    return {"ok": 1.0}


def _create_view(node: Node, ctx: OpCtx, name: str, opts: dict) -> dict:
    if view_catalog.definition(node, ctx.db, name) is not None or node.catalog.collection(ctx.db, name) is not None:
        raise MongoError("NamespaceExists", f"Namespace {ctx.db}.{name} already exists")
    view_on = opts["viewOn"]
    if not valid_collection_name(view_on):
        raise MongoError("InvalidNamespace", f"invalid name for 'viewOn': {view_on}")
    # (the collation was normalised by cmd_create)
    view_catalog.create_view(node, ctx, name, view_on, opts.get("pipeline", []), opts.get("collation") or None)
    return {"ok": 1.0}


def drop_collection(node: Node, ctx: OpCtx, coll: Collection) -> dict:
    n_indexes = len(coll.indexes)
    records = len(coll)
    node.catalog.remove_collection(coll.db, coll.name)
    node.top.drop(coll.ns)
    node.log(
        E.command_op(coll.db, {"drop": coll.name}, ui=coll.uuid, o2={"numRecords": records}),
        ctx,
        from_migrate=_from_migrate(ctx),
    )
    return {"nIndexesWas": n_indexes, "ns": coll.ns}


@command("drop")
def cmd_drop(node: Node, ctx: OpCtx) -> dict:
    name = check_namespace(ctx.db, ctx.cmd["drop"])
    coll = node.catalog.collection(ctx.db, name)
    if coll is None:
        views = node.catalog.collection(ctx.db, "system.views")
        buckets = node.catalog.collection(ctx.db, timeseries.buckets_of(name))
        if buckets is not None and "timeseries" in buckets.options:  # a time-series collection: both go
            drop_collection(node, ctx, buckets)
        if views is not None and views.get(f"{ctx.db}.{name}") is not None:
            from mongosim.shardsim.writes import WriteSession, delete_document

            delete_document(node, ctx, views, views.get(f"{ctx.db}.{name}"), WriteSession(node, OpCtx(ctx.db, {})), 0)
        return {"ok": 1.0}
    reply = drop_collection(node, ctx, coll)
    reply["ok"] = 1.0
    return reply


@command("dropDatabase")
def cmd_drop_database(node: Node, ctx: OpCtx) -> dict:
    database = node.catalog.db(ctx.db)
    if database is not None:
        colls = list(database.collections.values())
        # user collections first, system collections (views) last, as the server drops them
        for coll in sorted(colls, key=lambda c: c.name.startswith("system.")):
            drop_collection(node, ctx, coll)
    node.log(E.command_op(ctx.db, {"dropDatabase": 1}), ctx, from_migrate=_from_migrate(ctx))
    node.catalog.databases.pop(ctx.db, None)
    node.profiler.levels.pop(ctx.db, None)  # (its profiling settings go with it)
    node.profiler.sizes.pop(ctx.db, None)
    return {"dropped": ctx.db, "ok": 1.0}


def normalize_index_spec(spec: Any) -> dict:
    """The stored form of an index spec (`shardsim.index_key_validate`)."""
    return validate_index_spec(spec)


@command("createIndexes")
def cmd_create_indexes(node: Node, ctx: OpCtx) -> dict:
    name = check_namespace(ctx.db, ctx.cmd["createIndexes"])
    specs = ctx.cmd.get("indexes")
    if not isinstance(specs, list) or not specs:
        raise MongoError("BadValue", "Must specify at least one index to create")
    raw_specs = specs
    specs = [normalize_index_spec(s) for s in specs]
    for raw, spec in zip(raw_specs, specs):
        index_descriptor.validate_as_given(raw, spec)
    if ctx.txn is not None:
        in_transaction.check_index_namespace(f"{ctx.db}.{name}")
    coll = node.catalog.collection(ctx.db, name)
    specs = [index_collation(s, coll) for s in specs]
    created_auto = coll is None
    if coll is None:
        coll = ensure_collection(node, ctx, ctx.db, name)
    before = len(coll.indexes)
    new_specs = []
    for spec in specs:
        if index_descriptor.check_against(spec, coll.indexes + new_specs):
            continue  # (an identical index of that name exists)
        if "_fts" in spec["key"]:
            text = [s for s in coll.indexes + new_specs if "_fts" in s["key"]]
            if text:
                raise MongoError("CannotCreateIndex", "only one text index per collection allowed, found existing "
                                                      f"text index \"{text[0]['name']}\"")
        new_specs.append(spec)
    if not new_specs:
        return {"numIndexesBefore": before, "numIndexesAfter": before, "note": "all indexes already exist", "ok": 1.0}
    for spec in new_specs:
        if spec.get("unique"):
            _check_unique_with_shard_key(node, f"{ctx.db}.{name}", spec["key"])
    if ctx.txn is not None:
        in_transaction.check_create_indexes(ctx.txn, coll, f"{ctx.db}.{name}")
        created_auto = True  # (the server's reply for a collection created in the transaction)
    added = []
    try:
        for spec in new_specs:
            coll.add_index(spec)  # raises DuplicateKey for a unique index that does not hold
            added.append(spec)
    except MongoError:
        for spec in added:  # (all or nothing, as one write unit on the server)
            coll.drop_index(spec["name"])
        raise
    fm = _from_migrate(ctx)
    if ctx.txn is not None:
        for spec in new_specs:
            ctx.txn.log(E.command_op(ctx.db, {"createIndexes": name, **spec}, ui=coll.uuid))
    elif len(coll) == 0:
        for spec in new_specs:
            node.log(E.command_op(ctx.db, {"createIndexes": name, **spec}, ui=coll.uuid), ctx, from_migrate=fm)
    else:
        build = Binary(_uuid.uuid4().bytes, 4)
        node.log(E.command_op(ctx.db, {"startIndexBuild": name, "indexBuildUUID": build, "indexes": new_specs}, ui=coll.uuid), ctx, from_migrate=fm)
        node.log(E.command_op(ctx.db, {"commitIndexBuild": name, "indexBuildUUID": build, "indexes": new_specs}, ui=coll.uuid), ctx, from_migrate=fm)
    reply: dict[str, Any] = {"numIndexesBefore": before, "numIndexesAfter": len(coll.indexes)}
    if created_auto:
        reply["createdCollectionAutomatically"] = True
    else:
        reply["createdCollectionAutomatically"] = False
    reply["ok"] = 1.0
    return reply


def _check_unique_with_shard_key(node: Node, ns: str, key: dict) -> None:
    """A unique index on a sharded collection must have the shard key's fields as its prefix (or lead
    with `_id`): each shard checks uniqueness among its own documents only (create_indexes_cmd.cpp
    checkUniqueIndexConstraints, ShardKeyPattern::isIndexUniquenessCompatible)."""
    meta = node.filtering.collection(ns) if node.filtering is not None and not node.is_config else None
    if meta is None or next(iter(key)) == "_id":
        return
    shard_key = meta.pattern.key
    if list(key)[:len(shard_key)] != list(shard_key):
        raise MongoError("CannotCreateIndex", f"cannot create unique index over {bson_str(key)} with shard key "
                                              f"pattern {bson_str(shard_key)}")


@command("dropIndexes", "deleteIndexes")
def cmd_drop_indexes(node: Node, ctx: OpCtx) -> dict:
    first = next(iter(ctx.cmd))
    name = check_namespace(ctx.db, ctx.cmd[first])
    coll = node.catalog.collection(ctx.db, name)
    if coll is None:
        raise MongoError("NamespaceNotFound", f"ns not found {ctx.db}.{name}")
    which = ctx.cmd.get("index")
    before = len(coll.indexes)
    if which == "*":
        targets = [s["name"] for s in coll.indexes if s["name"] != "_id_"]
    elif isinstance(which, str):
        targets = [which]
    elif isinstance(which, list):
        targets = list(which)
    elif isinstance(which, dict):
        match = [s["name"] for s in coll.indexes if s["key"] == which]
        if not match:
            raise MongoError("IndexNotFound", f"can't find index with key: {which}")
        targets = match[:1]
    else:
        raise MongoError("TypeMismatch", "BSON field 'dropIndexes.index' is the wrong type")
    for t in targets:
        if t == "_id_":
            raise MongoError("InvalidOptions", "cannot drop _id index")
        if coll.index(t) is None:
            raise MongoError("IndexNotFound", f"index not found with name [{t}]")
    for t in targets:
        spec = coll.drop_index(t)
        node.log(E.command_op(ctx.db, {"dropIndexes": name, "index": t}, ui=coll.uuid, o2=dict(spec)), ctx,
                 from_migrate=_from_migrate(ctx))
    return {"nIndexesWas": before, "ok": 1.0}


def valid_collection_name(name: str) -> bool:
    """NamespaceString::validCollectionName."""
    return bool(name) and not name.startswith(".") and "$" not in name and "\x00" not in name
