"""User-defined roles: the role store (``admin.system.roles``) and the role management commands.

`RoleStore` holds the documents the server keeps in ``admin.system.roles``::

    {_id: "<db>.<role>", role, db,
     privileges: [{resource: {db, collection} | {cluster: true} | {anyResource: true} | ...,
                   actions: [...]}, ...],
     roles: [{role, db}, ...],
     [authenticationRestrictions: [...]]}

in insertion order (the collection's natural order), with the `RoleGraph` that
authorization reads kept in step. ``reply = store.run_command(db, cmd)`` runs
createRole, updateRole, dropRole, dropAllRolesFromDatabase, grantRolesToRole,
revokeRolesFromRole, grantPrivilegesToRole, revokePrivilegesFromRole and
rolesInfo, following user_management_commands.cpp of MongoDB 8.0: the same
validation in the same order, the same codes and messages. Authorization is
checked before (`router.auth.commands`), not here. The `UserStore` owns one
`RoleStore` and listens for drops, so dropRole and dropAllRolesFromDatabase
also take the roles away from every user (and every role) holding them.

The rules, in the server's words:

- a role's privileges name resources of its own database (``{db: D,
  collection: ...}``) unless the role is on ``admin`` ("Roles on the 'D'
  database cannot be granted privileges that target other databases or the
  cluster"); likewise its roles (InvalidRoleModification 49);
- granting roles that would make a role inherit itself is refused ("Granting
  roles to r@d would introduce a cycle in the role graph"): the graph stays a DAG;
- built-in role names are reserved (createRole: "Cannot create roles with the
  same name as a built-in role"; the others: "r@d is a built-in role and cannot
  be modified");
- an existing role: Location51002 ``Role "r@d" already exists``; a missing one:
  RoleNotFound 31 ("Could not find role: r@d", or "Role r@d not found" from the
  commands that update its document);
- unknown actions: BadValue "Unknown action type(s) in privilege set: 'x', 'y'"
  (``anyAction`` stands for all of them).

The IDL-level parse (`parse_role_command`, `parse_roles_info`) is shared with
the authorization rules, so a malformed command gets the same error whether
or not the client may run it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bson.decimal128 import Decimal128

from mongosim.oplog.errors import MongoError
from mongosim.router.auth import bsonrepr
from mongosim.router.auth.restrictions import validated
from mongosim.router.auth.names import (
    GENERIC_ARGUMENTS,
    RoleName,
    auth_error,
    missing_field,
    parse_role_name,
    parse_role_names,
    unknown_field,
)
from mongosim.router.auth.privileges import (
    ACTION_TYPES,
    ALL_ACTIONS,
    ANY,
    ANY_NORMAL,
    CLUSTER,
    Privilege,
    Resource,
    builtin_privileges,
    builtin_role_names,
    is_builtin_role,
)
from mongosim.router.auth.role_graph import RoleGraph
from mongosim.shardsim.query.idl_errors import wrong_type

__all__ = [
    "ROLE_COMMANDS",
    "ParsedPrivilege",
    "RoleCommand",
    "RoleStore",
    "RolesInfoArgs",
    "parse_role_command",
    "parse_roles_info",
    "resolve_privilege",
]

ROLE_COMMANDS = frozenset(
    {
        "createRole",
        "updateRole",
        "dropRole",
        "dropAllRolesFromDatabase",
        "grantRolesToRole",
        "revokeRolesFromRole",
        "grantPrivilegesToRole",
        "revokePrivilegesFromRole",
        "rolesInfo",
    }
)

_KNOWN_ACTIONS = frozenset(ACTION_TYPES)
_SAFE_BOOL = ("bool", "long", "int", "decimal", "double")


def _ok(**fields: Any) -> dict[str, Any]:
    return {**fields, "ok": 1.0}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, Decimal128)) and not isinstance(value, bool)


def _true_value(value: Any) -> bool:
    """BSONElement::trueValue of a bool or a number (NaN is true)."""
    if isinstance(value, Decimal128):
        value = value.to_decimal()
        return value.is_nan() or value != 0
    return bool(value) or (isinstance(value, float) and math.isnan(value))


def _safe_bool(command: str, path: str, value: Any) -> bool:
    """An IDL safeBool: a bool or any number."""
    if isinstance(value, bool) or _is_number(value):
        return _true_value(value)
    raise wrong_type(f"{command}.{path}", value, _SAFE_BOOL)


# -- privileges ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParsedPrivilege:
    """A privilege document as the IDL parses it (auth::ParsedPrivilege): types checked, meaning not yet."""

    resource: dict[str, Any]
    actions: tuple[str, ...]


_RESOURCE_FIELDS = {"cluster": "bool", "anyResource": "bool", "db": "string", "collection": "string",
                    "system_buckets": "string"}


def _parse_resource(command: str, path: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise wrong_type(f"{command}.{path}", value, "object")
    out: dict[str, Any] = {}
    for name, item in value.items():  # strict: false, unknown fields are ignored
        kind = _RESOURCE_FIELDS.get(name)
        if kind == "bool":
            out[name] = _safe_bool(command, f"{path}.{name}", item)
        elif kind == "string":
            if not isinstance(item, str):
                raise wrong_type(f"{command}.{path}.{name}", item, "string")
            out[name] = item
    return out


def parse_privileges(command: str, field_name: str, value: Any) -> list[ParsedPrivilege]:
    """An ``array<ParsedPrivilege>`` field: IDL type errors and missing ``resource`` / ``actions``."""
    if not isinstance(value, (list, tuple)):
        raise wrong_type(f"{command}.{field_name}", value, "array")
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise wrong_type(f"{command}.{field_name}.{i}", item, "object")
        resource = actions = None
        for name, part in item.items():
            if name == "resource":
                resource = _parse_resource(command, f"{field_name}.resource", part)
            elif name == "actions":
                if not isinstance(part, (list, tuple)):
                    raise wrong_type(f"{command}.{field_name}.actions", part, "array")
                for j, action in enumerate(part):
                    if not isinstance(action, str):
                        raise wrong_type(f"{command}.{field_name}.actions.{j}", action, "string")
                actions = tuple(part)
        if resource is None:
            raise missing_field(command, f"{field_name}.resource")
        if actions is None:
            raise missing_field(command, f"{field_name}.actions")
        out.append(ParsedPrivilege(resource, actions))
    return out


def _conflict(resource: str, found: str) -> MongoError:
    return auth_error("BadValue", f"{resource} conflicts with resource type '{found}'")


def _valid_collection_name(db: str, coll: str) -> bool:
    if coll and not coll.startswith(".") and "\0" not in coll and "$" not in coll:
        return True
    return db == "local" and coll == "oplog.$main"


def _resolve_resource(rsrc: Mapping[str, Any]) -> Resource:
    """Privilege::resolvePrivilegeWithTenant's resource half: the pattern a parsed resource names."""
    if "cluster" in rsrc:
        here = "resource: {cluster: true}"
        if not rsrc["cluster"]:
            raise auth_error("BadValue", "resource: {cluster: false} must be true")
        for other in ("anyResource", "db", "collection", "system_buckets"):
            if other in rsrc:
                raise _conflict(here, other)
        return CLUSTER
    if "anyResource" in rsrc:
        here = "resource: {anyResource: true}"
        if not rsrc["anyResource"]:
            raise auth_error("BadValue", "resource: {anyResource: false} must be true")
        for other in ("db", "collection", "system_buckets"):
            if other in rsrc:
                raise _conflict(here, other)
        return ANY
    has_coll, has_buckets = "collection" in rsrc, "system_buckets" in rsrc
    if has_coll and has_buckets:
        raise _conflict("resource: {collection: '...'}", "system_buckets")
    if has_coll:
        if "db" not in rsrc:
            raise auth_error("BadValue", "resource {collection: '...'} must include 'db' field as well")
        db, coll = rsrc["db"], rsrc["collection"]
        if coll and not _valid_collection_name(db, coll):
            raise auth_error("BadValue", f"'{coll}' is not a valid collection name")
        if not db and not coll:
            return ANY_NORMAL
        if not db:
            return Resource.collection(coll)
        if not coll:
            return Resource.database(db)
        return Resource.namespace(db, coll)
    if has_buckets:
        bucket, db = rsrc["system_buckets"], rsrc.get("db", "")
        if not db:
            return Resource("buckets_named", "", bucket) if bucket else Resource("any_buckets")
        return Resource("buckets", db, bucket) if bucket else Resource("buckets_in_db", db)
    raise auth_error("BadValue", "resource pattern must contain 'collection' or 'systemBuckets' specifier")


