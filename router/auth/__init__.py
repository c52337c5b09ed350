"""Authentication and authorization for mongosim (issue 11): a sans-IO core behind `AuthManager`.

How the server uses it (one `AuthManager` per cluster, one `ConnState` per connection)::

    auth = AuthManager(enabled=args.auth)            # `mongosim serve --auth`
    if args.users:
        auth.load_users_file(args.users)             # `--users FILE`

    conn = auth.new_connection(is_localhost=is_localhost_address(peer_host), remote=peer)

    # for every command (db = $db, cmd = the OP_MSG body with any document
    # sequences merged in, their field names in `sequence_fields`):
    name = next(iter(cmd))
    auth.authorize(db, cmd, conn, sequence_fields=...)     # raises MongoError Unauthorized (13)
    if name in ("hello", "isMaster", "ismaster"):
        reply = build_hello(...)
        reply.update(auth.hello_fields(cmd, conn))          # before "ok"
    elif name == "saslStart":
        reply = auth.handle_sasl_start(db, cmd, conn)
    elif name == "saslContinue":
        reply = auth.handle_sasl_continue(db, cmd, conn)
    elif name == "logout":
        reply = auth.handle_logout(db, cmd, conn)
    elif name == "connectionStatus":
        reply = auth.connection_status(db, cmd, conn)
    elif name in USER_MANAGEMENT_COMMANDS:               # user and role management, usersInfo, rolesInfo
        reply = auth.handle_user_command(db, cmd, conn)
    elif name == "listDatabases":
        keep = auth.list_databases_filter(cmd, conn)        # None: list everything
    elif name == "getMore":
        auth.check_get_more(conn, cursor_id, cursor.owner)  # owner = auth.cursor_owner(conn) at creation
    elif name == "killCursors":
        auth.check_kill_cursors(db, cmd, conn, [(c.owner, c.ns) for c in found_cursors])

Every method raises `oplog.errors.MongoError` with the server's code and
message; replies are plain dicts ending with ``ok: 1.0``. With auth off
(the default) `authorize` and the cursor checks are no-ops, while the SASL and
user and role management commands still work, as on a real server.

Users hold built-in and user-defined roles (`router.auth.roles`); a
connection's privileges are recomputed from the role graph on every command,
so granting, revoking or dropping a role applies at once to clients already
logged in (the server invalidates its user cache for the same effect).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from mongosim.oplog.errors import MongoError
from mongosim.router.auth import bsonrepr
from mongosim.router.auth.commands import (
    NO_AUTH_COMMANDS,
    AnyActionInDatabase,
    AnyOf,
    Refusal,
    is_authorized_for_any_action_in_db,
    required_privileges,
    satisfied,
)
from mongosim.router.auth.localhost_exception import (
    LOCALHOST_EXCEPTION_PRIVILEGES,
    is_localhost_address,
    localhost_bypass_active,
)
from mongosim.router.auth.names import RoleName, UserName, auth_error
from mongosim.router.auth.privileges import (
    ANY,
    ANY_NORMAL,
    BUILTIN_ROLES,
    CLUSTER,
    Privilege,
    Resource,
    check,
    is_authorized,
)
from mongosim.router.auth.restrictions import restrictions_met
from mongosim.router.auth.sasl import sasl_continue, sasl_start, sasl_supported_mechs, speculative_authenticate
from mongosim.router.auth.scram import MECHANISMS
from mongosim.router.auth.roles import ROLE_COMMANDS, RoleStore
from mongosim.router.auth.state import ConnState
from mongosim.router.auth.users import USER_COMMANDS, UserStore

# Every command `AuthManager.handle_user_command` runs (the server's user_management_commands.cpp).
USER_MANAGEMENT_COMMANDS = USER_COMMANDS | ROLE_COMMANDS

__all__ = [
    "ANY",
    "ANY_NORMAL",
    "BUILTIN_ROLES",
    "CLUSTER",
    "MECHANISMS",
    "NO_AUTH_COMMANDS",
    "ROLE_COMMANDS",
    "USER_COMMANDS",
    "USER_MANAGEMENT_COMMANDS",
    "AnyActionInDatabase",
    "AnyOf",
    "AuthManager",
    "ConnState",
    "Privilege",
    "Resource",
    "RoleName",
    "RoleStore",
    "UserName",
    "UserStore",
    "check",
    "is_localhost_address",
    "required_privileges",
]

_ROOT = RoleName("root", "admin")
_REDACTED_FIELDS = {"createUser": ("pwd",), "updateUser": ("pwd",)}


def _snip_for_logging(cmd: Mapping[str, Any], sequence_fields: Iterable[str]) -> dict[str, Any]:
    """The command as the server echoes it in Unauthorized messages (passwords redacted)."""
    skip = set(sequence_fields)
    name = next(iter(cmd))
    redact = _REDACTED_FIELDS.get(name, ())
    return {k: ("xxx" if k in redact else v) for k, v in cmd.items() if k not in skip}


class AuthManager:
    """The facade the server talks to; see the module docstring for the call sequence."""

    def __init__(
        self,
        enabled: bool = False,
        *,
        store: UserStore | None = None,
        mechanisms: Iterable[str] = MECHANISMS,
        localhost_exception: bool = True,
        nonce_factory: Callable[[], str] | None = None,
    ) -> None:
        self.enabled = enabled
        self.mechanisms = tuple(mechanisms)
        self.store = store if store is not None else UserStore(mechanisms=self.mechanisms)
        self.localhost_exception = localhost_exception
        self._nonce_factory = nonce_factory

    # -- connections and users -----------------------------------------------------------------

    def new_connection(self, *, is_localhost: bool = False, remote: str | None = None,
                       local: str | None = None) -> ConnState:
        return ConnState(is_localhost=is_localhost, remote=remote, local=local)

    def load_users_file(self, path: str | os.PathLike[str]) -> list[UserName]:
        """Preload users from a ``--users`` JSON file (format in `router.auth.users`)."""
        return self.store.load_users_file(path)

    def load_users(self, entries: list[dict[str, Any]]) -> list[UserName]:
        return self.store.load_users(entries)

    def authenticated_user(self, conn: ConnState) -> UserName | None:
        """The connection's user; a user dropped since, or whose authentication restrictions the
        connection no longer meets, is logged out (as the server's user cache refresh does)."""
        user = conn.user
        if user is not None and (self.store.get(user) is None or (
                self.store.has_restrictions()
                and not restrictions_met(self.store.restrictions_of(user), conn.remote, conn.local))):
            conn.user = None
        return conn.user

    def granted_privileges(self, conn: ConnState, *, localhost_bypass: bool = False) -> dict[Resource, frozenset[str]]:
        user = self.authenticated_user(conn)
        granted: dict[Resource, frozenset[str]] = {}
        if user is not None:
            resolved = self.store.resolved(user)
            granted.update(resolved.privileges)
            if _ROOT in resolved.roles:
                # mongosim only: root may run commands commands.py does not list (see UNKNOWN_COMMAND_REQUIREMENT)
                granted[ANY] = granted.get(ANY, frozenset()) | {"anyAction"}
        if localhost_bypass:
            for resource, actions in LOCALHOST_EXCEPTION_PRIVILEGES.items():
                granted[resource] = granted.get(resource, frozenset()) | actions
        return granted

    def cursor_owner(self, conn: ConnState) -> UserName | None:
        """Record this with every cursor a command opens; `check_get_more` compares against it."""
        return self.authenticated_user(conn)

    # -- SASL ----------------------------------------------------------------------------------

    def handle_sasl_start(self, db: str, cmd: Mapping[str, Any], conn: ConnState) -> dict[str, Any]:
        reply = sasl_start(self.store, conn, db, cmd, mechanisms=self.mechanisms, nonce_factory=self._nonce_factory)
        return {**reply, "ok": 1.0}

    def handle_sasl_continue(self, db: str, cmd: Mapping[str, Any], conn: ConnState) -> dict[str, Any]:
        return {**sasl_continue(self.store, conn, db, cmd), "ok": 1.0}

    def speculative(self, hello_cmd: Mapping[str, Any], conn: ConnState) -> dict[str, Any] | None:
        """The ``speculativeAuthenticate`` value for a hello reply, or None to leave it out."""
        if "speculativeAuthenticate" not in hello_cmd:
            return None
        return speculative_authenticate(
            self.store,
            conn,
            hello_cmd["speculativeAuthenticate"],
            mechanisms=self.mechanisms,
            nonce_factory=self._nonce_factory,
        )

    def hello_fields(self, hello_cmd: Mapping[str, Any], conn: ConnState) -> dict[str, Any]:
        """``saslSupportedMechs`` and ``speculativeAuthenticate`` for a hello / isMaster reply (in that order)."""
        out: dict[str, Any] = {}
        if "saslSupportedMechs" in hello_cmd:
            mechs = sasl_supported_mechs(self.store, hello_cmd["saslSupportedMechs"], self.mechanisms)
            if mechs is not None:
                out["saslSupportedMechs"] = mechs
        spec = self.speculative(hello_cmd, conn)
        if spec is not None:
            out["speculativeAuthenticate"] = spec
        return out

    def handle_logout(self, db: str, cmd: Mapping[str, Any], conn: ConnState) -> dict[str, Any]:
        if conn.user is not None and conn.user.db == db:
            conn.user = None
        return {"ok": 1.0}

    def connection_status(self, db: str, cmd: Mapping[str, Any], conn: ConnState) -> dict[str, Any]:
        """The user and every role it holds, directly or by inheritance (the server lists the user's
        indirect roles: AuthorizationSession's _buildAuthenticatedRolesVector), and with
        showPrivileges the privileges they grant."""
        user = self.authenticated_user(conn)
        resolved = self.store.resolved(user) if user is not None else None
        info: dict[str, Any] = {
            "authenticatedUsers": [user.to_doc()] if user is not None else [],
            "authenticatedUserRoles": [r.to_doc() for r in resolved.roles] if resolved is not None else [],
        }
        if cmd.get("showPrivileges"):
            granted = resolved.privileges if resolved is not None else {}
            info["authenticatedUserPrivileges"] = [Privilege(r, a).to_doc() for r, a in granted.items()]
        return {"authInfo": info, "ok": 1.0}

    # -- user management -----------------------------------------------------------------------

    def handle_user_command(self, db: str, cmd: Mapping[str, Any], conn: ConnState | None = None) -> dict[str, Any]:
        """createUser, updateUser, dropUser, dropAllUsersFromDatabase, grant/revokeRolesToUser, usersInfo,
        and the role commands: createRole, updateRole, dropRole, dropAllRolesFromDatabase,
        grant/revokeRolesToRole, grant/revokePrivilegesToRole, rolesInfo (`USER_MANAGEMENT_COMMANDS`).

        Call `authorize` first: this only runs the command.
        """
        return self.store.run_command(db, cmd)

    # -- authorization -------------------------------------------------------------------------

    def _unauthorized(self, db: str, cmd: Mapping[str, Any], sequence_fields: Iterable[str]) -> MongoError:
        rendered = bsonrepr.to_string(_snip_for_logging(cmd, sequence_fields))
        return auth_error("Unauthorized", f"not authorized on {db} to execute command {rendered}")

    def authorize(
        self, db: str, cmd: Mapping[str, Any], conn: ConnState, *, sequence_fields: Iterable[str] = ()
    ) -> None:
        """Raise Unauthorized (13) unless `conn` may run `cmd` on `db`.

        Unauthenticated: ``Command <name> requires authentication``; missing
        privileges: ``not authorized on <db> to execute command { ... }``.
        """
        if not self.enabled:
            return
        name = next(iter(cmd))
        user = self.authenticated_user(conn)
        bypass = localhost_bypass_active(
            conn, auth_enabled=True, has_users=self.store.has_privilege_documents(), allowed=self.localhost_exception
        )
        if name in NO_AUTH_COMMANDS:
            return
        if user is None and not bypass:
            raise auth_error("Unauthorized", f"Command {name} requires authentication")
        granted = self.granted_privileges(conn, localhost_bypass=bypass)
        held = self.store.roles_of(user) if user is not None else ()
        # in order: a Refusal is an error of its own
        for requirement in required_privileges(db, cmd, user=user, user_roles=held):
            if isinstance(requirement, Refusal):
                raise MongoError(requirement.code, requirement.message)
            if not satisfied(granted, requirement):
                raise self._unauthorized(db, cmd, sequence_fields)

    def is_authorized(self, db: str, cmd: Mapping[str, Any], conn: ConnState) -> bool:
        try:
            self.authorize(db, cmd, conn)
        except MongoError as exc:
            if exc.code == 13:
                return False
            raise
        return True

    def check_get_more(self, conn: ConnState, cursor_id: int, owner: UserName | None) -> None:
        """getMore only on one's own cursors (the server's isCoauthorizedWith)."""
        if not self.enabled:
            return
        if self.authenticated_user(conn) != owner:
            raise auth_error("Unauthorized", f"cursor id {cursor_id} was not created by the authenticated user")

    def check_kill_cursors(
        self,
        db: str,
        cmd: Mapping[str, Any],
        conn: ConnState,
        cursors: Iterable[tuple[UserName | None, str]],
    ) -> None:
        """killCursors: each found cursor must be the user's own, or the user holds killAnyCursor."""
        if not self.enabled:
            return
        user = self.authenticated_user(conn)
        granted = self.granted_privileges(conn)
        for owner, ns in cursors:
            if owner == user or is_authorized(granted, Privilege.of(CLUSTER, "killAnyCursor")):
                continue
            cdb, _, coll = ns.partition(".")
            if is_authorized(granted, Privilege.of(Resource.namespace(cdb, coll), "killAnyCursor")):
                continue
            raise self._unauthorized(db, cmd, ())

    def list_databases_filter(self, cmd: Mapping[str, Any], conn: ConnState) -> Callable[[str], bool] | None:
        """None to list every database, else a predicate keeping the databases the user may see.

        As the server: without the listDatabases privilege a user sees the databases
        it holds any privilege in (``authorizedDatabases`` defaults accordingly);
        ``authorizedDatabases: false`` without the privilege is Unauthorized.
        """
        if not self.enabled:
            return None
        bypass = localhost_bypass_active(
            conn, auth_enabled=True, has_users=self.store.has_privilege_documents(), allowed=self.localhost_exception
        )
        granted = self.granted_privileges(conn, localhost_bypass=bypass)
        may_list_all = is_authorized(granted, Privilege.of(CLUSTER, "listDatabases"))
        wanted = cmd.get("authorizedDatabases")
        if wanted is not None:
            if not wanted and not may_list_all:
                raise auth_error("Unauthorized", "Insufficient permissions to list all databases")
            restrict = bool(wanted)
        else:
            restrict = not may_list_all
        if not restrict:
            return None
        return lambda name: is_authorized_for_any_action_in_db(granted, name)
