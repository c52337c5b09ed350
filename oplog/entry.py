"""Oplog entries in the server's exact shape and field order.

An entry is a dict whose keys follow the server's IDL serialization order
(oplog_entry.idl: OperationSessionInfo, DurableReplOperation, OpTimeBase,
then the entry's own fields):

    lsid, txnNumber, op, ns, ui, o, o2, stmtId, fromMigrate, ts, t, v, wall,
    prevOpTime, multiOpType

An *operation* (`op, ns, ui, o, o2`) is what a write does; it is either
logged on its own (`finish`) or nested in a transaction's `applyOps` array.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bson import Binary, Int64, Timestamp

TERM = Int64(1)
VERSION = Int64(2)
NULL_OP_TIME = {"ts": Timestamp(0, 0), "t": Int64(-1)}

# op codes
INSERT, UPDATE, DELETE, NOOP, COMMAND = "i", "u", "d", "n", "c"


def operation(op: str, ns: str, o: dict, *, ui: Binary | None = None, o2: dict | None = None) -> dict:
    """The DurableReplOperation part: `{op, ns, ui?, o, o2?}`."""
    d: dict[str, Any] = {"op": op, "ns": ns}
    if ui is not None:
        d["ui"] = ui
    d["o"] = o
    if o2 is not None:
        d["o2"] = o2
    return d


def insert_op(ns: str, ui: Binary, doc: dict, document_key: dict) -> dict:
    return operation(INSERT, ns, doc, ui=ui, o2=document_key)


def update_op(ns: str, ui: Binary, diff: dict, document_key: dict) -> dict:
    """A delta update: `o = {$v: 2, diff}`."""
    return operation(UPDATE, ns, {"$v": 2, "diff": diff}, ui=ui, o2=document_key)


def replace_op(ns: str, ui: Binary, new_doc: dict, document_key: dict) -> dict:
    """A replacement-style update: `o` is the whole new document."""
    return operation(UPDATE, ns, new_doc, ui=ui, o2=document_key)


def delete_op(ns: str, ui: Binary, document_key: dict) -> dict:
    return operation(DELETE, ns, document_key, ui=ui)


def command_op(db: str, o: dict, *, ui: Binary | None = None, o2: dict | None = None) -> dict:
    return operation(COMMAND, f"{db}.$cmd", o, ui=ui, o2=o2)


def noop_op(msg: str | dict, *, ns: str = "", ui: Binary | None = None, o2: dict | None = None) -> dict:
    o = msg if isinstance(msg, dict) else {"msg": msg}
    return operation(NOOP, ns, o, ui=ui, o2=o2)


def finish(
    op: dict,
    ts: Timestamp,
    wall: datetime,
    *,
    lsid: dict | None = None,
    txn_number: int | None = None,
    stmt_id: int | list[int] | None = None,
    from_migrate: bool = False,
    prev_op_time: dict | None = None,
    multi_op_type: int | None = None,
    term: Int64 = TERM,
) -> dict:
    """A complete oplog entry: session info, the operation, then ts/t/v/wall and the rest
    (`t`: the replica set's term when the entry was written)."""
    e: dict[str, Any] = {}
    if lsid is not None:
        e["lsid"] = lsid
    if txn_number is not None:
        e["txnNumber"] = txn_number if type(txn_number) is Int64 else Int64(txn_number)
    e.update(op)
    if stmt_id is not None:
        e["stmtId"] = stmt_id
    if from_migrate:
        e["fromMigrate"] = True
    e["ts"] = ts
    e["t"] = term
    e["v"] = VERSION
    e["wall"] = wall
    if prev_op_time is not None:
        e["prevOpTime"] = prev_op_time
    if multi_op_type is not None:
        e["multiOpType"] = multi_op_type
    return e


def op_time(ts: Timestamp, term: Int64 = TERM) -> dict:
    return {"ts": ts, "t": term}


def apply_ops_o(ops: list[dict], *, partial: bool = False, prepare: bool = False) -> dict:
    """`o` of a transaction entry: `{applyOps: [...], partialTxn?|prepare?}`."""
    o: dict[str, Any] = {"applyOps": ops}
    if partial:
        o["partialTxn"] = True
    if prepare:
        o["prepare"] = True
    return o
