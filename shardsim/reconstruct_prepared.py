"""Prepared transactions across a failover: they survive a change of primary.

A participant of a multi-shard transaction that has prepared must still be
able to commit (or abort) it whatever happens to its primary: the server's
secondaries keep each prepared transaction they applied, and a member that
becomes primary reconstructs them, documents locked, waiting for the
coordinator's decision.  A primary that steps down hands its prepared
transactions back to its oplog applier (the commit or abort entry will come
from the new primary).

A prepared transaction's operations are read from the oplog: the prepare
entry's `applyOps`, preceded by its `partialTxn` chain (linked by
`prevOpTime`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mongosim.oplog.clock import ts_key
from mongosim.shardsim.oplog_applier import PreparedTxn
from mongosim.shardsim.query.diff import apply_diff
from mongosim.shardsim.query.values import hashable
from mongosim.shardsim.transactions import Transaction

if TYPE_CHECKING:
    from mongosim.shardsim.replica_set import Member


def prepared_ops(member: "Member", prepare_key: int) -> list[tuple[int, int, dict]]:
    """(entry ts key, index, operation) of the transaction whose prepare entry is at `prepare_key`."""
    oplog = member.node.oplog
    chain = []
    key = prepare_key
    while key:
        entry = oplog.find_by_key(key)
        if entry is None:
            break
        chain.append((key, entry))
        prev = entry.get("prevOpTime") or {}
        key = ts_key(prev["ts"]) if prev.get("ts") is not None and prev["ts"].time else 0
    out = []
    for key, entry in reversed(chain):
        out.extend((key, j, op) for j, op in enumerate(entry["o"].get("applyOps") or []))
    return out


def hand_back(member: "Member") -> None:
    """Stepping down: live prepared transactions return to the applier; open ones abort."""
    node = member.node
    for state in list(node.sessions._sessions.values()):
        txn = state.txn
        if txn is None:
            continue
        if txn.state == "in_progress":
            txn.abort(None)
        elif txn.state == "prepared" and txn.prepare_entry_key:
            member.applier.keep_prepared(PreparedTxn(txn.lsid, txn.txn_number,
                                                     prepared_ops(member, txn.prepare_entry_key),
                                                     txn.prepare_entry_key))
            txn._release()
            state.txn = None


def reconstruct(member: "Member") -> None:
    """Becoming primary: the prepared transactions the applier holds become live again."""
    node = member.node
    for p in member.applier.take_prepared():
        state = node.sessions.state(p.lsid)
        txn = Transaction(node, p.lsid, p.txn_number)
        overlay: dict = {}  # (ns, id key) -> the document as the transaction left it so far
        for ekey, j, op in p.ops:
            db, _, name = op.get("ns", "").partition(".")
            coll = node.catalog.collection(db, name)
            if coll is None or op.get("op") not in ("i", "u", "d"):
                continue
            o = op["o"]
            idv = o["_id"] if op["op"] in ("i", "d") else op["o2"]["_id"]
            idk = hashable(idv)
            k = (coll.ns, idk)
            txn.touched.setdefault(k, coll.docs.get(idk))
            current = overlay[k] if k in overlay else coll.docs.get(idk)
            node.txn_locks[k] = txn
            if op["op"] == "i":
                txn.mutations.append(("insert", coll, None, o))
                overlay[k] = o
            elif current is not None and op["op"] == "d":
                txn.mutations.append(("delete", coll, current, None))
                overlay[k] = None
            elif current is not None:
                new = apply_diff(current, o["diff"]) if "$v" in o and "diff" in o else o
                txn.mutations.append(("replace", coll, current, new))
                overlay[k] = new
            if current is not None and op["op"] != "i":
                opt = coll.options.get("changeStreamPreAndPostImages")
                if isinstance(opt, dict) and opt.get("enabled"):
                    node.preimages[(bytes(coll.uuid), ekey, j)] = current
        txn.state = "prepared"
        txn.prepare_key = txn.prepare_entry_key = p.prepare_key
        state.txn_number = max(state.txn_number, p.txn_number)
        state.txn = txn