def resolve_privilege(parsed: ParsedPrivilege, unknown: list[str] | None = None) -> Privilege:
    """The privilege a parsed document grants (BadValue for a malformed resource or no actions).

    Unknown action names are left out and, when `unknown` is given, listed there (the caller
    raises them: `unknown_actions_error`); ``anyAction`` expands to every action.
    """
    resource = _resolve_resource(parsed.resource)
    if not parsed.actions:
        raise auth_error("BadValue", "'actions' field of privilege resource must not be empty")
    actions: set[str] = set()
    for action in parsed.actions:
        if action == "anyAction":
            return Privilege(resource, ALL_ACTIONS)
        if action in _KNOWN_ACTIONS:
            actions.add(action)
        elif unknown is not None:
            unknown.append(action)
    return Privilege(resource, frozenset(actions))


def unknown_actions_error(unknown: Iterable[str]) -> MongoError:
    names = sorted(set(unknown))
    label = "Unknown action types" if len(names) > 1 else "Unknown action type"
    return auth_error("BadValue", f"{label} in privilege set:" + ",".join(f" '{a}'" for a in names))


def _privilege_vector(parsed: Iterable[ParsedPrivilege]) -> dict[Resource, frozenset[str]]:
    """Resolve every privilege, raise the unknown actions, merge by resource (first appearance order)."""
    unknown: list[str] = []
    merged: dict[Resource, frozenset[str]] = {}
    resolved = [resolve_privilege(p, unknown) for p in parsed]
    if unknown:
        raise unknown_actions_error(unknown)
    for resource, actions in resolved:
        merged[resource] = merged.get(resource, frozenset()) | actions
    return merged


