"""The session table: retryable-write bookkeeping per logical session.

A retryable write carries `lsid` + `txnNumber` and gives each statement an
`stmtId`.  The node remembers which statements of the session's current
txnNumber ran (and at which optime); a retried statement returns its first
result and writes no second oplog entry.  Each write's oplog entry links to
the previous write of the same txnNumber through `prevOpTime`.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable

from bson import Binary

from mongosim.oplog import bsonutil
from mongosim.oplog.entry import NULL_OP_TIME
from mongosim.oplog.errors import MongoError

def statement_result(saved: Any, find_and_modify: bool = False) -> Any:
    """A remembered statement's result as a retry reads it.  A secondary keeps an applied insert
    statement as its oplog entry's bytes (`shardsim.oplog_applier`, `insert_group`: the server
    keeps stmtId -> optime and reads the entry when a retry asks); its result is rebuilt from the
    entry's `_id`, as an insert's or an upsert's (`n`, `nModified`, `upserted`), or as
    findAndModify's reply to its upsert (an insert entry may come from any of them)."""
    if saved.__class__ is bytes:
        _id = bsonutil.decode(saved)["o"]["_id"]
        if find_and_modify:
            return {"lastErrorObject": {"n": 1, "updatedExisting": False, "upserted": _id},
                    "value": None, "ok": 1.0}
        return {"n": 1, "nModified": 0, "upserted": _id}
    return saved


@functools.lru_cache(maxsize=1024)  # every command with an lsid asks: hash each user once
def user_digest(user: str = "") -> Binary:
    """A session's `uid`: the SHA-256 of the user's "user@db" ("" when nobody is authenticated)."""
    return Binary(hashlib.sha256(user.encode()).digest(), 0)


def lsid_with_uid(lsid: dict, user: str = "") -> dict:
    """The lsid as the server stores it in the oplog: `{id, uid}`, and for a child session
    (mongos's internal transaction for a retryable write) `{id, uid, txnNumber, txnUUID}`."""
    uid = lsid.get("uid")
    out = {"id": lsid["id"], "uid": uid if uid is not None else user_digest(user)}
    for child_field in ("txnNumber", "txnUUID"):
        if child_field in lsid:
            out[child_field] = lsid[child_field]
    return out


def session_key(lsid: dict) -> bytes:
    """The session table's key: the session id, and a child session's parent txnNumber and txnUUID."""
    ident = lsid.get("id")
    key = bytes(ident) if ident is not None else b""
    if "txnUUID" in lsid:
        key += b"|%d|" % int(lsid.get("txnNumber", -1)) + bytes(lsid["txnUUID"])
    return key


def named_sessions(cmd: dict, sessions: dict[bytes, Any], uid_of: Any) -> list[bytes]:
    """The keys among `sessions` that endSessions / killSessions / killAllSessions `cmd` names.

    endSessions and killSessions name sessions by lsid; a child session (mongos's internal
    transaction for a retryable write) goes with its parent.  killAllSessions names the sessions
    of the users it lists ({user, db}), or every session when the list is empty.  `uid_of(value)`
    is a session's uid (the digest of its user).
    """
    name = next(iter(cmd))
    arg = cmd.get(name)
    if not isinstance(arg, list):
        return []
    if name == "killAllSessions":
        if not arg:
            return list(sessions)
        uids = {bytes(user_digest(f"{u.get('user', '')}@{u.get('db', '')}")) for u in arg if isinstance(u, dict)}
        return [k for k, v in sessions.items() if bytes(uid_of(v)) in uids]
    parents = [session_key(lsid) for lsid in arg if isinstance(lsid, dict)]
    return [k for k in sessions if any(k == p or k.startswith(p + b"|") for p in parents)]


@dataclass
class SessionState:
    txn_number: int = -1
    executed: dict[int, Any] = field(default_factory=dict)  # stmtId -> saved result
    last_write_key: int = 0
    txn: Any = None  # an open multi-document transaction (shardsim.transactions)


def end_open_transaction(s: SessionState) -> None:
    """A newer txnNumber on the session aborts its open transaction; a prepared one is the
    coordinator's to decide: PreparedTransactionInProgress."""
    txn = s.txn
    if txn is None:
        return
    if txn.state == "prepared":
        raise MongoError("PreparedTransactionInProgress",
                         f"Cannot start a new txnNumber on the session: transaction {txn.txn_number} is prepared")
    txn.abort()
    s.txn = None


def _state_uid(s: SessionState) -> Any:
    uid = s.txn.lsid.get("uid") if s.txn is not None else None
    return uid if uid is not None else user_digest()


class SessionTable:
    def __init__(self) -> None:
        self._sessions: dict[bytes, SessionState] = {}

    def state(self, lsid: dict) -> SessionState:
        key = session_key(lsid)
        s = self._sessions.get(key)
        if s is None:
            s = self._sessions[key] = SessionState()
        return s

    def begin(self, lsid: dict, txn_number: int) -> SessionState:
        """Check and advance the session's txnNumber for a retryable write."""
        s = self.state(lsid)
        if txn_number < s.txn_number:
            raise MongoError(
                225,  # TransactionTooOld
                f"Retryable write with txnNumber {txn_number} is prohibited on session "
                f"{lsid.get('id')} because a newer retryable write with txnNumber {s.txn_number} "
                "has already started on this session.",
            )
        if txn_number > s.txn_number:
            end_open_transaction(s)
            s.txn_number = txn_number
            s.executed = {}
            s.last_write_key = 0
        return s

    def record(self, lsid: dict, txn_number: int, stmt_id: int, result: Any) -> None:
        """Mark a retryable write's statement as executed with `result` (mongos moved its document
        in an internal transaction: a retry is answered from here, not run again)."""
        s = self.state(lsid)
        if s.txn_number == txn_number:
            s.executed[stmt_id] = result

    def prev_op_time(self, s: SessionState, op_time_of: Callable[[int], dict]) -> dict:
        """The `prevOpTime` of the session's next write: its last write's optime (`op_time_of`, the
        node's, knows the term that entry was written in), else the null optime."""
        return op_time_of(s.last_write_key) if s.last_write_key else dict(NULL_OP_TIME)

    def open_transactions(self) -> list:
        """The transactions open on this node (in progress or prepared), for $currentOp."""
        return [s.txn for s in self._sessions.values() if s.txn is not None and s.txn.state in ("in_progress", "prepared")]

    def forget(self, lsid: dict) -> None:
        s = self._sessions.pop(session_key(lsid), None)
        if s is not None and s.txn is not None and s.txn.state == "in_progress":
            s.txn.abort()

    def kill(self, cmd: dict) -> None:
        """endSessions / killSessions / killAllSessions: the named sessions' open transactions are
        aborted, as the server's killSessions does (their locks and snapshot released; the client's
        next statement gets NoSuchTransaction).  A prepared transaction stays: its coordinator decides."""
        for key in named_sessions(cmd, self._sessions, _state_uid):
            txn = self._sessions[key].txn
            if txn is not None and txn.state == "in_progress":
                txn.abort()

    def open_transactions(self) -> list:
        return [s.txn for s in self._sessions.values() if s.txn is not None and s.txn.state in ("in_progress", "prepared")]

    def __len__(self) -> int:
        return len(self._sessions)
