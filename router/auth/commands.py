"""What each command needs: `required_privileges(db, cmd)` and the commands that need nothing.

The return value is a list of requirements, all of which must hold:

- `Privilege(resource, actions)` (a NamedTuple, so ``for resource, actions in
  ...`` works for the plain cases),
- `AnyOf(alternatives)` where each alternative is a tuple of requirements that
  must all hold (``create`` needs createCollection *or* insert; renaming within
  a database has a cheaper path than renaming across databases),
- `AnyActionInDatabase(db)` (``listCollections`` with ``authorizedCollections``
  and ``nameOnly``: any privilege on anything in the database),
- `RenameWithinDatabase(source, target, drop_target)` (the server's cheaper
  rule for renaming inside one database).

An empty list means "any authenticated user" (getMore, killCursors,
listDatabases, commitTransaction...): those commands check ownership or filter
their output at run time (see `AuthManager.check_cursor_access` and
`AuthManager.list_databases_filter`).

Commands in `NO_AUTH_COMMANDS` run even before authentication. Commands this
table does not know require the ``anyAction`` action on any resource, which
only ``root`` holds in mongosim (the real server has no unknown commands; the
rule keeps an unlisted command from becoming a hole).

Facts from the server's doCheckAuthorization / checkAuthFor* functions:
find, count, distinct need find; insert insert; update update (+insert when
an update upserts); delete remove; findAndModify find + update/remove (+insert
for upsert); bypassDocumentValidation adds the bypassDocumentValidation action;
aggregate needs find on the namespace unless its first stage is an initial
source with its own rule ($changeStream: changeStream + find on the collection,
on the database for ``aggregate: 1``, on every normal resource for
``aggregate: 1`` on admin, i.e. ``allChangesForCluster``), plus find on the
namespaces $lookup / $graphLookup / $unionWith read and insert/remove ($out) or
insert/update ($merge) on the namespaces they write.

Role management (user_management_commands_common.cpp): createRole needs
createRole on the database; granting a role needs grantRole on the role's
database, granting a privilege grantRole on the database it targets (on
``admin`` for a privilege beyond one database: cluster, any resource, a
collection name in every database); revoking needs revokeRole likewise;
updateRole needs revokeRole on every normal resource first; dropRole and
dropAllRolesFromDatabase dropRole; authenticationRestrictions
setAuthenticationRestriction. rolesInfo needs viewRole on the database for
``rolesInfo: 1``, else on each named role's database except for the roles the
user holds itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from bson import Binary
from mongosim.oplog.errors import MongoError
from mongosim.router.auth.names import RoleName, UserName, parse_role_names, parse_user_name
from mongosim.router.auth.privileges import (
    ANY,
    ANY_NORMAL,
    CLUSTER,
    Privilege,
    Resource,
    is_authorized,
)
from mongosim.router.auth.roles import ParsedPrivilege, parse_role_command, parse_roles_info, resolve_privilege
from mongosim.shardsim.query.idl_errors import wrong_type

__all__ = [
    "NO_AUTH_COMMANDS",
    "AnyActionInDatabase",
    "AnyOf",
    "Refusal",
    "RenameWithinDatabase",
    "ViewDefinition",
    "Requirement",
    "is_authorized_for_any_action_in_db",
    "required_privileges",
    "satisfied",
]


class AnyOf(NamedTuple):
    alternatives: tuple[tuple[Any, ...], ...]


class AnyActionInDatabase(NamedTuple):
    db: str


class ViewDefinition(NamedTuple):
    """Creating or modifying a view (checkAuthForCreateOrModifyView): nothing more for a user who cannot
    read the view anyway, else what an aggregate of the view's pipeline on its viewOn needs."""

    view: Resource
    reads: tuple[Any, ...]


class Refusal(NamedTuple):
    """Not a privilege: the command's authorization check fails with this error when it reaches this
    requirement (collMod naming only one of viewOn / pipeline)."""

    code: str
    message: str


class RenameWithinDatabase(NamedTuple):
    """renameCollection inside one database: renameCollectionSameDB on it (+ dropCollection on the
    target with dropTarget), and the user can read the source or cannot read the target."""

    source: Resource
    target: Resource
    drop_target: bool


Requirement = Privilege | AnyOf | AnyActionInDatabase | RenameWithinDatabase | ViewDefinition | Refusal

