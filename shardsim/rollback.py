"""Rollback: a member whose newest entries no majority holds gives them up when it rejoins.

A primary cut off from the others (or killed) may have written entries its
secondaries never fetched; meanwhile the others elected a new primary, whose
history goes on without them.  When the old primary comes back (or any
member finds its newest entry is not in its sync source's oplog), it rolls
back, as the server's rollback does ("recover to a stable timestamp"):

1. the common point is the newest entry of its oplog that the sync source
   also holds (same ts, same term);
2. its data goes back to its committed snapshot — the majority commit point
   it knew, which is at or before the common point (committed entries are
   never rolled back) — and its own entries from there to the common point
   are applied again;
3. its oplog is cut after the common point; pre-images of the removed
   entries go; its session table is taken from the sync source (the server
   reads it back from the rolled-back `config.transactions`);
4. during rollback the member is in state ROLLBACK: its client connections
   are closed and its cursors are gone.

Then it replicates from the new primary again.  None of the removed entries
was ever returned by a change stream: streams read only majority-committed
entries (`Oplog.committed_end`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mongosim.oplog.clock import key_ts
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.initial_sync import copy_sessions, initial_sync
from mongosim.shardsim.replica_set import ROLLBACK, SECONDARY

if TYPE_CHECKING:
    from mongosim.shardsim.replica_set import Member, ReplicaSet


def common_point(member: "Member", source: "Member") -> int | None:
    """The ts key of the newest entry both oplogs hold (None: nothing in common any more)."""
    oplog = member.node.oplog
    pos = oplog.end - 1
    while pos >= oplog.start:
        key = oplog.key_at(pos)
        if source.has_entry(key, member.term_at(key)):
            return key
        pos -= 1
    return None


def end_operations(member: "Member", error: MongoError, *, close: bool = True) -> None:
    """The member's client connections close: cursors, transactions and commands end."""
    node = member.node
    if close and member.on_close_connections is not None:
        member.on_close_connections()
    member.interrupt(("read", "write"))
    node.cursors.kill_all(error)
    node.oplog.wake_readers()
    node.progress.unpark_all()
    for state in list(node.sessions._sessions.values()):
        if state.txn is not None and state.txn.state in ("in_progress", "prepared"):
            state.txn.abort(None)
    node.txn_locks.clear()


def rollback(rs: "ReplicaSet", member: "Member", source: "Member") -> dict:
    """Roll `member` back to its common point with `source`; what was undone."""
    node = member.node
    oplog = node.oplog
    common = common_point(member, source)
    stable = member.committed.key
    if common is None or stable > common or (oplog.start > 0 and stable < oplog.first_key):
        initial_sync(member, source)  # no usable common history (or it was truncated): copy the source
        info = {"member": member.host, "resync": True, "commonPoint": None, "removed": []}
        rs.rollbacks.append(info)
        return info
    member.state = ROLLBACK
    rs.notify()
    end_operations(member, MongoError("InterruptedDueToReplStateChange", "operation was interrupted because a "
                                      "replica set state change occurred: rollback"))
    removed = [oplog.entry_at(p) for p in range(oplog.position_after(common), oplog.end)]
    member.committed.recover()
    oplog.truncate_after(common)
    member.forget_terms_after(common)
    applier = member.applier
    applier.partial.clear()
    applier.prepared = {k: t for k, t in applier.prepared.items() if t.prepare_key <= common}
    for pos in range(oplog.position_after(stable), oplog.end):
        applier.apply(oplog.entry_at(pos), oplog.key_at(pos))
    node.preimages = {k: v for k, v in node.preimages.items() if k[1] <= common}
    if node.event_cache is not None:
        node.event_cache._events.clear()
    copy_sessions(source.node.sessions, node.sessions)
    member.known_commit_key = min(member.known_commit_key, common)
    member.fetched_key = common
    member.buffer.clear()
    member.committed.mark()
    member.state = SECONDARY
    info = {"member": member.host, "resync": False, "commonPoint": key_ts(common),
            "removed": removed}
    rs.rollbacks.append(info)
    rs.notify()
    rs.expose(member)
    return info