def _privilege_docs(privileges: Mapping[Resource, frozenset[str]]) -> list[dict[str, Any]]:
    return [Privilege(resource, actions).to_doc() for resource, actions in privileges.items()]


def _privileges_of(doc: Mapping[str, Any]) -> dict[Resource, frozenset[str]]:
    """A stored role document's privileges, as the graph holds them."""
    return _privilege_vector(parse_privileges("resolveRoles", "privileges", doc.get("privileges", [])))


# -- the commands' IDL ---------------------------------------------------------------------------


@dataclass
class RoleCommand:
    """A parsed role management command (the fields it names; None when absent)."""

    command: str
    name: str | None = None
    privileges: list[ParsedPrivilege] | None = None
    roles: list[RoleName] | None = None
    restrictions: list[Any] | None = None


# command -> (its fields, the required ones); every one takes a string but dropAllRolesFromDatabase
_COMMAND_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "createRole": (("privileges", "roles", "authenticationRestrictions"), ("privileges", "roles")),
    "updateRole": (("privileges", "roles", "authenticationRestrictions"), ()),
    "grantPrivilegesToRole": (("privileges",), ("privileges",)),
    "revokePrivilegesFromRole": (("privileges",), ("privileges",)),
    "grantRolesToRole": (("roles",), ("roles",)),
    "revokeRolesFromRole": (("roles",), ("roles",)),
    "dropRole": ((), ()),
    "dropAllRolesFromDatabase": ((), ()),
}


