"""Replication on a secondary: fetch the primary's new oplog entries, apply them after a lag.

One task per member (the server's BackgroundSync, OplogFetcher and
OplogApplier in one loop):

1. the sync source is the primary, when this member is an alive secondary
   that can talk to it and replication is not stopped (the server's
   `stopReplProducer` failpoint stops the fetcher the same way); with no
   primary, a reachable secondary ahead of it; the member replSetSyncFrom
   named, while it suits (`sync_source`);
2. if this member's newest entry is not in the source's history, it has
   diverged: it rolls back (`shardsim.rollback`) — or, when the source's
   bounded oplog no longer reaches back to it, it re-syncs
   (`shardsim.initial_sync`);
3. new entries are fetched (their bytes) into a buffer, each ready to apply
   `lag` seconds after its fetch (0 by default; on trio's clock, so virtual
   time works);
4. ready entries are applied in order (`Member.apply_buffered`); the commit
   point moves (`ReplicaSet.progress`).

The task parks on its source's oplog (woken by every append) or until the
next buffered entry is ready; every state change of the set wakes it
(`ReplicaSet.notify`).  A killed or partitioned member fetches nothing; an arbiter has no task.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import trio

from mongosim.shardsim.initial_sync import initial_sync
from mongosim.shardsim.replica_set import PRIMARY, REMOVED, ROLLBACK, SECONDARY, optime
from mongosim.shardsim.rollback import rollback

if TYPE_CHECKING:
    from mongosim.shardsim.replica_set import Member, ReplicaSet


def keeps_requested_source(rs: "ReplicaSet", m: "Member", src: "Member") -> bool:
    """Whether `m` goes on syncing from the member replSetSyncFrom named (shardsim/sync_from.py), as
    the server's fetcher keeps a source (shouldChangeSyncSource): reachable, a primary or secondary,
    holding `m`'s newest entry (not behind it, not diverged), and the primary, or ahead of `m`, or
    with a sync source of its own that is not `m`."""
    if src.state not in (PRIMARY, SECONDARY) or src.arbiter or not rs.can_talk(m, src):
        return False
    if not m.on_history_of(src):
        return False
    if src.state == PRIMARY:
        return True
    if src.sync_source is m:
        return False
    return src.sync_source is not None or optime(src) > optime(m)


def sync_source(rs: "ReplicaSet", m: "Member") -> "Member | None":
    """The member replSetSyncFrom named while `m` keeps it (`keeps_requested_source`); else the
    primary, when `m` can reach it; otherwise (chaining, allowed by default) the reachable
    secondary furthest ahead of `m` on the same history: with no primary, a lagging member catches
    up from another secondary, so it can win the next election (the one ahead of it may not stand,
    e.g. frozen by a step-down)."""
    if not m.alive or m.arbiter or m.state in (PRIMARY, ROLLBACK, REMOVED):
        m.sync_from = None  # (a request ends with the member's secondary life: elected, killed, ...)
        return None
    if not m.replicating:
        return None
    wanted = m.sync_from
    if wanted is not None:
        if keeps_requested_source(rs, m, wanted):
            return wanted
        m.sync_from = None
    p = rs.primary
    if p is not None and p is not m and rs.can_talk(p, m):
        return p
    if p is not None:
        return None  # (a primary it cannot reach: it waits, as before, rather than chain around it)
    mine = optime(m)
    ahead = [o for o in rs.members if o is not m and o.alive and o.state == SECONDARY and rs.can_talk(o, m)
             and optime(o) > mine and m.on_history_of(o)]
    return max(ahead, key=lambda o: (optime(o), -o.id)) if ahead else None


def fetch(m: "Member", src: "Member") -> int:
    """Copy the source's entries after the last one fetched into the buffer (one slice of its
    oplog's columns); how many."""
    oplog = src.node.oplog
    pos = oplog.position_after(m.fetched_key)
    end = oplog.end
    if pos >= end:
        return 0
    keys, ops, nss, raws = oplog.columns(pos, end)
    m.buffer.append((trio.current_time() + m.lag, keys, ops, nss, raws))
    m.fetched_key = keys[-1]
    src.committed.mark()  # the source is between writes: its data is its oplog applied
    return end - pos


def step(rs: "ReplicaSet", m: "Member") -> float:
    """One round of replication; returns when to look again at the latest (inf: when woken)."""
    src = sync_source(rs, m)
    if src is not m.sync_source:
        m.sync_source = src
        m.buffer.clear()  # fetched entries not yet applied are fetched again from the new source
        m.fetched_key = m.last_key
    if src is None:
        return math.inf
    if not m.on_history_of(src):
        oplog = src.node.oplog
        if oplog.start > 0 and m.last_key < oplog.first_key:
            initial_sync(m, src)  # too stale: the source no longer holds where this member stands
        else:
            rollback(rs, m, src)
        m.sync_source = src
        return 0.0
    fetch(m, src)
    if m.state == SECONDARY and m.apply_buffered(trio.current_time()):
        m.committed.mark()
        rs.progress()
    return m.buffer[0][0] if m.buffer else math.inf


async def run_member_replication(rs: "ReplicaSet", m: "Member") -> None:
    """The member's replication task, for the life of the set."""
    while m in rs.members:
        deadline = step(rs, m)
        if deadline <= trio.current_time():
            await trio.lowlevel.checkpoint()
            continue
        src = m.sync_source
        with trio.move_on_at(deadline):  # (until the source appends, the set changes, or the deadline)
            if src is None:
                await m.wakeup.park()
            else:
                await src.node.oplog.wait_for_change()


def start_replication(rs: "ReplicaSet", m: "Member") -> None:
    """Run `m`'s replication task in the set's nursery (sets of several members)."""
    if rs.nursery is not None and not m.arbiter and not getattr(m, "_replicating_task", False):
        m._replicating_task = True
        rs.nursery.start_soon(run_member_replication, rs, m, name=f"replication-{m.host}")
