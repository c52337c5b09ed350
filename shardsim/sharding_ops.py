"""Shard-side sharding commands, sent only by the router.

- `_shardsvrSetShardKey`: tell this shard a collection is sharded (its key and
  UUID), creating the collection here if it is missing (`fromMigrate` when this
  is not the primary shard, so change streams see one create).
- `_shardsvrNotifyShardCollection`: the primary shard's `shardCollection` noop
  (`o: {msg: {shardCollection: ns}}`, `o2: {shardCollection: ns, ...request}`).
- `_migrateClone`: the documents of a chunk range, read on the donor.
- `_recvChunkDocs`: insert cloned documents on the recipient (`fromMigrate`).
- `_deleteRange`: the donor's range deletion after commit (`fromMigrate`).
- `_notifyMigrateChunkToNewShard`: the donor's noop when the recipient had no
  chunk of the collection (`o2.migrateChunkToNewShard`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mongosim.oplog import entry as E
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.command_registry import command
from mongosim.shardsim.operation_context import OpCtx
from mongosim.shardsim.query.values import hashable
from mongosim.shardsim.shard_key import ShardKeyPattern

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node


def _coll(node: Node, ns: str):
    db, name = ns.split(".", 1)
    coll = node.catalog.collection(db, name)
    if coll is None:
        raise MongoError("NamespaceNotFound", f"ns not found: {ns}")
    return coll


@command("_shardsvrSetShardKey")
def cmd_set_shard_key(node: Node, ctx: OpCtx) -> dict:
    ns = ctx.cmd["_shardsvrSetShardKey"]
    db, name = ns.split(".", 1)
    coll = node.catalog.collection(db, name)
    if coll is None:
        from mongosim.shardsim.create_collection import create_collection

        inner = OpCtx(db, {"fromMigrate": bool(ctx.cmd.get("fromMigrate"))})
        coll = create_collection(node, inner, db, name, dict(ctx.cmd.get("options") or {}), uuid=ctx.cmd["uuid"])
        for spec in ctx.cmd.get("indexes") or []:
            if coll.index(spec["name"]) is None:
                coll.add_index(dict(spec))
    coll.shard_key = dict(ctx.cmd["key"]) if ctx.cmd.get("key") else None
    return {"ok": 1.0}


@command("_shardsvrNotifyShardCollection")
def cmd_notify_shard_collection(node: Node, ctx: OpCtx) -> dict:
    ns = ctx.cmd["_shardsvrNotifyShardCollection"]
    coll = _coll(node, ns)
    o2 = {"shardCollection": ns, **ctx.cmd["request"]}
    node.log(E.noop_op({"msg": {"shardCollection": ns}}, ns=ns, ui=coll.uuid, o2=o2), ctx)
    return {"ok": 1.0}


def _in_range(pattern: ShardKeyPattern, doc: dict, lo: tuple, hi: tuple) -> bool:
    key = ShardKeyPattern.comparable(pattern.extract(doc))
    return lo <= key < hi


@command("_migrateClone")
def cmd_migrate_clone(node: Node, ctx: OpCtx) -> dict:
    ns = ctx.cmd["_migrateClone"]
    coll = _coll(node, ns)
    pattern = ShardKeyPattern(ctx.cmd["key"])
    lo = ShardKeyPattern.comparable(pattern.values_of_bound(ctx.cmd["min"]))
    hi = ShardKeyPattern.comparable(pattern.values_of_bound(ctx.cmd["max"]))
    docs = [d for d in coll.docs.values() if _in_range(pattern, d, lo, hi)]
    return {"documents": docs, "indexes": [dict(s) for s in coll.indexes], "options": dict(coll.options),
            "uuid": coll.uuid, "ok": 1.0}


@command("_recvChunkDocs")
def cmd_recv_chunk_docs(node: Node, ctx: OpCtx) -> dict:
    ns = ctx.cmd["_recvChunkDocs"]
    coll = _coll(node, ns)
    for doc in ctx.cmd["documents"]:
        coll.insert(doc)
        if coll.capped is not None:  # (in the donor's natural order; the donor kept its limits)
            coll.capped.add(hashable(doc["_id"]), doc)
        node.log(E.insert_op(coll.ns, coll.uuid, doc, coll.document_key(doc)), ctx, from_migrate=True)
    return {"n": len(ctx.cmd["documents"]), "ok": 1.0}


@command("_deleteRange")
def cmd_delete_range(node: Node, ctx: OpCtx) -> dict:
    ns = ctx.cmd["_deleteRange"]
    coll = _coll(node, ns)
    pattern = ShardKeyPattern(ctx.cmd["key"])
    lo = ShardKeyPattern.comparable(pattern.values_of_bound(ctx.cmd["min"]))
    hi = ShardKeyPattern.comparable(pattern.values_of_bound(ctx.cmd["max"]))
    victims = [d for d in coll.docs.values() if _in_range(pattern, d, lo, hi)]
    for doc in victims:
        key = coll.document_key(doc)
        coll.delete(doc)
        node.log(E.delete_op(coll.ns, coll.uuid, key), ctx, from_migrate=True)
    return {"n": len(victims), "ok": 1.0}


@command("_notifyMigrateChunkToNewShard")
def cmd_notify_new_shard(node: Node, ctx: OpCtx) -> dict:
    ns = ctx.cmd["_notifyMigrateChunkToNewShard"]
    coll = _coll(node, ns)
    frm, to = ctx.cmd["fromShardId"], ctx.cmd["toShardId"]
    msg = f"Migrating chunk from shard {frm} to shard {to} with no chunks for this collection"
    o2 = {"migrateChunkToNewShard": ns, "fromShardId": frm, "toShardId": to}
    node.log(E.noop_op(msg, ns=ns, ui=coll.uuid, o2=o2), ctx)
    return {"ok": 1.0}


@command("_shardsvrCountInRange")
def cmd_count_in_range(node: Node, ctx: OpCtx) -> dict:
    """Shard-key values of a range, sorted (the router picks split points from them)."""
    ns = ctx.cmd["_shardsvrCountInRange"]
    coll = node.catalog.collection(*ns.split(".", 1))
    if coll is None:
        return {"keys": [], "ok": 1.0}
    pattern = ShardKeyPattern(ctx.cmd["key"])
    lo = ShardKeyPattern.comparable(pattern.values_of_bound(ctx.cmd["min"]))
    hi = ShardKeyPattern.comparable(pattern.values_of_bound(ctx.cmd["max"]))
    keys = sorted((pattern.extract(d) for d in coll.docs.values() if _in_range(pattern, d, lo, hi)),
                  key=ShardKeyPattern.comparable)
    return {"keys": [list(k) for k in keys], "ok": 1.0}


@command("_shardsvrNotifyRefineShardKey")
def cmd_notify_refine(node: Node, ctx: OpCtx) -> dict:
    """The primary shard's noop when a shard key is refined (o2.refineCollectionShardKey)."""
    ns = ctx.cmd["_shardsvrNotifyRefineShardKey"]
    coll = _coll(node, ns)
    key, old = ctx.cmd["shardKey"], ctx.cmd["oldShardKey"]
    msg = f"Refine shard key for collection {ns} with {_key_str(key)}"
    o2 = {"refineCollectionShardKey": ns, "shardKey": key, "oldShardKey": old}
    node.log(E.noop_op(msg, ns=ns, ui=coll.uuid, o2=o2), ctx)
    coll.shard_key = dict(key)
    return {"ok": 1.0}


