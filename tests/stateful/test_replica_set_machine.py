"""The cluster machine (test_cluster_machine.py) with every shard a three-member replica set, and
rules for what replica sets do: step-downs, killed and restarted members, lag, replication stopped
under a w: "majority" write, and a primary cut off from the others taking a w: 1 write that is
rolled back when it rejoins.

On top of the machine's invariants (each watcher holds exactly the committed writes of its
namespace, in order, resumable from any token it saw):

- no watcher ever holds an event of a write that was rolled back;
- the stream equals the majority-committed history: every event a watcher received is an entry of
  some shard's oplog that a majority holds (its current primary's, at or before the commit point),
  and a write held back by stopped replication appears only once replication resumes.
"""

from __future__ import annotations

import os

import trio
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule

from mongosim.oplog.clock import ts_key
from mongosim.oplog.errors import MongoError
from mongosim.testing import AsyncClient, CommandError
from tests.stateful.test_cluster_machine import ClusterMachine, GossipingClient

SHARDS = st.sampled_from(["shard00", "shard01", "shard02"])


class ReplicaSetClusterMachine(ClusterMachine):
    def __init__(self) -> None:
        super().__init__()
        self.doomed: set[str] = set()  # _ids of w: 1 writes that were rolled back
        self.held = 0

    def cluster_options(self) -> dict:
        return {**super().cluster_options(), "members": 3}

    # -- helpers ----------------------------------------------------------------------------
    def rs(self, shard: str):
        return self.core.replica_sets[shard]

    async def _until(self, ready, limit: float = 120.0) -> None:
        t0 = trio.current_time()
        while not ready():
            assert trio.current_time() - t0 < limit, "the replica set did not settle"
            await trio.sleep(0.1)

    async def _pump_watchers(self, held: set[str]) -> None:
        """A few getMores on every watcher: none may show a write past the commit point (`held`)."""
        for w in self.watchers:
            for _ in range(3):
                if w.ended or w.stream.closed:
                    break
                try:
                    ev = await w.stream.try_next()
                except CommandError as err:
                    if not w.lost_to_a_removal(err):
                        raise
                    w.ended = w.lost = True
                    break
                if ev is not None:
                    w.received.append(ev)
                    w.tokens.append(ev["_id"]["_data"])
                    assert ev.get("documentKey", {}).get("_id") not in held, "an event past the commit point"

    def _primary_client(self, shard: str) -> AsyncClient:
        """A connection straight to the shard's primary that gossips the cluster time with the
        routers' (one application's view of time): a stream opened through a router after a direct
        write starts after it, as the model's log says (a router that never heard of the write's
        time would open the stream before it, and show it)."""
        return GossipingClient(self.core.member_frontends[self.rs(shard).primary.host], self.gossip)

    async def _restart(self, shard: str) -> None:
        """A shard restart restarts its primary: wait for one (an election may be under way), then for
        the next."""
        rs = self.rs(shard)
        await self._until(lambda: rs.primary is not None)
        await super()._restart(shard)
        await self._until(lambda: rs.primary is not None)

    # -- elections --------------------------------------------------------------------------
    @rule(shard=SHARDS)
    def step_down(self, shard: str) -> None:
        """replSetStepDown: a caught-up secondary is elected at once (none caught up: nothing happens)."""
        if not self.live(shard) or self.rs(shard).primary is None:
            return

        async def go() -> None:
            try:
                await self.faults.step_down(shard, 5, catch_up=2)
            except MongoError:
                return  # ExceededTimeLimit: every other member is frozen, dead or behind
            await self._until(lambda: self.rs(shard).primary is not None)
            self.restarts += 1  # the new primary has no snapshot history

        self.portal.call(go)

    @rule(shard=SHARDS, which=st.integers(0, 2))
    def kill_member(self, shard: str, which: int) -> None:
        """A member dies (at most one per set: a majority stays); a dead primary is replaced."""
        rs = self.rs(shard)
        if not self.live(shard) or not all(m.alive for m in rs.members) or rs.primary is None:
            return
        was_primary = rs.members[which].state == "PRIMARY"

        async def go() -> None:
            self.faults.kill(shard, which)
            if was_primary:
                await self._until(lambda: rs.primary is not None)
                self.restarts += 1

        self.portal.call(go)

    @rule(shard=SHARDS)
    def restart_members(self, shard: str) -> None:
        rs = self.rs(shard)

        async def go() -> None:
            for m in rs.members:
                if not m.alive:
                    self.faults.restart_member(shard, m.id)
            await trio.sleep(0.5)

        self.portal.call(go)

    @rule(shard=SHARDS, which=st.integers(0, 2), seconds=st.sampled_from([0.0, 0.5, 3.0]))
    def lag(self, shard: str, which: int, seconds: float) -> None:
        m = self.rs(shard).members[which]
        if m.state != "PRIMARY":

            async def go() -> None:  # (on the loop: a new lag wakes the member's replication)
                self.faults.lag(shard, seconds, which)

            self.portal.call(go)

    @precondition(lambda self: self.watchers)
    @rule(shard=SHARDS)
    def replication_stopped_under_a_majority_write(self, shard: str) -> None:
        """With replication stopped, a w: "majority" write times out (WriteConcernTimeout) and no stream
        shows it; once replication resumes it is committed and every cluster stream shows it."""
        rs = self.rs(shard)
        if not self.live(shard) or rs.primary is None or not all(m.alive for m in rs.members):
            return
        self.held += 1
        hid = f"held{self.held}"

        async def go() -> None:
            self.faults.stop_replication(shard)
            reply = await self._primary_client(shard).command(
                "held", {"insert": "c", "documents": [{"_id": hid}], "writeConcern": {"w": "majority", "wtimeout": 300}})
            assert reply["writeConcernError"]["code"] == 64, reply
            await self._pump_watchers({hid})
            self.faults.start_replication(shard)

        self.portal.call(go)
        self.log.append(("held.c", "insert", hid))

    @precondition(lambda self: len(self.doomed) < 3)
    @rule(shard=SHARDS)
    def partitioned_primary_rolls_back(self, shard: str) -> None:
        """The primary is cut off; it takes a w: 1 write; the others elect a new primary; when it
        rejoins it rolls the write back."""
        rs = self.rs(shard)
        if not self.live(shard) or rs.primary is None or not all(m.alive for m in rs.members):
            return
        did = f"doomed{len(self.doomed)}"

        async def go() -> None:
            old = rs.primary
            client = AsyncClient(self.core.member_frontends[old.host])
            rollbacks = len(rs.rollbacks)
            self.faults.partition(shard, old.id)
            reply = await client.command("doomed", {"insert": "c", "documents": [{"_id": did}],
                                                    "writeConcern": {"w": 1}})
            assert reply["ok"] == 1.0 and "writeConcernError" not in reply
            await self._until(lambda: old.state != "PRIMARY" and rs.primary is not None)
            self.faults.heal(shard)
            await self._until(lambda: len(rs.rollbacks) > rollbacks)
            removed = [e for rb in rs.rollbacks[rollbacks:] for e in rb["removed"]]
            assert any(e.get("o", {}).get("_id") == did for e in removed)
            self.restarts += 1

        self.portal.call(go)
        self.doomed.add(did)

    # -- invariants -------------------------------------------------------------------------
    @invariant()
    def no_event_of_a_rolled_back_write(self) -> None:
        for w in self.watchers:
            got = {e.get("documentKey", {}).get("_id") for e in w.received}
            assert not got & self.doomed, f"{w.level} watcher saw a rolled-back write"

    @invariant()
    def every_event_is_majority_committed(self) -> None:
        committed = []
        for rs in self.core.replica_sets.values():
            p = rs.primary
            if p is not None:
                committed.append((p, min(rs.commit_key, p.last_key)))
        for w in self.watchers:
            for e in w.received:
                if e["operationType"] == "invalidate":
                    continue
                key = ts_key(e["clusterTime"])
                assert any(key <= c and (p.node.oplog.find_by_key(key) is not None or key < p.node.oplog.first_key)
                           for p, c in committed), f"{w.level} watcher: {e['operationType']} at {e['clusterTime']} " \
                                                   "is no majority-committed entry"