# Commands that run without authentication (requiresAuth() false in the server).
NO_AUTH_COMMANDS = frozenset(
    {
        "hello",
        "isMaster",
        "ismaster",
        "ping",
        "buildInfo",
        "buildinfo",
        "saslStart",
        "saslContinue",
        "authenticate",
        "logout",
        "endSessions",
        "connectionStatus",
        "whatsmyuri",
        "listCommands",
        "getnonce",
        "_isSelf",
    }
)


def _p(resource: Resource, *actions: str) -> Privilege:
    return Privilege(resource, frozenset(actions))


def _ns(db: str, cmd: Mapping[str, Any], name: str) -> Resource:
    coll = cmd.get(name)
    if isinstance(coll, str):
        return Resource.namespace(db, coll)
    # a collection named by UUID (or not named): fall back to the database; the
    # command itself rejects what it cannot resolve
    return Resource.database(db)


def _full_ns(value: Any) -> Resource:
    """A ``"db.coll"`` string argument (shardCollection, moveChunk, renameCollection...)."""
    if isinstance(value, str) and "." in value:
        db, coll = value.split(".", 1)
        return Resource.namespace(db, coll)
    return Resource.database(value if isinstance(value, str) else "")


def _bypass(cmd: Mapping[str, Any]) -> tuple[str, ...]:
    return ("bypassDocumentValidation",) if cmd.get("bypassDocumentValidation") else ()


def _target(db: str, spec: Any) -> Resource | None:
    """A stage's target: ``"coll"`` (same database) or ``{db, coll}``."""
    if isinstance(spec, str):
        return Resource.namespace(db, spec)
    if isinstance(spec, Mapping) and isinstance(spec.get("coll"), str):
        other = spec.get("db", db)
        return Resource.namespace(other if isinstance(other, str) else db, spec["coll"])
    return None


# -- aggregation -----------------------------------------------------------------------------------

_INITIAL_SOURCES = frozenset(
    {
        "$changeStream",
        "$collStats",
        "$indexStats",
        "$currentOp",
        "$listSessions",
        "$listLocalSessions",
        "$planCacheStats",
        "$documents",
        "$shardedDataDistribution",
        "$listSampledQueries",
        "$queryStats",
        "$listSearchIndexes",
        "$listCatalog",
        "$listClusterCatalog",
    }
)


def _stage_name(stage: Any) -> str | None:
    if isinstance(stage, Mapping) and stage:
        return next(iter(stage))
    return None


def _initial_source_privileges(db: str, coll: Any, name: str, spec: Any) -> list[Requirement]:
    collectionless = not isinstance(coll, str)
    ns = Resource.namespace(db, coll) if not collectionless else Resource.database(db)
    if name == "$changeStream":
        if collectionless and db == "admin":
            return [_p(ANY_NORMAL, "changeStream", "find")]
        if collectionless:
            return [_p(Resource.database(db), "changeStream", "find")]
        return [_p(ns, "changeStream", "find")]
    if name == "$collStats":
        return [_p(ns, "collStats")]
    if name == "$indexStats":
        return [_p(ns, "indexStats")]
    if name == "$planCacheStats":
        return [_p(ns, "planCacheRead")]
    if name == "$listSearchIndexes":
        return [_p(ns, "listSearchIndexes")]
    if name == "$currentOp":
        all_users = isinstance(spec, Mapping) and bool(spec.get("allUsers"))
        return [_p(CLUSTER, "inprog")] if all_users else []
    if name in ("$listSessions", "$listLocalSessions"):
        all_users = isinstance(spec, Mapping) and bool(spec.get("allUsers"))
        return [_p(CLUSTER, "listSessions")] if all_users else []
    if name == "$shardedDataDistribution":
        return [_p(CLUSTER, "shardedDataDistribution")]
    if name == "$listSampledQueries":
        return [_p(CLUSTER, "listSampledQueries")]
    if name == "$queryStats":
        return [_p(CLUSTER, "queryStatsRead")]
    if name in ("$listCatalog", "$listClusterCatalog"):
        return [_p(CLUSTER, "listCollections")] if collectionless else [_p(ns, "listCollections")]
    return []  # $documents


