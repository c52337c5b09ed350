"""A transaction's own catalog changes: the collections it created (the server's UncommittedCatalogUpdates).

Inside a multi-document transaction, `create`, an insert into a collection
that does not exist, and `createIndexes` on a new collection change the
catalog as the transaction's writes change documents: only the transaction
sees them until it commits.

- The new `Collection` is kept here, not in the node's catalog.  While one of
  the transaction's statements runs, the node makes this table its task's view
  (`visible_to`, a context variable read by `Catalog.collection`): the
  statement finds the collection by name, so its inserts, reads and index
  builds work on it.  Every other command, and listCollections/listIndexes
  (refused in transactions anyway), find nothing.
- The creation is one operation of the transaction's `applyOps`
  (`{op: "c", ns: "<db>.$cmd", ui, o: {create: ..., idIndex}}`, and
  `{createIndexes: coll, v, key, name, ...}` for each index), so a change
  stream reports it with the transaction's other operations.
- At commit (or prepare) the namespace must still be free: a collection
  created meanwhile outside the transaction is a WriteConflict (mongosim's
  simplification: on a server the other creation waits for the transaction's
  collection lock).  Then the collections join the catalog before the
  transaction's document changes are applied to them.  An abort forgets them.

The rules the server applies to DDL in a transaction live here too:
`check_create` (no views, time-series or system collections; an existing
collection is NamespaceExists 48), `check_index_namespace` and
`check_create_indexes` (only on a collection the transaction created, while
it is empty).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.catalog import CREATED_IN_TRANSACTION, Collection

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node


def _not_supported(msg: str) -> MongoError:
    return MongoError("OperationNotSupportedInTransaction", msg)


class UncommittedCatalogUpdates:
    """The collections one transaction created, by (db, name)."""

    def __init__(self) -> None:
        self.collections: dict[tuple[str, str], Collection] = {}

    def created(self, coll: Collection | None) -> bool:
        """Whether `coll` is one this transaction created (not yet committed)."""
        return coll is not None and self.collections.get((coll.db, coll.name)) is coll

    def create(self, txn: Any, coll: Collection, create_op: dict) -> Collection:
        """Record a collection the transaction creates, and its create operation."""
        ns = coll.ns
        if coll.name.startswith("system."):
            raise _not_supported(f"Cannot create system collection {ns} within a transaction.")
        if "timeseries" in coll.options:
            raise _not_supported("Cannot create a time-series collection in a multi-document transaction.")
        self.collections[(coll.db, coll.name)] = coll
        txn.log(create_op)
        return coll

    def taken_namespace(self, node: Node) -> str | None:
        """Before commit or prepare: a created namespace that is no longer free, if any."""
        for db, name in self.collections:
            if node.catalog.committed_collection(db, name) is not None:
                return f"{db}.{name}"
        return None

    def publish(self, node: Node) -> None:
        """At commit: the created collections join the node's catalog."""
        for coll in self.collections.values():
            node.catalog.add_collection(coll)
        self.collections.clear()


@contextmanager
def visible_to(txn: Any) -> Iterator[None]:
    """While a statement of `txn` runs (in this task): its created collections are found by name."""
    token = CREATED_IN_TRANSACTION.set(txn.uncommitted.collections)
    try:
        yield
    finally:
        CREATED_IN_TRANSACTION.reset(token)


def check_create(db: str, name: str, options: dict, existing: Collection | None) -> None:
    """`create` in a transaction (the server's createCollection, create_collection.cpp)."""
    if "viewOn" in options:
        raise _not_supported("Cannot create a view in a multi-document transaction.")
    if existing is not None:  # never "already exists with the same options: ok" in a transaction
        raise MongoError("NamespaceExists", f"Collection {db}.{name} already exists.")


def check_index_namespace(ns: str) -> None:
    """`createIndexes` in a transaction: never on a system collection."""
    if ns.split(".", 1)[1].startswith("system."):
        raise _not_supported(f"Cannot write to system collection {ns} within a transaction.")


def check_create_indexes(txn: Any, coll: Collection, ns: str) -> None:
    """New indexes in a transaction (the server's runCreateIndexesWithCoordinator): only on a
    collection the transaction created (or creates now), while it holds no document (indexes
    that all exist already were answered before: fine on any collection)."""
    if not txn.uncommitted.created(coll):
        raise _not_supported(f"Cannot create new indexes on existing collection {ns} in a multi-document transaction.")
    if next(iter(txn.scan(coll)), None) is not None:
        raise _not_supported(f"Cannot create new indexes on non-empty collection {ns} in a multi-document transaction.")
