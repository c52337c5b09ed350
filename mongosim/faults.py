"""Fault injection on a running cluster: the same API for tests, demos and the CLI.

    faults = FaultInjector(core)
    faults.delay("shard01", 0.5)          # every command to shard01 waits 0.5 s first
    faults.fail("shard01", 2, 6)          # its next 2 commands fail with HostUnreachable
    faults.drop_connection("shard02")     # its next command fails as a dropped connection
    faults.restart("shard00")             # its cursors are lost, open transactions aborted
    faults.pause_noop("shard02")          # no periodic noop: a cold shard stays cold
    faults.skew("shard01", 30)            # its wall clock runs 30 s ahead
    faults.clear()

Replica-set members (`--members M`; a member is its `_id`, its host "h:p", or
"primary"; the default is the primary, or every secondary for lag and
replication):

    await faults.step_down("shard00")       # replSetStepDown: a caught-up secondary is elected
    faults.kill("shard00")                  # the primary's process dies; an election follows
    faults.restart_member("shard00", 0)     # it comes back as a secondary (rolls back if it must)
    faults.partition("shard00", "primary")  # cut off from the others (clients still reach it)
    faults.heal("shard00")                  # every partition of the set ends
    faults.lag("shard00", 2.0)              # secondaries apply entries 2 s after they appear
    faults.stop_replication("shard00")      # secondaries fetch nothing (stopReplProducer)
    faults.start_replication("shard00")

All of it runs on trio's clock, so on a MockClock (the in-process harness) a
failover takes virtual time only.

From the command line (against `mongosim serve`):
`mongosim fault shard01 --delay 0.5` sends the `mongosimFault` test command.
"""

from __future__ import annotations

from typing import Any

from mongosim.oplog import entry as E
from mongosim.oplog.errors import MongoError
from mongosim.shardsim import topology_coordinator as tc
from mongosim.shardsim.replica_set import PRIMARY, SECONDARY


