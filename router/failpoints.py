"""`configureFailPoint`: the test failpoints drivers' tests use (failCommand and friends).

`failCommand` makes the next matching commands fail with an error code
(`errorCode`, `errorLabels`), close the connection (`closeConnection`) or block
(`blockConnection` + `blockTimeMS`); `mode` is `{times: n}`, `{skip: n}`,
`"alwaysOn"` or `"off"`.  `failGetMoreAfterCursorCheckout` fails a getMore after
its cursor was checked out.  Accepted only with test commands enabled
(`getParameter` reports `enableTestCommands`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from oplog.errors import MongoError

KNOWN = {"failCommand", "failGetMoreAfterCursorCheckout", "failNonIntentLocksIfWaitNeeded",
         "hangBeforeTransactionCommit", "maxTimeAlwaysTimeOut", "shardingTestOnlyHangAfterSetMaxTime"}


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
        fp = self.get("failCommand")
        if fp is None:
            return None
        data = fp.data
        cmds = data.get("failCommands") or []
        if command_name not in cmds:
            return None
        if "appName" in data and data["appName"] != app_name:
            return None
        if "namespace" in data and data["namespace"] != ns:
            return None
        return fp if fp.hit() else None