def _pipeline_privileges(db: str, pipeline: Any, bypass: tuple[str, ...]) -> list[Requirement]:
    """Privileges of the stages after the source: what they read or write besides the input."""
    out: list[Requirement] = []
    if not isinstance(pipeline, (list, tuple)):
        return out
    for stage in pipeline:
        name = _stage_name(stage)
        if name is None:
            continue
        spec = stage[name]
        if name in ("$lookup", "$graphLookup"):
            if isinstance(spec, Mapping):
                target = _target(db, spec.get("from"))
                if target is not None:
                    out.append(_p(target, "find"))
                out += _pipeline_privileges(db, spec.get("pipeline"), bypass)
        elif name == "$unionWith":
            if isinstance(spec, str):
                out.append(_p(Resource.namespace(db, spec), "find"))
            elif isinstance(spec, Mapping):
                target = _target(db, spec)
                if target is not None:
                    out.append(_p(target, "find"))
                sub = spec.get("pipeline")
                first = _stage_name(sub[0]) if isinstance(sub, (list, tuple)) and sub else None
                if target is None and first in _INITIAL_SOURCES:
                    out += _initial_source_privileges(db, None, first, sub[0][first])
                out += _pipeline_privileges(db, sub, bypass)
        elif name == "$facet":
            if isinstance(spec, Mapping):
                for sub in spec.values():
                    out += _pipeline_privileges(db, sub, bypass)
        elif name == "$out":
            target = _target(db, spec)
            if target is not None:
                out.append(_p(target, "insert", "remove", *bypass))
        elif name == "$merge":
            target = _target(db, spec if not isinstance(spec, Mapping) else spec.get("into"))
            if target is not None:
                matched = spec.get("whenMatched", "merge") if isinstance(spec, Mapping) else "merge"
                not_matched = spec.get("whenNotMatched", "insert") if isinstance(spec, Mapping) else "insert"
                actions = set(bypass)
                if not_matched == "insert":
                    actions.add("insert")
                if matched != "fail" or not_matched != "insert":
                    actions.add("update")
                out.append(Privilege(target, frozenset(actions)))
    return out


def _aggregate(db: str, cmd: Mapping[str, Any]) -> list[Requirement]:
    coll = cmd.get("aggregate")
    pipeline = cmd.get("pipeline")
    pipeline = list(pipeline) if isinstance(pipeline, (list, tuple)) else []
    bypass = _bypass(cmd)
    first = _stage_name(pipeline[0]) if pipeline else None
    if first in _INITIAL_SOURCES:
        reqs = _initial_source_privileges(db, coll, first, pipeline[0][first])
        rest = pipeline[1:]
    else:
        ns = Resource.namespace(db, coll) if isinstance(coll, str) else Resource.namespace(db, "$cmd.aggregate")
        reqs = [_p(ns, "find")]
        rest = pipeline
    return reqs + _pipeline_privileges(db, rest, bypass)


# -- the command table -----------------------------------------------------------------------------


def _crud(action: str) -> Callable[[str, Mapping[str, Any]], list[Requirement]]:
    def rule(db: str, cmd: Mapping[str, Any]) -> list[Requirement]:
        name = next(iter(cmd))
        return [_p(_ns(db, cmd, name), action)]

    return rule


def _on_cluster(*actions: str) -> Callable[[str, Mapping[str, Any]], list[Requirement]]:
    return lambda db, cmd: [_p(CLUSTER, *actions)]


def _on_db(*actions: str) -> Callable[[str, Mapping[str, Any]], list[Requirement]]:
    return lambda db, cmd: [_p(Resource.database(db), *actions)]


def _on_arg_ns(*actions: str) -> Callable[[str, Mapping[str, Any]], list[Requirement]]:
    def rule(db: str, cmd: Mapping[str, Any]) -> list[Requirement]:
        return [_p(_full_ns(cmd[next(iter(cmd))]), *actions)]

    return rule


def _configure_collection_balancing(db: str, cmd: Mapping[str, Any]) -> list[Requirement]:
    """splitChunk on the namespace; moveChunk too when it asks for a defragmentation."""
    actions = ("splitChunk", "moveChunk") if cmd.get("defragmentCollection") is True else ("splitChunk",)
    return [_p(_full_ns(cmd[next(iter(cmd))]), *actions)]


def _nothing(db: str, cmd: Mapping[str, Any]) -> list[Requirement]:
    return []


