"""A node's catalog: databases, collections, their options, indexes and documents.

A `Collection` keeps documents in a dict keyed by the BSON-equality key of
their `_id` (insertion order is the natural order a collection scan returns),
plus one hash map per unique secondary index.  Non-unique secondary indexes
are recorded (listIndexes, change-stream DDL events) but queries scan.
"""

from __future__ import annotations

import uuid as _uuid
from dataclasses import dataclass, field
from typing import Any, Iterator

from bson import Binary

from mongosim.oplog import bsonutil
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.index_keys import duplicate_key_error, index_key_hashes, index_keys, index_name  # noqa: F401
from mongosim.shardsim.query.values import hashable
from mongosim.shardsim.snapshots import Snapshots

ID_INDEX = {"v": 2, "key": {"_id": 1}, "name": "_id_"}


def new_uuid() -> Binary:
    return Binary(_uuid.uuid4().bytes, 4)


@dataclass
class Collection:
    db: str
    name: str
    uuid: Binary = field(default_factory=new_uuid)
    options: dict = field(default_factory=dict)
    indexes: list[dict] = field(default_factory=lambda: [dict(ID_INDEX)])
    docs: dict[Any, dict] = field(default_factory=dict)
    shard_key: dict | None = None  # the shard key pattern when sharded
    _unique: dict[str, dict] = field(default_factory=dict)  # index name -> {key: id key}
    # point-in-time reads (shardsim/snapshots.py): the node's open snapshots, and the
    # before-images they need of this collection's documents (id key -> [(seq, before)])
    history: Any = field(default=None, repr=False, compare=False)
    versions: dict[Any, list] = field(default_factory=dict, repr=False, compare=False)

    @property
    def ns(self) -> str:
        return f"{self.db}.{self.name}"

    def __len__(self) -> int:
        return len(self.docs)

    # -- documents -----------------------------------------------------------------
    def get(self, id_value: Any) -> dict | None:
        return self.docs.get(hashable(id_value))

    def scan(self) -> Iterator[dict]:
        return iter(list(self.docs.values()))

    def shard_key_bytes(self, doc: dict) -> bytes:
        """The document's shard-key value as BSON, for a binary comparison (a missing field is absent)."""
        values = {}
        for path in self.shard_key or ():
            value = _get_path(doc, path)
            if value is not _MISSING:
                values[path] = value
        return bsonutil.encode(values)

    def document_key(self, doc: dict) -> dict:
        """`documentKey`: the shard key fields then `_id` (just `{_id}` when unsharded)."""
        if not self.shard_key:
            return {"_id": doc["_id"]}
        out: dict[str, Any] = {}
        for path in self.shard_key:
            value = _get_path(doc, path)
            if value is not _MISSING:
                out[path] = value
        if "_id" not in out:
            out["_id"] = doc["_id"]
        return out

    def check_insert(self, doc: dict) -> None:
        """Raise DuplicateKey if `doc` would violate the _id or a unique index."""
        if hashable(doc["_id"]) in self.docs:
            raise duplicate_key_error(self.ns, "_id_", {"_id": 1}, (doc["_id"],))
        for spec in self.indexes:
            if spec.get("unique") and spec["name"] != "_id_":
                table = self._unique.get(spec["name"], {})
                for key, hk in zip(index_keys(doc, spec["key"]), index_key_hashes(doc, spec["key"])):
                    if hk in table:
                        raise duplicate_key_error(self.ns, spec["name"], spec["key"], key)

    def insert(self, doc: dict, *, checked: bool = False) -> None:
        if not checked:
            self.check_insert(doc)
        idk = hashable(doc["_id"])
        h = self.history
        if h is not None and h.readers:
            h.record(self, idk, None)
        self.docs[idk] = doc
        self._index_add(doc, idk)

    def batch_insertable(self) -> bool:
        """May a batch of new documents be stored by `insert_batch`: no index to check or maintain
        (no unique secondary index: the others are only recorded), no snapshot keeping history?"""
        h = self.history
        return not self._unique and (h is None or not h.readers)

    def insert_batch(self, idks: list, docs: list[dict]) -> None:
        """`insert` of each document, in order, for documents already checked (ids `idks`, new and
        distinct) into a collection that is `batch_insertable`: stored in one step."""
        self.docs.update(zip(idks, docs))

    def replace(self, old: dict, new: dict) -> None:
        idk = hashable(old["_id"])
        self._index_remove(old)
        try:
            for spec in self.indexes:
                if spec.get("unique") and spec["name"] != "_id_":
                    table = self._unique.get(spec["name"], {})
                    for key, hk in zip(index_keys(new, spec["key"]), index_key_hashes(new, spec["key"])):
                        owner = table.get(hk)
                        if owner is not None and owner != idk:
                            raise duplicate_key_error(self.ns, spec["name"], spec["key"], key)
        except MongoError:
            self._index_add(old, idk)
            raise
        h = self.history
        if h is not None and h.readers:
            h.record(self, idk, self.docs.get(idk))
        self.docs[idk] = new
        self._index_add(new, idk)

    def delete(self, doc: dict) -> None:
        idk = hashable(doc["_id"])
        h = self.history
        if h is not None and h.readers:
            h.record(self, idk, doc)
        self._index_remove(doc)
        del self.docs[idk]

    def _index_add(self, doc: dict, idk: Any) -> None:
        for name, table in self._unique.items():
            spec = self.index(name)
            for hk in index_key_hashes(doc, spec["key"]):
                table[hk] = idk

    def _index_remove(self, doc: dict) -> None:
        for name, table in self._unique.items():
            spec = self.index(name)
            for hk in index_key_hashes(doc, spec["key"]):
                table.pop(hk, None)

    # -- indexes -------------------------------------------------------------------
    def index(self, name: str) -> dict | None:
        for spec in self.indexes:
            if spec["name"] == name:
                return spec
        return None

    def add_index(self, spec: dict) -> None:
        """Add an index (validated by the caller); builds the unique table."""
        if spec.get("unique") and spec["name"] != "_id_":
            table: dict = {}
            for idk, doc in self.docs.items():
                for key, hk in zip(index_keys(doc, spec["key"]), index_key_hashes(doc, spec["key"])):
                    if hk in table and table[hk] != idk:
                        raise duplicate_key_error(self.ns, spec["name"], spec["key"], key)
                    table[hk] = idk
            self._unique[spec["name"]] = table
        self.indexes.append(spec)

    def drop_index(self, name: str) -> dict:
        spec = self.index(name)
        if spec is None:
            raise MongoError("IndexNotFound", f"index not found with name [{name}]")
        self.indexes.remove(spec)
        self._unique.pop(name, None)
        return spec


