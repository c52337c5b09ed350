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

Replica-set members (`--members M`, `--arbiters A`; a member is its `_id`, its
host "h:p", "primary", "secondary" or "arbiter"; the default is the primary,
or every secondary for lag and replication):

    await faults.step_down("shard00")       # replSetStepDown: a caught-up secondary is elected
    faults.kill("shard00")                  # the primary's process dies; an election follows
    faults.restart_member("shard00", 0)     # it comes back as a secondary (rolls back if it must)
    faults.partition("shard00", "primary")  # cut off from the others (clients still reach it)
    faults.heal("shard00")                  # every partition of the set ends
    faults.lag("shard00", 2.0)              # secondaries apply entries 2 s after they appear
    faults.stop_replication("shard00")      # secondaries fetch nothing (stopReplProducer)
    faults.start_replication("shard00")
    faults.kill("shard00", "secondary")     # PSA: the commit point stops, w: "majority" waits,
                                            # streams show nothing newer, w: 1 writes go on
    faults.kill("shard00", "arbiter")       # the arbiter dies (restart_member brings it back)

All of it runs on trio's clock, so on a MockClock (the in-process harness) a
failover takes virtual time only.

From the command line (against `mongosim serve`):
`mongosim fault shard01 --delay 0.5` sends the `mongosimFault` test command;
`mongosim fault router01 --restart` restarts a router (`{mongosimFault: "router01", restart: true}`).
"""

from __future__ import annotations

import math
from typing import Any

from bson import Decimal128

from mongosim.oplog import entry as E
from mongosim.oplog.errors import MongoError
from mongosim.router.request import GENERIC_FIELDS
from mongosim.shardsim import topology_coordinator as tc
from mongosim.shardsim.query.idl_errors import wrong_type
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
        return self.core.nodes[self._set_key(shard)]

    def delay(self, shard: str, seconds: float) -> None:
        """Every command the router sends to `shard` waits `seconds` first (0: no delay)."""
        self._remote(shard).set_delay(float(seconds))

    def fail(self, shard: str, times: int, code: int, labels: list[str] | None = None,
             commands: list[str] | None = None) -> None:
        """The shard's next `times` commands (only those named in `commands`, if given) fail with error
        `code` and these error labels, as the shard's reply."""
        self._remote(shard).fail(int(times), int(code), labels, commands)

    def drop_connection(self, shard: str, times: int = 1) -> None:
        """The router's next `times` commands to the shard fail as a dropped connection (a network error)."""
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
        if self._rs(shard).multi:  # a set of several members restarts its primary: another is elected
            self.restart_member(shard, "primary")
            return
        node = self._node(shard)
        # operations in flight fail as at shutdown; later getMores find no cursor (CursorNotFound)
        node.cursors.kill_all(MongoError("InterruptedAtShutdown", "interrupted at shutdown"))
        node.oplog.wake_readers()
        node.progress.unpark_all()
        abort_open_transactions(node)
        node.catalog.snapshots.expire(float("inf"))
        node.log(E.noop_op("new primary"))

    def pause_noop(self, shard: str, paused: bool = True) -> None:
        """Stop (or, with paused=False, restart) the node's periodic noop writer: a cold shard stays cold."""
        self._node(shard).noop_paused = paused

    def skew(self, shard: str, seconds: float) -> None:
        """The node's wall clock runs `seconds` ahead (negative: behind)."""
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
        """A member of the shard's set: by `_id`, host "h:p", "primary", or "secondary" / "arbiter" (the first)."""
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
        if which == "arbiter":
            for m in rs.arbiters:
                return m
            raise MongoError("BadValue", f"{shard} has no arbiter")
        for m in rs.members:
            if m.id == which or m.host == which or str(m.id) == str(which):
                return m
        raise MongoError("BadValue", f"{shard} has no member {which!r}")

    def _members(self, shard: str, which: int | str | None):
        rs = self._rs(shard)
        if which is None:  # every secondary (an arbiter replicates nothing)
            return [m for m in rs.members if m.state != PRIMARY and not m.arbiter]
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


    async def apply_command(self, cmd: dict, router: Any = None, conn: Any = None) -> dict:
        """The `mongosimFault` test command: `{mongosimFault: <shard>, delay|fail|drop|restart|pauseNoop|skew|clear,
        stepDown|kill|restartMember|partition|heal|lag|stopReplication|startReplication, member, force}`,
        or `{mongosimFault: <router>, restart|stop|start: true}`.

        Arguments are checked as the server's IDL parser checks a command's (TypeMismatch for a wrong
        type, BadValue for a value out of range, IDLUnknownField for an unknown field), all before any fault is
        applied: a bad command changes nothing."""
        shard, args = parse_fault_command(cmd)
        if self.is_router(shard):
            return self._apply_to_router(shard, args, router, conn)
        self._set_key(shard)  # ShardNotFound for an unknown name
        if "stop" in args or "start" in args:
            raise MongoError("BadValue", f"stop and start are for routers; {shard} is a shard (restart it)")
        done = []
        if "delay" in args:
            self.delay(shard, args["delay"])
            done.append("delay")
        if "fail" in args:
            f = args["fail"]
            self.fail(shard, f.get("times", 1), f["code"], f.get("labels"), f.get("commands"))
            done.append("fail")
        if args.get("drop"):
            self.drop_connection(shard, int(args["drop"]))
            done.append("drop")
        if args.get("restart"):
            self.restart(shard)
            done.append("restart")
        if "pauseNoop" in args:
            self.pause_noop(shard, args["pauseNoop"])
            done.append("pauseNoop")
        if "skew" in args:
            self.skew(shard, args["skew"])
            done.append("skew")
        which = args.get("member")
        if "stepDown" in args:
            secs = args["stepDown"] if not isinstance(args["stepDown"], bool) else 60.0
            done.append(f"stepDown {await self.step_down(shard, secs, force=args.get('force', False))}")
        if args.get("kill"):
            done.append(f"kill {self.kill(shard, which if which is not None else 'primary')}")
        if "restartMember" in args:
            done.append(f"restartMember {self.restart_member(shard, args['restartMember'])}")
        if args.get("partition"):
            done.append(f"partition {self.partition(shard, which if which is not None else 'primary')}")
        if args.get("heal"):
            self.heal(shard)
            done.append("heal")
        if "lag" in args:
            self.lag(shard, args["lag"], which)
            done.append("lag")
        if args.get("stopReplication"):
            self.stop_replication(shard, which)
            done.append("stopReplication")
        if args.get("startReplication"):
            self.start_replication(shard, which)
            done.append("startReplication")
        if args.get("clear"):
            self.clear(shard)
            done.append("clear")
        return {"applied": done, "ok": 1.0}

    def _apply_to_router(self, name: str, args: dict, via: Any, conn: Any) -> dict:
        """restart / stop / start a router; asked through that very router, it acts once the reply is sent."""
        proc = self.core.mongos_process(name)
        actions = [a for a in ("restart", "stop", "start") if args.get(a)]
        if set(args) - {"restart", "stop", "start"} or len(actions) > 1:
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

