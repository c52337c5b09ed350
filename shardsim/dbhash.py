"""dbHash on a node: an md5 per collection of its documents' BSON, and one over them (db/commands/dbhash.cpp).

The server locks the database and, for each collection in it, feeds an md5 the
bytes of every document in the order of its `_id` index (a forward index scan
fetching the documents), then answers

    {host, collections: {<name>: <md5 hex>}, capped: [<name>], uuids: {<name>: UUID},
     md5: <md5 of the collections' hex hashes concatenated in name order>, timeMillis, ok}

(names in byte order: std::map).  A collection without an `_id` index is
scanned in its natural order when it is capped or clustered (a clustered
collection, time-series buckets included, stores its records in `_id` order),
otherwise its hash is the literal string "no _id _index".  Left out: the
collections whose namespace is not replicated (the `local` database,
`system.profile`), the `tmp.mr.` collections, and with `skipTempCollections`
the temporary ones (`temp: true`).  Views are no collections: their
definitions are hashed as the documents of `system.views`.  `collections: [..]`
(an array; another type is ignored) restricts the hash to those names, each a
string (BadValue "collections entries have to be strings"); `excludeRecordIds`
only matters for collections that replicate their RecordIds (none in 8.0 without
its feature flag).  An empty string as the command's value is InvalidNamespace.

Reads: readConcern local, or snapshot (the server's test commands, enabled here);
any other level is refused before the command runs (read_concern_support.py).
`$_internalReadAtClusterTime` (a Timestamp, not null, not past the last applied
optime) and a snapshot's `atClusterTime` hash the documents as they were then
(the collections listed are today's).  mongos has no dbHash (CommandNotFound).
"""

from __future__ import annotations

import hashlib
import time
from typing import TYPE_CHECKING, Any, Iterable

from bson import Timestamp

from mongosim.oplog import bsonutil
from mongosim.oplog.clock import key_ts, ts_key
from mongosim.oplog.errors import MongoError
from mongosim.shardsim import snapshot_reads
from mongosim.shardsim.catalog import ID_INDEX
from mongosim.shardsim.command_registry import command
from mongosim.shardsim.index_access_method import IndexAccessMethod
from mongosim.shardsim.query.matcher import truthy_arg

if TYPE_CHECKING:
    from mongosim.shardsim.catalog import Collection
    from mongosim.shardsim.node import Node
    from mongosim.shardsim.operation_context import OpCtx

__all__ = ["collection_hash", "db_hash"]

NO_ID_INDEX = "no _id _index"
_READ_AT = "$_internalReadAtClusterTime"
_SIMPLE_ID = IndexAccessMethod(dict(ID_INDEX))  # the order of a clustered collection's records


def replicated(db: str, name: str) -> bool:
    """NamespaceString::isReplicated: not in `local`, and not a `system.profile`."""
    return db != "local" and name != "system.profile"


def _id_order(coll: Collection) -> IndexAccessMethod | None:
    """How the collection's documents are read: its `_id` index (with its collation), the simple
    `_id` order of a clustered collection's records, or None (no `_id` index, not clustered)."""
    spec = coll.index("_id_")
    if spec is not None:
        return IndexAccessMethod(spec)
    if "clusteredIndex" in coll.options:
        return _SIMPLE_ID
    return None


def collection_hash(coll: Collection, docs: Iterable[dict] | None = None) -> str:
    """The md5 (hex) of the collection's documents' BSON in `_id` order (`docs`: the documents as a
    snapshot sees them; the collection's own by default)."""
    order = _id_order(coll)
    docs = list(coll.docs.values()) if docs is None else list(docs)
    if order is None:
        if coll.capped is None:
            return NO_ID_INDEX
    else:
        encode = order.encode
        docs.sort(key=lambda d: encode((d["_id"],)))
    md5 = hashlib.md5()
    for doc in docs:
        md5.update(bsonutil.encode(doc))
    return md5.hexdigest()