@command("_shardsvrNotifyReshardCollection")
def cmd_notify_reshard(node: Node, ctx: OpCtx) -> dict:
    """The primary shard's noop at the end of resharding (o2.reshardCollection; ui = the old UUID)."""
    ns = ctx.cmd["_shardsvrNotifyReshardCollection"]
    coll = _coll(node, ns)
    o2 = {"reshardCollection": ns, "reshardUUID": ctx.cmd["reshardUUID"], "shardKey": ctx.cmd["shardKey"],
          "oldShardKey": ctx.cmd["oldShardKey"], "unique": bool(ctx.cmd.get("unique", False))}
    msg = f"Reshard collection {ns} with shard key {_key_str(ctx.cmd['shardKey'])}"
    node.log(E.noop_op(msg, ns=ns, ui=coll.uuid, o2=o2), ctx)
    return {"ok": 1.0}


@command("_shardsvrReshardCommit")
def cmd_reshard_commit(node: Node, ctx: OpCtx) -> dict:
    """This shard's copy of a resharded collection takes its new UUID and shard key."""
    ns = ctx.cmd["_shardsvrReshardCommit"]
    db, name = ns.split(".", 1)
    coll = node.catalog.collection(db, name)
    if coll is not None:
        coll.uuid = ctx.cmd["uuid"]
        coll.shard_key = dict(ctx.cmd["key"])
    return {"ok": 1.0}


def _key_str(key: dict) -> str:
    return "{ " + ", ".join(f"{k}: {v!r}" if isinstance(v, str) else f"{k}: {v}" for k, v in key.items()) + " }"
