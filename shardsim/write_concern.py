"""Write concern on a replica-set member: wait until a write is where the client asked.

After a command that supports write concern (an aggregate ending in $out or
$merge among them) has run on the primary, the
member waits (the server's waitForWriteConcern) until the optime of the
write — or, for a command that wrote nothing, the member's newest optime —
is held by:

- `w: 0` / `w: 1`: the primary alone (no wait);
- `w: N`: N data-bearing members (arbiters hold no data: `w` larger than the
  data-bearing members is UnsatisfiableWriteConcern);
- `w: "majority"`: the commit point has passed it (writeMajorityCount voting
  data-bearing members hold it: `shardsim.replica_set`);
- `w: "<mode>"`: a custom mode of the set's `settings.getLastErrorModes`,
  `{tag: count, ...}`: the members holding the write carry, for each tag, at
  least `count` distinct values of it (`members[n].tags`);

giving up after `wtimeout` ms (0: never).  The outcome is reported the
server's way, the command itself having succeeded: a `writeConcernError`
`{code, codeName, errmsg, errInfo: {[wtimeout: true], writeConcern: {w, [j],
wtimeout, provenance}}}` — WriteConcernTimeout (64) on timeout,
UnsatisfiableWriteConcern (100) for more data-bearing members than the set
has or a mode no set of its members could satisfy, UnknownReplWriteConcern
(79) for an unknown mode, PrimarySteppedDown (189) when the primary steps
down while waiting.  Without `writeConcern`, or without `w`, the default
applies (`shardsim.rw_concern_defaults`): the cluster-wide one when set
(provenance "customDefault"), else the implicit `{w: "majority", wtimeout:
0}` (provenance "implicitDefault"), as since MongoDB 5.0 — `{w: 1}` in a set
whose arbiters leave the voting data-bearing members no more than a voting
majority (PSA).  `j` needs nothing more: a member's writes are durable as
soon as they are made.  A `provenance` the client names is kept (a mongod
takes any: extractWriteConcern); mongos refuses one other than
"clientSupplied" (`check_client_provenance`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import trio
from bson import Int64

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.replica_set import PRIMARY

if TYPE_CHECKING:
    from mongosim.shardsim.replica_set import Member, ReplicaSet

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
_IMPLICIT_W1 = WriteConcern(w=1)


def applies(name: str, cmd: dict) -> bool:
    """Whether `cmd` waits for write concern (a statement inside a transaction does not); an aggregate
    does when its pipeline ends in $out or $merge (the server's aggregate supportsWriteConcern)."""
    if name == "aggregate":
        return "autocommit" not in cmd and writes_output(cmd.get("pipeline"))
    return name in WRITE_CONCERN_COMMANDS and ("autocommit" not in cmd or name in _TXN_END)


def writes_output(pipeline: Any) -> bool:
    """Whether an aggregate's pipeline ends in a stage that writes ($out, $merge)."""
    last = pipeline[-1] if isinstance(pipeline, list) and pipeline else None
    return isinstance(last, dict) and len(last) == 1 and next(iter(last)) in ("$out", "$merge")


def default(rs: "ReplicaSet | None") -> WriteConcern:
    """The write concern of a write that names none (see the module docstring)."""
    defaults = rs.defaults if rs is not None else None
    if defaults is not None and defaults.write_concern is not None:
        cw = defaults.write_concern
        return WriteConcern(cw["w"], cw.get("j"), int(cw.get("wtimeout", 0)), "customDefault")
    if rs is not None and not rs.implicit_default_majority:
        return _IMPLICIT_W1
    return IMPLICIT_DEFAULT


def parse(cmd: dict, rs: "ReplicaSet | None" = None) -> WriteConcern:
    wc = cmd.get("writeConcern")
    if not isinstance(wc, dict) or not wc:
        return default(rs)
    w = wc.get("w", default(rs).w)
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
    provenance = wc.get("provenance")
    if not isinstance(provenance, str):  # (a client may name any provenance to a mongod: extractWriteConcern)
        implied = default(rs)  # (no w: the default's, when there is one to take it from)
        provenance = "clientSupplied" if "w" in wc or implied is _IMPLICIT_W1 else implied.provenance
    return WriteConcern(w if isinstance(w, str) else int(w), bool(j) if j is not None else None, int(timeout),
                        provenance)


def profiled(wc: WriteConcern | None) -> dict | None:
    """The `writeConcern` of a profile entry (OpDebug::append): none for a command that waits for
    none, nor for the implicit `{w: 1}` of a set with no majority default (the server's
    default-constructed write concern, usedDefaultConstructedWC)."""
    if wc is None or wc is _IMPLICIT_W1:
        return None
    return wc.to_doc()


def check_client_provenance(name: str, cmd: dict) -> None:
    """mongos: a client's writeConcern may name no provenance but clientSupplied (strategy.cpp,
    checked for a command that supports write concern, before the readConcern's)."""
    wc = cmd.get("writeConcern")
    if name in WRITE_CONCERN_COMMANDS and isinstance(wc, dict) and \
            wc.get("provenance", "clientSupplied") != "clientSupplied":
        raise MongoError("InvalidOptions", 'writeConcern provenance must be unset or "clientSupplied"')


def error(code: str, msg: str, wc: WriteConcern, *, timed_out: bool = False) -> dict:
    """A writeConcernError document, in the server's field order."""
    err = MongoError(code, msg)
    info: dict[str, Any] = {"wtimeout": True} if timed_out else {}
    info["writeConcern"] = wc.to_doc()
    return {"code": err.code, "codeName": err.code_name, "errmsg": msg, "errInfo": info}


class MemberGone(Exception):
    """The member died while the client waited: the client sees its connection close."""


def _holders(m: "Member", op_key: int) -> list["Member"]:
    """The data-bearing members that hold the entry at `op_key` of `m`'s history."""
    term = m.term_at(op_key)
    return [o for o in m.rs.data_bearing if o.has_entry(op_key, term)]


def mode_satisfied(mode: dict[str, int], members: list["Member"]) -> bool:
    """Whether `members` satisfy a custom write concern mode: for each tag, `count` distinct values
    among them (the server's ReplSetTagMatch)."""
    for tag, count in mode.items():
        if len({m.tags[tag] for m in members if tag in m.tags}) < count:
            return False
    return True


async def wait(m: "Member", op_key: int, wc: WriteConcern) -> dict | None:
    """Wait for `wc` on member `m` (the primary that ran the write); a writeConcernError or None."""
    w = wc.w
    if isinstance(w, int) and w <= 1:
        return None
    rs = m.rs
    mode = None
    if isinstance(w, str) and w != "majority":
        mode = rs.write_concern_modes.get(w)
        if mode is None:
            return error("UnknownReplWriteConcern", f"No write concern mode named '{w}' found in replica set "
                         "configuration", wc)
        if not mode_satisfied(mode, rs.members):
            return error("UnsatisfiableWriteConcern", f'Not enough nodes match write concern mode "{w}"', wc)
    if isinstance(w, int) and w > len(rs.data_bearing):
        return error("UnsatisfiableWriteConcern", "Not enough data-bearing nodes", wc)
    if not rs.multi:
        return None

    def satisfied() -> bool:
        if w == "majority":
            return rs.commit_key >= op_key and m.known_commit_key >= op_key
        if mode is not None:
            return mode_satisfied(mode, _holders(m, op_key))
        return len(_holders(m, op_key)) >= w

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