def _desired(cmd: dict) -> set[str] | None:
    wanted = cmd.get("collections")
    if not isinstance(wanted, list):
        return None
    for name in wanted:
        if not isinstance(name, str):
            raise MongoError("BadValue", "collections entries have to be strings")
    return set(wanted) or None


def _read_at(node: Node, cmd: dict) -> int | None:
    """The cluster time (a clock key) the documents are read at: `$_internalReadAtClusterTime`, or a
    snapshot readConcern's `atClusterTime`; None to read the present data."""
    if _READ_AT in cmd:
        at = cmd[_READ_AT]
        if node.member is None:
            raise MongoError("InvalidOptions", "The '$_internalReadAtClusterTime' option is only supported when "
                                               "replication is enabled")
        if not isinstance(at, Timestamp):
            raise MongoError("TypeMismatch", "The '$_internalReadAtClusterTime' option must be a Timestamp")
        if at == Timestamp(0, 0):
            raise MongoError("InvalidOptions", "$_internalReadAtClusterTime value must not be a null timestamp.")
        last = node.oplog.last_key
        if ts_key(at) > last:
            applied = f"{{ ts: {_ts_str(key_ts(last))}, t: {node.op_time(last)['t']} }}" if last else \
                "{ ts: Timestamp(0, 0), t: -1 }"
            raise MongoError("InvalidOptions", "$_internalReadAtClusterTime value must not be greater than the last "
                                               f"applied opTime. Requested clusterTime: {_ts_str(at)}; last applied "
                                               f"opTime: {applied}")
        return ts_key(at)
    rc = cmd.get("readConcern")
    if isinstance(rc, dict) and rc.get("level") == "snapshot":
        return snapshot_reads.requested_time(cmd, max(node.clock.key, node.oplog.last_key))
    return None


def _ts_str(ts: Timestamp) -> str:
    return f"Timestamp({ts.time}, {ts.inc})"


def db_hash(node: Node, db: str, cmd: dict) -> dict:
    """The reply of dbHash on database `db` (without `ok`)."""
    started = time.monotonic()
    rc = cmd.get("readConcern")
    if isinstance(rc, dict) and "afterClusterTime" in rc:  # (allowsAfterClusterTime: false)
        raise MongoError("InvalidOptions", "afterClusterTime is not allowed for this command")
    desired = _desired(cmd)
    skip_temp = truthy_arg(cmd.get("skipTempCollections"))  # (BSONElement::trueValue)
    first = next(iter(cmd.values()))
    if first == "":
        raise MongoError("InvalidNamespace", "Cannot pass empty string for 'dbHash' field")
    at = _read_at(node, cmd)
    # (a pinned snapshot stays pinned for the history window, as snapshot reads' do)
    view: Any = snapshot_reads.SnapshotView(snapshot_reads.pin(node, at)) if at is not None else None
    hashes: dict[str, str] = {}
    capped: list[str] = []
    uuids: dict[str, Any] = {}
    database = node.catalog.db(db)
    for name, coll in sorted(database.collections.items()) if database is not None else ():
        if not replicated(db, name) or name.startswith("tmp.mr."):
            continue
        if skip_temp and coll.options.get("temp"):
            continue
        if desired is not None and name not in desired:
            continue
        if coll.capped is not None:
            capped.append(name)
        uuids[name] = coll.uuid
        hashes[name] = collection_hash(coll, view.scan(coll) if view is not None else None)
    whole = hashlib.md5("".join(hashes.values()).encode()).hexdigest()
    return {"host": node.host, "collections": hashes, "capped": capped, "uuids": uuids, "md5": whole,
            "timeMillis": int((time.monotonic() - started) * 1000)}


@command("dbHash", "dbhash")
def cmd_db_hash(node: Node, ctx: OpCtx) -> dict:
    return {**db_hash(node, ctx.db, ctx.cmd), "ok": 1.0}
