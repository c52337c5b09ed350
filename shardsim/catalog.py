"""A node's catalog: databases, collections, their options, indexes and documents.

A `Collection` keeps documents in a dict keyed by the BSON-equality key of
their `_id` (insertion order is the natural order a collection scan returns;
a replacement keeps its place, as a record keeps its RecordId), plus its
indexes (`shardsim.index_access_method`): every secondary index, and an
ordered view of the `_id` index for range scans and sorts on `_id`.

Document changes go through three methods, and only these: `insert`,
`replace` and `delete` (with `check_insert` to raise DuplicateKey before an
insert is logged).  They keep every materialized index, the RecordIds and the
before-images of open snapshots in step, whatever path changed the document:
write commands, transactions at commit, migrations' clone and range deletion,
oplog application, journal replay.  A path that writes raw bytes must still
call them with the decoded document when `has_secondary_indexes` is true.
"""

from __future__ import annotations

import uuid as _uuid
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Iterator

from bson import Binary

from mongosim.oplog import bsonutil
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.index_access_method import IndexAccessMethod
from mongosim.shardsim.query.index_keys import duplicate_key_error, index_name  # noqa: F401
from mongosim.shardsim.query.values import hashable
from mongosim.shardsim.snapshots import Snapshots

ID_INDEX = {"v": 2, "key": {"_id": 1}, "name": "_id_"}