def _insert(db: str, cmd: Mapping[str, Any]) -> list[Requirement]:
    return [_p(_ns(db, cmd, "insert"), "insert", *_bypass(cmd))]


def _update(db: str, cmd: Mapping[str, Any]) -> list[Requirement]:
    updates = cmd.get("updates")
    upsert = isinstance(updates, (list, tuple)) and any(
        isinstance(u, Mapping) and u.get("upsert") for u in updates
    )
    actions = ("update", "insert") if upsert else ("update",)
    return [_p(_ns(db, cmd, "update"), *actions, *_bypass(cmd))]


def _find_and_modify(db: str, cmd: Mapping[str, Any]) -> list[Requirement]:
    name = next(iter(cmd))
    actions = {"find", *_bypass(cmd)}
    if cmd.get("update") is not None:
        actions.add("update")
    if cmd.get("upsert"):
        actions.add("insert")
    if cmd.get("remove"):
        actions.add("remove")
    return [Privilege(_ns(db, cmd, name), frozenset(actions))]


def _bulk_write(db: str, cmd: Mapping[str, Any]) -> list[Requirement]:
    infos = cmd.get("nsInfo") if isinstance(cmd.get("nsInfo"), (list, tuple)) else []
    ops = cmd.get("ops") if isinstance(cmd.get("ops"), (list, tuple)) else []
    wanted: dict[int, set[str]] = {}
    for op in ops:
        if not isinstance(op, Mapping) or not op:
            continue
        kind = next(iter(op))
        index = op[kind]
        if not isinstance(index, int):
            continue
        actions = wanted.setdefault(index, set())
        if kind == "insert":
            actions.add("insert")
        elif kind == "update":
            actions.add("update")
            if op.get("upsert"):
                actions.add("insert")
        elif kind == "delete":
            actions.add("remove")
    out: list[Requirement] = []
    for index, actions in sorted(wanted.items()):
        if 0 <= index < len(infos) and isinstance(infos[index], Mapping):
            actions.update(_bypass(cmd))
            out.append(Privilege(_full_ns(infos[index].get("ns")), frozenset(actions)))
    return out


def _view_definition(db: str, ns: Resource, view_on: Any, pipeline: Any) -> ViewDefinition:
    return ViewDefinition(ns, tuple(_aggregate(db, {"aggregate": view_on, "pipeline": pipeline or []})))


def _create(db: str, cmd: Mapping[str, Any]) -> list[Requirement]:
    ns = _ns(db, cmd, "create")
    reqs: list[Requirement] = []
    if cmd.get("capped"):
        reqs.append(_p(ns, "convertToCapped"))
    if cmd.get("viewOn") is not None:
        reqs.append(_p(ns, "createCollection"))
        reqs.append(_view_definition(db, ns, cmd.get("viewOn"), cmd.get("pipeline")))
    else:
        reqs.append(AnyOf(((_p(ns, "createCollection"),), (_p(ns, "insert"),))))
    return reqs


def _coll_mod(db: str, cmd: Mapping[str, Any]) -> list[Requirement]:
    """checkAuthForCollMod: collMod on the namespace; then, with auth on, a view's viewOn and pipeline
    change together or not at all (InvalidOptions), and the new definition is checked as create's."""
    ns = _ns(db, cmd, "collMod")
    reqs: list[Requirement] = [_p(ns, "collMod")]
    if ("viewOn" in cmd) != ("pipeline" in cmd):
        reqs.append(Refusal("InvalidOptions", "Must specify both 'viewOn' and 'pipeline' when modifying a view and "
                                              "auth is enabled"))
    elif "viewOn" in cmd:
        reqs.append(_view_definition(db, ns, cmd.get("viewOn"), cmd.get("pipeline")))
    return reqs


def _rename(db: str, cmd: Mapping[str, Any]) -> list[Requirement]:
    source = _full_ns(cmd.get("renameCollection"))
    target = _full_ns(cmd.get("to"))
    drop_target = cmd.get("dropTarget", False)
    if not isinstance(drop_target, (bool, Binary)):  # (the IDL parse comes before the authorization check)
        raise wrong_type("renameCollection.dropTarget", drop_target, ("bool", "binData"))
    drop_target = bool(drop_target)
    cross = (
        _p(source, "find", "dropCollection"),
        _p(target, "insert", "createIndex", *(("dropCollection",) if drop_target else ())),
    )
    if (
        source.kind == target.kind == "namespace"
        and source.db == target.db
        and not source.coll.startswith("system.")
        and not target.coll.startswith("system.")
    ):
        return [AnyOf(((RenameWithinDatabase(source, target, drop_target),), cross))]
    return list(cross)


