"""Creating a collection: explicitly (`create`, shardCollection on a new shard) or implicitly.

The server's `createCollection` adds the collection to the catalog and logs
`{create: coll, ...options, idIndex}` on `<db>.$cmd` in one step; a write to a
collection that does not exist creates it first ("implicit creation"), with
the same entry.  `check_namespace` is the name check every command does first
(the server's NamespaceString validity rules).
"""

from __future__ import annotations

import re
import uuid as _uuid
from typing import TYPE_CHECKING, Any

from bson import Binary
from mongosim.oplog import entry as E
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.catalog import ID_INDEX, Collection
from mongosim.shardsim.collection_options import refresh
from mongosim.shardsim.operation_context import OpCtx

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node


_BAD_DB_NAME = re.compile('[/\\\\. "$\x00]')


def check_namespace(db: str, coll: Any) -> str:
    """`coll` if `db.coll` is a valid namespace, else BadValue / InvalidNamespace."""
    if not isinstance(coll, str):
        raise MongoError("BadValue", f"collection name has invalid type {type(coll).__name__}")
    if not coll or coll.startswith(".") or "$" in coll or "\x00" in coll:
        raise MongoError("InvalidNamespace", f"Invalid namespace specified '{db}.{coll}'")
    if not db or _BAD_DB_NAME.search(db):
        raise MongoError("InvalidNamespace", f"Invalid database name: '{db}'")
    return coll


def check_user_write(db: str, name: str, cmd: dict) -> None:
    """A client's write to `<db>.system.profile`, `<db>.system.views` or (on a replica-set member, as every
    node here is) `local.oplog.rs` is refused (ops/insert.cpp userAllowedWriteNS)."""
    coll = cmd.get(name)
    if coll in ("system.profile", "system.views") or (db == "local" and coll == "oplog.rs"):
        raise MongoError("InvalidNamespace", f"cannot write to {db}.{coll}")


def create_collection(node: Node, ctx: OpCtx, db: str, name: str, options: dict, *, uuid: Binary | None = None) -> Collection:
    """Create `db.name` and log its create entry (marked fromMigrate when the command is)."""
    coll = Collection(db, name, uuid=uuid or Binary(_uuid.uuid4().bytes, 4), options=dict(options))
    if options.get("collation"):
        coll.indexes[0] = {**ID_INDEX, "collation": options["collation"]}  # the _id index takes the default
    o = {"create": name, **options}
    if "clusteredIndex" not in options:  # (a clustered collection has no separate _id index)
        o["idIndex"] = dict(coll.indexes[0])
    refresh(coll)
    if ctx.txn is not None:  # the transaction's alone until it commits (shardsim/uncommitted_catalog_updates.py)
        return ctx.txn.uncommitted.create(ctx.txn, coll, E.command_op(db, o, ui=coll.uuid))
    node.catalog.add_collection(coll)
    node.log(E.command_op(db, o, ui=coll.uuid), ctx, from_migrate=bool(ctx.cmd.get("fromMigrate")))
    return coll


def ensure_collection(node: Node, ctx: OpCtx, db: str, name: str) -> Collection:
    """Return the collection, creating it implicitly (with its `create` entry) if missing."""
    coll = node.catalog.collection(db, name)
    if coll is not None:
        return coll
    return create_collection(node, ctx, db, name, {})
