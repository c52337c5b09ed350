"""Capped collections: a fixed size (and optionally a maximum count), in insertion order.

`create {capped: true, size, max}`: the size is required and kept as given
(8.0 no longer rounds it up to a multiple of 256 bytes: adjustCappedSize under
featureFlagCappedCollectionsRelaxedSize, SERVER-67246, 6.2); `max` <= 0 means
2^31 - 1.  collMod's `cappedSize` / `cappedMax` change both later (coll_mod.py).  The
options are stored as CollectionOptions::toBSON writes them (`capped`, `size`,
`max` first), which is what listCollections and the create oplog entry show.

Each insert gets the next *record id* (insertion order, the natural order a
tailable cursor follows); when the documents' BSON size passes `size`, or
their count passes `max`, the oldest are deleted (cappedDeleteUntilBelow-
ConfiguredMaximum: never the document just inserted), each logged as an
ordinary delete entry, as a replica-set primary replicates them.
Writes to a capped collection in a transaction are refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from bson import Int64

from mongosim.oplog import bsonutil
from mongosim.oplog import entry as E
from mongosim.oplog.errors import MongoError

if TYPE_CHECKING:
    from mongosim.shardsim.catalog import Collection
    from mongosim.shardsim.node import Node
    from mongosim.shardsim.operation_context import OpCtx

MAX_DOCS = 0x7FFFFFFF


def _number(value: Any) -> bool:
    return isinstance(value, (int, float, Int64)) and not isinstance(value, bool)


def normalize_options(opts: dict) -> dict:
    """The create command's capped checks, and the options as the server stores them."""
    clustered = "clusteredIndex" in opts
    capped = bool(opts.get("capped"))
    if not clustered:
        if capped and not opts.get("size"):
            raise MongoError("InvalidOptions", "the 'size' field is required when 'capped' is true")
        if (opts.get("size") or opts.get("max")) and not capped:
            raise MongoError("InvalidOptions", "the 'capped' field needs to be true when either the 'size' or 'max' "
                                               "fields are present")
    if not capped or clustered:
        return opts
    size = int(opts["size"]) if _number(opts["size"]) else 0
    if size < 0:
        raise MongoError("BadValue", "size has to be >= 0")
    if size > 1 << 50:
        raise MongoError("BadValue", "size cannot exceed 1 PB")
    out: dict[str, Any] = {"capped": True, "size": size if size < 2**31 else Int64(size)}
    if "max" in opts and _number(opts["max"]):
        max_docs = int(opts["max"])
        if max_docs >= 1 << 31:
            raise MongoError("BadValue", "max in a capped collection has to be < 2^31 or not set")
        out["max"] = max_docs if max_docs > 0 else MAX_DOCS
    out.update({k: v for k, v in opts.items() if k not in ("capped", "size", "max")})
    return out


class CappedState:
    """Record ids in insertion order, and the bytes and count the limits apply to."""

    __slots__ = ("size", "max", "records", "sizes", "seq_of", "next_seq", "first", "data_size", "evicted_through")

    def __init__(self, size: int, max_docs: int | None) -> None:
        self.size = size
        self.max = max_docs
        self.records: dict[int, Any] = {}  # record id -> id key
        self.sizes: dict[int, int] = {}
        self.seq_of: dict[Any, int] = {}  # id key -> record id
        self.next_seq = 1
        self.first = 1
        self.data_size = 0
        self.evicted_through = 0  # the last record id capped deletion removed

    def add(self, idk: Any, doc: dict) -> int:
        seq = self.next_seq
        self.next_seq += 1
        n = len(bsonutil.encode(doc))
        self.records[seq] = idk
        self.sizes[seq] = n
        self.seq_of[idk] = seq
        self.data_size += n
        return seq

    def forget(self, idk: Any) -> None:
        """A document left the collection other than by eviction (a user's delete, or one a
        secondary applies): its bytes no longer count against `size`."""
        seq = self.seq_of.pop(idk, None)
        if seq is not None:
            self.records.pop(seq, None)
            self.data_size -= self.sizes.pop(seq, 0)

    def live(self, coll: Collection, start: int = 1) -> Iterator[tuple[int, dict]]:
        """(record id, document) from `start` on, in insertion order."""
        for seq in range(max(start, self.first), self.next_seq):
            idk = self.records.get(seq)
            if idk is None or self.seq_of.get(idk) != seq:
                continue
            doc = coll.docs.get(idk)
            if doc is not None:
                yield seq, doc


def state_for(options: dict) -> CappedState | None:
    if not options.get("capped") or "clusteredIndex" in options:
        return None
    return CappedState(int(options.get("size") or 0), options.get("max"))


def rebuild(coll: Collection) -> None:
    """Record ids for the documents already there (a restart): their natural order."""
    for idk, doc in coll.docs.items():
        coll.capped.add(idk, doc)


def refuse_in_transaction(coll: Collection) -> None:
    raise MongoError("OperationNotSupportedInTransaction",
                     f"Collection '{coll.ns}' is a capped collection. Writes in transactions are not allowed on capped "
                     "collections.")


def after_insert(node: Node, ctx: OpCtx, coll: Collection, doc: dict, idk: Any, *, replicated: bool = True) -> None:
    """Record the insert; delete the oldest documents while the collection is over its limits
    (logged as deletes, unless the collection is not replicated: system.profile)."""
    state = coll.capped
    just_inserted = state.add(idk, doc)
    while state.data_size > state.size or (state.max and len(coll.docs) > state.max):
        seq = state.first
        if seq >= just_inserted:
            break
        state.first += 1
        old_idk = state.records.pop(seq, None)
        state.data_size -= state.sizes.pop(seq, 0)
        if old_idk is None or state.seq_of.get(old_idk) != seq:
            continue
        del state.seq_of[old_idk]
        state.evicted_through = seq
        old = coll.docs.get(old_idk)
        if old is None:
            continue
        if not replicated:
            del coll.docs[old_idk]
            continue
        coll.delete(old)
        node.log(E.delete_op(coll.ns, coll.uuid, coll.document_key(old)), ctx)
