"""readConcern on a replica-set member: which data a read sees, and what it waits for first.

- `local` / `available`: the member's data as it is (the default);
- `majority`: the member's committed snapshot (`shardsim.committed_snapshot`):
  nothing a rollback could take away;
- `linearizable` (primary only): the data as it is, then the member writes a
  noop (`{msg: "linearizable read"}`) and waits for it to be
  majority-committed, so the read is not stale even if a newer primary exists;
- `snapshot`: the point-in-time read of `shardsim.snapshot_reads`;
- `afterClusterTime` (causal consistency): first wait until the member has
  applied (or, with `majority`, committed) that time; a primary behind it
  writes a noop to reach it, as the server's primary does.

A one-member set has everything committed: `majority` reads the present.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bson import Timestamp

from mongosim.oplog import entry as E
from mongosim.oplog.clock import ts_key
from mongosim.oplog.errors import MongoError
from mongosim.shardsim import write_concern
from mongosim.shardsim.replica_set import PRIMARY

if TYPE_CHECKING:
    from mongosim.shardsim.replica_set import Member

LEVELS = ("local", "majority", "linearizable", "available", "snapshot")


def level_of(cmd: dict) -> tuple[str, Any]:
    rc = cmd.get("readConcern")
    if not isinstance(rc, dict):
        return "local", None
    level = rc.get("level", "local")
    if level not in LEVELS:
        raise MongoError("FailedToParse", "readConcern.level must be either 'local', 'majority', 'linearizable', "
                         f"'available', or 'snapshot'; found: {level!r}")
    return level, rc.get("afterClusterTime")


async def prepare(m: "Member", name: str, cmd: dict) -> Any:
    """Before a read runs: check and wait; the view the read sees (None: the present data)."""
    level, after = level_of(cmd)
    if level == "linearizable":
        if m.state != PRIMARY:
            raise MongoError("NotWritablePrimary", "cannot satisfy linearizable read concern on non-primary node")
        if after is not None:
            raise MongoError("InvalidOptions", "afterClusterTime is not supported for readConcern level linearizable")
    if after is not None:
        if not isinstance(after, Timestamp):
            raise MongoError("TypeMismatch", "BSON field 'afterClusterTime' is the wrong type, expected type 'timestamp'")
        await _wait_for(m, ts_key(after), majority=level == "majority")
    if level == "majority" and m.rs.multi and name != "getMore" and not _is_change_stream(name, cmd):
        return m.committed.view()
    return None


def _is_change_stream(name: str, cmd: dict) -> bool:
    p = cmd.get("pipeline") if name == "aggregate" else None
    return isinstance(p, list) and bool(p) and isinstance(p[0], dict) and "$changeStream" in p[0]


async def _wait_for(m: "Member", key: int, *, majority: bool) -> None:
    """Until the member has applied (or committed) cluster time `key`."""
    rs = m.rs
    if m.state == PRIMARY and key > m.last_key and key <= m.node.clock.key:
        m.node.log(E.noop_op("Appending noop to reach the requested clusterTime"))  # the primary moves on
        rs.progress()
    while True:
        if m.state == PRIMARY and not rs.multi:
            return
        reached = m.committed.key if majority and rs.multi else m.last_key
        if majority and rs.multi:
            reached = max(reached, min(m.known_commit_key, m.last_key))
        if reached >= key:
            return
        await rs.changed.park()


async def linearize(m: "Member") -> None:
    """After a linearizable read: a noop write, majority-committed, proves this is still primary."""
    if not m.rs.multi:
        return
    ts = m.node.log(E.noop_op("linearizable read"))
    m.rs.progress()
    wce = await write_concern.wait(m, ts_key(ts), write_concern.IMPLICIT_DEFAULT)
    if wce is not None:
        raise MongoError(wce["code"], wce["errmsg"])