def _list_collections(db: str, cmd: Mapping[str, Any]) -> list[Requirement]:
    if cmd.get("authorizedCollections") and cmd.get("nameOnly"):
        return [AnyOf(((AnyActionInDatabase(db),), (_p(Resource.database(db), "listCollections"),)))]
    return [_p(Resource.database(db), "listCollections")]


def _map_reduce(db: str, cmd: Mapping[str, Any]) -> list[Requirement]:
    reqs: list[Requirement] = [_p(_ns(db, cmd, next(iter(cmd))), "find")]
    out = cmd.get("out")
    if isinstance(out, str):
        reqs.append(_p(Resource.namespace(db, out), "insert", "remove", *_bypass(cmd)))
    elif isinstance(out, Mapping) and not out.get("inline"):
        for mode in ("replace", "merge", "reduce"):
            if isinstance(out.get(mode), str):
                other = out.get("db", db)
                reqs.append(
                    _p(Resource.namespace(other if isinstance(other, str) else db, out[mode]), "insert", "remove", *_bypass(cmd))
                )
    return reqs


def _explain(db: str, cmd: Mapping[str, Any]) -> list[Requirement]:
    inner = cmd.get("explain")
    if isinstance(inner, Mapping) and inner:
        return required_privileges(db, inner)
    return []


def _current_op(db: str, cmd: Mapping[str, Any]) -> list[Requirement]:
    return [] if cmd.get("$ownOps") else [_p(CLUSTER, "inprog")]


def _kill_op(db: str, cmd: Mapping[str, Any]) -> list[Requirement]:
    return [_p(CLUSTER, "killop")]


# user management ---------------------------------------------------------------------------------


def _roles_of(name: str, db: str, cmd: Mapping[str, Any], field: str = "roles") -> list[RoleName]:
    if field not in cmd:
        return []
    return parse_role_names(name, field, cmd[field], db)


def _create_user(db: str, cmd: Mapping[str, Any]) -> list[Requirement]:
    reqs: list[Requirement] = [_p(Resource.database(db), "createUser")]
    reqs += [_p(Resource.database(role.db), "grantRole") for role in _roles_of("createUser", db, cmd)]
    return reqs


def _update_user(db: str, cmd: Mapping[str, Any]) -> list[Requirement]:
    dbres = Resource.database(db)
    reqs: list[Requirement] = []
    if "pwd" in cmd:
        reqs.append(_p(dbres, "changePassword"))
    if "customData" in cmd:
        reqs.append(_p(dbres, "changeCustomData"))
    if "roles" in cmd:
        reqs.append(_p(ANY_NORMAL, "revokeRole"))
        reqs += [_p(Resource.database(role.db), "grantRole") for role in _roles_of("updateUser", db, cmd)]
    if "authenticationRestrictions" in cmd:
        reqs.append(_p(dbres, "setAuthenticationRestriction"))
    return reqs


def _grant_roles(db: str, cmd: Mapping[str, Any]) -> list[Requirement]:
    return [_p(Resource.database(role.db), "grantRole") for role in _roles_of("grantRolesToUser", db, cmd)]


def _revoke_roles(db: str, cmd: Mapping[str, Any]) -> list[Requirement]:
    return [_p(Resource.database(role.db), "revokeRole") for role in _roles_of("revokeRolesFromUser", db, cmd)]


def _grant_privileges(parsed: list[ParsedPrivilege] | None, action: str) -> list[Requirement]:
    """checkAuthorizedToGrant/RevokePrivileges: `action` (grantRole / revokeRole) on the database a
    privilege targets, on admin for a privilege beyond one database. A malformed resource fails
    here, when the check reaches it (a Refusal)."""
    out: list[Requirement] = []
    for pp in parsed or ():
        try:
            resource = resolve_privilege(pp).resource
        except MongoError as exc:
            out.append(Refusal(exc.code_name, exc.errmsg))
            break
        target = resource.db if resource.kind in ("database", "namespace") else "admin"
        out.append(_p(Resource.database(target), action))
    return out