def machine_settings(share: int) -> settings:
    """The cluster machine's sizes, this machine running 1/`share` of its examples."""
    return settings(
        max_examples=max(1, int(os.environ.get("STATEFUL_EXAMPLES", "200")) // share),
        stateful_step_count=int(os.environ.get("STATEFUL_STEPS", "25")),
        deadline=None,
        # STATEFUL_NO_SHRINK=1: report a failure at once (shrinking this machine can take many minutes)
        phases=[p for p in Phase if p is not Phase.shrink or not os.environ.get("STATEFUL_NO_SHRINK")],
    )


ReplicaSetClusterMachine.TestCase.settings = machine_settings(5)
TestReplicaSetClusterMachine = ReplicaSetClusterMachine.TestCase


class PSAClusterMachine(ReplicaSetClusterMachine):
    """The same machine with every shard primary-secondary-arbiter (`members=2, arbiters=1`).

    The cluster starts with the cluster-wide write concern {w: 1} (the server adds no shard with an
    arbiter before one is set); the machine sets it to w: "majority" through mongos, as a careful
    operator of a PSA cluster does, so that every acknowledged write is committed.  With either
    data-bearing member down nothing commits, so no rule leaves one down: `kill_member` restarts a
    data-bearing member once the set has a primary again (an arbiter stays down until
    `restart_members`).  Transactions across shards cannot prepare on sets with arbiters: the base
    machine's cross-shard transactions and shard-key moves fail, and so are not in its model.

    On top of the invariants above (no rolled-back event; every event majority-committed), the rule
    `secondary_down_holds_the_stream` checks the PSA trap itself: with the secondary down the
    arbiter's vote keeps the primary, a w: 1 write succeeds, a w: "majority" one times out, and no
    stream shows either until the secondary is back."""

    def __init__(self) -> None:
        super().__init__()
        self.portal.call(self.client.admin, {"setDefaultRWConcern": 1, "defaultWriteConcern": {"w": "majority"}})
        self.trapped = 0

    def cluster_options(self) -> dict:
        return {**super().cluster_options(), "members": 2, "arbiters": 1}

    @rule(shard=SHARDS, which=st.integers(0, 2))
    def kill_member(self, shard: str, which: int) -> None:
        rs = self.rs(shard)
        if not self.live(shard) or not all(m.alive for m in rs.members) or rs.primary is None:
            return
        m = rs.members[which]
        was_primary = m.state == "PRIMARY"

        async def go() -> None:
            self.faults.kill(shard, which)
            if m.arbiter:
                return
            if was_primary:  # the secondary is elected with the arbiter's vote
                await self._until(lambda: rs.primary is not None)
                self.restarts += 1
            self.faults.restart_member(shard, which)
            await self._until(lambda: rs.primary is not None)

        self.portal.call(go)

    @precondition(lambda self: self.watchers)
    @rule(shard=SHARDS)
    def secondary_down_holds_the_stream(self, shard: str) -> None:
        rs = self.rs(shard)
        if not self.live(shard) or rs.primary is None or not all(m.alive for m in rs.members):
            return
        self.trapped += 1
        one, majority = f"w1-{self.trapped}", f"majority-{self.trapped}"

        async def go() -> None:
            primary = rs.primary
            secondary = next(m for m in rs.members if m.state == "SECONDARY")
            self.faults.kill(shard, secondary.id)
            client = self._primary_client(shard)
            reply = await client.command("held", {"insert": "c", "documents": [{"_id": one}], "writeConcern": {"w": 1}})
            assert reply["ok"] == 1.0 and "writeConcernError" not in reply, reply
            reply = await client.command("held", {"insert": "c", "documents": [{"_id": majority}],
                                                  "writeConcern": {"w": "majority", "wtimeout": 300}})
            assert reply["writeConcernError"]["code"] == 64, reply
            await trio.sleep(2 * rs.election_timeout)
            assert rs.primary is primary, "the arbiter's vote keeps the primary in office"
            await self._pump_watchers({one, majority})
            self.faults.restart_member(shard, secondary.id)

        self.portal.call(go)
        self.log += [("held.c", "insert", one), ("held.c", "insert", majority)]


PSAClusterMachine.TestCase.settings = machine_settings(10)
TestPSAClusterMachine = PSAClusterMachine.TestCase