class FaultInjector:
    def __init__(self, core: Any) -> None:
        self.core = core

    def _remote(self, shard: str):
        router = self.core.router
        if router is None:
            raise MongoError("IllegalOperation", "shard faults need a sharded cluster")
        return router.shard(shard)

    def _node(self, shard: str):
        try:
            return self.core.nodes[self._set_key(shard)]
        except KeyError:
            raise MongoError("ShardNotFound", f"Shard {shard} not found") from None

    def delay(self, shard: str, seconds: float) -> None:
        self._remote(shard).set_delay(float(seconds))

    def fail(self, shard: str, times: int, code: int, labels: list[str] | None = None,
             commands: list[str] | None = None) -> None:
        self._remote(shard).fail(int(times), int(code), labels, commands)

    def drop_connection(self, shard: str, times: int = 1) -> None:
        self._remote(shard).drop_connection(int(times))

    def restart(self, shard: str) -> None:
        """A shard restart: cursors lost, open transactions aborted, snapshot history gone
        (reads at an earlier atClusterTime: SnapshotTooOld); the oplog survives.  A set of
        several members restarts its primary's process: another member is elected."""
        rs = self._rs(shard)
        if rs.multi:
            self.restart_member(shard, "primary")
            return
        node = self._node(shard)
        # operations in flight fail as at shutdown; later getMores find no cursor (CursorNotFound)
        node.cursors.kill_all(MongoError("InterruptedAtShutdown", "interrupted at shutdown"))
        node.oplog._lot.unpark_all()
        node.progress.unpark_all()
        for state in list(node.sessions._sessions.values()):
            if state.txn is not None and state.txn.state in ("in_progress", "prepared"):
                state.txn.abort(None)
        node.catalog.snapshots.expire(float("inf"))
        node.log(E.noop_op("new primary"))

    def pause_noop(self, shard: str, paused: bool = True) -> None:
        self._node(shard).noop_paused = paused

    def skew(self, shard: str, seconds: float) -> None:
        self._node(shard).wall.skew = float(seconds)

    def clear(self, shard: str | None = None) -> None:
        """Remove the faults: link faults, paused noops, and the members' (killed ones restart,
        partitions heal, lag and stopped replication end)."""
        names = [self._set_key(shard)] if shard else list(self.core.replica_sets)
        for name in names:
            rs = self.core.replica_sets[name]
            for m in rs.members:
                m.node.noop_paused = False
                if m.partitioned:
                    tc.partition(rs, m, False)
                if m.lag or not m.replicating:
                    m.lag, m.replicating = 0.0, True
                    rs.notify()
            for m in rs.members:
                if not m.alive:
                    tc.restart(rs, m)
            if self.core.router is not None and name in self.core.router.shards:
                self.core.router.shard(name).clear_faults()

    # -- replica-set members -------------------------------------------------------------
    def _set_key(self, shard: str) -> str:
        sets = self.core.replica_sets
        if shard in sets:
            return shard
        for key, rs in sets.items():
            if rs.name == shard:
                return key
        raise MongoError("ShardNotFound", f"Shard {shard} not found")

    def _rs(self, shard: str):
        return self.core.replica_sets[self._set_key(shard)]

    def member(self, shard: str, which: int | str = "primary"):
        """A member of the shard's set: by `_id`, host "h:p", "primary" or "secondary" (the first)."""
        rs = self._rs(shard)
        if which == "primary":
            p = rs.primary
            if p is None:
                raise MongoError("NotWritablePrimary", f"{shard} has no primary now")
            return p
        if which == "secondary":
            for m in rs.members:
                if m.state == SECONDARY:
                    return m
            raise MongoError("NotSecondary", f"{shard} has no secondary now")
        for m in rs.members:
            if m.id == which or m.host == which or str(m.id) == str(which):
                return m
        raise MongoError("BadValue", f"{shard} has no member {which!r}")

    def _members(self, shard: str, which: int | str | None):
        rs = self._rs(shard)
        if which is None:
            return [m for m in rs.members if m.state != PRIMARY]
        return [self.member(shard, which)]

    async def step_down(self, shard: str, seconds: float = 60.0, *, catch_up: float = 10.0,
                        force: bool = False) -> str:
        """replSetStepDown on the shard's primary; the host it was."""
        m = self.member(shard, "primary")
        await tc.step_down(m.rs, m, max(seconds, catch_up), catch_up, force=force)
        return m.host

    def kill(self, shard: str, which: int | str = "primary") -> str:
        m = self.member(shard, which)
        tc.kill(m.rs, m)
        return m.host

    def restart_member(self, shard: str, which: int | str = "primary") -> str:
        m = self.member(shard, which)
        tc.restart(m.rs, m)
        return m.host

    def partition(self, shard: str, which: int | str = "primary", cut: bool = True) -> str:
        m = self.member(shard, which)
        tc.partition(m.rs, m, cut)
        return m.host

    def heal(self, shard: str) -> None:
        rs = self._rs(shard)
        for m in rs.members:
            if m.partitioned:
                tc.partition(rs, m, False)

    def lag(self, shard: str, seconds: float, which: int | str | None = None) -> None:
        for m in self._members(shard, which):
            tc.set_lag(m.rs, m, seconds)

    def stop_replication(self, shard: str, which: int | str | None = None) -> None:
        for m in self._members(shard, which):
            tc.set_replicating(m.rs, m, False)

    def start_replication(self, shard: str, which: int | str | None = None) -> None:
        for m in self._members(shard, which):
            tc.set_replicating(m.rs, m, True)

    def freeze(self, shard: str, which: int | str, seconds: float) -> None:
        m = self.member(shard, which)
        tc.freeze(m.rs, m, seconds)

    async def apply_command(self, cmd: dict) -> dict:
        """The `mongosimFault` test command: `{mongosimFault: <shard>, delay|fail|drop|restart|pauseNoop|skew|clear,
        stepDown|kill|restartMember|partition|heal|lag|stopReplication|startReplication, member}`."""
        shard = cmd.get("mongosimFault")
        if not isinstance(shard, str):
            raise MongoError("BadValue", "mongosimFault takes a shard name")
        done = []
        if "delay" in cmd:
            self.delay(shard, cmd["delay"])
            done.append("delay")
        if "fail" in cmd:
            f = cmd["fail"]
            self.fail(shard, f.get("times", 1), f["code"], f.get("labels"), f.get("commands"))
            done.append("fail")
        if cmd.get("drop"):
            self.drop_connection(shard, int(cmd["drop"]))
            done.append("drop")
        if cmd.get("restart"):
            self.restart(shard)
            done.append("restart")
        if "pauseNoop" in cmd:
            self.pause_noop(shard, bool(cmd["pauseNoop"]))
            done.append("pauseNoop")
        if "skew" in cmd:
            self.skew(shard, cmd["skew"])
            done.append("skew")
        which = cmd.get("member")
        if cmd.get("stepDown"):
            secs = cmd["stepDown"] if not isinstance(cmd["stepDown"], bool) else 60.0
            done.append(f"stepDown {await self.step_down(shard, float(secs), force=bool(cmd.get('force')))}")
        if cmd.get("kill"):
            done.append(f"kill {self.kill(shard, which if which is not None else 'primary')}")
        if "restartMember" in cmd:
            done.append(f"restartMember {self.restart_member(shard, cmd['restartMember'])}")
        if cmd.get("partition"):
            done.append(f"partition {self.partition(shard, which if which is not None else 'primary')}")
        if cmd.get("heal"):
            self.heal(shard)
            done.append("heal")
        if "lag" in cmd:
            self.lag(shard, float(cmd["lag"]), which)
            done.append("lag")
        if cmd.get("stopReplication"):
            self.stop_replication(shard, which)
            done.append("stopReplication")
        if cmd.get("startReplication"):
            self.start_replication(shard, which)
            done.append("startReplication")
        if cmd.get("clear"):
            self.clear(shard)
            done.append("clear")
        return {"applied": done, "ok": 1.0}
