"""lookupSingleDocument: the current version of one document, found by its documentKey.

What `fullDocument: "updateLookup"` reads (DocumentSourceChangeStreamAddPostImage::
lookupLatestPostImage → MongoProcessInterface::lookupSingleDocument), as a
`$match: <documentKey>` of the collection, under the collection's default
collation:

- On a replica set (NonShardServerProcessInterface) the node reads its own
  collection.
- On a shard (ShardServerProcessInterface, kForceTargetingWithSimpleCollation)
  the shard acts as a router: it targets the document by the documentKey's
  shard key through the routing table the config server holds (every shard
  owning a chunk when the key lacks a shard-key field; the database's primary
  shard for an unsharded collection) and reads it *there*, with each target's
  orphan filter — so after a migration the lookup finds the document on the
  shard that owns it now, not on the shard that wrote the event.

With `matchCollectionUUIDForUpdateLookup` the event's collection UUID goes
with the lookup: a target whose collection has another UUID (dropped and
created again) answers CollectionUUIDMismatch, and a missing collection
NamespaceNotFound; both make the lookup answer null
(CommonMongodProcessInterface::doLookupSingleDocument).  Two documents
matching one documentKey is TooManyMatchingDocuments, which the change stream
reports as ChangeStreamFatalError.

The emulator's shards live in one process: a shard reaches another's node
through `node.shard_node` (set when it joins the cluster), without a wire hop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.collation import command_collator
from mongosim.shardsim.query.matcher import Matcher
from mongosim.shardsim.shard_key import hash64

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node


class _NoDocument(Exception):
    """NamespaceNotFound / CollectionUUIDMismatch on a target: the lookup answers null."""


def _read(node: Node, db: str, coll_name: str, uuid: bytes | None, document_key: dict,
          owned_by: tuple[Any, str] | None = None) -> list[dict]:
    """The documents of one node's collection matching `document_key` ($match), orphans left out."""
    coll = node.catalog.collection(db, coll_name)
    if coll is None:
        if uuid is not None:
            raise _NoDocument
        return []
    if uuid is not None and bytes(coll.uuid) != uuid:
        raise _NoDocument
    if "_id" in document_key:  # the _id index (binary, as the emulator's _id uniqueness), then the rest
        rest = Matcher({k: v for k, v in document_key.items() if k != "_id"}, collator=command_collator(None, coll))
        doc = coll.get(document_key["_id"])
        found = [doc] if doc is not None and rest.matches(doc) else []
    else:
        matcher = Matcher(document_key, collator=command_collator(None, coll))
        found = [doc for doc in coll.scan() if matcher.matches(doc)]
    if owned_by is not None:
        meta, shard = owned_by
        found = [doc for doc in found if meta.owner_of(doc) == shard]
    return found


def _targets(node: Node, db: str, coll_name: str, document_key: dict) -> tuple[list[str], Any]:
    """The shards a router would send `$match: documentKey` to, and the collection's routing metadata."""
    meta = node.filtering.collection(f"{db}.{coll_name}")
    if meta is None or not meta.chunks:
        primary = node.filtering.primary_shard(db)
        return ([primary] if primary is not None else [node.name]), None
    pattern = meta.pattern
    if all(f in document_key for f in pattern.fields):
        values = tuple(hash64(document_key[f]) if f in pattern.hashed else document_key[f] for f in pattern.fields)
        return [meta.owner_of_values(values)], meta
    return meta.owners(), meta


def lookup_single_document(node: Node, db: str, coll_name: str, document_key: dict,
                           uuid: bytes | None = None) -> dict | None:
    """The document `document_key` names, wherever it lives now (None if gone, or another generation)."""
    try:
        if node.filtering is None or node.shard_node is None:
            found = _read(node, db, coll_name, uuid, document_key)
        else:
            shards, meta = _targets(node, db, coll_name, document_key)
            found = []
            for shard in shards:
                target = node.shard_node(shard)
                if target is not None:
                    found.extend(_read(target, db, coll_name, uuid, document_key,
                                       (meta, shard) if meta is not None else None))
    except _NoDocument:
        return None
    if len(found) > 1:
        raise MongoError("ChangeStreamFatalError",
                         f"found more than one document with document key {document_key} [{found[0]}, {found[1]}]")
    return found[0] if found else None
