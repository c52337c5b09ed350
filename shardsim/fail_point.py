"""Failpoints: named switches tests turn on with `configureFailPoint` (the server's util/fail_point.h).

A failpoint has a mode (`"off"`, `"alwaysOn"`, `{times: n}`, `{skip: n}`,
`{activationProbability: p}`) and data; code at the point where it may fire
asks `FailPoints.get(name)` (or `_check` for the command-matching ones) and
each firing counts one `times`.  A node keeps its own (`Node.failpoints`: the
replica-set front door shares them) and so does each router; what each
failpoint does lives where it fires (router/failpoints.py for failCommand and
failGetMoreAfterCursorCheckout, shardsim/writes.py for
onPrimaryTransactionalWrite, the command dispatch for maxTimeAlwaysTimeOut).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mongosim.oplog.errors import MongoError

GET_MORE_AFTER_CHECKOUT = "failGetMoreAfterCursorCheckout"
MAX_TIME_ALWAYS_TIME_OUT = "maxTimeAlwaysTimeOut"
ON_PRIMARY_TRANSACTIONAL_WRITE = "onPrimaryTransactionalWrite"


# The server's command aliases (each command's constructor names them): failCommand matches a
# command by its name or any alias (`Command::hasAlias`), so failCommands ["isMaster"] fails hello.
COMMAND_ALIASES: dict[str, tuple[str, ...]] = {
    "hello": ("isMaster", "ismaster"),
    "findAndModify": ("findandmodify",),
    "buildInfo": ("buildinfo",),
    "dbStats": ("dbstats",),
    "collStats": ("collstats",),
    "dataSize": ("datasize",),
    "shardCollection": ("shardcollection",),
    "enableSharding": ("enablesharding",),
    "addShard": ("addshard",),
    "removeShard": ("removeshard",),
    "listShards": ("listshards",),
    "moveChunk": ("movechunk",),
}
_NAMES_OF: dict[str, frozenset[str]] = {}
for _canonical, _aliases in COMMAND_ALIASES.items():
    for _name in (_canonical, *_aliases):
        _NAMES_OF[_name] = frozenset((_canonical, *_aliases))


def command_names(command_name: str) -> frozenset[str]:
    """Every name the command a client sent under `command_name` answers to."""
    return _NAMES_OF.get(command_name) or frozenset((command_name,))


# What a failCommand failpoint must ask for to fire at all (the server evaluates it only then:
# `evaluateFailCommandFailPoint` and the write-concern path's own check).
_FAIL_COMMAND_ACTIONS = ("closeConnection", "blockConnection", "errorCode", "writeConcernError")


class CloseConnection(Exception):
    """The failpoint asked us to close the client's connection."""


@dataclass
class FailPoint:
    name: str
    mode: Any = "off"
    data: dict = field(default_factory=dict)
    times_left: int | None = None
    skip_left: int = 0
    entered: int = 0

    @property
    def active(self) -> bool:
        return self.mode != "off" and (self.times_left is None or self.times_left > 0)

    def hit(self) -> bool:
        """Count one evaluation; True when the failpoint fires."""
        if not self.active:
            return False
        if self.skip_left > 0:
            self.skip_left -= 1
            return False
        if self.times_left is not None:
            self.times_left -= 1
        self.entered += 1
        return True


class FailPoints:
    def __init__(self) -> None:
        self._points: dict[str, FailPoint] = {}

    def __bool__(self) -> bool:
        """False while no failpoint was ever configured (a cheap test on hot paths)."""
        return bool(self._points)

    def configure(self, cmd: dict) -> dict:
        name = cmd.get("configureFailPoint")
        if not isinstance(name, str) or not name:
            raise MongoError("BadValue", "configureFailPoint requires a failpoint name")
        mode = cmd.get("mode")
        data = cmd.get("data") or {}
        if not isinstance(data, dict):
            raise MongoError("TypeMismatch", "the 'data' option must be an object")
        prev = self._points.get(name)
        count = prev.entered if prev else 0
        fp = FailPoint(name, mode, data)
        if mode == "off":
            fp.times_left = 0
        elif mode == "alwaysOn":
            fp.times_left = None
        elif isinstance(mode, dict) and "times" in mode:
            t = mode["times"]
            if not isinstance(t, int) or t < 0:
                raise MongoError("BadValue", "'times' option to 'mode' must be positive")
            fp.times_left = int(t)
        elif isinstance(mode, dict) and "skip" in mode:
            fp.skip_left = int(mode["skip"])
            fp.times_left = None
        elif isinstance(mode, dict) and "activationProbability" in mode:
            fp.times_left = None
        else:
            raise MongoError("BadValue", f"unknown mode {mode!r} for failpoint {name}")
        self._points[name] = fp
        return {"count": count, "ok": 1.0}

    def get(self, name: str) -> FailPoint | None:
        fp = self._points.get(name)
        return fp if fp is not None and fp.active else None

    def clear(self) -> None:
        self._points.clear()

    def check_fail_command(self, command_name: str, app_name: str | None, ns: str | None) -> FailPoint | None:
        """The failCommand failpoint if it fires for this command, else None."""
        return self._check("failCommand", command_name, app_name, ns)

    def check_get_more_after_checkout(self, app_name: str | None, ns: str) -> FailPoint | None:
        """failGetMoreAfterCursorCheckout if it fires for a getMore on `ns`, else None.

        The server evaluates its data like failCommand's with `failCommands: ["getMore"]`
        and the cursor's namespace (getmore_cmd.cpp, cluster_find.cpp)."""
        return self._check(GET_MORE_AFTER_CHECKOUT, "getMore", app_name, ns, implicit_commands=["getMore"])

    def _check(self, name: str, command_name: str, app_name: str | None, ns: str | None,
               implicit_commands: list | None = None) -> FailPoint | None:
        fp = self.get(name)
        if fp is None or command_name == "configureFailPoint":  # (never failed, even if named)
            return None
        data = fp.data
        if "appName" in data and data["appName"] != app_name:
            return None
        if "namespace" in data and data["namespace"] != ns:
            return None
        if implicit_commands is not None:
            if command_name not in implicit_commands:
                return None
        else:
            if not any(data.get(k) for k in _FAIL_COMMAND_ACTIONS) and "errorCode" not in data:
                return None  # (errorLabels alone, say: the server never activates it)
            if "failAllCommands" not in data:
                names = command_names(command_name)
                if not any(isinstance(c, str) and c in names for c in data.get("failCommands") or []):
                    return None
            if data.get("blockConnection"):
                block = data.get("blockTimeMS")
                if not isinstance(block, (int, float)) or isinstance(block, bool):
                    raise MongoError("InvalidOptions", "must specify 'blockTimeMS' when 'blockConnection' is true")
                if block < 0:
                    raise MongoError("InvalidOptions", "'blockTimeMS' must be non-negative")
        return fp if fp.hit() else None


def check_max_time_always_times_out(failpoints: FailPoints, cmd: dict, time_limited: bool = False) -> None:
    """maxTimeAlwaysTimeOut: every operation with a time limit times out (MaxTimeMSExpired); `time_limited`:
    the operation has one of its own (a getMore of a cursor whose command had a maxTimeMS)."""
    if (time_limited or cmd.get("maxTimeMS") or cmd.get("maxTimeMSOpOnly")) \
            and failpoints.get(MAX_TIME_ALWAYS_TIME_OUT) is not None:
        raise MongoError("MaxTimeMSExpired", "operation exceeded time limit")
