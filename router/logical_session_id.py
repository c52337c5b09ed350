"""makeLogicalSessionId: the session a command runs under, as the server resolves `lsid`.

A driver sends `lsid: {id: <UUID>}`. The server completes it with `uid`, the
SHA-256 of the authenticated user's name as "user@db" (of the empty string
when nobody is authenticated, a digest no user name can have), and it is this
`{id, uid}` that the oplog and change events carry. A client may send `uid`
itself only when it is its own digest (with auth on); a `txnNumber` inside the
lsid belongs to a child session and needs its `txnUUID`.
"""

from __future__ import annotations

from bson import Binary

from mongosim.oplog.errors import MongoError
from mongosim.router.auth.names import UserName
from mongosim.shardsim import sessions


def user_digest(user: UserName | None) -> Binary:
    """The `uid` of `user`'s sessions: SHA-256 of "user@db" (of "" for no user)."""
    return sessions.user_digest(str(user) if user is not None else "")


def make_logical_session_id(lsid: dict, user: UserName | None, auth_enabled: bool) -> dict:
    """`lsid` completed with the user's `uid` (child-session fields kept, in the server's order)."""
    if "txnNumber" in lsid and "txnUUID" not in lsid:
        raise MongoError("InvalidOptions", "Cannot specify txnNumber in lsid without specifying txnUUID")
    user = user if auth_enabled else None
    uid = lsid.get("uid")
    if uid is not None and auth_enabled and bytes(uid) != bytes(user_digest(user)):
        raise MongoError("Unauthorized", "Unauthorized to set user digest in LogicalSessionId")
    return sessions.lsid_with_uid(lsid, str(user) if user is not None else "")


def with_session(cmd: dict, user: UserName | None, auth_enabled: bool) -> dict:
    """`cmd` with its `lsid` resolved (the same dict when it has none)."""
    lsid = cmd.get("lsid")
    if lsid is None:
        return cmd
    return {**cmd, "lsid": make_logical_session_id(lsid, user, auth_enabled)}
