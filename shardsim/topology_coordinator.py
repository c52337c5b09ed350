"""The topology coordinator: elections, step-downs, freezes, and the member faults that cause them.

The rules a user of a real replica set would recognise (the server's
TopologyCoordinator, with its default settings):

- A primary that cannot see a majority of the voting members steps down once
  `electionTimeoutMillis` has passed without one (it may take writes, w: 1,
  until then: those are the writes a rollback later removes).
- The members that can see each other, if they are a majority and have no
  primary among them, elect one `electionTimeoutMillis` after they lost it —
  at once after a `replSetStepDown` (election handoff, as the server's
  stepping-down primary asks a caught-up secondary to stand) or when the set
  has a single voting member.
- The candidate: among the electable members (alive, not an arbiter,
  priority > 0, voting, not frozen), the one with the newest optime (term, then ts), then the
  highest priority, then the lowest `_id`; it wins if a majority of voters
  can see it and none of them has a newer optime (a voter never votes for a
  candidate behind it; an arbiter's optime is the commit point it heard of).
  Arbiters count in every majority of votes: a primary that sees the arbiter
  of a PSA set keeps its office while the secondary is down.  It applies what it had fetched (drain), takes a new
  term, and writes the `{msg: "new primary"}` noop in it; its `electionId`
  is the term.
- Priority takeover: a caught-up member of higher priority than the primary
  takes over after a heartbeat interval.
- Step-down (`replSetStepDown`): the primary waits up to
  `secondaryCatchUpPeriodSecs` for an electable secondary to catch up
  (ExceededTimeLimit otherwise, unless `force`), then steps down and may not
  stand again for `stepDownSecs`.  Stepping down interrupts the write
  operations running on it (InterruptedDueToReplStateChange), fails the
  writes waiting for write concern (PrimarySteppedDown), aborts open
  transactions and hands prepared ones to its applier; connections stay open
  and cursors keep working on the new secondary, as on the server since 4.2.

Member faults: `kill` (the process dies: connections close, commands in
flight fail as a network error, cursors and open transactions are gone;
its data survives), `restart`, `partition` (cut off from the other members;
clients still reach it), replication stopped or lagging (`shardsim.replication`).

Times are trio's, so a whole failover runs on a MockClock.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import trio
from bson import Int64, ObjectId

from mongosim.oplog import entry as E
from mongosim.oplog.clock import ts_key
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.reconstruct_prepared import hand_back, reconstruct
from mongosim.shardsim.replica_set import (
    ARBITER,
    CATCH_UP_PERIOD_S,
    DOWN,
    PRIMARY,
    REMOVED,
    SECONDARY,
    STEP_DOWN_S,
    TIME_EPSILON,
    optime,
)
from mongosim.shardsim.replication import start_replication
from mongosim.shardsim.rollback import end_operations

if TYPE_CHECKING:
    from mongosim.shardsim.replica_set import Member, ReplicaSet


# -- elections --------------------------------------------------------------------------------
def candidate(rs: "ReplicaSet", group: list["Member"]) -> "Member | None":
    """The member `group` would elect now, or None (nobody electable, or no majority of votes)."""
    electable = [m for m in group if m.electable]
    if not electable:
        return None
    best = max(electable, key=lambda m: (optime(m), m.priority, -m.id))
    votes = sum(1 for v in rs.voting if rs.can_talk(best, v) and optime(v) <= optime(best))
    return best if votes >= rs.majority else None


def elect(rs: "ReplicaSet", m: "Member", reason: str) -> None:
    """`m` becomes primary in a new term."""
    m.apply_buffered()  # drain what it had fetched
    rs.term += 1
    for other in rs.members:
        if other is not m and other.state == PRIMARY and rs.can_talk(m, other):
            demote(rs, other, 0.0)  # an old primary that hears of the new term steps down
    node = m.node
    node.clock.advance(max(o.node.clock.key for o in rs.members if rs.can_talk(m, o)))
    node.term = Int64(rs.term)
    m.state = PRIMARY
    m.election_term = rs.term
    m.frozen_until = 0.0
    ts = node.log(E.noop_op("new primary"))
    m.election_key = ts_key(ts)
    m.note_term(m.election_key, rs.term)
    for o in rs.members:  # filtering metadata, routing and tracing follow the primary
        if node.owns is None and o.node.owns is not None:
            node.owns = o.node.owns
        if node.filtering is None and o.node.filtering is not None:
            node.filtering = o.node.filtering
        node.joined_key = max(node.joined_key, o.node.joined_key)
        if node.tracer is None and o.node.tracer is not None:
            node.tracer = o.node.tracer
    node.instant_hwm = rs.instant_hwm
    reconstruct(m)
    rs.no_primary_since = None
    rs.handoff = False
    rs.elections.append({"term": rs.term, "member": m.host, "reason": reason, "at": trio.current_time(),
                         "electionTime": ts})
    m.committed.mark()
    rs.notify()
    rs.progress()


def demote(rs: "ReplicaSet", m: "Member", freeze_s: float) -> None:
    """`m` is primary no more (see the module docstring for what that interrupts)."""
    if m.state != PRIMARY:
        return
    m.state = SECONDARY
    m.node.instant_hwm = False
    m.frozen_until = trio.current_time() + freeze_s
    m.interrupt(("write",))
    hand_back(m)
    m.node.txn_released.unpark_all()
    m.lost_majority_since = None
    rs.notify()


async def step_down(rs: "ReplicaSet", m: "Member", step_down_secs: float = STEP_DOWN_S,
                    catch_up_secs: float = CATCH_UP_PERIOD_S, force: bool = False) -> None:
    """replSetStepDown on `m`."""
    if m.state != PRIMARY:
        raise MongoError("NotWritablePrimary", "not primary so can't step down")
    if step_down_secs < catch_up_secs:
        raise MongoError("BadValue", "stepdown period must be longer than secondaryCatchUpPeriodSecs")
    released = m.writes_blocked = trio.Event()  # writes wait while the secondaries catch up
    try:
        with trio.move_on_after(max(catch_up_secs, 0.0)):
            while not caught_up_secondary(rs, m):
                await rs.changed.park()
                if m.state != PRIMARY:
                    raise MongoError("NotWritablePrimary", "not primary so can't step down")
        if not caught_up_secondary(rs, m) and not force:
            raise MongoError("ExceededTimeLimit", "No electable secondaries caught up as of "
                             f"{trio.current_time():.3f}. Please use the replSetStepDown command with the "
                             "argument {force: true} to force node to step down.")
        demote(rs, m, step_down_secs)
    finally:
        m.writes_blocked = None
        released.set()
    rs.handoff = True
    rs.no_primary_since = trio.current_time()
    rs.notify()


def caught_up_secondary(rs: "ReplicaSet", m: "Member") -> bool:
    return any(o is not m and o.electable and rs.can_talk(m, o) and o.last_key >= m.last_key and o.on_history_of(m)
               for o in rs.members)


def freeze(rs: "ReplicaSet", m: "Member", seconds: float) -> dict:
    """replSetFreeze: do not stand for election for `seconds` (0 unfreezes)."""
    if m.state == PRIMARY:
        raise MongoError("NotSecondary", "cannot freeze node when primary or running for election. state: Primary")
    m.frozen_until = trio.current_time() + seconds if seconds > 0 else 0.0
    rs.notify()
    return {"info": "unfreezing"} if seconds <= 0 else {}


# -- the coordinator's loop -------------------------------------------------------------------
def evaluate(rs: "ReplicaSet") -> float:
    """Act on the set's state now; when to look again (inf: when woken)."""
    now = trio.current_time() + TIME_EPSILON
    nxt = math.inf
    for m in rs.members:  # a primary without a majority steps down after the election timeout
        if m.state == PRIMARY and m.alive:
            if rs.sees_majority(m):
                m.lost_majority_since = None
            else:
                since = getattr(m, "lost_majority_since", None)
                if since is None:
                    m.lost_majority_since = since = now
                if now >= since + rs.election_timeout:
                    demote(rs, m, 0.0)
                else:
                    nxt = min(nxt, since + rs.election_timeout)
    group = [m for m in rs.members if m.alive and not m.partitioned and m.state not in (REMOVED,)]
    if sum(1 for m in group if m.votes > 0) < rs.majority:
        return nxt
    if not any(m.state == PRIMARY for m in group):
        if rs.no_primary_since is None:
            rs.no_primary_since = now
        at = now if rs.handoff or len(rs.voting) == 1 else rs.no_primary_since + rs.election_timeout
        if now >= at:
            c = candidate(rs, group)
            if c is not None:
                elect(rs, c, "stepUpRequestSkipDryRun" if rs.handoff else "electionTimeout")
                return 0.0
            frozen = [m.frozen_until for m in group if m.frozen_until > now]
            return min([nxt, *frozen]) if frozen else nxt
        return min(nxt, at)
    rs.no_primary_since = None
    p = next(m for m in group if m.state == PRIMARY)
    better = [m for m in group if m.priority > p.priority and m.electable]
    higher = [m for m in better if m.last_key >= p.last_key and m.on_history_of(p)]
    if better and not higher:  # not caught up yet: look again at the next heartbeat
        rs.takeover_since = None
        return min(nxt, now + rs.heartbeat_interval)
    if higher:  # priority takeover
        since = getattr(rs, "takeover_since", None)
        if since is None:
            rs.takeover_since = since = now
        if now >= since + rs.heartbeat_interval:
            rs.takeover_since = None
            demote(rs, p, 0.0)
            elect(rs, max(higher, key=lambda m: (m.priority, -m.id)), "priorityTakeover")
            return 0.0
        return min(nxt, since + rs.heartbeat_interval)
    rs.takeover_since = None
    return nxt


