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

from typing import TYPE_CHECKING, Any

import trio
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.fail_point import (  # noqa: F401 (re-exported)
    GET_MORE_AFTER_CHECKOUT,
    CloseConnection,
    FailPoint,
    FailPoints,
)

if TYPE_CHECKING:
    from mongosim.router.request import Request

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
    if not failpoints:
        return
    app = app_name_of(req.conn.client)
    if app is None and isinstance(req.cmd.get("client"), dict):
        app = app_name_of(req.cmd["client"])  # (a connection's handshake hello: the metadata it brings)
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
        if isinstance(data.get("errorLabels"), list):
            req.conn.extra["writeConcernErrorLabels"] = list(data["errorLabels"])


def attach_write_concern_error(reply: dict, conn: Any) -> bool:
    """A failCommand writeConcernError on a successful reply, as given (an `errorLabels` inside
    it stays inside), with the failpoint's top-level errorLabels when it names some.  True if
    the failpoint named them: they replace the labels the server would add (an empty list,
    none at all)."""
    wce = conn.extra.pop("writeConcernError", None)
    labels = conn.extra.pop("writeConcernErrorLabels", None)
    if wce is None or not reply.get("ok"):
        return False
    reply["writeConcernError"] = wce
    if labels:
        reply["errorLabels"] = labels
    return labels is not None
