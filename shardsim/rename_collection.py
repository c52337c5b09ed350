"""renameCollection on a node (the server's catalog/rename_collection.cpp), within a database and across two.

The checks, in the server's order (validateNamespacesForRenameCollection, then the rename itself):
the source named the same as the target ("Can't rename a collection to itself"); the live oplog;
namespaces a client may not write (`userAllowedWriteNS`: "error with source namespace: Invalid system
namespace: db.system.x", "... cannot write to db.system.profile"); `admin.system.version`;
`system.views`, `system.js`; a buckets collection renamed to something else.  Then: the source a view
(CommandNotSupportedOnView "cannot rename view: db.v"), missing (NamespaceNotFound), the target a view
(NamespaceExists "a view already exists with that name: db.v") or an existing collection without
`dropTarget` (NamespaceExists "target namespace exists").  Before those (within a database), the
expected UUIDs (renameCollectionWithinDB): `collectionUUID` the source's, `dropTarget` given as a UUID
the target's — CollectionUUIDMismatch (collection_uuid.py) for a missing collection too; across
databases either is InvalidOptions.

Within a database the collection changes its name in place: one entry
`{renameCollection: "db.a", to: "db.b", stayTemp, dropTarget?: <UUID of the target it drops>}`,
with `o2: {numRecords}` of the dropped target (OpObserverImpl::preRenameCollection: `dropTarget` is
written only when a target is dropped).

Across databases (renameCollectionAcrossDatabases) the server copies, and every step is an ordinary
replicated write — change streams on the target database (or the cluster) see them:

1. `create` of `<target db>.tmpXXXXX.renameCollection` (five random letters or digits;
   `system.buckets.tmpXXXXX.renameCollection` for a buckets collection) with the source's options and
   a new UUID;
2. one `createIndexes` entry per index of the source but `_id` (the collection is empty);
3. the documents, in natural order, in batches of at most 500 documents and 4 MB
   (maxNumberOfInsertsBatchInsertsForRenameAcrossDatabases, maxSizeOfBatchedInsertsForRenameAcross-
   DatabasesBytes; a first document is always taken): a batch of several is one `applyOps` entry on
   `admin.$cmd` with no session (a WriteUnitOfWork grouped "for transaction", which the change stream
   unwinds like a transaction: the events carry txnOpIndex, no lsid), a batch of one a plain insert;
   a capped collection with an index takes one document per batch.  None is `fromMigrate`: a
   database stream on the target sees the inserts into the temporary collection (SERVER-107688, after
   8.0, marks them fromMigrate);
4. the temporary collection renamed over the target within its database (`dropTarget` as asked);
5. the source dropped (`{drop: "a"}`, `o2: {numRecords}`).

If a step fails, the temporary collection is dropped (a logged drop) and the source is left as it was.
"""

from __future__ import annotations

import secrets
import string
from typing import TYPE_CHECKING, Any

from bson import Binary
from mongosim.oplog import bsonutil
from mongosim.oplog import entry as E
from mongosim.oplog.errors import MongoError
from mongosim.shardsim import capped, view_catalog
from mongosim.shardsim.catalog import Collection
from mongosim.shardsim.collection_options import refresh
from mongosim.shardsim.collection_uuid import check_collection_uuid, uuid_arg
from mongosim.shardsim.command_registry import command
from mongosim.shardsim.create_collection import check_namespace, create_collection
from mongosim.shardsim.ddl import drop_collection
from mongosim.shardsim.operation_context import OpCtx
from mongosim.shardsim.query.idl_errors import wrong_type
from mongosim.shardsim.query.values import hashable

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

__all__ = ["cmd_rename", "check_namespaces", "rename_within_database", "MAX_BATCH_INSERTS", "MAX_BATCH_BYTES"]

MAX_BATCH_INSERTS = 500  # maxNumberOfInsertsBatchInsertsForRenameAcrossDatabases (storage_parameters.idl)
MAX_BATCH_BYTES = 4 * 1024 * 1024  # maxSizeOfBatchedInsertsForRenameAcrossDatabasesBytes
_BUCKETS = "system.buckets."
_TMP_ALPHABET = string.ascii_letters + string.digits
# system collections a client may write (NamespaceString::isLegalClientSystemNS)
_LEGAL_SYSTEM = {"system.users", "system.js", "system.views"}
_LEGAL_ADMIN_SYSTEM = {"system.roles", "system.version", "system.keys", "system.backup_users", "system.new_users"}


def _not_writable(db: str, coll: str) -> str | None:
    """userAllowedWriteNS: why a client may not write `db.coll` (None if it may)."""
    if coll == "system.profile":
        return f"cannot write to {db}.{coll}"
    if coll.startswith("system.") and coll not in _LEGAL_SYSTEM and not coll.startswith(_BUCKETS) \
            and not (db == "admin" and coll in _LEGAL_ADMIN_SYSTEM):
        return f"Invalid system namespace: {db}.{coll}"
    return None