def _set_restrictions(db: str, cmd: Mapping[str, Any]) -> list[Requirement]:
    return [_p(Resource.database(db), "setAuthenticationRestriction")] if "authenticationRestrictions" in cmd else []


def _create_role(db: str, cmd: Mapping[str, Any]) -> list[Requirement]:
    """createRole on the database, grantRole on each inherited role's, the privileges', restrictions."""
    parsed = parse_role_command(db, cmd)
    reqs: list[Requirement] = [_p(Resource.database(db), "createRole")]
    reqs += [_p(Resource.database(role.db), "grantRole") for role in parsed.roles or ()]
    reqs += _grant_privileges(parsed.privileges, "grantRole")
    return reqs + _set_restrictions(db, cmd)


def _update_role(db: str, cmd: Mapping[str, Any]) -> list[Requirement]:
    """revokeRole on every normal resource (whatever it replaces), then as createRole for what it sets."""
    parsed = parse_role_command(db, cmd)
    reqs: list[Requirement] = [_p(ANY_NORMAL, "revokeRole")]
    reqs += [_p(Resource.database(role.db), "grantRole") for role in parsed.roles or ()]
    reqs += _grant_privileges(parsed.privileges, "grantRole")
    return reqs + _set_restrictions(db, cmd)


def _role_roles(action: str) -> Callable[[str, Mapping[str, Any]], list[Requirement]]:
    def rule(db: str, cmd: Mapping[str, Any]) -> list[Requirement]:
        return [_p(Resource.database(role.db), action) for role in parse_role_command(db, cmd).roles or ()]

    return rule


def _role_privileges(action: str) -> Callable[[str, Mapping[str, Any]], list[Requirement]]:
    def rule(db: str, cmd: Mapping[str, Any]) -> list[Requirement]:
        return _grant_privileges(parse_role_command(db, cmd).privileges, action)

    return rule


def _drop_role(db: str, cmd: Mapping[str, Any]) -> list[Requirement]:
    parse_role_command(db, cmd)
    return [_p(Resource.database(db), "dropRole")]


def _roles_info(db: str, cmd: Mapping[str, Any], user_roles: Iterable[RoleName] = ()) -> list[Requirement]:
    """viewRole on the database for rolesInfo: 1; else on each named role's database, but for the
    roles the user holds itself (isAuthenticatedAsUserWithRole)."""
    args = parse_roles_info(db, cmd)
    if args.all:
        return [_p(Resource.database(db), "viewRole")]
    held = set(user_roles)
    return [_p(Resource.database(role.db), "viewRole") for role in args.names if role not in held]


def users_info_targets(db: str, arg: Any) -> tuple[str, list[UserName]]:
    """("all_db" | "all" | "exact", users) for a usersInfo argument (BadValue when malformed)."""
    if isinstance(arg, (int, float)) and not isinstance(arg, bool) and arg == 1:
        return "all_db", []
    if isinstance(arg, Mapping) and "forAllDBs" in arg:
        return "all", []
    if isinstance(arg, (list, tuple)):
        return "exact", [parse_user_name(item, db) for item in arg]
    return "exact", [parse_user_name(arg, db)]


def _users_info(db: str, cmd: Mapping[str, Any], user: UserName | None = None) -> list[Requirement]:
    kind, names = users_info_targets(db, cmd.get("usersInfo"))
    if kind == "all_db":
        return [_p(Resource.database(db), "viewUser")]
    if kind == "all":
        return [_p(CLUSTER, "viewUser")]
    return [_p(Resource.database(name.db), "viewUser") for name in names if name != user]