_MISSING = object()


def _get_path(doc: dict, path: str) -> Any:
    cur: Any = doc
    for part in path.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            return _MISSING
    return cur


class Database:
    def __init__(self, name: str) -> None:
        self.name = name
        self.collections: dict[str, Collection] = {}


class Catalog:
    """All databases of one node."""

    def __init__(self) -> None:
        self.databases: dict[str, Database] = {}
        self.snapshots = Snapshots()  # the transactions' point-in-time reads


    def db(self, name: str, create: bool = False) -> Database | None:
        d = self.databases.get(name)
        if d is None and create:
            d = self.databases[name] = Database(name)
        return d

    def collection(self, db: str, name: str) -> Collection | None:
        d = self.databases.get(db)
        return d.collections.get(name) if d else None

    def add_collection(self, coll: Collection) -> Collection:
        coll.history = self.snapshots
        self.db(coll.db, create=True).collections[coll.name] = coll
        return coll

    def remove_collection(self, db: str, name: str) -> Collection | None:
        d = self.databases.get(db)
        if not d:
            return None
        coll = d.collections.pop(name, None)
        if not d.collections:
            del self.databases[db]
        return coll

    def all_collections(self) -> Iterator[Collection]:
        for d in list(self.databases.values()):
            yield from list(d.collections.values())
