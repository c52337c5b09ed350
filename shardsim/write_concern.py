"""Write concern on a replica-set member: wait until a write is where the client asked.

After a command that supports write concern has run on the primary, the
member waits (the server's waitForWriteConcern) until the optime of the
write — or, for a command that wrote nothing, the member's newest optime —
is held by:

- `w: 0` / `w: 1`: the primary alone (no wait);
- `w: N`: N members;
- `w: "majority"`: a majority (the commit point has passed it);

giving up after `wtimeout` ms (0: never).  The outcome is reported the
server's way, the command itself having succeeded: a `writeConcernError`
`{code, codeName, errmsg, errInfo: {[wtimeout: true], writeConcern: {w, [j],
wtimeout, provenance}}}` — WriteConcernTimeout (64) on timeout,
UnsatisfiableWriteConcern (100) for more members than the set has,
UnknownReplWriteConcern (79) for an unknown mode, PrimarySteppedDown (189)
when the primary steps down while waiting.  Without `writeConcern`, or
without `w`, the implicit default is `{w: "majority", wtimeout: 0}`
(provenance "implicitDefault"), as since MongoDB 5.0.  `j` needs nothing more:
a member's writes are durable as soon as they are made.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import trio
from bson import Int64

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.replica_set import PRIMARY, REMOVED

if TYPE_CHECKING:
    from mongosim.shardsim.replica_set import Member

WRITE_CONCERN_COMMANDS = frozenset({
    "insert", "update", "delete", "findAndModify", "findandmodify", "bulkWrite", "create", "drop", "dropDatabase",
    "renameCollection", "createIndexes", "dropIndexes", "deleteIndexes", "collMod", "commitTransaction",
    "abortTransaction", "prepareTransaction", "appendOplogNote", "_shardsvrSetShardKey",
    "_shardsvrNotifyShardCollection", "_recvChunkDocs", "_deleteRange", "_notifyMigrateChunkToNewShard",
    "_shardsvrNotifyRefineShardKey", "_shardsvrNotifyReshardCollection", "_shardsvrReshardCommit",
})
_TXN_END = ("commitTransaction", "abortTransaction", "prepareTransaction")


@dataclass(frozen=True)
class WriteConcern:
    w: Any = "majority"
    j: bool | None = None
    wtimeout: int = 0
    provenance: str = "implicitDefault"

    def to_doc(self) -> dict:
        d: dict[str, Any] = {"w": self.w}
        if self.j is not None:
            d["j"] = self.j
        d["wtimeout"] = self.wtimeout
        d["provenance"] = self.provenance
        return d


IMPLICIT_DEFAULT = WriteConcern()


def applies(name: str, cmd: dict) -> bool:
    """Whether `cmd` waits for write concern (a statement inside a transaction does not)."""
    return name in WRITE_CONCERN_COMMANDS and ("autocommit" not in cmd or name in _TXN_END)


def parse(cmd: dict) -> WriteConcern:
    wc = cmd.get("writeConcern")
    if not isinstance(wc, dict) or not wc:
        return IMPLICIT_DEFAULT
    w = wc.get("w", "majority")
    if isinstance(w, bool) or not isinstance(w, (int, str, Int64, float)):
        raise MongoError("FailedToParse", "w has to be a number or a string")
    if isinstance(w, float):
        w = int(w)
    if not isinstance(w, str) and int(w) < 0:
        raise MongoError("FailedToParse", "w has to be a non-negative number and not greater than 50; found: "
                         f"{int(w)}")
    timeout = wc.get("wtimeout", 0)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float, Int64)):
        timeout = 0
    j = wc.get("j")
    return WriteConcern(w if isinstance(w, str) else int(w), bool(j) if j is not None else None, int(timeout),
                        "clientSupplied" if "w" in wc else "implicitDefault")


def error(code: str, msg: str, wc: WriteConcern, *, timed_out: bool = False) -> dict:
    """A writeConcernError document, in the server's field order."""
    err = MongoError(code, msg)
    info: dict[str, Any] = {"wtimeout": True} if timed_out else {}
    info["writeConcern"] = wc.to_doc()
    return {"code": err.code, "codeName": err.code_name, "errmsg": msg, "errInfo": info}


class MemberGone(Exception):
    """The member died while the client waited: the client sees its connection close."""


def _holders(m: "Member", op_key: int) -> int:
    """How many members hold the entry at `op_key` of `m`'s history."""
    term = m.term_at(op_key)
    return sum(1 for o in m.rs.members if o.state != REMOVED and o.has_entry(op_key, term))


async def wait(m: "Member", op_key: int, wc: WriteConcern) -> dict | None:
    """Wait for `wc` on member `m` (the primary that ran the write); a writeConcernError or None."""
    w = wc.w
    if isinstance(w, int) and w <= 1:
        return None
    rs = m.rs
    if isinstance(w, str) and w != "majority":
        return error("UnknownReplWriteConcern", f"No write concern mode named '{w}' found in replica set "
                     "configuration", wc)
    if isinstance(w, int) and w > sum(1 for o in rs.members if o.state != REMOVED):
        return error("UnsatisfiableWriteConcern", "Not enough data-bearing nodes", wc)
    if not rs.multi:
        return None

    def satisfied() -> bool:
        if w == "majority":
            return rs.commit_key >= op_key and m.known_commit_key >= op_key
        return _holders(m, op_key) >= w

    with trio.move_on_after(wc.wtimeout / 1000.0 if wc.wtimeout > 0 else float("inf")):
        while True:
            if satisfied():  # (a write a majority holds is committed, whatever happened since)
                return None
            if not m.alive:
                raise MemberGone()
            if m.state != PRIMARY:
                return error("PrimarySteppedDown", "Primary stepped down while waiting for replication", wc)
            await rs.changed.park()
    return error("WriteConcernTimeout", "waiting for replication timed out", wc, timed_out=True)
