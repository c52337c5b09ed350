"""A replica set: its members, who is primary, and the majority commit point.

Every shard and the config server is a replica set of one or more members;
each member is a `Node` with its own data and oplog.  One member is primary
(it takes the writes); the others are secondaries that copy its oplog
(`shardsim.replication`) and apply it (`shardsim.oplog_applier`).  Elections,
step-downs and freezes are the topology coordinator's
(`shardsim.topology_coordinator`).

The majority commit point is the newest optime a majority of the voting
members hold: the primary counts each member whose newest entry is on its own
history (same ts, same term), its own newest entry included, and takes the
majority-th highest.  As in Raft, the point moves only onto entries of the
primary's own term (its "new primary" entry comes first).  Each member then
sees as committed what it holds up to the commit point it knows
(`Oplog.committed_end`): change streams read only that far, readConcern
majority reads its committed snapshot (`shardsim.committed_snapshot`), and
w: "majority" waits for it (`shardsim.write_concern`).

Arbiters (`arbiterOnly: true`) hold no data and no oplog: they vote in
elections and are never electable.  Two majorities follow (the server's
ReplSetConfig::_calculateMajorities): `majority` (majorityVoteCount) counts
every voter, arbiters included, and is what an election or a primary's hold
on its office needs; `write_majority` (writeMajorityCount) is the smaller of
that and the number of voting data-bearing members, and is how many of those
must hold an entry for the commit point to reach it.  In a PSA set (primary,
secondary, arbiter) with the secondary down, the primary keeps its office
(the arbiter's vote) while the commit point stops: change streams show
nothing newer and w: "majority" waits, while w: 1 writes succeed — the writes
a later rollback may remove.  An arbiter learns the commit point from the
primary's heartbeats and takes it for its own optime (it has nothing else).

A one-member set keeps none of this: its writes are committed as they are
made, with no task, no history and no visibility limit (the fast default).

Connectivity: a member is *alive* unless killed, and *partitioned* when cut
off from the other members (clients and routers still reach it).  Two
members talk when both are alive and neither is partitioned.

Everything that changes the set's state calls `notify()`: each member's
`topologyVersion` counter moves (streaming `hello` waiters wake), waiters for
write concern re-check, replication and the coordinator look again.
"""

from __future__ import annotations

import bisect
from collections import deque
from typing import TYPE_CHECKING, Any, Callable

import trio
from bson import Int64, ObjectId

from mongosim.shardsim.committed_snapshot import CommittedSnapshot
from mongosim.shardsim.oplog_applier import OplogApplier

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

PRIMARY, SECONDARY, STARTUP2, RECOVERING, ARBITER, ROLLBACK, DOWN, REMOVED = (
    "PRIMARY", "SECONDARY", "STARTUP2", "RECOVERING", "ARBITER", "ROLLBACK", "DOWN", "REMOVED")
STATE_CODES = {"STARTUP": 0, PRIMARY: 1, SECONDARY: 2, RECOVERING: 3, STARTUP2: 5, "UNKNOWN": 6, ARBITER: 7,
               DOWN: 8, ROLLBACK: 9, REMOVED: 10}

ELECTION_TIMEOUT_S = 10.0  # electionTimeoutMillis
HEARTBEAT_INTERVAL_S = 2.0  # heartbeatIntervalMillis
CATCH_UP_PERIOD_S = 10.0  # replSetStepDown's secondaryCatchUpPeriodSecs
STEP_DOWN_S = 60.0  # replSetStepDown's stepDownSecs
TIME_EPSILON = 1e-6  # a deadline reached on a MockClock may read a hair early (float sums)


def election_id(term: int) -> ObjectId:
    """The server's electionId: 0x7fffffff then the term as 8 big-endian bytes."""
    return ObjectId(b"\x7f\xff\xff\xff" + int(term).to_bytes(8, "big"))


