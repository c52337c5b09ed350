"""`configureFailPoint`: the test failpoints drivers' tests use (failCommand and friends).

`failCommand` makes the next matching commands fail with an error code
(`errorCode`, `errorLabels`), close the connection (`closeConnection`) or block
(`blockConnection` + `blockTimeMS`); `mode` is `{times: n}`, `{skip: n}`,
`"alwaysOn"` or `"off"`.  `failGetMoreAfterCursorCheckout` fails a getMore after
its cursor was checked out (`fail_get_more_after_checkout`).  Accepted only with
test commands enabled (`getParameter` reports `enableTestCommands`).

The two differ in what the error looks like, and drivers' tests rely on it:
failCommand fires when the command arrives, before any cursor is checked out,
so a failed change-stream getMore carries only the labels the failpoint names
(the server's label builder finds no originating command for the getMore);
failGetMoreAfterCursorCheckout fires with the cursor checked out, so the error
gets the labels a real failure would (ResumableChangeStreamError for a
resumable code), and the cursor is killed as for any error while checked out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import trio
from mongosim.oplog.errors import MongoError

if TYPE_CHECKING:
    from mongosim.router.request import Request

GET_MORE_AFTER_CHECKOUT = "failGetMoreAfterCursorCheckout"
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
        return self._check("failCommand", command_name, app_name, ns)

    def check_get_more_after_checkout(self, app_name: str | None, ns: str) -> FailPoint | None:
        """failGetMoreAfterCursorCheckout if it fires for a getMore on `ns`, else None.

        The server evaluates its data like failCommand's with `failCommands: ["getMore"]`
        and the cursor's namespace (getmore_cmd.cpp, cluster_find.cpp)."""
        return self._check(GET_MORE_AFTER_CHECKOUT, "getMore", app_name, ns, implicit_commands=["getMore"])

    def _check(self, name: str, command_name: str, app_name: str | None, ns: str | None,
               implicit_commands: list | None = None) -> FailPoint | None:
        fp = self.get(name)
        if fp is None:
            return None
        data = fp.data
        cmds = implicit_commands if implicit_commands is not None else (data.get("failCommands") or [])
        if command_name not in cmds:
            return None
        if "appName" in data and data["appName"] != app_name:
            return None
        if "namespace" in data and data["namespace"] != ns:
            return None
        return fp if fp.hit() else None


def app_name_of(client_metadata: dict | None) -> str | None:
    """The application name a client sent in its handshake metadata."""
    return ((client_metadata or {}).get("application") or {}).get("name")


def fail_get_more_after_checkout(failpoints: FailPoints, cursors: Any, db: str, cmd: dict,
                                 app_name: str | None) -> None:
    """Fail a getMore once its cursor is checked out, if failGetMoreAfterCursorCheckout says so.

    Only a getMore that would check its cursor out is affected: an unknown cursor, a
    namespace mismatch or a cursor in use is left to the getMore itself to report.  The
    error is `errorCode` (InternalError without one); the cursor is killed, as the server
    kills a cursor when an error escapes while it is pinned."""
    if failpoints.get(GET_MORE_AFTER_CHECKOUT) is None:
        return
    cid, coll = cmd.get("getMore"), cmd.get("collection")
    if not isinstance(cid, int) or isinstance(cid, bool) or not isinstance(coll, str):
        return
    ns = f"{db}.{coll}"
    try:
        cursors.lookup(int(cid), ns)
    except MongoError:
        return
    if int(cid) in getattr(cursors, "_pinned", ()):
        return
    fp = failpoints.check_get_more_after_checkout(app_name, ns)
    if fp is None:
        return
    cursors.remove(int(cid))
    code = fp.data.get("errorCode")
    raise MongoError(int(code) if code is not None else "InternalError",
                     "Hit the 'failGetMoreAfterCursorCheckout' failpoint")


async def apply_fail_command(failpoints: "FailPoints", req: "Request") -> None:
    """failCommand at a command's arrival: block, close the connection, fail with an error
    (its labels kept apart for the router's labelling), or attach a writeConcernError."""
    app = app_name_of(req.conn.client)
    coll = req.cmd.get(req.name)
    ns = f"{req.db}.{coll}" if isinstance(coll, str) else None
    fp = failpoints.check_fail_command(req.name, app, ns)
    if fp is None:
        return
    data = fp.data
    if data.get("blockConnection"):
        await trio.sleep(float(data.get("blockTimeMS", 0)) / 1000.0)
    if data.get("closeConnection"):
        raise CloseConnection()
    if "errorCode" in data:
        err = MongoError(int(data["errorCode"]), "Failing command via 'failCommand' failpoint")
        err.extra["_failCommand"] = True
        if "errorLabels" in data:
            err.extra["_explicitLabels"] = list(data["errorLabels"])
        raise err
    if "writeConcernError" in data:
        req.conn.extra["writeConcernError"] = data["writeConcernError"]
