"""Authentication and authorization at the front door (the glue to `router.auth`).

Both front doors (the mongos and the replica-set primary) own one
`AuthManager`.  Per connection it keeps the authentication state; before any
command runs it checks the privileges (when `--auth` is on; a no-op
otherwise, while SASL and user management work either way, as on a real
server).  Cursors remember their owner: getMore and killCursors by another
user are Unauthorized.
"""

from __future__ import annotations

from typing import Any

import trio

from mongosim.router import logical_session_id
from mongosim.router.auth import USER_MANAGEMENT_COMMANDS, AuthManager

SEQUENCE_FIELDS = ("documents", "updates", "deletes", "ops", "nsInfo")


def make_auth(enabled: bool, users_file: str | None = None) -> AuthManager:
    auth = AuthManager(enabled=enabled)
    if users_file:
        auth.load_users_file(users_file)
    return auth


def conn_auth(frontend: Any, conn: Any) -> Any:
    """The connection's authentication state (created on first use)."""
    st = conn.auth
    if st is None:
        st = conn.auth = frontend.auth.new_connection(is_localhost=conn.is_localhost, remote=conn.peer,
                                                      local=getattr(conn, "local", None))
    return st


# router commands that check no privilege: the mongos stub of replSetGetStatus answers anyone
# (cluster_repl_set_get_status_cmd.cpp: "Require no auth since this command isn't supported in mongos")
MONGOS_NO_AUTH_COMMANDS = frozenset({"replSetGetStatus"})


def authorize(frontend: Any, db: str, cmd: dict, conn: Any) -> None:
    auth = frontend.auth
    if auth is None or not auth.enabled:
        return
    name = next(iter(cmd))
    if name in MONGOS_NO_AUTH_COMMANDS and frontend.identity.is_mongos:
        return
    st = conn_auth(frontend, conn)
    auth.authorize(db, cmd, st, sequence_fields=SEQUENCE_FIELDS)
    if name == "getMore":
        cur = frontend.cursors._cursors.get(cmd.get("getMore"))
        if cur is not None:
            auth.check_get_more(st, int(cmd["getMore"]), getattr(cur, "owner", None))
    elif name == "killCursors":
        found = []
        for cid in cmd.get("cursors") or []:
            cur = frontend.cursors._cursors.get(cid)
            if cur is not None:
                found.append((getattr(cur, "owner", None), cur.ns))
        auth.check_kill_cursors(db, cmd, st, found)


def resolve_session(frontend: Any, cmd: dict, conn: Any) -> dict:
    """`cmd` with its lsid completed by the user's digest (`router.logical_session_id`); the session
    (its lsid resolved) becomes known to the front door's logical session cache, with the
    authenticated user's name (shardsim/logical_session_cache.py)."""
    if "lsid" not in cmd:
        return cmd
    auth = frontend.auth
    enabled = auth is not None and auth.enabled
    user = auth.authenticated_user(conn_auth(frontend, conn)) if enabled else None
    cmd = logical_session_id.with_session(cmd, user, enabled)
    lsid = cmd["lsid"]
    if isinstance(lsid, dict) and "uid" in lsid:
        frontend.session_cache.vivify(lsid, str(user) if user is not None else None, trio.current_time())
    return cmd


def authenticated_name(frontend: Any, conn: Any) -> str | None:
    """The connection's user as "user@db" (None: authentication off, or nobody logged in)."""
    auth = frontend.auth
    user = auth.authenticated_user(conn_auth(frontend, conn)) if auth is not None and auth.enabled else None
    return str(user) if user is not None else None


def client_info(frontend: Any, conn: Any) -> dict:
    """Who runs a command, as the profiler records it: {client, appName, user}."""
    app = ((conn.client or {}).get("application") or {}).get("name")
    return {"client": conn.peer, "appName": app, "user": authenticated_name(frontend, conn)}


def note_cursor_owner(frontend: Any, reply: dict, conn: Any) -> None:
    """Remember who opened a cursor the reply just handed out."""
    auth = frontend.auth
    cur = reply.get("cursor") if isinstance(reply, dict) else None
    if auth is None or not auth.enabled or not isinstance(cur, dict) or not cur.get("id"):
        return
    c = frontend.cursors._cursors.get(int(cur["id"]))
    if c is not None and not hasattr(c, "owner"):
        c.owner = auth.cursor_owner(conn_auth(frontend, conn))


# user and role management (createUser ... usersInfo, createRole ... rolesInfo): run by the AuthManager
USER_COMMANDS = USER_MANAGEMENT_COMMANDS


def is_user_command(name: str) -> bool:
    return name in USER_MANAGEMENT_COMMANDS
