"""The `collectionUUID` argument: the command runs only on the collection of that UUID
(catalog/collection_uuid_mismatch.cpp checkCollectionUUIDMismatch).

The commands that take it (each IDL's `collectionUUID` field, 6.0+): collMod (coll_mod.py checks it in
its own order), and find, count, distinct, aggregate, insert, update, delete, findAndModify,
createIndexes, dropIndexes, listIndexes and drop, which check it before anything else — a command
error on a mongod (jstests/core/collection_uuid_*.js; through mongos a write's shows as a write error).
Elsewhere: renameCollection (rename_collection.py: the source's `collectionUUID`, and `dropTarget` given
as the target's UUID), bulkWrite (bulk_write.py: an `nsInfo` entry's, each op's error item) and mongos's
shardCollection, refineCollectionShardKey and reshardCollection (router/sharding.py).

When the command's collection does not exist, or has another UUID, the error is
CollectionUUIDMismatch (361) "Collection UUID does not match that specified" with the server's extra
fields (CollectionUUIDMismatchInfo): `db`, `collectionUUID`, `expectedCollection` (the collection the
command named) and `actualCollection` — the name of the collection that has the UUID when it is in the
same database, else null.  A time-series collection's view has no UUID: naming one always mismatches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bson import Binary

from mongosim.oplog.errors import MongoError

if TYPE_CHECKING:
    from mongosim.shardsim.catalog import Collection
    from mongosim.shardsim.node import Node


def mismatch(db: str, uuid: Binary, expected: str, actual: str | None, message: str) -> MongoError:
    return MongoError("CollectionUUIDMismatch", message, db=db, collectionUUID=uuid, expectedCollection=expected,
                      actualCollection=actual)


COMMANDS = frozenset({"find", "count", "distinct", "aggregate", "insert", "update", "delete", "findAndModify",
                      "createIndexes", "dropIndexes", "listIndexes", "drop"})


def uuid_arg(field: str, value: Any) -> Binary:
    """`value` as the UUID the field `field` (e.g. "drop.collectionUUID") must hold."""
    if not isinstance(value, Binary) or value.subtype != 4:
        raise MongoError("TypeMismatch", f"BSON field '{field}' is the wrong type, expected type 'uuid'")
    return value


def check_command(node: Node, db: str, name: str, cmd: dict) -> None:
    """The check of the commands in COMMANDS, on the collection their first field names."""
    uuid = cmd.get("collectionUUID")
    target = cmd.get(name)
    if uuid is None or not isinstance(target, str):
        return
    uuid_arg(f"{name}.collectionUUID", uuid)
    check_collection_uuid(node, db, target, node.catalog.collection(db, target), uuid)


def check_collection_uuid(node: Node, db: str, name: str, coll: Collection | None, uuid: Any) -> None:
    """Raise CollectionUUIDMismatch unless `uuid` is None or `coll` (the collection `db.name`, None when
    there is none) has that UUID."""
    if uuid is None or (coll is not None and coll.uuid == uuid):
        return
    database = node.catalog.db(db)
    actual = None
    if database is not None:
        actual = next((c.name for c in database.collections.values() if c.uuid == uuid), None)
    raise mismatch(db, uuid, name, actual, "Collection UUID does not match that specified")