def parse_role_command(db: str, cmd: Mapping[str, Any]) -> RoleCommand:
    """The IDL parse of a role command other than rolesInfo (strict: unknown fields are 40415)."""
    command = next(iter(cmd))
    known, required = _COMMAND_FIELDS[command]
    out = RoleCommand(command)
    for i, (name, value) in enumerate(cmd.items()):
        if i == 0:
            if command != "dropAllRolesFromDatabase":
                if not isinstance(value, str):
                    raise wrong_type(f"{command}.{command}", value, "string")
                out.name = value
        elif name == "privileges" and name in known:
            out.privileges = parse_privileges(command, name, value)
        elif name == "roles" and name in known:
            out.roles = list(dict.fromkeys(parse_role_names(command, name, value, db)))  # resolveRoleNames: a set
        elif name == "authenticationRestrictions" and name in known:
            if not isinstance(value, (list, tuple)):
                raise wrong_type(f"{command}.{name}", value, "array")
            out.restrictions = validated(value)
        elif name not in GENERIC_ARGUMENTS and not name.startswith("$"):
            raise unknown_field(command, name)
    for name in required:
        if getattr(out, name) is None:
            raise missing_field(command, name)
    return out


@dataclass
class RolesInfoArgs:
    """rolesInfo's argument: every role of the database (``all``) or the roles named."""

    all: bool
    names: list[RoleName] = field(default_factory=list)
    show_privileges: bool | str = False  # True, False or "asUserFragment"
    show_builtin: bool = False
    show_restrictions: bool = False


def _show_privileges(value: Any) -> bool | str:
    """auth::ParsedPrivilegeFormat::parseFromBSON."""
    if isinstance(value, bool) or _is_number(value):
        return _true_value(value)
    if value == "asUserFragment":
        return "asUserFragment"
    shown = bsonrepr.to_string({"showPrivileges": value})[2:-2]
    raise auth_error(
        "BadValue",
        "Failed to parse 'showPrivileges'. 'showPrivileges' should either be a boolean or the string "
        f"'asUserFragment', given: {shown}",
    )


def _is_one(value: Any) -> bool:
    """``isNumber() && safeNumberLong() == 1``: 1, 1.0, 1.9, Int64(1), Decimal128("1")."""
    if not _is_number(value):
        return False
    if isinstance(value, Decimal128):
        value = value.to_decimal()
        if not value.is_finite():
            return False
    elif isinstance(value, float) and not math.isfinite(value):
        return False
    return int(value) == 1


def parse_roles_info(db: str, cmd: Mapping[str, Any]) -> RolesInfoArgs:
    """The IDL parse of rolesInfo (RolesInfoCommandArg and its three options)."""
    command = "rolesInfo"
    arg = cmd[command]
    if _is_one(arg):
        out = RolesInfoArgs(all=True)
    elif isinstance(arg, (list, tuple)):
        out = RolesInfoArgs(all=False, names=[parse_role_name(item, db) for item in arg])
    else:
        out = RolesInfoArgs(all=False, names=[parse_role_name(arg, db)])
    for i, (name, value) in enumerate(cmd.items()):
        if i == 0:
            continue
        if name == "showPrivileges":
            out.show_privileges = _show_privileges(value)
        elif name == "showBuiltinRoles":
            out.show_builtin = _safe_bool(command, name, value)
        elif name == "showAuthenticationRestrictions":
            out.show_restrictions = _safe_bool(command, name, value)
        elif name not in GENERIC_ARGUMENTS and not name.startswith("$"):
            raise unknown_field(command, name)
    return out


# -- the store -----------------------------------------------------------------------------------

DropListener = Callable[[Callable[[RoleName], bool]], None]