async def run_coordinator(rs: "ReplicaSet") -> None:
    while True:
        deadline = evaluate(rs)
        if deadline <= trio.current_time() + TIME_EPSILON:
            await trio.lowlevel.checkpoint()
            continue
        with trio.move_on_at(deadline):
            await rs.wake.park()


# -- member faults --------------------------------------------------------------------------
def kill(rs: "ReplicaSet", m: "Member") -> None:
    """The member's process dies (its data survives for a restart)."""
    if not m.alive:
        return
    was_primary = m.state == PRIMARY
    m.alive = False
    if m.on_kill is not None:
        m.on_kill()
    end_operations(m, MongoError("InterruptedAtShutdown", "interrupted at shutdown"), close=False)
    m.state = DOWN
    m.node.instant_hwm = False
    m.buffer.clear()
    hand_back(m)
    if was_primary:
        rs.no_primary_since = trio.current_time()
    rs.notify()


def restart(rs: "ReplicaSet", m: "Member") -> None:
    """The member starts again from its data: a secondary until elected, with no snapshot
    history, a new process id (topologyVersion) and its listener back."""
    if m.alive:
        kill(rs, m)
    m.alive = True
    m.state = ARBITER if m.arbiter else SECONDARY
    m.process_id = ObjectId()
    m.started_at = trio.current_time()
    m.node.catalog.snapshots.expire(float("inf"))
    m.fetched_key = m.last_key
    m.sync_source = None
    m.sync_from = None  # (a replSetSyncFrom request does not outlive the process)
    if m.on_restart is not None:
        m.on_restart()
    rs.notify()


