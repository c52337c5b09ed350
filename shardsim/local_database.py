"""The `local` database of a replica-set member: `oplog.rs` and `system.replset` as read-only collections.

On a real member both are collections of the storage engine: `local.oplog.rs`
is the capped collection the oplog is (repl/oplog.cpp createOplog:
`{capped: true, size: <oplogSizeMB>, autoIndexId: false}`, no `_id` index),
`local.system.replset` holds the one replica-set config document
(`_id`: the set's name, what replSetGetConfig answers).  Here they are made
from the member's own state when a read asks for them — the oplog's entries
in place (`OplogRecords`: positions to entries, read from `oplog.Oplog`, never
copied into another store), the config document from the set
(`repl_commands.config_doc`) — so count, aggregate, distinct, $collStats,
listCollections and listIndexes see them as any other collection.  A find on
`local.oplog.rs` keeps its own path (shardsim/oplog_collection.py: raw
bytes, tailable cursors).  An unbounded oplog (no `--oplog-size-mb`) reports
the server's smallest default size, 990 MB, as its `size`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Iterator

from bson import Binary, Int64

from mongosim.shardsim.catalog import ID_INDEX, Collection
from mongosim.shardsim.query.values import hashable

if TYPE_CHECKING:
    from mongosim.oplog.oplog import Oplog
    from mongosim.shardsim.node import Node

DB = "local"
OPLOG = "oplog.rs"
REPLSET = "system.replset"
NAMES = (OPLOG, REPLSET)  # (listCollections' order: by name)
DEFAULT_OPLOG_BYTES = 990 * 1024 * 1024  # (repl/oplog.cpp: the default size's lower bound on 64-bit systems)


class OplogRecords(Mapping):
    """The oplog's entries as a collection's documents: absolute position -> decoded entry, in
    natural (timestamp) order; truncation (`--oplog-size-mb`) is seen at once."""

    __slots__ = ("oplog",)

    def __init__(self, oplog: Oplog) -> None:
        self.oplog = oplog

    def __len__(self) -> int:
        return len(self.oplog)

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.oplog.start, self.oplog.end))

    def __getitem__(self, pos: Any) -> dict:
        if not isinstance(pos, int) or not self.oplog.start <= pos < self.oplog.end:
            raise KeyError(pos)
        return self.oplog.entry_at(pos)

    def values(self) -> Iterator[dict]:  # type: ignore[override]
        oplog = self.oplog
        return (oplog.entry_at(p) for p in range(oplog.start, oplog.end))


def oplog_size(node: Node) -> int:
    """The oplog's configured size in bytes (its capped `size`)."""
    return node.oplog.max_bytes or DEFAULT_OPLOG_BYTES


def oplog_options(node: Node) -> dict:
    """`local.oplog.rs`'s options as listCollections shows them (CollectionOptions::toBSON)."""
    size = oplog_size(node)
    return {"capped": True, "size": size if size < 2**31 else Int64(size), "autoIndexId": False}


def _uuid(node: Node, name: str) -> Binary:
    """A stable UUID for the member's `local.<name>` (the same on every read of this member)."""
    return Binary(uuid.uuid5(uuid.NAMESPACE_URL, f"mongosim://{node.host}/{DB}.{name}").bytes, 4)


def collection(node: Node, db: str, name: Any) -> Collection | None:
    """`local.oplog.rs` or `local.system.replset` of a replica-set member, as a read sees it (None for
    any other namespace, or on a node that is no member of a set)."""
    if db != DB or name not in NAMES or getattr(node, "member", None) is None:
        return None
    if name == OPLOG:
        return Collection(DB, OPLOG, uuid=_uuid(node, OPLOG), options=oplog_options(node), indexes=[],
                          docs=OplogRecords(node.oplog))  # type: ignore[arg-type]
    from mongosim.shardsim.repl_commands import config_doc

    doc = config_doc(node.member.rs)
    return Collection(DB, REPLSET, uuid=_uuid(node, REPLSET), indexes=[dict(ID_INDEX)],
                      docs={hashable(doc["_id"]): doc})


def readable(node: Node, db: str, name: Any) -> Collection | None:
    """The collection a read of `db.name` scans: the catalog's, or the member's `local` one."""
    return collection(node, db, name) or node.catalog.collection(db, name)


def collections(node: Node, db: str) -> list[Collection]:
    """The `local` collections of this member that its catalog does not hold (for listCollections)."""
    if db != DB:
        return []
    return [c for c in (collection(node, db, n) for n in NAMES) if c is not None]