# the collections created by the transaction whose statement this task is running ((db, name) -> Collection);
# None outside transactions (set by shardsim/uncommitted_catalog_updates.visible_to)
CREATED_IN_TRANSACTION: ContextVar[dict | None] = ContextVar("CREATED_IN_TRANSACTION", default=None)


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
    # point-in-time reads (shardsim/snapshots.py): the node's open snapshots, and the
    # before-images they need of this collection's documents (id key -> [(seq, before)])
    history: Any = field(default=None, repr=False, compare=False)
    versions: dict[Any, list] = field(default_factory=dict, repr=False, compare=False)
    # index name -> [ops, since]: the queries each index served, "$collScan": the collection scans
    # ($indexStats, $collStats' queryExecStats: shardsim/index_stats_stage.py, coll_stats.py)
    index_usage: dict[str, list] = field(default_factory=dict, repr=False, compare=False)
    # index access: name -> IndexAccessMethod (secondary indexes, and "_id_" once ordered access is needed)
    access: dict[str, IndexAccessMethod] = field(default_factory=dict, repr=False, compare=False)
    _maintained: list[IndexAccessMethod] = field(default_factory=list, repr=False, compare=False)
    _validated: list[IndexAccessMethod] = field(default_factory=list, repr=False, compare=False)
    rids: dict[Any, int] | None = field(default=None, repr=False, compare=False)  # id key -> RecordId
    _next_rid: int = field(default=1, repr=False, compare=False)
    _checked: Any = field(default=None, repr=False, compare=False)  # (doc, its keys per maintained index)
    # derived from `options` by shardsim.collection_options.refresh (not dataclass fields: never persisted)
    validator = None  # shardsim.document_validation.Validator when the collection validates its documents
    capped = None  # shardsim.capped.CappedState of a capped collection
    # documents stored as their BSON, not decoded yet (`insert_raw_batch`): id key -> bytes, or None
    _undecoded = None

    def __post_init__(self) -> None:
        for spec in self.indexes:
            if spec.get("name") != "_id_":
                self._attach(spec)

    @property
    def ns(self) -> str:
        return f"{self.db}.{self.name}"

    def __len__(self) -> int:
        return len(self._docs) + len(self._undecoded or ())

    @property
    def has_secondary_indexes(self) -> bool:
        """Whether a document change must be seen decoded (some index checks or stores its keys)."""
        return bool(self._maintained or self._validated)

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
        """Raise DuplicateKey (or an index's key error) if `doc` could not be inserted."""
        idk = hashable(doc["_id"])
        if idk in self.docs:
            raise duplicate_key_error(self.ns, "_id_", {"_id": 1}, (doc["_id"],))
        for ix in self._validated:
            ix.validate(doc)
        if self._maintained:
            computed = []
            for ix in self._maintained:
                keys = ix.keys(doc)
                if ix.enforces_unique and keys and not ix.is_id:
                    dup = ix.duplicate_of(keys, idk)
                    if dup is not None:
                        raise duplicate_key_error(self.ns, ix.name, ix.key_pattern, dup, ix.collator)
                computed.append(keys)
            self._checked = (doc, computed)  # (the insert that follows reuses the keys)

    def insert(self, doc: dict, *, checked: bool = False) -> None:
        """A document was inserted (the one call every insert path makes)."""
        if not checked:
            self.check_insert(doc)
        idk = hashable(doc["_id"])
        h = self.history
        if h is not None and h.readers:
            h.record(self, idk, None)
        self.docs[idk] = doc
        if self.rids is not None:
            rid = self._next_rid
            self._next_rid = rid + 1
            self.rids[idk] = rid
            checked = self._checked
            if checked is not None and checked[0] is doc and len(checked[1]) == len(self._maintained):
                for ix, keys in zip(self._maintained, checked[1]):
                    ix.add(doc, rid, idk, keys)
            else:
                for ix in self._maintained:
                    ix.add(doc, rid, idk)
        self._checked = None

    def batch_insertable(self) -> bool:
        """May a batch of new documents be stored by `insert_batch` without a check per document:
        no index that checks or stores keys (`has_secondary_indexes`), no validator to check each
        document against, not capped (each insert may evict the oldest)?"""
        return not self.has_secondary_indexes and self.validator is None and self.capped is None

    def insert_batch(self, idks: list, docs: list[dict]) -> None:
        """`insert(doc, checked=True)` of each document, in order, for documents already checked (ids
        `idks`, new and distinct), in one step: the before-images open snapshots need and the
        maintained indexes kept in step as `insert` keeps them."""
        h = self.history
        if h is not None and h.readers:
            h.record_inserts(self, idks)
        self.docs.update(zip(idks, docs))
        if self.rids is not None:
            first = self._next_rid
            rids = range(first, first + len(idks))
            self.rids.update(zip(idks, rids))
            self._next_rid = first + len(idks)
            for ix in self._maintained:
                for doc, rid, idk in zip(docs, rids, idks):
                    ix.add(doc, rid, idk)
        self._checked = None

    # -- documents kept as BSON until read ---------------------------------------------
    def raw_insertable(self) -> bool:
        """May new documents be stored as their BSON (`insert_raw_batch`): `batch_insertable`, and no
        RecordIds handed out (their order is the documents')."""
        return self.batch_insertable() and self.rids is None

    def has_none_of(self, idks: list) -> bool:
        """None of the id keys `idks` is a stored document's (decoded or not), without decoding any."""
        return self._docs.keys().isdisjoint(idks) and (not self._undecoded or self._undecoded.keys().isdisjoint(idks))

    def insert_raw_batch(self, idks: list, raws: list[bytes]) -> None:
        """`insert_batch` of documents given as their BSON (already validated: a secondary's, from its
        oplog entries) under new, distinct id keys `idks`, decoded only when the documents are first
        read: every read goes through `docs`, which decodes those waiting, all in one call, into
        their places (after the documents stored before them: the natural order is kept).  The
        collection must be `raw_insertable`."""
        h = self.history
        if h is not None and h.readers:
            h.record_inserts(self, idks)
        if self._undecoded is None:
            self._undecoded = dict(zip(idks, raws))
        else:
            self._undecoded.update(zip(idks, raws))
        self._checked = None

    def _decode_waiting(self) -> dict:
        waiting, self._undecoded = self._undecoded, None
        self._docs.update(zip(waiting, bsonutil.decode_all(b"".join(waiting.values()))))
        return self._docs

    def replace(self, old: dict, new: dict) -> None:
        """A document was replaced by `new` (same `_id`): an update, a replacement, a transaction's commit."""
        idk = hashable(old["_id"])
        stored = self.docs.get(idk, old)
        changes = []
        for ix in self._validated:
            ix.validate(new)
        for ix in self._maintained:
            if ix.is_id:
                continue
            old_keys = ix.keys(stored)
            new_keys = ix.keys(new)
            if [ix.encode(k) for k in old_keys] == [ix.encode(k) for k in new_keys]:
                continue
            if ix.enforces_unique and new_keys:
                dup = ix.duplicate_of(new_keys, idk)
                if dup is not None:
                    raise duplicate_key_error(self.ns, ix.name, ix.key_pattern, dup, ix.collator)
            changes.append((ix, old_keys, new_keys))
        h = self.history
        if h is not None and h.readers:
            h.record(self, idk, self.docs.get(idk))
        self.docs[idk] = new
        if changes:
            rid = self.rids[idk]
            for ix, old_keys, new_keys in changes:
                ix.remove(stored, rid, idk, old_keys)
                ix.add(new, rid, idk, new_keys)

    def delete(self, doc: dict) -> None:
        """A document was deleted."""
        idk = hashable(doc["_id"])
        h = self.history
        if h is not None and h.readers:
            h.record(self, idk, doc)
        stored = self.docs.pop(idk)
        if self.capped is not None:
            self.capped.forget(idk)
        if self.rids is not None:
            rid = self.rids.pop(idk)
            for ix in self._maintained:
                ix.remove(stored, rid, idk)

    # -- record ids ------------------------------------------------------------------
    def ensure_rids(self) -> dict[Any, int]:
        """RecordIds for every document, in natural order (assigned when first needed)."""
        if self.rids is None:
            self.rids = {idk: i for i, idk in enumerate(self.docs, 1)}
            self._next_rid = len(self.docs) + 1
        return self.rids

    def record_id(self, idk: Any) -> int:
        return self.ensure_rids()[idk]

    # -- indexes -------------------------------------------------------------------
    def index(self, name: str) -> dict | None:
        for spec in self.indexes:
            if spec["name"] == name:
                return spec
        return None

    def index_access(self, name: str) -> IndexAccessMethod | None:
        """The index, materialized (built from the documents if nothing needed it until now)."""
        ix = self.access.get(name)
        if ix is None:
            if name != "_id_" or self.index("_id_") is None:
                return None
            ix = self.access["_id_"] = IndexAccessMethod(self.index("_id_"))
        if ix.entries is None and ix.materializable:
            self._materialize(ix)
        return ix

    def secondary_access(self) -> list[IndexAccessMethod]:
        """Every secondary index (not materialized on account of this call)."""
        return [ix for name, ix in self.access.items() if name != "_id_"]

    def _materialize(self, ix: IndexAccessMethod) -> None:
        rids = self.ensure_rids()
        ix.build(self.docs, rids)
        if ix in self._validated:
            self._validated.remove(ix)
        self._maintained.append(ix)

    def _attach(self, spec: dict) -> IndexAccessMethod:
        ix = IndexAccessMethod(spec)
        self.access[spec["name"]] = ix
        if ix.usable and ix.enforces_unique:
            self._materialize(ix)
        elif ix.validates:
            self._validated.append(ix)
        return ix

    def add_index(self, spec: dict) -> None:
        """Add an index (validated by the caller): a unique one is built at once (DuplicateKey if it does not hold)."""
        ix = IndexAccessMethod(spec)
        if ix.usable and ix.unique:
            rids = self.ensure_rids()
            ix.build(self.docs, rids)
            prev = None
            n = len(ix.paths)
            for entry in ix.entries:
                if prev is not None and entry[:n] == prev[:n] and entry[n + 1] != prev[n + 1]:
                    doc = self.docs[entry[n + 1]]
                    key = next(k for k in ix.keys(doc) if ix.encode(k) == entry[:n])
                    raise duplicate_key_error(self.ns, spec["name"], spec["key"], key, ix.collator)
                prev = entry
            self._maintained.append(ix)
            self.access[spec["name"]] = ix
        else:
            if ix.validates:
                for doc in self.docs.values():
                    ix.validate(doc)
                self._validated.append(ix)
            self.access[spec["name"]] = ix
        self.indexes.append(spec)

    def drop_index(self, name: str) -> dict:
        spec = self.index(name)
        if spec is None:
            raise MongoError("IndexNotFound", f"index not found with name [{name}]")
        self.indexes.remove(spec)
        ix = self.access.pop(name, None)
        if ix is not None:
            for lst in (self._maintained, self._validated):
                if ix in lst:
                    lst.remove(ix)
        return spec


def _docs(coll: Collection) -> dict:
    """`Collection.docs`: the documents by id key (those stored as BSON decoded first)."""
    return coll._docs if coll._undecoded is None else coll._decode_waiting()


def _set_docs(coll: Collection, docs: dict) -> None:
    coll._docs = docs
    coll._undecoded = None


# every read and write of `docs` (the dataclass field: its __init__, eq and repr too) passes here
Collection.docs = property(_docs, _set_docs, doc=_docs.__doc__)  # type: ignore[assignment]

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
        """The collection `db.name` as the running command sees it: a statement of a transaction
        also finds the collections that transaction created (shardsim/uncommitted_catalog_updates.py)."""
        created = CREATED_IN_TRANSACTION.get()
        if created:
            coll = created.get((db, name))
            if coll is not None:
                return coll
        d = self.databases.get(db)
        return d.collections.get(name) if d else None

    def committed_collection(self, db: str, name: str) -> Collection | None:
        """The collection `db.name` as every command sees it."""
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