def partition(rs: "ReplicaSet", m: "Member", cut: bool = True) -> None:
    """Cut `m` off from the other members (or heal it)."""
    m.partitioned = cut
    rs.notify()
    rs.progress()


def set_lag(rs: "ReplicaSet", m: "Member", seconds: float) -> None:
    m.lag = max(float(seconds), 0.0)
    rs.notify()


STOP_REPL_PRODUCER = "stopReplProducer"


def set_replicating(rs: "ReplicaSet", m: "Member", on: bool) -> None:
    """The stopReplProducer failpoint (configureFailPoint on `m`, or mongosim's faults): `m` stops (or
    resumes) fetching from its source."""
    m.replicating = on
    rs.notify()


def start(rs: "ReplicaSet", nursery: trio.Nursery) -> None:
    """Run the set's coordinator and its members' replication (several members only)."""
    rs.nursery = nursery
    if not rs.started:
        rs.started = True
        nursery.start_soon(run_coordinator, rs, name=f"topology-coordinator-{rs.name}")
    if rs.multi:
        for m in rs.members:
            if m.arbiter:
                continue  # no data: no snapshots, no replication
            if not m.committed.active:
                m.committed.start()
            start_replication(rs, m)
        rs.publish_commit_point()  # from now on readers see only what a majority holds
        rs.notify()
