"""Multi-document transactions on one node.

A transaction buffers its writes in an *overlay* (documents it inserted,
replaced or deleted, per collection) that only it can see; every operation is
also recorded, in order, as the `applyOps` operation the oplog will hold.

- Commit (unprepared): the operations become one `applyOps` oplog entry —
  several, chained by `prevOpTime` and marked `partialTxn` except the last,
  when they exceed the entry size limit — carrying `lsid`, `txnNumber`.
- Prepare (a participant of a multi-shard transaction): the operations are
  logged as `applyOps` with `prepare: true` and the prepare timestamp returned;
  the router's coordinator picks `commitTimestamp = max(prepare timestamps)`.
- Commit of a prepared transaction: the clock ticks to the commit timestamp,
  the data becomes visible, and `{commitTransaction: 1, commitTimestamp}` is
  logged (its `prevOpTime` points at the prepare entry).  In a quiet cluster
  every participant's commit entry lands on the same timestamp, so the events
  share one clusterTime, as on a real cluster.
- Abort: nothing is applied; a prepared transaction logs `abortTransaction`.

Reads see a snapshot of the node taken at the transaction's first statement
on it (`shardsim/snapshots.py`), plus the transaction's own writes.

Write conflicts (WriteConflict 112, label TransientTransactionError): a
document already written by another open transaction, or one that changed
after the snapshot (raised by the write, as mongod does).  A write outside any
transaction to a document a transaction has written waits until the
transaction ends (`WriteSession.wait_unlocked`), as mongod's write-conflict
retry loop does; the commit still checks that nothing it touched changed.

Limits (see README): collections created implicitly inside a transaction are
created at once, not inside applyOps; each shard's snapshot is taken at the
transaction's first statement there (readConcern local/majority semantics),
or, for readConcern snapshot, at the one atClusterTime mongos picked and pinned
on every shard when the transaction started (`shardsim.snapshot_reads`).
"""

from __future__ import annotations

from typing import Any, Iterator

import trio

from mongosim.oplog import bsonutil
from mongosim.oplog import entry as E
from mongosim.oplog.clock import ts_key
from mongosim.oplog.errors import MongoError
from mongosim.shardsim import snapshots
from mongosim.shardsim.catalog import Collection
from mongosim.shardsim.index_access_method import TOP
from mongosim.shardsim.query.index_keys import duplicate_key_error
from mongosim.shardsim.query.values import hashable
from mongosim.shardsim.sessions import lsid_with_uid
from mongosim.shardsim.uncommitted_catalog_updates import UncommittedCatalogUpdates

APPLY_OPS_LIMIT = bsonutil.MAX_BSON_OBJECT_SIZE - 64 * 1024

_DELETED = object()
_NOT_WRITTEN = object()


def write_conflict(context: str = "Write conflict during plan execution and yielding is disabled.") -> MongoError:
    """WriteConflict (112) as the server words every one (throwWriteConflictException, exception_util.h):
    "Caused by :: <context> :: Please retry your operation or multi-document transaction."  The default
    context is the plan executor's, which a statement in a transaction (yielding disabled) meets."""
    return MongoError("WriteConflict", f"Caused by :: {context} :: Please retry your operation or multi-document "
                                       "transaction.", labels=["TransientTransactionError"])


def no_such_transaction(txn_number: int, aborted: bool = True) -> MongoError:
    what = "has been aborted." if aborted else "is not in progress."
    return MongoError("NoSuchTransaction", f"Transaction with {{ txnNumber: {txn_number} }} {what}",
                      labels=["TransientTransactionError"])