class Member:
    """One member of a replica set: its node, its configuration and its replication state."""

    def __init__(self, rs: "ReplicaSet", member_id: int, node: "Node", host: str, *,
                 priority: float | None = None, votes: int = 1, arbiter: bool = False) -> None:
        self.rs = rs
        self.id = member_id
        self.node = node
        self.host = host
        self.arbiter = arbiter  # arbiterOnly: votes, holds no data, never electable
        self.priority = (0.0 if arbiter else 1.0) if priority is None else priority
        self.votes = votes
        self.hidden = False
        self.secondary_delay = 0  # secondaryDelaySecs in the config (reported, not applied)
        self.tags: dict[str, str] = {}  # members[n].tags: what custom write concern modes count
        self.state = ARBITER if arbiter else SECONDARY
        self.alive = True
        self.partitioned = False
        self.replicating = True  # False: the stopReplProducer failpoint
        self.lag = 0.0  # seconds between an entry's fetch and its application
        self.frozen_until = 0.0  # trio time before which it does not stand for election
        self.election_term = 0  # the term it was elected in (while primary)
        self.election_key = 0  # ts key of its "new primary" entry
        self.known_commit_key = 0  # the commit point it has heard of
        self.known_commit_term = 0  # (its term: an arbiter's optime, which it has no oplog to read)
        self.term_starts: list[tuple[int, int]] = []  # (first ts key, term) of each term in its oplog
        # fetched, not applied: (ready at, keys, ops, nss, raws), the source's oplog columns of one fetch
        self.buffer: deque[tuple[float, Any, list[str], list[str], list[bytes]]] = deque()
        self.fetched_key = 0
        self.sync_source: Member | None = None
        self.sync_from: Member | None = None  # the member replSetSyncFrom named (shardsim/sync_from.py)
        self.ops: dict[trio.CancelScope, str] = {}  # commands running on it -> "read" | "write"
        self.writes_blocked: trio.Event | None = None  # set while a step-down waits for a secondary
        self.process_id = ObjectId()
        self.topology_counter = 0
        self.hello_changed = trio.Event()
        self.wakeup = trio.lowlevel.ParkingLot()  # its replication task, when it has no source
        self.started_at = trio.current_time()
        self.last_heartbeat = trio.current_time()
        self.lost_majority_since: float | None = None  # (primary) cannot see a majority since then
        self.applier = OplogApplier(node)
        self.committed = CommittedSnapshot(node)
        # set by the cluster: what happens to the member's wire endpoint when it dies / restarts
        self.on_kill: Callable[[], None] | None = None
        self.on_restart: Callable[[], None] | None = None
        self.on_close_connections: Callable[[], None] | None = None
        node.member = self
        node.replica_set = rs

    def __repr__(self) -> str:
        return f"<Member {self.rs.name}#{self.id} {self.host} {self.state}>"

    # -- the oplog's history -------------------------------------------------------------
    @property
    def last_key(self) -> int:
        return self.node.oplog.last_key

    def term_at(self, key: int) -> int:
        i = bisect.bisect_right(self.term_starts, (key, 1 << 62))
        return self.term_starts[i - 1][1] if i else 1

    def note_term(self, key: int, term: int) -> None:
        """An entry of `term` at `key` joined the oplog (a new term's first entry is recorded)."""
        if not self.term_starts or self.term_starts[-1][1] != term:
            self.term_starts.append((key, term))

    def forget_terms_after(self, key: int) -> None:
        while self.term_starts and self.term_starts[-1][0] > key:
            self.term_starts.pop()

    def has_entry(self, key: int, term: int) -> bool:
        """Whether this member's oplog holds the entry (key, term)."""
        oplog = self.node.oplog
        if key == 0:
            return True
        pos = oplog.position_at_or_after(key)
        return pos < oplog.end and oplog.key_at(pos) == key and self.term_at(key) == term

    def on_history_of(self, other: "Member") -> bool:
        """Whether this member's newest entry is in `other`'s oplog (it has not diverged)."""
        key = self.last_key
        return other.has_entry(key, self.term_at(key))

    # -- state ---------------------------------------------------------------------------
    @property
    def is_primary(self) -> bool:
        return self.state == PRIMARY

    @property
    def data_bearing(self) -> bool:
        return not self.arbiter

    @property
    def electable(self) -> bool:
        return self.alive and not self.arbiter and self.priority > 0 and self.votes > 0 and not self.hidden and \
            self.state not in (ROLLBACK, REMOVED) and trio.current_time() + TIME_EPSILON >= self.frozen_until

    def interrupt(self, kinds: tuple[str, ...]) -> None:
        """Cancel the commands of these kinds running on this member."""
        for scope, kind in list(self.ops.items()):
            if kind in kinds:
                scope.cancel()

    def apply_buffered(self, until: float = float("inf")) -> int:
        """Apply fetched entries whose time has come; how many."""
        n = 0
        buf = self.buffer
        applier = self.applier
        while buf and buf[0][0] <= until:
            _ready, keys, ops, nss, raws = buf.popleft()
            applier.apply_batch(keys, ops, nss, raws, self.note_term)
            n += len(raws)
        if n:
            self.rs.apply_metadata(self)
        return n