_RULES: dict[str, Callable[[str, Mapping[str, Any]], list[Requirement]]] = {
    # CRUD and queries
    "find": _crud("find"),
    "count": _crud("find"),
    "distinct": _crud("find"),
    "insert": _insert,
    "update": _update,
    "delete": _crud("remove"),
    "findAndModify": _find_and_modify,
    "findandmodify": _find_and_modify,
    "aggregate": _aggregate,
    "mapReduce": _map_reduce,
    "mapreduce": _map_reduce,
    "bulkWrite": _bulk_write,
    "getMore": _nothing,
    "killCursors": _nothing,
    "explain": _explain,
    # catalog
    "listCollections": _list_collections,
    "listIndexes": _crud("listIndexes"),
    "listDatabases": _nothing,
    "createIndexes": _crud("createIndex"),
    "dropIndexes": _crud("dropIndex"),
    "deleteIndexes": _crud("dropIndex"),
    "drop": _crud("dropCollection"),
    "create": _create,
    "collMod": _coll_mod,
    "convertToCapped": _crud("convertToCapped"),
    "compact": _crud("compact"),
    "validate": _crud("validate"),
    "collStats": _crud("collStats"),
    "planCacheClear": _crud("planCacheWrite"),
    "dataSize": _on_arg_ns("find"),
    "dbStats": _on_db("dbStats"),
    "dbHash": _on_db("dbHash"),
    "profile": _on_db("enableProfiler"),
    "renameCollection": _rename,
    "dropDatabase": _on_db("dropDatabase"),
    # sessions and transactions: any authenticated user
    "startSession": _nothing,
    "refreshSessions": _nothing,
    "killSessions": _nothing,
    "killAllSessions": _on_cluster("killAnySession"),
    "killAllSessionsByPattern": _on_cluster("killAnySession"),
    "commitTransaction": _nothing,
    "abortTransaction": _nothing,
    "isdbgrid": _nothing,
    "getLastError": _nothing,
    # user management
    "createUser": _create_user,
    "updateUser": _update_user,
    "dropUser": _on_db("dropUser"),
    "dropAllUsersFromDatabase": _on_db("dropUser"),
    "grantRolesToUser": _grant_roles,
    "revokeRolesFromUser": _revoke_roles,
    "usersInfo": _users_info,  # type: ignore[dict-item]
    "createRole": _create_role,
    "updateRole": _update_role,
    "dropRole": _drop_role,
    "dropAllRolesFromDatabase": _drop_role,
    "grantRolesToRole": _role_roles("grantRole"),
    "revokeRolesFromRole": _role_roles("revokeRole"),
    "grantPrivilegesToRole": _role_privileges("grantRole"),
    "revokePrivilegesFromRole": _role_privileges("revokeRole"),
    "rolesInfo": _roles_info,
    "invalidateUserCache": _on_cluster("invalidateUserCache"),
    # server administration and diagnostics
    "serverStatus": _on_cluster("serverStatus"),
    "hostInfo": _on_cluster("hostInfo"),
    "getCmdLineOpts": _on_cluster("getCmdLineOpts"),
    "getLog": _on_cluster("getLog"),
    "getParameter": _on_cluster("getParameter"),
    "setParameter": _on_cluster("setParameter"),
    "getClusterParameter": _on_cluster("getClusterParameter"),
    "setClusterParameter": _on_cluster("setClusterParameter"),
    "getDefaultRWConcern": _on_cluster("getDefaultRWConcern"),
    "setDefaultRWConcern": _on_cluster("setDefaultRWConcern"),
    "setFeatureCompatibilityVersion": _on_cluster("setFeatureCompatibilityVersion"),
    "currentOp": _current_op,
    "killOp": _kill_op,
    "top": _on_cluster("top"),
    "connPoolStats": _on_cluster("connPoolStats"),
    "fsync": _on_cluster("fsync"),
    "fsyncUnlock": _on_cluster("unlock"),
    "shutdown": _on_cluster("shutdown"),
    "logRotate": _on_cluster("logRotate"),
    "replSetGetStatus": _on_cluster("replSetGetStatus"),
    "replSetGetConfig": _on_cluster("replSetGetConfig"),
    # sharding administration
    "enableSharding": lambda db, cmd: [_p(Resource.database(str(cmd["enableSharding"])), "enableSharding")],
    "shardCollection": _on_arg_ns("enableSharding"),
    "reshardCollection": _on_arg_ns("reshardCollection"),
    "refineCollectionShardKey": _on_arg_ns("refineCollectionShardKey"),
    "moveChunk": _on_arg_ns("moveChunk"),
    "moveRange": _on_arg_ns("moveChunk"),
    "split": _on_arg_ns("splitChunk"),
    "mergeChunks": _on_arg_ns("splitChunk"),
    "mergeAllChunksOnShard": _on_arg_ns("splitChunk"),
    "configureCollectionBalancing": _configure_collection_balancing,
    "clearJumboFlag": _on_arg_ns("clearJumboFlag"),
    "analyzeShardKey": _on_arg_ns("analyzeShardKey"),
    "getShardVersion": _on_arg_ns("getShardVersion"),
    "movePrimary": lambda db, cmd: [_p(Resource.database(str(cmd["movePrimary"])), "moveChunk")],
    "addShard": _on_cluster("addShard"),
    "removeShard": _on_cluster("removeShard"),
    "listShards": _on_cluster("listShards"),
    "getShardMap": _on_cluster("getShardMap"),
    "flushRouterConfig": _on_cluster("flushRouterConfig"),
    "shardingState": _on_cluster("shardingState"),
    "cleanupOrphaned": _on_cluster("cleanupOrphaned"),
    "checkMetadataConsistency": _on_cluster("checkMetadataConsistency"),
    "balancerStart": lambda db, cmd: [_p(Resource.namespace("config", "settings"), "update")],
    "balancerStop": lambda db, cmd: [_p(Resource.namespace("config", "settings"), "update")],
    "balancerStatus": lambda db, cmd: [_p(Resource.namespace("config", "settings"), "find")],
    "balancerCollectionStatus": _on_arg_ns("enableSharding"),
}