def check_namespaces(src: tuple[str, str], dst: tuple[str, str]) -> None:
    """validateNamespacesForRenameCollection (the parts a node of mongosim can meet)."""
    if "local.oplog.rs" in (".".join(src), ".".join(dst)):
        raise MongoError("IllegalOperation", "can't rename live oplog while replicating" if src == ("local", "oplog.rs")
                         else "can't rename to live oplog while replicating")
    for which, (db, coll) in (("source", src), ("target", dst)):
        why = _not_writable(db, coll)
        if why is not None:
            raise MongoError("IllegalOperation", f"error with {which} namespace: {why}")
    if src == ("admin", "system.version"):
        raise MongoError("IllegalOperation", "renaming the server configuration collection (admin.system.version) is "
                                             "not allowed")
    for special in ("system.views", "system.js"):
        if special in (src[1], dst[1]):
            raise MongoError("IllegalOperation", f"renaming {special} collection or renaming to {special} is not allowed")
    if src[1].startswith(_BUCKETS) and not dst[1].startswith(_BUCKETS):
        raise MongoError("IllegalOperation", f"Cannot rename timeseries buckets collection '{'.'.join(src)}' to a "
                                             f"namespace that is not timeseries buckets '{'.'.join(dst)}'.")


@command("renameCollection")
def cmd_rename(node: Node, ctx: OpCtx) -> dict:
    cmd = ctx.cmd
    drop_target, stay_temp = drop_target_and_stay_temp(cmd)  # (the IDL parse, before any check)
    src, dst = cmd["renameCollection"], cmd.get("to")
    if not isinstance(src, str) or not isinstance(dst, str) or "." not in src or "." not in dst:
        raise MongoError("InvalidNamespace", f"Invalid source or target namespace: {src} -> {dst}")
    sdb, sname = src.split(".", 1)
    ddb, dname = dst.split(".", 1)
    check_namespace(ddb, dname)
    if src == dst:
        raise MongoError("IllegalOperation", "Can't rename a collection to itself")
    check_namespaces((sdb, sname), (ddb, dname))
    source_uuid, target_uuid = expected_uuids(cmd)
    if sdb == ddb:
        coll = node.catalog.collection(sdb, sname)
        # (renameCollectionWithinDB: the expected UUIDs before the namespaces' checks)
        check_collection_uuid(node, sdb, sname, coll, source_uuid)
        check_collection_uuid(node, ddb, dname, node.catalog.collection(ddb, dname), target_uuid)
        if coll is None:
            if view_catalog.definition(node, sdb, sname) is not None:
                raise MongoError("CommandNotSupportedOnView", f"cannot rename view: {src}")
            raise MongoError("NamespaceNotFound", "Source collection " + src + " does not exist")
        _check_target(node, ddb, dname, drop_target)
        rename_within_database(node, ctx, coll, dname, drop_target, stay_temp)
    else:
        if source_uuid is not None or target_uuid is not None:
            raise MongoError("InvalidOptions", "Cannot provide an expected collection UUID when renaming across databases")
        _rename_across_databases(node, ctx, sdb, sname, ddb, dname, drop_target, stay_temp)
    return {"ok": 1.0}


def drop_target_and_stay_temp(cmd: dict) -> tuple[bool, bool]:
    """`dropTarget` and `stayTemp` as 8.0's rename_collection.idl parses them (mongod and mongos
    alike: the command's IDL parse comes first).  `dropTarget` is a `variant: [bool, uuid]`: any other
    type, null included, is TypeMismatch "... expected types '[bool, binData]'" (the generated variant
    parser lists each alternative's BSON type); a UUID asks for the target to be dropped.
    `stayTemp` is a bool: null is as absent, any other type "expected type 'bool'"."""
    drop = cmd.get("dropTarget", False)
    if not isinstance(drop, (bool, Binary)):
        raise wrong_type("renameCollection.dropTarget", drop, ("bool", "binData"))
    stay = cmd.get("stayTemp")
    if stay is not None and not isinstance(stay, bool):
        raise wrong_type("renameCollection.stayTemp", stay, "bool")
    return bool(drop), bool(stay)


def expected_uuids(cmd: dict) -> tuple[Binary | None, Binary | None]:
    """The UUIDs a renameCollection expects (rename_collection.idl): `collectionUUID` the source's,
    `dropTarget` given as a UUID (not a bool) the target's, which it then drops."""
    source = cmd.get("collectionUUID")
    if source is not None:
        source = uuid_arg("renameCollection.collectionUUID", source)
    target = cmd.get("dropTarget")
    return source, target if isinstance(target, Binary) and target.subtype == 4 else None