def optime(m: Member) -> tuple[int, int]:
    """A member's optime: (term, timestamp key) of its newest entry — what elections compare.  An
    arbiter's is the commit point it heard of (the server's arbiter sets its lastApplied to it)."""
    if m.arbiter:
        return (m.known_commit_term, m.known_commit_key) if m.known_commit_key else (0, 0)
    key = m.last_key
    return (m.term_at(key), key)

class ReplicaSet:
    def __init__(self, name: str, *, election_timeout: float = ELECTION_TIMEOUT_S,
                 heartbeat_interval: float = HEARTBEAT_INTERVAL_S) -> None:
        self.name = name
        self.members: list[Member] = []
        self.term = 1
        self.commit_key = 0
        self.config_version = 1
        self.replica_set_id = ObjectId()
        self.election_timeout = election_timeout
        self.heartbeat_interval = heartbeat_interval
        self.changed = trio.lowlevel.ParkingLot()  # progress, commit point, state: write concern waiters
        self.wake = trio.lowlevel.ParkingLot()  # the topology coordinator
        self.nursery: trio.Nursery | None = None
        self.started = False  # background tasks running (sets of several members)
        self.no_primary_since: float | None = None  # a majority has had no primary since then
        self.rollbacks: list[dict] = []  # what each rollback undid (tests, demos)
        self.elections: list[dict] = []
        self.metadata_log: list[tuple[int, str, dict]] = []  # (ts key, ns, fields) not in the oplog
        self.listeners: list[Callable[[], None]] = []  # told of every state change
        self.instant_hwm = False  # a primary promises its cluster time at once (--instant-hwm)
        self.handoff = False  # a stepped-down primary asked for an election now
        self.takeover_since: float | None = None  # a higher-priority member caught up since then
        self.member_factory: Callable[..., Member] | None = None  # replSetReconfig adding a member
        self.write_concern_modes: dict[str, dict[str, int]] = {}  # settings.getLastErrorModes
        self.in_sharded_cluster = False  # a shard's set (its defaults are the cluster's)
        self.is_config = False  # the config server's set (no arbiters)
        self.defaults: Any = None  # its shardsim.rw_concern_defaults.RWConcernDefaults (set by the cluster)
        self.implicit_default_majority = True  # (kept by _recount)
        self.commits_alone = False

    # -- membership -------------------------------------------------------------------------
    def add_member(self, node: "Node", host: str, member_id: int | None = None, **kw: Any) -> Member:
        mid = max((m.id for m in self.members), default=-1) + 1 if member_id is None else member_id
        m = Member(self, mid, node, host, **kw)
        self.members.append(m)
        self._recount()
        return m

    def initiate(self) -> Member:
        """The first member becomes primary in term 1 (its "initiating set" entry starts history)."""
        first = self.members[0]
        first.state = PRIMARY
        first.election_term = self.term
        first.election_key = first.last_key
        first.note_term(first.last_key, self.term)
        self.commit_key = first.last_key
        return first

    @property
    def multi(self) -> bool:
        return len(self.members) > 1

    @property
    def primary(self) -> Member | None:
        """The member that claims primary in the highest term (a deposed primary cut off from
        the others may still claim it until it notices; drivers and routers pick the newer)."""
        best = None
        for m in self.members:
            if m.state == PRIMARY and m.alive and (best is None or m.election_term > best.election_term):
                best = m
        return best

    def member(self, member_id: int) -> Member:
        for m in self.members:
            if m.id == member_id:
                return m
        raise KeyError(member_id)

    @property
    def voting(self) -> list[Member]:
        return [m for m in self.members if m.votes > 0 and m.state != REMOVED]

    @property
    def majority(self) -> int:
        """majorityVoteCount: what an election, or a primary keeping its office, needs (arbiters vote)."""
        return len(self.voting) // 2 + 1

    @property
    def writable_voting(self) -> list[Member]:
        return [m for m in self.voting if not m.arbiter]

    @property
    def write_majority(self) -> int:
        """writeMajorityCount: how many voting data-bearing members hold the commit point."""
        return min(self.majority, len(self.writable_voting))

    @property
    def arbiters(self) -> list[Member]:
        return [m for m in self.members if m.arbiter and m.state != REMOVED]

    @property
    def data_bearing(self) -> list[Member]:
        return [m for m in self.members if not m.arbiter and m.state != REMOVED]

    def _recount(self) -> None:
        """The config changed (members, votes, arbiters): what each write reads, counted once.

        implicit_default_majority: whether the implicit default write concern is w: "majority"
        (ReplSetConfig::isImplicitDefaultWriteConcernMajority) — with arbiters, only while the voting
        data-bearing members outnumber the voting majority; otherwise w: 1, as for PSA.
        commits_alone: the primary's own writes reach the write majority (primary + arbiters)."""
        writable = len(self.writable_voting)
        self.implicit_default_majority = writable == len(self.voting) or writable > self.majority
        self.commits_alone = self.multi and self.write_majority == 1

    @staticmethod
    def can_talk(a: Member, b: Member) -> bool:
        if a is b:
            return a.alive
        return a.alive and b.alive and not a.partitioned and not b.partitioned

    def sees_majority(self, m: Member) -> bool:
        return sum(1 for v in self.voting if self.can_talk(m, v)) >= self.majority

    # -- notifications ------------------------------------------------------------------------
    def notify(self) -> None:
        """The set's state changed: topology versions move, every waiter looks again."""
        self._recount()
        for m in self.members:
            m.node.commits_alone = self.commits_alone and m.state == PRIMARY
            m.topology_counter += 1
            ev, m.hello_changed = m.hello_changed, trio.Event()
            ev.set()
            m.node.oplog.wake_readers()  # replication parked on its source's oplog
            m.node.progress.unpark_all()
            m.wakeup.unpark_all()
        self.changed.unpark_all()
        self.wake.unpark_all()
        for listener in self.listeners:
            listener()

    # -- the commit point ---------------------------------------------------------------------
    def progress(self) -> None:
        """A member applied entries (or the primary wrote some): move the commit point."""
        p = self.primary
        if p is None or not self.multi:
            if self.changed:  # (ParkingLot.__len__: anyone parked; most writes find no one)
                self.changed.unpark_all()
            if p is None:
                self.wake.unpark_all()  # a member caught up: it may now win an election
            return
        keys = []
        for m in self.writable_voting:
            if m is p:
                keys.append(p.last_key)
            elif m.on_history_of(p):
                keys.append(m.last_key)
        keys.sort(reverse=True)
        need = self.write_majority
        if len(keys) >= need:
            k = keys[need - 1]
            if k >= p.election_key and k > self.commit_key:
                self.commit_key = k
        self.publish_commit_point()

    def publish_commit_point(self) -> None:
        """Each member learns the commit point (if it can hear the primary) and sees as
        committed what it holds up to it."""
        p = self.primary
        for m in self.members:
            if m.arbiter:  # (heartbeats: it holds no history to be on)
                if p is not None and self.can_talk(p, m) and self.commit_key > m.known_commit_key:
                    m.known_commit_key = self.commit_key
                    m.known_commit_term = p.term_at(self.commit_key)
                continue
            if p is not None and (m is p or (self.can_talk(p, m) and m.on_history_of(p))):
                if self.commit_key > m.known_commit_key:
                    m.known_commit_key = self.commit_key
            self.expose(m)
        if self.changed:
            self.changed.unpark_all()

    def expose(self, m: Member) -> None:
        """Move `m`'s majority visibility (its oplog's committed_end and committed snapshot)."""
        if not self.multi or m.arbiter:
            return
        oplog = m.node.oplog
        visible = min(m.known_commit_key, oplog.last_key)
        pos = oplog.position_after(visible)
        if oplog.committed_end is None or pos != oplog.committed_end:
            oplog.set_committed_end(pos)
            if m.node.progress:
                m.node.progress.unpark_all()
        m.committed.advance(visible)

    # -- metadata outside the oplog -------------------------------------------------------
    def note_metadata(self, ns: str, fields: dict) -> None:
        """Sharding metadata the primary changed without an oplog entry (the server writes it to
        replicated config.cache collections): secondaries take it once they reach this point."""
        p = self.primary
        if p is not None and self.multi:
            self.metadata_log.append((p.last_key, ns, fields))

    def apply_metadata(self, m: Member) -> None:
        log = self.metadata_log
        if not log:
            return
        done = getattr(m, "_metadata_done", 0)
        while done < len(log) and log[done][0] <= m.last_key:
            _key, ns, fields = log[done]
            db, _, name = ns.partition(".")
            coll = m.node.catalog.collection(db, name)
            if coll is not None:
                if "uuid" in fields:
                    coll.uuid = fields["uuid"]
                coll.shard_key = dict(fields["shard_key"]) if fields.get("shard_key") else None
                for spec in fields.get("indexes", ()):
                    if coll.index(spec["name"]) is None:
                        coll.add_index(dict(spec))
            done += 1
        m._metadata_done = done

    # -- reporting --------------------------------------------------------------------------
    def _listed(self) -> list[Member]:
        """The members `hello` lists (not hidden, not delayed)."""
        return [m for m in self.members if not m.hidden and not m.secondary_delay and m.state != REMOVED]

    def hosts(self) -> list[str]:
        return [m.host for m in self._listed() if not m.arbiter and m.priority > 0]

    def passives(self) -> list[str]:
        return [m.host for m in self._listed() if not m.arbiter and m.priority <= 0]

    def arbiter_hosts(self) -> list[str]:
        return [m.host for m in self._listed() if m.arbiter]

    def primary_seen_by(self, m: Member) -> Member | None:
        """The primary `m` knows of: itself, or the newest primary it can talk to."""
        if m.state == PRIMARY:
            return m
        p = self.primary
        return p if p is not None and self.can_talk(p, m) else None

    def term_int64(self) -> Int64:
        return Int64(self.term)

    def connection_string(self) -> str:
        """The set's connection string: its visible data-bearing members (ReplSetConfig's, no
        arbiters, no hidden members)."""
        return f"{self.name}/" + ",".join(m.host for m in self.members
                                           if m.state != REMOVED and not m.arbiter and not m.hidden)
