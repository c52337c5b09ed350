"""Short, human labels for what a trace holds: cluster times, resume tokens, documents.

A cluster time is shown as `<seconds since the cluster started>s#<increment>`:
`20s#1` is `Timestamp(epoch + 20, 1)`.  A resume token (sort key) is shown as
what it stands for: `insert {_id: 1} @1s#1` for an event, `20s#1` for a
high-water mark (a point in time, sorting before every event at that time).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from bson import Binary, Int64, ObjectId, Timestamp

from mongosim.oplog.resume_token import decode_resume_token

HWM_TYPE = 0


@dataclass(frozen=True)
class KeyInfo:
    ts: int  # ts key of the token's clusterTime
    hwm: bool
    op: str | None
    document_key: Any
    txn_op_index: int
    from_invalidate: bool


@lru_cache(maxsize=4096)
def key_info(key: str) -> KeyInfo:
    d = decode_resume_token({"_data": key})
    ts = (d.cluster_time.time << 32) | d.cluster_time.inc
    ident = d.event_identifier
    op = doc_key = None
    if isinstance(ident, dict) and "operationType" in ident:
        op = ident.get("operationType")
        doc_key = ident.get("documentKey")
    elif ident is not None:
        doc_key = ident
    if d.from_invalidate:
        op = "invalidate"
    return KeyInfo(ts, d.token_type == HWM_TYPE, op, doc_key, int(d.txn_op_index), bool(d.from_invalidate))


def ts_label(ts: int | None, zero: int) -> str:
    if ts is None:
        return "-"
    return f"{(ts >> 32) - zero}s#{ts & 0xFFFFFFFF}"


def ts_seconds(ts: int, zero: float) -> float:
    """Where a cluster time sits on the time axis: its seconds, nudged right by its increment."""
    return (ts >> 32) - zero + min(ts & 0xFFFFFFFF, 90) / 200.0


def value(v: Any) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, str):
        return repr(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, Int64, float)):
        return str(v)
    if isinstance(v, ObjectId):
        return f"ObjectId('{v}')"
    if isinstance(v, Timestamp):
        return f"Timestamp({v.time}, {v.inc})"
    if isinstance(v, Binary):
        return "BinData(...)"
    if v is None:
        return "null"
    return str(v)


def event_name(key: str) -> str:
    """`insert _id:1` — the event a token stands for, without its time."""
    info = key_info(key)
    if info.hwm:
        return "high-water mark"
    op = info.op or "event"
    dk = info.document_key
    if isinstance(dk, dict) and "_id" in dk:
        name = f"{op} _id:{value(dk['_id'])}"
    else:
        name = op
    if info.txn_op_index:
        name += f" (txn op {info.txn_op_index})"
    return name


def key_label(key: str | None, zero: int) -> str:
    """A token as a reader wants it: `insert _id:1 @1s#1`, or `20s#1` for a high-water mark."""
    if key is None:
        return "nothing yet"
    info = key_info(key)
    if info.hwm:
        return ts_label(info.ts, zero)
    return f"{event_name(key)} @{ts_label(info.ts, zero)}"


def promise_label(key: str | None, zero: int) -> str:
    if key is None:
        return "no promise yet"
    info = key_info(key)
    if info.hwm:
        return ts_label(info.ts, zero)
    return f"{ts_label(info.ts, zero)} ({event_name(key)})"


def seconds(t: float) -> str:
    return f"{t:.1f} s" if abs(t - round(t, 1)) < 1e-9 else f"{t:.3f} s"
