"""The user store and the user management commands, as pure functions over it.

`UserStore` holds the documents the server keeps in ``admin.system.users``::

    {_id: "<db>.<user>", userId: UUID, user, db,
     credentials: {"SCRAM-SHA-1": {iterationCount, salt, storedKey, serverKey},
                   "SCRAM-SHA-256": {...}},
     [authenticationRestrictions], [customData], roles: [{role, db}, ...]}

and runs createUser, updateUser, dropUser, dropAllUsersFromDatabase,
grantRolesToUser, revokeRolesFromUser and usersInfo: ``reply =
store.run_command(db, cmd)`` (the reply carries ``ok: 1.0``), `MongoError`
with the server's codes and messages on bad input. Authorization is not
checked here (see `AuthManager.authorize`). The store owns the role store
(`store.roles`, ``admin.system.roles``: `router.auth.roles`) and passes it the
role management commands; a role is valid when it is built-in or defined
there (RoleNotFound otherwise), and dropping a role takes it from every user.

The ``--users FILE`` format (`load_users_file`): a JSON array of createUser
documents, each optionally naming its database (default ``admin``)::

    [
      {"createUser": "admin", "pwd": "secret", "roles": ["root"]},
      {"createUser": "app", "pwd": "p", "db": "shop",
       "roles": ["readWrite", {"role": "read", "db": "reports"}],
       "mechanisms": ["SCRAM-SHA-256"], "customData": {"team": "web"}},
      {"createUser": "ci", "db": "admin", "roles": [{"role": "clusterMonitor", "db": "admin"}],
       "credentials": {"SCRAM-SHA-256": {"iterationCount": 15000, "salt": "...",
                                          "storedKey": "...", "serverKey": "..."}}}
    ]

Each entry is run through createUser (same validation and errors, the file
name and entry index prepended to the message); an entry may give
``credentials`` (as ``usersInfo`` with ``showCredentials`` prints them)
instead of ``pwd`` so that no clear-text password need be stored. An entry
starting with ``createRole`` runs through createRole instead (before the users
that hold the role).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from bson.binary import Binary

from mongosim.oplog.errors import MongoError
from mongosim.router.auth.commands import users_info_targets
from mongosim.router.auth.names import (
    RoleName,
    UserName,
    auth_error,
    check_fields,
    missing_field,
    parse_role_names,
)
from mongosim.router.auth.privileges import Privilege as _Privilege
from mongosim.router.auth.privileges import Resolved
from mongosim.router.auth.restrictions import validated
from mongosim.router.auth.roles import ROLE_COMMANDS, RoleStore
from mongosim.router.auth.saslprep import SASLprepError
from mongosim.router.auth.scram import MECHANISMS, ScramCredential, make_credential
from mongosim.shardsim.query.idl_errors import wrong_type

__all__ = ["USER_COMMANDS", "UserStore", "load_users", "load_users_file"]

USER_COMMANDS = frozenset(
    {
        "createUser",
        "updateUser",
        "dropUser",
        "dropAllUsersFromDatabase",
        "grantRolesToUser",
        "revokeRolesFromUser",
        "usersInfo",
    }
)

_OK = 1.0


def _ok(**fields: Any) -> dict[str, Any]:
    return {**fields, "ok": _OK}


def _user_param(command: str, cmd: Mapping[str, Any]) -> str:
    value = cmd[command]
    if not isinstance(value, str):
        raise wrong_type(f"{command}.{command}", value, "string")
    return value


def _opt(command: str, cmd: Mapping[str, Any], field: str, kind: type | tuple[type, ...], expected: str) -> Any:
    """An optional field of type `kind` (None when absent), the IDL TypeMismatch otherwise."""
    if field not in cmd:
        return None
    value = cmd[field]
    if not isinstance(value, kind):
        raise wrong_type(f"{command}.{field}", value, expected)
    return value


def _opt_bool(command: str, cmd: Mapping[str, Any], field: str, default: bool) -> bool:
    if field not in cmd:
        return default
    value = cmd[field]
    if not isinstance(value, bool):
        raise wrong_type(f"{command}.{field}", value, "bool")
    return value


def _mechanism_list(command: str, cmd: Mapping[str, Any]) -> list[str] | None:
    mechs = _opt(command, cmd, "mechanisms", (list, tuple), "array")
    if mechs is None:
        return None
    for i, mech in enumerate(mechs):
        if not isinstance(mech, str):
            raise wrong_type(f"{command}.mechanisms.{i}", mech, "string")
    return list(mechs)


class UserStore:
    """In-memory ``admin.system.users``; see the module docstring."""

    def __init__(
        self,
        *,
        mechanisms: Iterable[str] = MECHANISMS,
        iterations: Mapping[str, int] | None = None,
        uuid_factory: Callable[[], uuid.UUID] = uuid.uuid4,
    ) -> None:
        self.mechanisms = tuple(mechanisms)  # the server's authenticationMechanisms
        self.iterations = dict(iterations or {})
        self._uuid = uuid_factory
        self.docs: dict[UserName, dict[str, Any]] = {}
        self.generation = 0  # bumped on every change (the server's user cache generation)
        self.on_change: list[Callable[[], None]] = []  # run after every change of a user or role
        self._restricted: tuple[int, bool] = (-1, False)  # (generation, has_restrictions)
        self.roles = RoleStore()
        self.roles.on_drop.append(self._pull_roles)
        self.roles.on_change.append(self._bump)

    # -- reading -------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.docs)

    def has_users(self) -> bool:
        return bool(self.docs)

    def has_privilege_documents(self) -> bool:
        """Any user or role (the server's hasAnyPrivilegeDocuments, which ends the localhost exception)."""
        return bool(self.docs) or bool(len(self.roles))

    def get(self, name: UserName) -> dict[str, Any] | None:
        return self.docs.get(name)

    def credential(self, name: UserName, mechanism: str) -> ScramCredential | None:
        """The user's credential for `mechanism`; None when it has none. KeyError for an unknown user."""
        doc = self.docs[name]
        creds = doc.get("credentials", {})
        if mechanism not in creds:
            return None
        try:
            return ScramCredential.from_doc(mechanism, creds[mechanism])
        except ValueError:
            return None

    def mechanisms_of(self, name: UserName) -> list[str]:
        doc = self.docs.get(name)
        if doc is None:
            return []
        return [m for m in doc.get("credentials", {}) if m in MECHANISMS]

    def roles_of(self, name: UserName) -> list[RoleName]:
        doc = self.docs.get(name)
        if doc is None:
            return []
        return [RoleName(r["role"], r["db"]) for r in doc.get("roles", [])]

    def has_restrictions(self) -> bool:
        """Whether any user or role has authenticationRestrictions (computed once per change)."""
        if self._restricted[0] != self.generation:
            restricted = any(d.get("authenticationRestrictions") for d in self.docs.values()) or any(
                d.get("authenticationRestrictions") for d in self.roles.system_roles())
            self._restricted = (self.generation, restricted)
        return self._restricted[1]

    def restrictions_of(self, name: UserName) -> list[Any]:
        """The authenticationRestrictions arrays `name` must meet: its own, then those of every
        user-defined role it holds or inherits (router.auth.restrictions)."""
        doc = self.docs.get(name)
        if doc is None:
            return []
        own = doc.get("authenticationRestrictions")
        return [*([own] if own else []), *self.roles.inherited_restrictions(self.resolved(name).roles)]

    def system_users(self) -> list[dict[str, Any]]:
        """The ``admin.system.users`` documents, ordered by ``_id``."""
        return [self.docs[k] for k in sorted(self.docs, key=lambda n: n.unambiguous)]

    # -- dispatch ------------------------------------------------------------------------------

    def run_command(self, db: str, cmd: Mapping[str, Any]) -> dict[str, Any]:
        name = next(iter(cmd))
        if name in ROLE_COMMANDS:
            return self.roles.run_command(db, cmd)
        handler = {
            "createUser": self.create_user,
            "updateUser": self.update_user,
            "dropUser": self.drop_user,
            "dropAllUsersFromDatabase": self.drop_all_users_from_database,
            "grantRolesToUser": self.grant_roles_to_user,
            "revokeRolesFromUser": self.revoke_roles_from_user,
            "usersInfo": self.users_info,
        }.get(name)
        if handler is None:
            raise auth_error("CommandNotFound", f"no such command: '{name}'")
        return handler(db, cmd)

    # -- helpers -------------------------------------------------------------------------------

    def _roles_exist(self, roles: Iterable[RoleName]) -> None:
        self.roles.check_exist(roles)

    def _pull_roles(self, doomed: Callable[[RoleName], bool]) -> None:
        """A dropped role leaves every user holding it ($pull from admin.system.users)."""
        changed = False
        for doc in self.docs.values():
            kept = [r for r in doc["roles"] if not doomed(RoleName(r["role"], r["db"]))]
            if len(kept) != len(doc["roles"]):
                doc["roles"] = kept
                changed = True
        if changed:
            self._bump()

    def resolved(self, name: UserName) -> Resolved:
        """The user's roles with every role they inherit, and the privileges they grant (the role
        graph's resolveRoles, cached there per change)."""
        return self.roles.graph.resolve(self.roles_of(name))

    def effective_privileges(self, name: UserName) -> dict[Any, frozenset[str]]:
        """What the user may do: its roles' privileges and every inherited role's, transitively."""
        return self.resolved(name).privileges

    def _build_credentials(self, command: str, name: UserName, cmd: Mapping[str, Any]) -> dict[str, Any]:
        pwd = cmd["pwd"]
        mechs = _mechanism_list(command, cmd)
        if mechs:
            build = []
            for mech in mechs:
                if mech not in MECHANISMS:
                    raise auth_error("BadValue", f"Unknown auth mechanism '{mech}'")
                if mech not in self.mechanisms:
                    raise auth_error("BadValue", f"{mech} not supported in authMechanisms")
                build.append(mech)
        else:
            build = [m for m in MECHANISMS if m in self.mechanisms]
        digest = _opt_bool(command, cmd, "digestPassword", True)
        creds: dict[str, Any] = {}
        for mech in MECHANISMS:  # the server builds SHA-1 first, then SHA-256
            if mech not in build:
                continue
            if mech == "SCRAM-SHA-256" and not digest:
                raise auth_error("BadValue", "Use of SCRAM-SHA-256 requires undigested passwords")
            try:
                cred = make_credential(
                    mech, name.user, pwd, iterations=self.iterations.get(mech), digest_password=digest
                )
            except SASLprepError as exc:
                raise auth_error("BadValue", f"Error preparing SASL string: {exc}") from None
            creds[mech] = cred.to_doc()
        return creds

    def _bump(self) -> None:
        self.generation += 1
        for listener in self.on_change:
            listener()

    # -- saving and restoring (--data-dir: mongosim/durability.py) --------------------------------

    def export(self) -> dict[str, Any]:
        """The ``admin.system.users`` and ``admin.system.roles`` documents."""
        return {"users": list(self.docs.values()), "roles": self.roles.system_roles()}

    def restore(self, saved: Mapping[str, Any]) -> None:
        """Take back what `export` gave: each saved user and role replaces one of its name."""
        for doc in saved.get("roles", []):
            self.roles.restore(doc)
        for doc in saved.get("users", []):
            self.docs[UserName(doc["user"], doc["db"])] = doc
        self._bump()

    # -- createUser ----------------------------------------------------------------------------

    def create_user(self, db: str, cmd: Mapping[str, Any]) -> dict[str, Any]:
        command = "createUser"
        check_fields(
            command,
            cmd,
            ("pwd", "customData", "roles", "digestPassword", "authenticationRestrictions", "mechanisms", "credentials"),
        )
        user = _user_param(command, cmd)
        if "roles" not in cmd:
            raise missing_field(command, "roles")
        roles = parse_role_names(command, "roles", cmd["roles"], db)
        pwd = _opt(command, cmd, "pwd", str, "string")
        custom = _opt(command, cmd, "customData", dict, "object")
        restrictions = _opt(command, cmd, "authenticationRestrictions", (list, tuple), "array")
        if restrictions is not None:
            restrictions = validated(restrictions)
        mechs = _mechanism_list(command, cmd)
        _opt_bool(command, cmd, "digestPassword", True)
        stored = cmd.get("credentials")  # mongosim extension for --users files
        if stored is not None and not isinstance(stored, Mapping):
            raise wrong_type(f"{command}.credentials", stored, "object")

        if db == "local":
            raise auth_error("BadValue", "Cannot create users in the local database")
        if "\0" in user:
            raise auth_error("BadValue", "Username cannot contain NULL characters")
        name = UserName(user, db)
        external = db == "$external"
        if pwd is None and stored is None and not external:
            raise auth_error(
                "BadValue",
                "Must provide a 'pwd' field for all user documents, except those with '$external' as the user's source db",
            )
        if (pwd is not None or stored is not None) and external:
            raise auth_error("BadValue", "Cannot set the password for users defined on the '$external' database")
        if mechs is not None and not mechs:
            raise auth_error("BadValue", "mechanisms field must not be empty")

        doc: dict[str, Any] = {"_id": name.unambiguous, "userId": Binary.from_uuid(self._uuid()), "user": user, "db": db}
        if external:
            doc["credentials"] = {"external": True}
        elif stored is not None:
            doc["credentials"] = self._checked_stored_credentials(stored)
        else:
            doc["credentials"] = self._build_credentials(command, name, cmd)
        if restrictions:
            doc["authenticationRestrictions"] = list(restrictions)
        if custom is not None:
            doc["customData"] = custom
        doc["roles"] = [r.to_doc() for r in roles]
        if not user:
            raise auth_error("BadValue", "User document needs 'user' field to be non-empty")
        self._roles_exist(roles)
        if name in self.docs:
            raise auth_error(51003, f'User "{name}" already exists')
        self.docs[name] = doc
        self._bump()
        return _ok()

    def _checked_stored_credentials(self, stored: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for mech, cred in stored.items():
            if mech not in MECHANISMS:
                raise auth_error("BadValue", f"Unknown auth mechanism '{mech}'")
            try:
                out[mech] = ScramCredential.from_doc(mech, cred).to_doc()
            except ValueError as exc:
                raise auth_error("BadValue", f"Invalid {mech} credentials: {exc}") from None
        if not out:
            raise auth_error("BadValue", "mechanisms field must not be empty")
        return out

    # -- updateUser ----------------------------------------------------------------------------

    def update_user(self, db: str, cmd: Mapping[str, Any]) -> dict[str, Any]:
        command = "updateUser"
        check_fields(
            command,
            cmd,
            ("pwd", "customData", "roles", "digestPassword", "authenticationRestrictions", "mechanisms"),
        )
        user = _user_param(command, cmd)
        name = UserName(user, db)
        pwd = _opt(command, cmd, "pwd", str, "string")
        custom = _opt(command, cmd, "customData", dict, "object")
        restrictions = _opt(command, cmd, "authenticationRestrictions", (list, tuple), "array")
        if restrictions is not None:
            restrictions = validated(restrictions)
        mechs = _mechanism_list(command, cmd)
        _opt_bool(command, cmd, "digestPassword", True)
        roles = parse_role_names(command, "roles", cmd["roles"], db) if "roles" in cmd else None

        if mechs is not None and not mechs:
            raise auth_error("BadValue", "mechanisms field must not be empty")
        doc = self.docs.get(name)
        new_creds = None
        if pwd is not None:
            if db == "$external":
                raise auth_error("BadValue", "Cannot set the password for users defined on the '$external' database")
            new_creds = self._build_credentials(command, name, cmd)
        elif mechs is not None:
            if doc is None:
                raise auth_error(
                    "UserNotFound", f'Could not find user "{name.user}" for db "{name.db}"'
                )
            creds = doc.get("credentials")
            if not isinstance(creds, dict):
                raise auth_error(
                    "UnsupportedFormat",
                    "Unable to trim credentials from a user document with no credentials",
                )
            for mech in mechs:
                if mech not in creds:
                    raise auth_error("BadValue", "mechanisms field must be a subset of previously set mechanisms")
            kept = {m: v for m, v in creds.items() if m in mechs and m in MECHANISMS}
            if not kept:
                raise auth_error(
                    "BadValue", "mechanisms field must contain at least one previously set known mechanism"
                )
            new_creds = {m: v for m, v in creds.items() if m in kept or m not in MECHANISMS}
        if new_creds is None and custom is None and restrictions is None and roles is None:
            raise auth_error("BadValue", "Must specify at least one field to update in updateUser")
        if roles is not None:
            self._roles_exist(roles)
        if doc is None:
            raise auth_error("UserNotFound", f"User {name} not found")
        if new_creds is not None:
            doc["credentials"] = new_creds
        if restrictions is not None:
            if restrictions:
                doc["authenticationRestrictions"] = list(restrictions)
            else:
                doc.pop("authenticationRestrictions", None)
        if custom is not None:
            doc["customData"] = custom
        if roles is not None:
            doc["roles"] = [r.to_doc() for r in dict.fromkeys(roles)]
        self._reorder(doc)
        self._bump()
        return _ok()

    @staticmethod
    def _reorder(doc: dict[str, Any]) -> None:
        # $set of a new field appends it; keep the createUser order instead so documents stay canonical
        order = ("_id", "userId", "user", "db", "credentials", "authenticationRestrictions", "customData", "roles")
        items = sorted(doc.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order))
        doc.clear()
        doc.update(items)

    # -- dropUser / dropAllUsersFromDatabase ---------------------------------------------------

    def drop_user(self, db: str, cmd: Mapping[str, Any]) -> dict[str, Any]:
        command = "dropUser"
        check_fields(command, cmd, ())
        name = UserName(_user_param(command, cmd), db)
        if self.docs.pop(name, None) is None:
            raise auth_error("UserNotFound", f"User '{name}' not found")
        self._bump()
        return _ok()

    def drop_all_users_from_database(self, db: str, cmd: Mapping[str, Any]) -> dict[str, Any]:
        check_fields("dropAllUsersFromDatabase", cmd, ())
        doomed = [name for name in self.docs if name.db == db]
        for name in doomed:
            del self.docs[name]
        if doomed:
            self._bump()
        return _ok(n=len(doomed))

    # -- grantRolesToUser / revokeRolesFromUser -------------------------------------------------

    def _change_roles(self, command: str, db: str, cmd: Mapping[str, Any], grant: bool) -> dict[str, Any]:
        check_fields(command, cmd, ("roles",))
        name = UserName(_user_param(command, cmd), db)
        if "roles" not in cmd:
            raise missing_field(command, "roles")
        roles = parse_role_names(command, "roles", cmd["roles"], db)
        if not roles:
            raise auth_error("BadValue", f'{command} command requires a non-empty "roles" array')
        doc = self.docs.get(name)
        if doc is None:
            raise auth_error("UserNotFound", f'Could not find user "{name.user}" for db "{name.db}"')
        self._roles_exist(roles)
        current = [RoleName(r["role"], r["db"]) for r in doc["roles"]]
        if grant:
            updated = list(dict.fromkeys([*current, *roles]))
        else:
            gone = set(roles)
            updated = [r for r in current if r not in gone]
        doc["roles"] = [r.to_doc() for r in updated]
        self._bump()
        return _ok()

    def grant_roles_to_user(self, db: str, cmd: Mapping[str, Any]) -> dict[str, Any]:
        return self._change_roles("grantRolesToUser", db, cmd, grant=True)

    def revoke_roles_from_user(self, db: str, cmd: Mapping[str, Any]) -> dict[str, Any]:
        return self._change_roles("revokeRolesFromUser", db, cmd, grant=False)

    # -- usersInfo -----------------------------------------------------------------------------

    def users_info(self, db: str, cmd: Mapping[str, Any]) -> dict[str, Any]:
        command = "usersInfo"
        check_fields(
            command,
            cmd,
            ("showCredentials", "showCustomData", "showPrivileges", "showAuthenticationRestrictions", "filter"),
        )
        kind, names = users_info_targets(db, cmd[command])
        show_credentials = _opt_bool(command, cmd, "showCredentials", False)
        show_custom = _opt_bool(command, cmd, "showCustomData", True)
        show_privileges = _opt_bool(command, cmd, "showPrivileges", False)
        show_restrictions = _opt_bool(command, cmd, "showAuthenticationRestrictions", False)
        flt = _opt(command, cmd, "filter", dict, "object")

        if show_privileges or show_restrictions:
            if flt is not None or kind != "exact":
                raise auth_error(
                    "IllegalOperation", "Privilege or restriction details require exact-match usersInfo queries"
                )
            users = []
            for name in names:
                doc = self.docs.get(name)
                if doc is None:
                    continue
                users.append(
                    self._report(doc, show_credentials, show_custom, show_privileges, show_restrictions)
                )
            return _ok(users=users)

        if kind == "all":
            selected = list(self.docs.values())
        elif kind == "all_db":
            selected = [doc for name, doc in self.docs.items() if name.db == db]
        else:
            wanted = set(names)
            selected = [doc for name, doc in self.docs.items() if name in wanted]
        selected.sort(key=lambda d: (d["user"], d["db"]))  # {$sort: {user: 1, db: 1}}
        users = []
        for doc in selected:
            out = {k: v for k, v in doc.items() if k != "authenticationRestrictions"}
            out["mechanisms"] = list(doc.get("credentials", {}))
            if not show_credentials:
                out.pop("credentials", None)
            if not show_custom:
                out.pop("customData", None)
            if flt is not None and not _matches(out, flt):
                continue
            users.append(out)
        return _ok(users=users)

    def _report(
        self, doc: dict[str, Any], credentials: bool, custom: bool, privileges: bool, restrictions: bool
    ) -> dict[str, Any]:
        """The single-user report (the server's User::reportForUsersInfo)."""
        out: dict[str, Any] = {
            "_id": doc["_id"],
            "userId": doc["userId"],
            "user": doc["user"],
            "db": doc["db"],
        }
        if custom and "customData" in doc:
            out["customData"] = doc["customData"]
        out["mechanisms"] = [m for m in doc.get("credentials", {}) if m in MECHANISMS]
        out["roles"] = list(doc["roles"])
        if credentials:
            out["credentials"] = doc.get("credentials", {})
        if privileges:
            direct = [RoleName(r["role"], r["db"]) for r in doc["roles"]]
            resolved = self.roles.graph.resolve(direct)
            # User::_indirectRoles is sorted (RoleName orders by db, then role)
            out["inheritedRoles"] = [r.to_doc() for r in sorted(resolved.roles, key=lambda r: (r.db, r.role))]
            granted = resolved.privileges
            out["inheritedPrivileges"] = [
                _Privilege(res, granted[res]).to_doc() for res in sorted(granted, key=_resource_key)
            ]
        if restrictions:
            out["authenticationRestrictions"] = [doc.get("authenticationRestrictions", [])]
            direct = [RoleName(r["role"], r["db"]) for r in doc["roles"]]
            out["inheritedAuthenticationRestrictions"] = self.roles.inherited_restrictions(
                self.roles.graph.resolve(direct).roles)
        return out

    # -- users file ----------------------------------------------------------------------------

    def load_users(self, entries: Any, *, source: str = "users") -> list[UserName]:
        """Create every entry of a ``--users`` list (see the module docstring)."""
        if not isinstance(entries, list):
            raise auth_error("BadValue", f"{source}: expected a JSON array of createUser documents")
        created = []
        for i, entry in enumerate(entries):
            where = f"{source}[{i}]"
            first = next(iter(entry)) if isinstance(entry, dict) and entry else None
            if first not in ("createUser", "createRole"):
                raise auth_error(
                    "BadValue", f"{where}: each entry must be a document starting with 'createUser' or 'createRole'"
                )
            entry = dict(entry)
            db = entry.pop("db", "admin")
            if not isinstance(db, str) or not db:
                raise auth_error("BadValue", f"{where}: 'db' must be a non-empty string")
            try:
                if first == "createRole":
                    self.roles.run_command(db, entry)
                else:
                    self.create_user(db, entry)
            except MongoError as exc:
                err = MongoError(exc.code, f"{where}: {exc.errmsg}")
                err.code_name = exc.code_name
                raise err from None
            if first == "createUser":
                created.append(UserName(entry["createUser"], db))
        return created

    def load_users_file(self, path: str | os.PathLike[str]) -> list[UserName]:
        with open(path, encoding="utf-8") as fh:
            try:
                entries = json.load(fh)
            except json.JSONDecodeError as exc:
                raise auth_error("FailedToParse", f"{os.fspath(path)}: {exc}") from None
        return self.load_users(entries, source=os.fspath(path))


def load_users(store: UserStore, entries: Any) -> list[UserName]:
    return store.load_users(entries)


def load_users_file(store: UserStore, path: str | os.PathLike[str]) -> list[UserName]:
    return store.load_users_file(path)


def _resource_key(res: Any) -> tuple[int, str, str]:
    order = {"any": 0, "cluster": 1, "any_normal": 2, "database": 3, "collection": 4, "namespace": 5}
    return order.get(res.kind, len(order)), res.db, res.coll


def _matches(doc: Mapping[str, Any], flt: Mapping[str, Any]) -> bool:
    """The usersInfo ``filter``: equality per top-level field, array fields matching an element."""
    for key, want in flt.items():
        if key.startswith("$"):
            raise auth_error("BadValue", f"unsupported usersInfo filter operator: {key}")
        have = doc.get(key)
        if isinstance(have, list) and not isinstance(want, list):
            if want not in have:
                return False
        elif have != want:
            return False
    return True