def abort_open_transactions(node: Any) -> None:
    """Abort every transaction open (or prepared) on a node, as a restart or a test reset does."""
    for state in list(node.sessions._sessions.values()):
        if state.txn is not None and state.txn.state in ("in_progress", "prepared"):
            state.txn.abort(None)


# -- the command's arguments -------------------------------------------------------------------------

_NUMBER_TYPES = ("long", "int", "decimal", "double")


def _number(field: str, v: Any, *, low: float | None = None) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, Decimal128)):
        raise wrong_type(f"mongosimFault.{field}", v, _NUMBER_TYPES)
    x = float(v.to_decimal()) if isinstance(v, Decimal128) else float(v)
    if not math.isfinite(x) or (low is not None and x < low):
        raise MongoError("BadValue", f"'{field}' must be a finite number{f' >= {low:g}' if low is not None else ''}, "
                                     f"not {v!r}")
    return x


def _whole(field: str, v: Any, *, low: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise wrong_type(f"mongosimFault.{field}", v, "int")
    if v < low:
        raise MongoError("BadValue", f"'{field}' must be >= {low}, not {v}")
    return int(v)


def _flag(field: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise wrong_type(f"mongosimFault.{field}", v, "bool")
    return v


def _strings(field: str, v: Any) -> list[str]:
    if not isinstance(v, list):
        raise wrong_type(f"mongosimFault.{field}", v, "array")
    for i, s in enumerate(v):
        if not isinstance(s, str):
            raise wrong_type(f"mongosimFault.{field}.{i}", s, "string")
    return list(v)


def _unknown(field: str) -> MongoError:
    return MongoError("IDLUnknownField", f"BSON field 'mongosimFault.{field}' is an unknown field.")


_FAIL_FIELDS = {"code", "times", "labels", "commands"}


def parse_fault_command(cmd: dict) -> tuple[str, dict]:
    """(shard, checked arguments) of a `mongosimFault` command; the server's errors for bad ones."""
    shard = cmd.get("mongosimFault")
    if not isinstance(shard, str):
        raise wrong_type("mongosimFault.mongosimFault", shard, "string")
    args: dict[str, Any] = {}
    for field, v in cmd.items():
        if field == "mongosimFault" or field in GENERIC_FIELDS:
            continue
        if field == "delay":
            args[field] = _number(field, v, low=0)
        elif field == "skew":
            args[field] = _number(field, v)
        elif field == "fail":
            if not isinstance(v, dict):
                raise wrong_type(f"mongosimFault.{field}", v, "object")
            for sub in v:
                if sub not in _FAIL_FIELDS:
                    raise _unknown(f"fail.{sub}")
            if "code" not in v:
                raise MongoError("IDLFailedToParse", "BSON field 'mongosimFault.fail.code' is missing but a required field")
            fail = {"code": _whole("fail.code", v["code"], low=1), "times": _whole("fail.times", v.get("times", 1), low=0)}
            if "labels" in v:
                fail["labels"] = _strings("fail.labels", v["labels"])
            if "commands" in v:
                fail["commands"] = _strings("fail.commands", v["commands"])
            args[field] = fail
        elif field == "drop":
            if not isinstance(v, int):  # true (once), or how many times
                raise wrong_type(f"mongosimFault.{field}", v, ("bool", "int"))
            args[field] = int(v) if isinstance(v, bool) else _whole(field, v, low=0)
        elif field in ("restart", "stop", "start", "pauseNoop", "clear", "kill", "partition", "heal",
                       "stopReplication", "startReplication", "force"):
            args[field] = _flag(field, v)
        elif field == "stepDown":  # true (60 s), or the stepdown period in seconds
            args[field] = v if v is True else _number(field, v, low=0)
        elif field == "lag":
            args[field] = _number(field, v, low=0)
        elif field in ("member", "restartMember"):  # a member's _id or host
            if isinstance(v, bool) or not isinstance(v, (int, str)):
                raise wrong_type(f"mongosimFault.{field}", v, ("int", "string"))
            args[field] = v
        else:
            raise _unknown(field)
    return shard, args