UNKNOWN_COMMAND_REQUIREMENT = Privilege(ANY, frozenset({"anyAction"}))
KNOWN_COMMANDS = frozenset(_RULES) | NO_AUTH_COMMANDS


def required_privileges(
    db: str, cmd: Mapping[str, Any], *, user: UserName | None = None, user_roles: Iterable[RoleName] = ()
) -> list[Requirement]:
    """The requirements `cmd` run on `db` must meet (empty for commands needing only authentication).

    `user` is the authenticated user and `user_roles` the roles it holds directly, for the
    rules that exempt a user's own record (``usersInfo`` on oneself, ``rolesInfo`` on one's
    roles). Malformed commands of the user and role management family raise the server's IDL
    errors (BadValue, 40414, 40415, TypeMismatch), as its parser would before the check.
    """
    name = next(iter(cmd))
    if name in NO_AUTH_COMMANDS:
        return []
    if name == "usersInfo":
        return _users_info(db, cmd, user)
    if name == "rolesInfo":
        return _roles_info(db, cmd, user_roles)
    rule = _RULES.get(name)
    if rule is None:
        return [UNKNOWN_COMMAND_REQUIREMENT]
    return rule(db, cmd)


def is_authorized_for_any_action_in_db(granted: Mapping[Resource, frozenset[str]], db: str) -> bool:
    """The server's isAuthorizedForAnyActionOnAnyResourceInDB."""
    if granted.get(Resource.database(db)) or granted.get(ANY):
        return True
    if db not in ("local", "config") and granted.get(ANY_NORMAL):
        return True
    return any(
        actions and (res.kind == "collection" or (res.kind == "namespace" and res.db == db))
        for res, actions in granted.items()
    )


def satisfied(granted: Mapping[Resource, frozenset[str]], requirement: Requirement) -> bool:
    if isinstance(requirement, Privilege):
        return is_authorized(granted, requirement)
    if isinstance(requirement, AnyActionInDatabase):
        return is_authorized_for_any_action_in_db(granted, requirement.db)
    if isinstance(requirement, AnyOf):
        return any(all(satisfied(granted, r) for r in alt) for alt in requirement.alternatives)
    if isinstance(requirement, ViewDefinition):
        return not is_authorized(granted, _p(requirement.view, "find")) or all(
            satisfied(granted, r) for r in requirement.reads)
    if isinstance(requirement, Refusal):
        return True  # (authorize raises it when it comes to it)
    if isinstance(requirement, RenameWithinDatabase):
        source, target = requirement.source, requirement.target
        return (
            is_authorized(granted, _p(Resource.database(source.db), "renameCollectionSameDB"))
            and (not requirement.drop_target or is_authorized(granted, _p(target, "dropCollection")))
            and (is_authorized(granted, _p(source, "find")) or not is_authorized(granted, _p(target, "find")))
        )
    raise TypeError(f"not a requirement: {requirement!r}")


def all_satisfied(granted: Mapping[Resource, frozenset[str]], requirements: Iterable[Requirement]) -> bool:
    return all(satisfied(granted, r) for r in requirements)
