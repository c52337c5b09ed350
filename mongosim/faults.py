"""Fault injection on a running cluster: the same API for tests, demos and the CLI.

    faults = FaultInjector(core)
    faults.delay("shard01", 0.5)          # every command to shard01 waits 0.5 s first
    faults.fail("shard01", 2, 6)          # its next 2 commands fail with HostUnreachable
    faults.drop_connection("shard02")     # its next command fails as a dropped connection
    faults.restart("shard00")             # its cursors are lost, open transactions aborted
    faults.pause_noop("shard02")          # no periodic noop: a cold shard stays cold
    faults.skew("shard01", 30)            # its wall clock runs 30 s ahead
    faults.clear()

From the command line (against `mongosim serve`):
`mongosim fault shard01 --delay 0.5` sends the `mongosimFault` test command.
"""

from __future__ import annotations

from typing import Any

from mongosim.oplog import entry as E
from mongosim.oplog.errors import MongoError


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
            return self.core.nodes[shard]
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
        (reads at an earlier atClusterTime: SnapshotTooOld); the oplog survives."""
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
        names = [shard] if shard else list(self.core.nodes)
        for name in names:
            node = self.core.nodes[name]
            node.noop_paused = False
            if self.core.router is not None and name in self.core.router.shards:
                self.core.router.shard(name).clear_faults()

    def apply_command(self, cmd: dict) -> dict:
        """The `mongosimFault` test command: `{mongosimFault: <shard>, delay|fail|drop|restart|pauseNoop|skew|clear}`."""
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
        if cmd.get("clear"):
            self.clear(shard)
            done.append("clear")
        return {"applied": done, "ok": 1.0}
