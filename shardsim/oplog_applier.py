"""Oplog application: what a replicated entry does to a secondary's data.

A secondary appends its sync source's entries to its own oplog byte for byte
(same `ts`, same bytes) and applies each one, as the server's oplog applier
does (`repl/oplog.cpp`: applyOperation, applyCommand):

- `i` inserts `o`; `u` applies the `$v: 2` diff (or the replacement) to the
  document named by `o2._id`; `d` deletes `o._id`; a noop changes nothing
  (a refineCollectionShardKey noop sets the collection's new key);
- commands on `<db>.$cmd`: create, drop, renameCollection, dropDatabase,
  createIndexes / commitIndexBuild, dropIndexes, collMod;
- transactions: the operations of an `applyOps` are applied when the entry
  that ends the transaction arrives (a `partialTxn` chain is buffered until
  its last entry; a `prepare` waits for its `commitTransaction` and is dropped
  by `abortTransaction`);
- retryable writes (`lsid`, `txnNumber`, `stmtId`) are recorded in the
  member's session table, so that after a failover the new primary answers a
  retried statement without running it again (the server keeps this in
  `config.transactions`); a committed transaction is remembered the same way,
  so a retried `commitTransaction` succeeds;
- collections with `changeStreamPreAndPostImages` get the pre-image of each
  update and delete stored, as each member writes its own pre-images.

Each member's data is decoded from the entry's bytes, so members never share
document objects.  A batch of entries (`apply_batch`) applies runs of inserts
into one collection as groups (`shardsim.insert_group`: documents stored as
their bytes until first read where they can be), the rest one by one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from mongosim.oplog import bsonutil
from mongosim.oplog.clock import ts_key
from mongosim.shardsim import coll_mod
from mongosim.shardsim.catalog import Collection
from mongosim.shardsim.collection_options import refresh
from mongosim.shardsim.insert_group import apply_group
from mongosim.shardsim.query.diff import apply_diff
from mongosim.shardsim.query.values import hashable
from mongosim.shardsim.sessions import session_key
from mongosim.shardsim.transactions import Transaction

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node


@dataclass
class PreparedTxn:
    """A prepared transaction seen in the oplog, waiting for its commit or abort entry."""

    lsid: dict
    txn_number: int
    ops: list[tuple[int, int, dict]]  # (entry ts key, index in its applyOps, operation)
    prepare_key: int


@dataclass
class OplogApplier:
    """Applies entries to one member (`node`); keeps what spans entries (transactions)."""

    node: "Node"
    partial: dict[bytes, list[tuple[int, int, dict]]] = field(default_factory=dict)
    prepared: dict[bytes, PreparedTxn] = field(default_factory=dict)

    # -- a batch of entries -------------------------------------------------------------
    def apply_batch(self, keys, ops: list[str], nss: list[str], raws: list[bytes],
                    note_term: Callable[[int, int], None]) -> None:
        """Apply entries given as oplog columns (ascending ts keys) and append them to the member's
        oplog; `note_term(key, t)` hears each entry's term.  Runs of inserts into one namespace
        go as groups (`shardsim.insert_group`), the rest one by one."""
        n = len(raws)
        i = 0
        while i < n:
            if ops[i] == "i" and i + 1 < n and ops[i + 1] == "i":
                grouped = apply_group(self, keys, nss, raws, i, note_term)
                if grouped:
                    i += grouped
                    continue
            entry = self.apply_raw(raws[i])
            note_term(keys[i], int(entry.get("t", 1)))
            i += 1

    # -- one entry ----------------------------------------------------------------------
    def apply_raw(self, raw: bytes) -> dict:
        """Apply one entry given as its bytes and append it to the member's oplog; the entry."""
        entry = bsonutil.decode(raw)
        key = ts_key(entry["ts"])
        self.apply(entry, key, raw)
        node = self.node
        node.oplog.append_raw(raw, key, entry["op"], entry.get("ns", ""))
        node.clock.advance(key)
        return entry

    def apply(self, entry: dict, key: int, raw: bytes | None = None) -> None:
        """Apply one decoded entry (`raw`: its bytes, if at hand)."""
        op = entry["op"]
        before = None
        if op == "c":
            self._command(entry, key)
        elif op == "n":
            o2 = entry.get("o2") or {}
            if "refineCollectionShardKey" in o2:
                coll = self._collection(entry["ns"])
                if coll is not None:
                    coll.shard_key = dict(o2["shardKey"])
        else:
            before = self._crud(entry, key, 0)
        if "stmtId" in entry and "lsid" in entry and "txnNumber" in entry:
            self._retryable_write(entry, key, before, raw)

    # -- documents ----------------------------------------------------------------------
    def _collection(self, ns: str) -> Collection | None:
        db, _, name = ns.partition(".")
        return self.node.catalog.collection(db, name)

    def collection_for_insert(self, op: dict) -> Collection:
        """The collection an insert entry (or operation) goes into, created if it is not there yet."""
        coll = self._collection(op["ns"])
        if coll is None:
            db, _, name = op["ns"].partition(".")
            coll = self.node.catalog.add_collection(Collection(db, name, uuid=op.get("ui") or Collection(db, name).uuid))
        return coll

    def _crud(self, op: dict, key: int, index: int) -> dict | None:
        """Apply an insert/update/delete; returns the document it replaced or removed."""
        kind = op["op"]
        coll = self.collection_for_insert(op) if kind == "i" else self._collection(op["ns"])
        if coll is None:
            return None
        o = op["o"]
        if kind == "i":
            old = coll.docs.get(hashable(o["_id"]))
            if old is not None:  # (idempotent application)
                coll.replace(old, o)
            else:
                coll.insert(o, checked=True)
                if coll.capped is not None:  # (no eviction here: the primary logged its deletes)
                    coll.capped.add(hashable(o["_id"]), o)
            return None
        if kind == "d":
            doc = coll.get(o["_id"])
            if doc is not None:
                self._pre_image(coll, key, index, doc)
                coll.delete(doc)
            return doc
        doc = coll.get(op["o2"]["_id"])
        if doc is None:
            return None
        new = apply_diff(doc, o["diff"]) if "$v" in o and "diff" in o else o
        self._pre_image(coll, key, index, doc)
        coll.replace(doc, new)
        return doc

    def _pre_image(self, coll: Collection, key: int, index: int, doc: dict) -> None:
        opt = coll.options.get("changeStreamPreAndPostImages")
        if isinstance(opt, dict) and opt.get("enabled"):
            self.node.preimages[(bytes(coll.uuid), key, index)] = doc

    # -- commands -----------------------------------------------------------------------
    def _command(self, entry: dict, key: int) -> None:
        o = entry.get("o") or {}
        name = next(iter(o), "")
        db = entry["ns"][: -len(".$cmd")] if entry["ns"].endswith(".$cmd") else entry["ns"].partition(".")[0]
        catalog = self.node.catalog
        if name == "applyOps":
            self._apply_ops(entry, o, key)
        elif name == "commitTransaction":
            txn = self.prepared.pop(self._session(entry), None)
            if txn is not None:
                for ekey, j, inner in txn.ops:
                    self._inner(inner, ekey, j)
                self._committed(txn.lsid, txn.txn_number)
        elif name == "abortTransaction":
            self.prepared.pop(self._session(entry), None)
        elif name == "create":
            if catalog.collection(db, o["create"]) is None:
                options = {k: v for k, v in o.items() if k not in ("create", "idIndex")}
                # (the options' state too: a secondary elected primary enforces the validator and
                # evicts from a capped collection as the old primary did)
                catalog.add_collection(refresh(Collection(db, o["create"], uuid=entry["ui"], options=options)))
        elif name == "drop":
            catalog.remove_collection(db, o["drop"])
        elif name == "renameCollection":
            sdb, sname = o["renameCollection"].split(".", 1)
            ddb, dname = o["to"].split(".", 1)
            coll = catalog.collection(sdb, sname)
            if coll is not None:
                catalog.remove_collection(ddb, dname)
                catalog.remove_collection(sdb, sname)
                coll.db, coll.name = ddb, dname
                catalog.add_collection(coll)
        elif name == "dropDatabase":
            catalog.databases.pop(db, None)
        elif name == "createIndexes":
            self._add_indexes(db, o["createIndexes"], [{k: v for k, v in o.items() if k != "createIndexes"}])
        elif name == "commitIndexBuild":
            self._add_indexes(db, o["commitIndexBuild"], o.get("indexes") or [])
        elif name == "dropIndexes":
            coll = catalog.collection(db, o["dropIndexes"])
            if coll is not None and coll.index(o["index"]) is not None:
                coll.drop_index(o["index"])
        elif name == "collMod":
            coll_mod.apply_entry(self.node, db, o, entry.get("o2"))

    def _add_indexes(self, db: str, name: str, specs: list[dict]) -> None:
        coll = self.node.catalog.collection(db, name)
        if coll is None:
            return
        for spec in specs:
            if coll.index(spec["name"]) is None:
                coll.add_index(dict(spec))

    def _inner(self, op: dict, key: int, index: int) -> None:
        """One operation of a transaction's applyOps (a CRUD op, or a command)."""
        if op.get("op") == "c":
            self._command({"op": "c", "ns": op["ns"], "ui": op.get("ui"), "o": op["o"]}, key)
        elif op.get("op") in ("i", "u", "d"):
            self._crud(op, key, index)

    # -- transactions ---------------------------------------------------------------------
    def _session(self, entry: dict) -> bytes:
        lsid = entry.get("lsid")
        return session_key(lsid) if lsid is not None else b""

    def _apply_ops(self, entry: dict, o: dict, key: int) -> None:
        skey = self._session(entry)
        ops = [(key, j, inner) for j, inner in enumerate(o.get("applyOps") or [])]
        if o.get("partialTxn"):
            self.partial.setdefault(skey, []).extend(ops)
            return
        ops = self.partial.pop(skey, []) + ops
        lsid, txn_number = entry.get("lsid"), entry.get("txnNumber")
        if o.get("prepare"):
            self.prepared[skey] = PreparedTxn(lsid, int(txn_number), ops, key)
            self._advance_session(lsid, int(txn_number))
            return
        for ekey, j, inner in ops:
            self._inner(inner, ekey, j)
        if lsid is not None and txn_number is not None:
            self._committed(lsid, int(txn_number))

    def _advance_session(self, lsid: dict, txn_number: int):
        state = self.node.sessions.state(lsid)
        if txn_number > state.txn_number:
            state.txn_number = txn_number
            state.executed = {}
            state.last_write_key = 0
            state.txn = None
        return state

    def _committed(self, lsid: dict, txn_number: int) -> None:
        """The session's transaction `txn_number` committed: a retried commit answers ok."""
        state = self._advance_session(lsid, txn_number)
        if state.txn_number == txn_number:
            txn = Transaction(self.node, lsid, txn_number)
            txn.state = "committed"
            txn._release()
            state.txn = txn

    def _retryable_write(self, entry: dict, key: int, before: dict | None, raw: bytes | None) -> None:
        """Remember a retryable write's statement, with the result a retry of it reports
        (for findAndModify: the document before the write, its default answer; for an insert, the
        entry's bytes, from which `sessions.statement_result` answers)."""
        state = self._advance_session(entry["lsid"], int(entry["txnNumber"]))
        if state.txn_number != int(entry["txnNumber"]):
            return
        op = entry["op"]
        result: Any
        if op == "i":
            result = raw if raw is not None else bsonutil.encode(entry)
        elif op == "u":
            result = {"n": 1, "nModified": 1, "lastErrorObject": {"n": 1, "updatedExisting": True},
                      "value": before, "ok": 1.0}
        else:
            result = {"n": 1, "lastErrorObject": {"n": 1}, "value": before, "ok": 1.0}
        ids = entry["stmtId"] if isinstance(entry["stmtId"], list) else [entry["stmtId"]]
        for sid in ids:
            state.executed[int(sid)] = result
        state.last_write_key = key

    # -- failover ---------------------------------------------------------------------------
    def take_prepared(self) -> list[PreparedTxn]:
        """The prepared transactions this member saw (it is becoming primary: they go live)."""
        out = list(self.prepared.values())
        self.prepared.clear()
        return out

    def keep_prepared(self, txn: PreparedTxn) -> None:
        self.prepared[session_key(txn.lsid)] = txn