def _check_target(node: Node, db: str, name: str, drop_target: bool) -> None:
    if node.catalog.collection(db, name) is not None:
        if not drop_target:
            raise MongoError("NamespaceExists", "target namespace exists")
    elif view_catalog.definition(node, db, name) is not None:
        raise MongoError("NamespaceExists", f"a view already exists with that name: {db}.{name}")


def rename_within_database(node: Node, ctx: OpCtx, coll: Collection, name: str, drop_target: bool,
                           stay_temp: bool) -> None:
    """Rename `coll` to `name` in its database, over the collection there if `drop_target`
    (renameCollectionDirectly / renameCollectionAndDropTarget: one entry)."""
    db, src = coll.db, coll.ns
    o: dict[str, Any] = {"renameCollection": src, "to": f"{db}.{name}", "stayTemp": stay_temp}
    o2 = None
    target = node.catalog.collection(db, name)
    if target is not None:
        assert drop_target
        node.catalog.remove_collection(db, name)
        o["dropTarget"] = target.uuid
        o2 = {"numRecords": len(target)}
    node.catalog.remove_collection(db, coll.name)
    coll.name = name
    if not stay_temp:
        coll.options.pop("temp", None)  # a temporary collection renamed without stayTemp is kept
    node.catalog.add_collection(refresh(coll))
    node.log(E.command_op(db, o, ui=coll.uuid, o2=o2), ctx, from_migrate=bool(ctx.cmd.get("fromMigrate")))


def _tmp_name(source: str) -> str:
    """makeUniqueCollectionName's `tmp%%%%%.renameCollection` (each % a random letter or digit)."""
    name = "tmp" + "".join(secrets.choice(_TMP_ALPHABET) for _ in range(5)) + ".renameCollection"
    return _BUCKETS + name if source.startswith(_BUCKETS) else name


def _rename_across_databases(node: Node, ctx: OpCtx, sdb: str, sname: str, ddb: str, dname: str,
                             drop_target: bool, stay_temp: bool) -> None:
    source = node.catalog.collection(sdb, sname)
    if source is None:
        if view_catalog.definition(node, sdb, sname) is not None:
            raise MongoError("CommandNotSupportedOnView", f"cannot rename view: {sdb}.{sname}")
        raise MongoError("NamespaceNotFound", "source namespace does not exist")
    _check_target(node, ddb, dname, drop_target)
    tmp_name = _tmp_name(sname)
    while node.catalog.collection(ddb, tmp_name) is not None:
        tmp_name = _tmp_name(sname)
    tmp = create_collection(node, ctx, ddb, tmp_name, dict(source.options))
    try:
        for spec in source.indexes:
            if spec["name"] != "_id_":
                tmp.add_index(dict(spec))
                node.log(E.command_op(ddb, {"createIndexes": tmp_name, **spec}, ui=tmp.uuid), ctx)
        _copy_documents(node, ctx, source, tmp)
        rename_within_database(node, ctx, tmp, dname, drop_target, stay_temp)
    except MongoError:
        if node.catalog.collection(ddb, tmp_name) is tmp:
            drop_collection(node, ctx, tmp)
        raise
    drop_collection(node, ctx, source)


def _copy_documents(node: Node, ctx: OpCtx, source: Collection, tmp: Collection) -> None:
    """The source's documents into `tmp`, batch by batch (buildBatchedWritesWithPolicy), each batch
    logged as one applyOps entry (several documents) or one insert."""
    docs = [doc for _seq, doc in source.capped.live(source)] if source.capped is not None else source.scan()
    one_by_one = tmp.capped is not None  # (a capped collection always has its _id index)
    batch: list[dict] = []
    size = 0
    for doc in docs:
        n = len(bsonutil.encode(doc))
        if batch and (one_by_one or len(batch) >= MAX_BATCH_INSERTS or size + n > MAX_BATCH_BYTES):
            insert_copied(node, ctx, tmp, batch)
            batch, size = [], 0
        batch.append(doc)
        size += n
    if batch:
        insert_copied(node, ctx, tmp, batch)


def insert_copied(node: Node, ctx: OpCtx, tmp: Collection, batch: list[dict]) -> None:
    """Copied documents into `tmp`: one insert entry, or one applyOps entry for several (no validation)."""
    ops = [E.insert_op(tmp.ns, tmp.uuid, doc, tmp.document_key(doc)) for doc in batch]
    node.log(ops[0] if len(ops) == 1 else E.command_op("admin", E.apply_ops_o(ops)), ctx)
    for doc in batch:
        tmp.insert(doc)  # (no document validation: DisableDocumentValidation)
        if tmp.capped is not None:
            capped.after_insert(node, ctx, tmp, doc, hashable(doc["_id"]))