class Transaction:
    def __init__(self, node: Any, lsid: dict, txn_number: int, at_snapshot: int | None = None) -> None:
        self.node = node
        self.lsid = lsid
        self.txn_number = txn_number
        self.state = "in_progress"
        self.api_params: dict = {}  # its first command's (shardsim.api_parameters)
        self.started = trio.current_time()
        self.ops: list[dict] = []
        self.pre_images: list[tuple[int, Collection, dict]] = []  # (op index, collection, pre-image)
        self.overlay: dict[tuple[str, Any], Any] = {}  # (ns, id key) -> doc or _DELETED
        self.touched: dict[tuple[str, Any], Any] = {}  # (ns, id key) -> base doc at first touch (identity)
        self.mutations: list[tuple[str, Collection, Any, Any]] = []
        self.uncommitted = UncommittedCatalogUpdates()  # the collections it created
        self.prepare_key = 0
        self.prepare_entry_key = 0
        self.commit_key = 0
        self._snapshots = node.catalog.snapshots
        self.snapshot: int | None = self._snapshots.open(at_snapshot)

    # -- reads -----------------------------------------------------------------------
    def _visible(self, coll: Collection, idk: Any) -> dict | None:
        if self.snapshot is None:  # ended
            return coll.docs.get(idk)
        return snapshots.visible(coll, idk, self.snapshot)

    def get(self, coll: Collection, id_value: Any) -> dict | None:
        idk = hashable(id_value)
        k = (coll.ns, idk)
        if k in self.overlay:
            d = self.overlay[k]
            return None if d is _DELETED else d
        return self._visible(coll, idk)

    def fetch(self, coll: Collection, idk: Any) -> dict | None:
        """The document with id key `idk` as this transaction sees it (an index plan's FETCH)."""
        d = self.overlay.get((coll.ns, idk), _NOT_WRITTEN)
        if d is not _NOT_WRITTEN:
            return None if d is _DELETED else d
        return self._visible(coll, idk)

    def changed_ids(self, coll: Collection) -> set:
        """Id keys whose document this transaction may see differently from the committed data
        (its own writes, and writes committed since its snapshot): an index plan reads them too."""
        ns = coll.ns
        out = {idk for (n, idk) in self.overlay if n == ns}
        if self.snapshot is not None and coll.versions:
            out.update(coll.versions)
        return out

    def scan(self, coll: Collection) -> Iterator[dict]:
        ns = coll.ns
        seen = set()
        out = []
        base = snapshots.scan(coll, self.snapshot) if self.snapshot is not None else list(coll.docs.items())
        for idk, doc in base:
            k = (ns, idk)
            seen.add(k)
            if k in self.overlay:
                d = self.overlay[k]
                if d is not _DELETED:
                    out.append(d)
            else:
                out.append(doc)
        for k, d in self.overlay.items():
            if k[0] == ns and k not in seen and d is not _DELETED:
                out.append(d)
        return iter(out)

    # -- writes ------------------------------------------------------------------------
    def _touch(self, coll: Collection, idk: Any) -> None:
        k = (coll.ns, idk)
        owner = self.node.txn_locks.get(k)
        if owner is not None and owner is not self:
            raise write_conflict()
        if k not in self.touched:
            current = coll.docs.get(idk)
            if current is not self._visible(coll, idk):
                raise write_conflict()  # changed (or created) since the snapshot
            self.touched[k] = current
        self.node.txn_locks[k] = self

    def insert(self, coll: Collection, doc: dict) -> None:
        idk = hashable(doc["_id"])
        if self.get(coll, doc["_id"]) is not None:
            raise duplicate_key_error(coll.ns, "_id_", {"_id": 1}, (doc["_id"],))
        self._check_indexes(coll, doc, idk)
        self._touch(coll, idk)
        self.overlay[(coll.ns, idk)] = doc
        self.mutations.append(("insert", coll, None, doc))

    def _check_indexes(self, coll: Collection, doc: dict, idk: Any) -> None:
        """What the collection's indexes refuse, as this transaction sees the data: keys they cannot
        hold (parallel arrays...), and unique keys another document it sees already has."""
        for ix in coll.secondary_access():
            if not (ix.enforces_unique and ix.usable):
                ix.validate(doc)
                continue
            keys = ix.keys(doc)
            if not keys:
                continue
            mine = {ix.encode(k): k for k in keys}
            n = len(ix.paths)
            for enc, key in mine.items():
                for entry in ix.entries.irange(enc, enc + (TOP,)):
                    owner = entry[n + 1]
                    if owner == idk:
                        continue
                    seen = self.fetch(coll, owner)
                    if seen is not None and any(ix.encode(k) == enc for k in ix.keys(seen)):
                        raise duplicate_key_error(coll.ns, ix.name, ix.key_pattern, key, ix.collator)
            ns = coll.ns
            for (n_s, other), d in self.overlay.items():
                if n_s != ns or other == idk or d is _DELETED:
                    continue
                for k in ix.keys(d):
                    if ix.encode(k) in mine:
                        raise duplicate_key_error(coll.ns, ix.name, ix.key_pattern, k, ix.collator)

    def replace(self, coll: Collection, old: dict, new: dict) -> None:
        idk = hashable(old["_id"])
        self._check_indexes(coll, new, idk)
        self._touch(coll, idk)
        self.overlay[(coll.ns, idk)] = new
        self.mutations.append(("replace", coll, old, new))

    def delete(self, coll: Collection, doc: dict) -> None:
        idk = hashable(doc["_id"])
        self._touch(coll, idk)
        self.overlay[(coll.ns, idk)] = _DELETED
        self.mutations.append(("delete", coll, doc, None))

    def log(self, op: dict) -> None:
        self.ops.append(op)

    def pre_image(self, coll: Collection, pre: dict) -> None:
        opt = coll.options.get("changeStreamPreAndPostImages")
        if isinstance(opt, dict) and opt.get("enabled"):
            self.pre_images.append((len(self.ops) - 1, coll, pre))

    # -- the end ---------------------------------------------------------------------------
    def _check_unchanged(self) -> None:
        taken = self.uncommitted.taken_namespace(self.node)
        if taken is not None:
            # (the server's collection acquisition, when a transaction's write finds the catalog changed)
            raise write_conflict(f"Unable to write to collection '{taken}' due to catalog changes; please retry the "
                                 "operation")
        for (ns, idk), base in self.touched.items():
            db, name = ns.split(".", 1)
            coll = self.node.catalog.collection(db, name)
            current = coll.docs.get(idk) if coll is not None else None
            if current is not base:
                raise write_conflict("Transaction aborted: a document it modified was changed by another write")

    def _apply(self) -> None:
        """Make the writes visible, all or none: a write the collection refuses now (a unique key
        another writer took since the statement) undoes the ones before it; the transaction then
        fails with a WriteConflict, as a conflicting commit does on the server."""
        undo: list[tuple[str, Collection, dict, dict | None]] = []
        try:
            for kind, coll, old, new in self.mutations:
                if kind == "insert":
                    coll.insert(new)
                    undo.append(("delete", coll, new, None))
                elif kind == "replace":
                    current = coll.docs.get(hashable(old["_id"]))
                    before = current if current is not None else old
                    coll.replace(before, new)
                    undo.append(("replace", coll, new, before))
                else:
                    current = coll.docs.get(hashable(old["_id"]))
                    if current is not None:
                        coll.delete(current)
                        undo.append(("insert", coll, current, None))
        except MongoError as err:
            for kind, coll, doc, before in reversed(undo):
                if kind == "delete":
                    coll.delete(doc)
                elif kind == "replace":
                    coll.replace(doc, before)
                else:
                    coll.insert(doc, checked=True)
            raise write_conflict(f"Transaction aborted at commit: {err.errmsg}") from None
        self.uncommitted.publish(self.node)  # the collections it created, with their documents

    def _release(self) -> None:
        if self.snapshot is not None:
            self._snapshots.close(self.snapshot)
            self.snapshot = None
        locks = self.node.txn_locks
        for k in self.touched:
            if locks.get(k) is self:
                del locks[k]
        self.node.txn_released.unpark_all()

    def _chunks(self) -> list[list[dict]]:
        chunks: list[list[dict]] = [[]]
        size = 0
        limit = getattr(self.node, "apply_ops_limit", APPLY_OPS_LIMIT)
        for op in self.ops:
            s = len(bsonutil.encode(op))
            if chunks[-1] and size + s > limit:
                chunks.append([])
                size = 0
            chunks[-1].append(op)
            size += s
        return chunks

    def _log_chain(self, ctx: Any, *, prepare: bool) -> int:
        """Log the operations as applyOps entries; return the last entry's ts key."""
        lsid = lsid_with_uid(self.lsid)
        prev = dict(E.NULL_OP_TIME)
        chunks = self._chunks()
        key = 0
        entry_of_op: list[tuple[int, int]] = []  # per op: (entry ts key, index in that entry)
        for i, chunk in enumerate(chunks):
            last = i == len(chunks) - 1
            o = E.apply_ops_o(chunk, partial=not last, prepare=prepare and last)
            ts = self.node.log(E.command_op("admin", o), ctx, lsid=lsid, txn_number=self.txn_number, prev_op_time=prev)
            key = ts_key(ts)
            prev = self.node.op_time(key)
            entry_of_op.extend((key, j) for j in range(len(chunk)))
        for op_index, coll, pre in self.pre_images:
            ekey, j = entry_of_op[op_index]
            self.node.preimages[(bytes(coll.uuid), ekey, j)] = pre
        return key

    def _check_unchanged_or_abort(self, ctx: Any) -> None:
        """Before commit or prepare: a document changed since the snapshot aborts the transaction."""
        try:
            self._check_unchanged()
        except MongoError:
            self.abort(ctx)
            raise

    def commit(self, ctx: Any) -> None:
        if self.state == "committed":
            return
        if self.state != "in_progress":
            raise no_such_transaction(self.txn_number)
        self._check_unchanged_or_abort(ctx)
        try:
            self._apply()
        except MongoError:
            self.abort(ctx)
            raise
        if self.ops:
            self._log_chain(ctx, prepare=False)
        self.state = "committed"
        self._release()

    def prepare(self, ctx: Any) -> int:
        if self.state == "prepared":
            return self.prepare_key
        if self.state != "in_progress":
            raise no_such_transaction(self.txn_number)
        self._check_unchanged_or_abort(ctx)
        if not self.ops:
            # a read-only participant prepares without an oplog entry
            self.prepare_key = self.node.clock.reserve(1)
        else:
            self.prepare_key = self._log_chain(ctx, prepare=True)
            self.prepare_entry_key = self.prepare_key
        self.state = "prepared"
        return self.prepare_key

    def commit_prepared(self, ctx: Any, commit_ts: Any) -> None:
        if self.state == "committed":
            return
        if self.state != "prepared":
            raise MongoError("InvalidOptions", "commitTimestamp may only be given for a prepared transaction")
        self.node.clock.tick_to(ts_key(commit_ts))
        self._apply()
        if self.prepare_entry_key:
            lsid = lsid_with_uid(self.lsid)
            self.node.log(E.command_op("admin", {"commitTransaction": 1, "commitTimestamp": commit_ts}), ctx,
                          lsid=lsid, txn_number=self.txn_number, prev_op_time=self.node.op_time(self.prepare_entry_key))
        self.state = "committed"
        self._release()

    def abort(self, ctx: Any = None) -> None:
        if self.state in ("aborted", "committed"):
            return
        if self.state == "prepared" and self.prepare_entry_key:
            lsid = lsid_with_uid(self.lsid)
            self.node.log(E.command_op("admin", {"abortTransaction": 1}), ctx, lsid=lsid, txn_number=self.txn_number,
                          prev_op_time=self.node.op_time(self.prepare_entry_key))
        self.state = "aborted"
        self._release()
