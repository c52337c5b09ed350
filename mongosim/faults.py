"""Fault injection on a running cluster: the same API for tests, demos and the CLI.

    faults = FaultInjector(core)
    faults.delay("shard01", 0.5)          # every command to shard01 waits 0.5 s first
    faults.fail("shard01", 2, 6)          # its next 2 commands fail with HostUnreachable
    faults.drop_connection("shard02")     # its next command fails as a dropped connection
    faults.restart("shard00")             # its cursors are lost, open transactions aborted
    faults.pause_noop("shard02")          # no periodic noop: a cold shard stays cold
    faults.skew("shard01", 30)            # its wall clock runs 30 s ahead
    faults.restart("router01")            # a mongos restarts: its connections and cursors die
    await faults.stop_router("router01")  # ... or stops, until start_router("router01")
    faults.clear()

From the command line (against `mongosim serve`):
`mongosim fault shard01 --delay 0.5` sends the `mongosimFault` test command;
`mongosim fault router01 --restart` restarts a router (`{mongosimFault: "router01", restart: true}`).
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

    # -- routers ---------------------------------------------------------------------------
    def is_router(self, name: str) -> bool:
        return any(p.name == name for p in self.core.mongos)

    async def stop_router(self, name: str) -> None:
        """The mongos stops: its listener and connections close, its cursors die."""
        await self.core.mongos_process(name).stop()

    async def start_router(self, name: str) -> None:
        """A stopped mongos starts again on its port, its memory empty."""
        await self.core.mongos_process(name).start(self.core.nursery)

    async def restart_router(self, name: str) -> None:
        await self.core.mongos_process(name).restart(self.core.nursery)

    def _restart_router_soon(self, name: str) -> None:
        """Restart a router now: it stops at once; its listener is back as soon as the old one closed."""
        proc = self.core.mongos_process(name)
        proc.router.stop()
        self.core.nursery.start_soon(proc.restart, self.core.nursery)

    def restart(self, shard: str) -> None:
        """A shard restart: cursors lost, open transactions aborted, snapshot history gone
        (reads at an earlier atClusterTime: SnapshotTooOld); the oplog survives.
        A router (router00, ...) restarts as a process: see `restart_router`."""
        if self.is_router(shard):
            self._restart_router_soon(shard)
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
        names = [shard] if shard else list(self.core.nodes)
        for name in names:
            node = self.core.nodes[name]
            node.noop_paused = False
            if self.core.router is not None and name in self.core.router.shards:
                self.core.router.shard(name).clear_faults()

    def apply_command(self, cmd: dict, router: Any = None, conn: Any = None) -> dict:
        """The `mongosimFault` test command: `{mongosimFault: <shard>, delay|fail|drop|restart|pauseNoop|skew|clear}`,
        or `{mongosimFault: <router>, restart|stop|start: true}`."""
        shard = cmd.get("mongosimFault")
        if not isinstance(shard, str):
            raise MongoError("BadValue", "mongosimFault takes a shard name")
        if self.is_router(shard):
            return self._apply_to_router(shard, cmd, router, conn)
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

    def _apply_to_router(self, name: str, cmd: dict, via: Any, conn: Any) -> dict:
        """restart / stop / start a router; asked through that very router, it acts once the reply is sent."""
        proc = self.core.mongos_process(name)
        actions = [a for a in ("restart", "stop", "start") if cmd.get(a)]
        unknown = [k for k in cmd if k not in ("mongosimFault", "restart", "stop", "start", "clear", "$db", "lsid",
                                               "$clusterTime", "$readPreference", "apiVersion")]
        if unknown or len(actions) > 1:
            raise MongoError("BadValue", f"a router ({name}) takes one of restart, stop, start")

        def act() -> None:
            if "restart" in actions:
                self._restart_router_soon(name)
            elif "stop" in actions:
                proc.router.stop()
                self.core.nursery.start_soon(proc.stop)
            elif "start" in actions:
                self.core.nursery.start_soon(proc.start, self.core.nursery)

        if via is proc.router and conn is not None:
            conn.after_reply.append(act)
        else:
            act()
        return {"applied": actions, "ok": 1.0}