class RoleStore:
    """In-memory ``admin.system.roles`` and its role graph; see the module docstring.

    `on_drop` listeners get a predicate naming the roles a drop removes (the user store pulls
    them from its users); `on_change` listeners run after every change.
    """

    def __init__(self) -> None:
        self.docs: dict[RoleName, dict[str, Any]] = {}
        self.graph = RoleGraph()
        self.on_drop: list[DropListener] = []
        self.on_change: list[Callable[[], None]] = []

    # -- reading -------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.docs)

    def get(self, role: RoleName) -> dict[str, Any] | None:
        return self.docs.get(RoleName(*role))

    def exists(self, role: RoleName) -> bool:
        return is_builtin_role(role) or role in self.docs

    def system_roles(self) -> list[dict[str, Any]]:
        """The ``admin.system.roles`` documents, in natural order."""
        return list(self.docs.values())

    def check_exist(self, roles: Iterable[RoleName]) -> None:
        """The server's rolesExist: RoleNotFound naming every missing role."""
        unknown = list(dict.fromkeys(r for r in roles if not self.exists(r)))
        if unknown:
            label = "Could not find roles" if len(unknown) > 1 else "Could not find role"
            raise auth_error("RoleNotFound", f"{label}: {', '.join(map(str, unknown))}")

    # -- writing -------------------------------------------------------------------------------

    def _save(self, role: RoleName, doc: dict[str, Any]) -> None:
        self.docs[role] = doc
        self.graph.put(role, _privileges_of(doc), (RoleName(r["role"], r["db"]) for r in doc["roles"]))

    def restore(self, doc: dict[str, Any]) -> None:
        """A saved ``admin.system.roles`` document taken back (UserStore.restore)."""
        self._save(RoleName(doc["role"], doc["db"]), doc)

    def _changed(self) -> None:
        for listener in self.on_change:
            listener()

    def _update(self, role: RoleName, changes: Mapping[str, Any], unset: Iterable[str] = ()) -> None:
        """updateRoleDocument: $set / $unset on the role's document; RoleNotFound when there is none."""
        doc = self.docs.get(role)
        if doc is None:
            raise auth_error("RoleNotFound", f"Role {role} not found")
        doc = dict(doc)
        doc.update(changes)
        for name in unset:
            doc.pop(name, None)
        self._save(role, doc)
        self._changed()

    # -- dispatch ------------------------------------------------------------------------------

    def run_command(self, db: str, cmd: Mapping[str, Any]) -> dict[str, Any]:
        name = next(iter(cmd))
        if name == "rolesInfo":
            return self.roles_info(db, cmd)
        handler = {
            "createRole": self.create_role,
            "updateRole": self.update_role,
            "dropRole": self.drop_role,
            "dropAllRolesFromDatabase": self.drop_all_roles_from_database,
            "grantRolesToRole": self.grant_roles_to_role,
            "revokeRolesFromRole": self.revoke_roles_from_role,
            "grantPrivilegesToRole": self.grant_privileges_to_role,
            "revokePrivilegesFromRole": self.revoke_privileges_from_role,
        }.get(name)
        if handler is None:
            raise auth_error("CommandNotFound", f"no such command: '{name}'")
        return handler(db, parse_role_command(db, cmd))

    # -- the checks the commands share ---------------------------------------------------------

    def _check_grant_roles(self, role: RoleName, granting: list[RoleName]) -> None:
        """checkOkayToGrantRolesToRole: not itself, same database unless admin, existing, no cycle."""
        for other in granting:
            if other == role:
                raise auth_error("InvalidRoleModification", f"Cannot grant role {role} to itself.")
            if role.db != "admin" and other.db != role.db:
                raise auth_error(
                    "InvalidRoleModification",
                    f"Roles on the '{role.db}' database cannot be granted roles from other databases",
                )
        try:
            self.check_exist(granting)
        except MongoError as exc:
            raise auth_error(exc.code_name, f"Cannot grant roles to '{role}': {exc.errmsg}") from None
        if self.graph.would_create_cycle(role, granting):
            raise auth_error(
                "InvalidRoleModification", f"Granting roles to {role} would introduce a cycle in the role graph"
            )

    @staticmethod
    def _check_grant_privileges(role: RoleName, privileges: Iterable[Resource]) -> None:
        """checkOkayToGrantPrivilegesToRole: a role off admin only reaches its own database."""
        if role.db == "admin":
            return
        for resource in privileges:
            if resource.kind in ("database", "namespace") and resource.db == role.db:
                continue
            raise auth_error(
                "InvalidRoleModification",
                f"Roles on the '{role.db}' database cannot be granted privileges that target other "
                "databases or the cluster",
            )

    @staticmethod
    def _not_builtin(role: RoleName) -> None:
        if is_builtin_role(role):
            raise auth_error("BadValue", f"{role} is a built-in role and cannot be modified")

    def _direct_privileges(self, role: RoleName) -> dict[Resource, frozenset[str]]:
        node = self.graph.node(role)
        return dict(node.privileges) if node is not None else {}

    def _direct_roles(self, role: RoleName) -> list[RoleName]:
        node = self.graph.node(role)
        return list(node.roles) if node is not None else []

    # -- createRole / updateRole ---------------------------------------------------------------

    def create_role(self, db: str, cmd: RoleCommand) -> dict[str, Any]:
        assert cmd.name is not None and cmd.privileges is not None and cmd.roles is not None
        if not cmd.name:
            raise auth_error("BadValue", "Role name must be non-empty")
        role = RoleName(cmd.name, db)
        if db == "local":
            raise auth_error("BadValue", "Cannot create roles in the local database")
        if db == "$external":
            raise auth_error("BadValue", "Cannot create roles in the $external database")
        if is_builtin_role(role):
            raise auth_error("BadValue", "Cannot create roles with the same name as a built-in role")
        privileges = _privilege_vector(cmd.privileges)
        doc: dict[str, Any] = {"_id": f"{db}.{cmd.name}", "role": cmd.name, "db": db,
                               "privileges": _privilege_docs(privileges),
                               "roles": [r.to_doc() for r in cmd.roles]}
        if cmd.restrictions:
            doc["authenticationRestrictions"] = list(cmd.restrictions)
        self._check_grant_roles(role, cmd.roles)
        self._check_grant_privileges(role, privileges)
        if role in self.docs:
            raise auth_error(51002, f'Role "{role}" already exists')
        self._save(role, doc)
        self._changed()
        return _ok()

    def update_role(self, db: str, cmd: RoleCommand) -> dict[str, Any]:
        assert cmd.name is not None
        role = RoleName(cmd.name, db)
        if cmd.privileges is None and cmd.roles is None and cmd.restrictions is None:
            raise auth_error("BadValue", "Must specify at least one field to update in updateRole")
        changes: dict[str, Any] = {}
        unset: list[str] = []
        privileges = None
        if cmd.privileges is not None:
            privileges = _privilege_vector(cmd.privileges)
            changes["privileges"] = _privilege_docs(privileges)
        if cmd.roles is not None:
            changes["roles"] = [r.to_doc() for r in cmd.roles]
        if cmd.restrictions is not None:
            if cmd.restrictions:
                changes["authenticationRestrictions"] = list(cmd.restrictions)
            else:
                unset.append("authenticationRestrictions")
        self.check_exist([role])
        if cmd.roles is not None:
            self._check_grant_roles(role, cmd.roles)
        if privileges:
            self._check_grant_privileges(role, privileges)
        self._update(role, changes, unset)
        return _ok()

    # -- privileges ----------------------------------------------------------------------------

    def grant_privileges_to_role(self, db: str, cmd: RoleCommand) -> dict[str, Any]:
        role, granting = self._privileges_named(db, cmd, "grantPrivilegesToRole")
        self._check_grant_privileges(role, granting)
        privileges = self._direct_privileges(role)
        for resource, actions in granting.items():
            privileges[resource] = privileges.get(resource, frozenset()) | actions
        self._update(role, {"privileges": _privilege_docs(privileges)})
        return _ok()

    def revoke_privileges_from_role(self, db: str, cmd: RoleCommand) -> dict[str, Any]:
        role, revoking = self._privileges_named(db, cmd, "revokePrivilegesFromRole")
        privileges = self._direct_privileges(role)
        for resource, actions in revoking.items():
            held = privileges.get(resource)
            if held is None:
                continue  # revoking what the role does not hold is no error
            left = held - actions
            if actions:
                left -= {"anyAction"}  # (ActionSet::removeAllActionsFromSet)
            if left:
                privileges[resource] = left
            else:
                del privileges[resource]
        self._update(role, {"privileges": _privilege_docs(privileges)})
        return _ok()

    def _privileges_named(self, db: str, cmd: RoleCommand, command: str) -> tuple[RoleName, dict]:
        """The role a grant/revokePrivileges command names and its privileges as a vector."""
        role = self._role_named(db, cmd, command, cmd.privileges, "privileges")
        return role, _privilege_vector(cmd.privileges)

    def _role_named(self, db: str, cmd: RoleCommand, command: str, items: Any, field: str) -> RoleName:
        """The role a grant/revoke command names (not a built-in one); BadValue for an empty list."""
        assert cmd.name is not None and items is not None
        role = RoleName(cmd.name, db)
        if not items:
            raise auth_error("BadValue", f'{command} command requires a non-empty "{field}" array')
        self._not_builtin(role)
        return role

    # -- roles ---------------------------------------------------------------------------------

    def grant_roles_to_role(self, db: str, cmd: RoleCommand) -> dict[str, Any]:
        role = self._role_named(db, cmd, "grantRolesToRole", cmd.roles, "roles")
        self._check_grant_roles(role, cmd.roles)
        roles = list(dict.fromkeys([*self._direct_roles(role), *cmd.roles]))
        self._update(role, {"roles": [r.to_doc() for r in roles]})
        return _ok()

    def revoke_roles_from_role(self, db: str, cmd: RoleCommand) -> dict[str, Any]:
        role = self._role_named(db, cmd, "revokeRolesFromRole", cmd.roles, "roles")
        gone = set(cmd.roles)
        roles = [r for r in self._direct_roles(role) if r not in gone]
        self._update(role, {"roles": [r.to_doc() for r in roles]})
        return _ok()

    # -- dropRole / dropAllRolesFromDatabase ---------------------------------------------------

    def _pull(self, doomed: Callable[[RoleName], bool]) -> None:
        """$pull the doomed roles from every user (the listeners) and every role."""
        for listener in self.on_drop:
            listener(doomed)
        for role, doc in list(self.docs.items()):
            kept = [r for r in doc["roles"] if not doomed(RoleName(r["role"], r["db"]))]
            if len(kept) != len(doc["roles"]):
                self._save(role, {**doc, "roles": kept})

    def drop_role(self, db: str, cmd: RoleCommand) -> dict[str, Any]:
        assert cmd.name is not None
        role = RoleName(cmd.name, db)
        self._not_builtin(role)
        self.check_exist([role])
        self._pull(lambda r: r == role)
        del self.docs[role]
        self.graph.remove(role)
        self._changed()
        return _ok()

    def drop_all_roles_from_database(self, db: str, cmd: RoleCommand) -> dict[str, Any]:
        # {$pull: {roles: {db}}}: every role of the database goes from users and roles, built-in ones too
        self._pull(lambda r: r.db == db)
        doomed = [role for role in self.docs if role.db == db]
        for role in doomed:
            del self.docs[role]
            self.graph.remove(role)
        self._changed()
        return _ok(n=len(doomed))

    # -- rolesInfo -----------------------------------------------------------------------------

    def inherited_restrictions(self, roles: Iterable[RoleName]) -> list[Any]:
        """The ``authenticationRestrictions`` of the user-defined roles among `roles`, one array each."""
        return self._restrictions(roles)

    def _restrictions(self, roles: Iterable[RoleName]) -> list[Any]:
        return [self.docs[r]["authenticationRestrictions"] for r in roles
                if r in self.docs and self.docs[r].get("authenticationRestrictions")]

    def _inherited(self, out: dict[str, Any], base: Mapping[str, Any], subroles: list[RoleName],
                   privileges: bool, restrictions: bool) -> None:
        """serializeResolvedRoles: the subordinates' closure, then the role's and their privileges."""
        resolved = self.graph.resolve(subroles)
        out["inheritedRoles"] = [r.to_doc() for r in resolved.roles]
        if privileges:
            out["inheritedPrivileges"] = [*base.get("privileges", []), *_privilege_docs(resolved.privileges)]
        if restrictions:
            own = base.get("authenticationRestrictions")
            out["inheritedAuthenticationRestrictions"] = [*([own] if own else []),
                                                          *self._restrictions(resolved.roles)]

    @staticmethod
    def _filtered(base: Mapping[str, Any], privileges: bool, restrictions: bool) -> tuple[dict[str, Any], list[RoleName]]:
        """filterAndMapRole: the role document's fields minus those not asked for; restrictions lifted into a list."""
        out: dict[str, Any] = {}
        subroles: list[RoleName] = []
        seen_restrictions = False
        for name, value in base.items():
            if name == "roles":
                subroles = [RoleName(r["role"], r["db"]) for r in value]
            elif name == "privileges" and not privileges:
                continue
            elif name == "authenticationRestrictions":
                seen_restrictions = True
                if restrictions:
                    out[name] = [value]
                continue
            out[name] = value
        if restrictions and not seen_restrictions:
            out["authenticationRestrictions"] = []
        return out, subroles

    def describe(self, role: RoleName, privileges: bool = False, restrictions: bool = False) -> dict[str, Any] | None:
        """One role as rolesInfo names it (getRolesDescription); None for a role that does not exist."""
        builtin = is_builtin_role(role)
        if builtin:
            base: dict[str, Any] = {"db": role.db, "role": role.role, "roles": []}
            if privileges:
                base["privileges"] = _privilege_docs(builtin_privileges(role))
        else:
            found = self.docs.get(role)
            if found is None:
                return None
            base = found
        out, subroles = self._filtered(base, privileges, restrictions)
        self._inherited(out, base, subroles, privileges, restrictions)
        out["isBuiltin"] = builtin
        return out

    def _describe_db(self, db: str, privileges: bool, restrictions: bool, builtin: bool) -> list[dict[str, Any]]:
        """getRoleDescriptionsForDB: the built-in roles first (when asked), then the database's own."""
        out = []
        if builtin:
            for role in builtin_role_names(db):
                entry: dict[str, Any] = {"role": role.role, "db": role.db, "isBuiltin": True,
                                         "roles": [], "inheritedRoles": []}
                if privileges:
                    docs = _privilege_docs(builtin_privileges(role))
                    entry["privileges"] = docs
                    entry["inheritedPrivileges"] = list(docs)
                if restrictions:
                    entry["authenticationRestrictions"] = []
                    entry["inheritedAuthenticationRestrictions"] = []
                out.append(entry)
        for role, doc in self.docs.items():
            if role.db != db:
                continue
            entry, subroles = self._filtered(doc, privileges, restrictions)
            entry["isBuiltin"] = False
            self._inherited(entry, doc, subroles, privileges, restrictions)
            out.append(entry)
        return out

    def user_fragment(self, roles: list[RoleName], restrictions: bool = False) -> dict[str, Any]:
        """getRolesAsUserFragment: the roles as a user holding them would see them."""
        resolved = self.graph.resolve(roles)
        out: dict[str, Any] = {"roles": [r.to_doc() for r in roles],
                               "inheritedRoles": [r.to_doc() for r in resolved.roles],
                               "inheritedPrivileges": _privilege_docs(resolved.privileges)}
        if restrictions:
            out["inheritedAuthenticationRestrictions"] = self._restrictions(resolved.roles)
        return out

    def roles_info(self, db: str, cmd: Mapping[str, Any]) -> dict[str, Any]:
        args = parse_roles_info(db, cmd)
        fmt = args.show_privileges
        if args.all:
            if fmt == "asUserFragment":
                raise auth_error("IllegalOperation", "Cannot get user fragment for all roles in a database")
            return _ok(roles=self._describe_db(db, bool(fmt), args.show_restrictions, args.show_builtin))
        if fmt == "asUserFragment":
            return _ok(userFragment=self.user_fragment(args.names, args.show_restrictions))
        described = (self.describe(role, bool(fmt), args.show_restrictions) for role in args.names)
        return _ok(roles=[d for d in described if d is not None])
