"""Resources, actions, the built-in roles and the privilege check.

Model (the server's, src/mongo/db/auth/):

- a `Resource` is a ResourcePattern: ``any`` (every resource), ``cluster``,
  ``any_normal`` (``{db: "", collection: ""}``: every database and every
  non-system collection outside ``local`` and ``config``), ``database``
  (``{db: X, collection: ""}``), ``collection`` (``{db: "", collection: X}``,
  in every database) and ``namespace`` (``{db: X, collection: Y}``);
- a privilege is a resource with a set of actions; a role grants privileges
  and inherits other roles; a user holds roles;
- a request for actions on a concrete resource is granted when the union of
  the actions the user holds on every pattern that matches the resource
  (`search_list`, the server's buildResourceSearchList) covers them. Notably
  a ``database`` privilege does not reach the ``system.*`` collections of that
  database, and ``any_normal`` does not reach ``local``, ``config`` or
  ``system.*``.

The built-in roles (`BUILTIN_ROLES`) transcribe the server's
builtin_roles.yml: read, readWrite, dbAdmin, userAdmin, dbOwner,
enableSharding on any database; readAnyDatabase, readWriteAnyDatabase,
userAdminAnyDatabase, dbAdminAnyDatabase, clusterMonitor, hostManager,
clusterManager, clusterAdmin, backup, restore, directShardOperations, root
and ``__system`` (every action on every resource) on ``admin`` only.

A built-in role is flat, as in the server: its privileges are its own plus
those of the roles builtin_roles.yml makes it inherit, merged resource by
resource in that order (`builtin_privileges`), and it has no subordinate roles
(rolesInfo shows ``roles: []``). User-defined roles (`router.auth.roles`) are
resolved by `resolve`, the server's resolveRoles: breadth-first from the
given roles, a user-defined role contributing its direct privileges and its
subordinate roles, a built-in one its flattened privileges, an unknown one
nothing.

Actions are the server's ActionType names (`ACTION_TYPES`, in the enum's order,
which is the order the server prints an action set in); ``anyAction`` stands
for every action.

`check(roles, actions, resource)` answers one question; the command side
(`required_privileges`) lives in `router.auth.commands`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from mongosim.router.auth.names import RoleName

__all__ = [
    "ACTION_TYPES",
    "ALL_ACTIONS",
    "ANY",
    "ANY_NORMAL",
    "BUILTIN_ROLES",
    "CLUSTER",
    "Privilege",
    "Resolved",
    "Resource",
    "action_list",
    "builtin_privileges",
    "builtin_role_names",
    "check",
    "is_authorized",
    "is_builtin_role",
    "merge_privileges",
    "privileges_for_roles",
    "resolve",
    "resolve_roles",
    "search_list",
]


@dataclass(frozen=True, slots=True)
class Resource:
    """A resource pattern; concrete requests use ``database``, ``namespace``, ``cluster`` or ``any_normal``.

    The ``*buckets*`` kinds are the server's system-buckets patterns (``{db, system_buckets}``):
    ``buckets`` one ``db.system.buckets.coll``, ``buckets_in_db`` every bucket collection of ``db``,
    ``buckets_named`` ``system.buckets.coll`` in every database, ``any_buckets`` all of them.
    """

    kind: str  # any | cluster | any_normal | database | collection | namespace | *buckets*
    db: str = ""
    coll: str = ""

    @classmethod
    def database(cls, db: str) -> Resource:
        return cls("database", db)

    @classmethod
    def namespace(cls, db: str, coll: str) -> Resource:
        return cls("namespace", db, coll)

    @classmethod
    def collection(cls, coll: str) -> Resource:
        return cls("collection", "", coll)

    @property
    def ns(self) -> str:
        return f"{self.db}.{self.coll}"

    def to_doc(self) -> dict[str, Any]:
        """The privilege document form (``{db, collection}``, ``{cluster: true}``, ``{anyResource: true}``)."""
        if self.kind == "any":
            return {"anyResource": True}
        if self.kind == "cluster":
            return {"cluster": True}
        if self.kind == "buckets_named":
            return {"system_buckets": self.coll}
        if self.kind == "any_buckets":
            return {"system_buckets": ""}
        if self.kind in ("buckets", "buckets_in_db"):
            return {"db": self.db, "system_buckets": self.coll}
        return {"db": self.db, "collection": self.coll}

    def __str__(self) -> str:
        if self.kind in ("any", "cluster", "any_normal"):
            return {"any": "<any resource>", "cluster": "<cluster>", "any_normal": "<all normal resources>"}[self.kind]
        if self.kind == "database":
            return f"<database {self.db}>"
        if self.kind == "collection":
            return f"<collection {self.coll} in any database>"
        if self.kind != "namespace":
            return f"<{self.kind} {self.db}.system.buckets.{self.coll}>"
        return self.ns


ANY = Resource("any")
CLUSTER = Resource("cluster")
ANY_NORMAL = Resource("any_normal")


class Privilege(NamedTuple):
    """A resource and the actions wanted (or granted) on it; unpacks as ``(resource, actions)``."""

    resource: Resource
    actions: frozenset[str]

    @classmethod
    def of(cls, resource: Resource, *actions: str) -> Privilege:
        return cls(resource, frozenset(actions))

    def to_doc(self) -> dict[str, Any]:
        return {"resource": self.resource.to_doc(), "actions": action_list(self.actions)}


# The server's ActionType enum (action_type.idl), in its order: an action set prints in this order.
ACTION_TYPES: tuple[str, ...] = (
    "addShard", "advanceClusterTime", "allCollectionStats", "analyze", "analyzeShardKey", "anyAction",
    "appendOplogNote", "applicationMessage", "auditConfigure", "auditLogRotate", "authCheck", "authenticate",
    "authSchemaUpgrade", "bypassDefaultMaxTimeMS", "bypassDocumentValidation", "bypassWriteBlockingMode",
    "changeCustomData", "changePassword", "changeOwnPassword", "changeOwnCustomData", "changeStream",
    "checkFreeMonitoringStatus", "checkMetadataConsistency", "cleanupOrphaned", "clearJumboFlag",
    "cleanupStructuredEncryptionData", "closeAllDatabases", "collMod", "collStats", "compact",
    "compactStructuredEncryptionData", "configureQueryAnalyzer", "connPoolStats", "connPoolSync",
    "convertToCapped", "cpuProfiler", "createCollection", "createDatabase", "createIndex", "createRole",
    "createSearchIndexes", "createUser", "dbCheck", "dbHash", "dbStats", "dropAllRolesFromDatabase",
    "dropAllUsersFromDatabase", "dropCollection", "dropConnections", "dropDatabase", "dropIndex", "dropRole",
    "dropSearchIndex", "dropUser", "emptycapped", "enableProfiler", "enableSharding", "exportCollection", "find",
    "flushRouterConfig", "forceUUID", "fsync", "fsyncUnlock", "getClusterParameter", "getDatabaseVersion",
    "getDefaultRWConcern", "getCmdLineOpts", "getLog", "getParameter", "getShardMap", "getShardVersion",
    "grantRole", "grantPrivilegesToRole", "grantRolesToRole", "grantRolesToUser", "hostInfo", "impersonate",
    "importCollection", "indexStats", "inprog", "insert", "internal", "invalidateUserCache",
    "issueDirectShardOperations", "killAnyCursor", "killAnySession", "killCursors", "killop",
    "listCachedAndActiveUsers", "listCollections", "listCursors", "listDatabases", "listIndexes",
    "listSampledQueries", "listSearchIndexes", "listSessions", "listShards", "logRotate", "updateSearchIndex",
    "moveChunk", "moveCollection", "netstat", "oidcListKeys", "oidcRefreshKeys", "oidReset", "operationMetrics",
    "planCacheIndexFilter", "planCacheRead", "planCacheWrite", "querySettings", "queryStatsRead",
    "queryStatsReadTransformed", "refineCollectionShardKey", "reIndex", "remove", "removeShard",
    "renameCollection", "renameCollectionSameDB", "repairDatabase", "replSetConfigure", "replSetGetConfig",
    "replSetGetStatus", "replSetHeartbeat", "replSetReconfig", "replSetResizeOplog", "replSetStateChange",
    "reshardCollection", "resync", "revokeRole", "revokePrivilegesFromRole", "revokeRolesFromRole",
    "revokeRolesFromUser", "rotateCertificates", "runAsLessPrivilegedUser", "runTenantMigration", "serverStatus",
    "setAuthenticationRestriction", "setClusterParameter", "setDefaultRWConcern", "setFeatureCompatibilityVersion",
    "setFreeMonitoring", "setParameter", "setUserWriteBlockMode", "shardCollection", "shardedDataDistribution",
    "shardingState", "shutdown", "splitChunk", "splitVector", "storageDetails", "top", "touch", "trafficRecord",
    "transitionFromDedicatedConfigServer", "transitionToDedicatedConfigServer", "unlock", "unshardCollection",
    "useTenant", "useUUID", "update", "updateRole", "updateUser", "validate", "viewRole", "viewUser", "applyOps",
    "setChangeStreamState", "getChangeStreamState",
)
ALL_ACTIONS = frozenset(ACTION_TYPES)
_ACTION_INDEX = {name: i for i, name in enumerate(ACTION_TYPES)}


def action_list(actions: Iterable[str]) -> list[str]:
    """An action set as the server prints it: ``["anyAction"]`` when it holds every action, else the enum's order."""
    actions = set(actions)
    if "anyAction" in actions:
        return ["anyAction"]
    return sorted(actions, key=lambda a: (_ACTION_INDEX.get(a, len(_ACTION_INDEX)), a))


def _is_normal_collection(db: str, coll: str) -> bool:
    return not coll.startswith("system.") and not (db == "local" and coll.startswith("replset."))


def search_list(target: Resource) -> tuple[Resource, ...]:
    """Every pattern whose privileges apply to `target` (the server's buildResourceSearchList)."""
    found = [ANY]
    if target.kind == "namespace":
        if _is_normal_collection(target.db, target.coll):
            if target.db not in ("local", "config"):
                found.append(ANY_NORMAL)
            found.append(Resource.database(target.db))
        elif target.coll.startswith(_BUCKETS) and len(target.coll) > len(_BUCKETS):
            bucket = target.coll[len(_BUCKETS):]
            found += [Resource("buckets", target.db, bucket), Resource("any_buckets"),
                      Resource("buckets_in_db", target.db), Resource("buckets_named", "", bucket)]
        found.append(Resource.collection(target.coll))
    elif target.kind == "database":
        if target.db not in ("local", "config"):
            found.append(ANY_NORMAL)
    found.append(target)
    return tuple(dict.fromkeys(found))


_BUCKETS = "system.buckets."


def merge_privileges(privileges: Iterable[Privilege]) -> dict[Resource, frozenset[str]]:
    merged: dict[Resource, set[str]] = {}
    for resource, actions in privileges:
        merged.setdefault(resource, set()).update(actions)
    return {resource: frozenset(actions) for resource, actions in merged.items()}


def is_authorized(granted: Mapping[Resource, frozenset[str]], wanted: Privilege) -> bool:
    """True when the privileges `granted` (resource -> actions) cover `wanted` (``anyAction`` covers all)."""
    missing = set(wanted.actions)
    for pattern in search_list(wanted.resource):
        held = granted.get(pattern, frozenset())
        if "anyAction" in held:
            return True
        missing -= held
        if not missing:
            return True
    return not missing


# -- the built-in roles --------------------------------------------------------------------------

READ_ACTIONS = frozenset(
    {
        "changeStream",
        "collStats",
        "dbHash",
        "dbStats",
        "find",
        "killCursors",
        "listCollections",
        "listIndexes",
        "listSearchIndexes",
        "planCacheRead",
    }
)
READ_WRITE_ACTIONS = READ_ACTIONS | {
    "cleanupStructuredEncryptionData",
    "compactStructuredEncryptionData",
    "convertToCapped",
    "createCollection",
    "createIndex",
    "createSearchIndexes",
    "dropCollection",
    "dropIndex",
    "dropSearchIndex",
    "insert",
    "remove",
    "renameCollectionSameDB",
    "update",
    "updateSearchIndex",
}
USER_ADMIN_ACTIONS = frozenset(
    {
        "changeCustomData",
        "changePassword",
        "createUser",
        "createRole",
        "dropUser",
        "dropRole",
        "grantRole",
        "revokeRole",
        "setAuthenticationRestriction",
        "viewUser",
        "viewRole",
    }
)
DB_ADMIN_ACTIONS = frozenset(
    {
        "analyze",
        "bypassDocumentValidation",
        "collMod",
        "collStats",
        "compact",
        "convertToCapped",
        "createCollection",
        "dbStats",
        "dropCollection",
        "dropDatabase",
        "dropIndex",
        "dropSearchIndex",
        "createIndex",
        "createSearchIndexes",
        "enableProfiler",
        "listCollections",
        "listIndexes",
        "listSearchIndexes",
        "updateSearchIndex",
        "planCacheIndexFilter",
        "planCacheRead",
        "planCacheWrite",
        "reIndex",
        "renameCollectionSameDB",
        "storageDetails",
        "validate",
    }
)
SYSTEM_PROFILE_ACTIONS = READ_ACTIONS | {"convertToCapped", "createCollection", "dropCollection"}
CLUSTER_MONITOR_CLUSTER_ACTIONS = frozenset(
    {
        "connPoolStats",
        "getCmdLineOpts",
        "getDefaultRWConcern",
        "getLog",
        "getParameter",
        "getShardMap",
        "hostInfo",
        "listDatabases",
        "listSampledQueries",
        "listSessions",
        "listShards",
        "netstat",
        "operationMetrics",
        "replSetGetConfig",
        "replSetGetStatus",
        "serverStatus",
        "top",
        "useUUID",
        "inprog",
        "shardingState",
        "allCollectionStats",
        "shardedDataDistribution",
    }
)
CLUSTER_MONITOR_DB_ACTIONS = frozenset({"collStats", "dbStats", "getDatabaseVersion", "getShardVersion", "indexStats"})
HOST_MANAGER_CLUSTER_ACTIONS = frozenset(
    {
        "applicationMessage",
        "auditConfigure",
        "connPoolSync",
        "dropConnections",
        "logRotate",
        "oidReset",
        "setParameter",
        "shutdown",
        "touch",
        "unlock",
        "flushRouterConfig",
        "fsync",
        "invalidateUserCache",
        "killAnyCursor",
        "killAnySession",
        "killop",
        "replSetResizeOplog",
        "resync",
        "trafficRecord",
        "rotateCertificates",
        "oidcListKeys",
        "oidcRefreshKeys",
    }
)
CLUSTER_MANAGER_CLUSTER_ACTIONS = frozenset(
    {
        "appendOplogNote",
        "applicationMessage",
        "replSetConfigure",
        "replSetGetConfig",
        "replSetGetStatus",
        "replSetStateChange",
        "resync",
        "addShard",
        "removeShard",
        "listSessions",
        "listShards",
        "flushRouterConfig",
        "cleanupOrphaned",
        "getDefaultRWConcern",
        "runTenantMigration",
        "setDefaultRWConcern",
        "setFeatureCompatibilityVersion",
        "setClusterParameter",
        "getClusterParameter",
        "setChangeStreamState",
        "getChangeStreamState",
        "querySettings",
        "queryStatsRead",
        "queryStatsReadTransformed",
        "checkMetadataConsistency",
        "transitionFromDedicatedConfigServer",
        "transitionToDedicatedConfigServer",
    }
)
CLUSTER_MANAGER_DB_ACTIONS = frozenset(
    {
        "analyzeShardKey",
        "configureQueryAnalyzer",
        "clearJumboFlag",
        "splitChunk",
        "moveChunk",
        "moveCollection",
        "enableSharding",
        "splitVector",
        "refineCollectionShardKey",
        "reshardCollection",
    }
)
WRITE_ACTIONS = frozenset({"insert", "update", "remove"})
RESTORE_WRITE_ACTIONS = frozenset(
    {
        "bypassDocumentValidation",
        "collMod",
        "convertToCapped",
        "createCollection",
        "createIndex",
        "createSearchIndexes",
        "dropCollection",
        "insert",
        "updateSearchIndex",
    }
)

# Pattern specs relative to the role's database:
#   ("db",) the role's database; ("db", X) database X; ("ns", C) the role's db.C; ("ns", D, C) D.C;
#   ("coll", C) collection C in any db; ("any_normal",); ("cluster",); ("any",)
_Spec = tuple[str, ...]


@dataclass(frozen=True)
class BuiltinRole:
    name: str
    admin_only: bool
    privileges: tuple[tuple[_Spec, frozenset[str]], ...] = ()
    roles: tuple[tuple[str, str | None], ...] = ()  # (role, db or None for the role's own db)


def _role(name: str, *, admin_only: bool = False, roles=(), privileges=()) -> BuiltinRole:
    subs = tuple((r, None) if isinstance(r, str) else (r[0], r[1]) for r in roles)
    privs = tuple((spec, frozenset(actions)) for spec, actions in privileges)
    return BuiltinRole(name, admin_only, privs, subs)


BUILTIN_ROLES: dict[str, BuiltinRole] = {
    r.name: r
    for r in (
        _role("read", privileges=[(("db",), READ_ACTIONS), (("ns", "system.js"), READ_ACTIONS)]),
        _role("readWrite", privileges=[(("db",), READ_WRITE_ACTIONS), (("ns", "system.js"), READ_WRITE_ACTIONS)]),
        _role("userAdmin", privileges=[(("db",), USER_ADMIN_ACTIONS)]),
        _role(
            "dbAdmin",
            privileges=[
                (("db",), DB_ADMIN_ACTIONS | {"configureQueryAnalyzer"}),
                (("ns", "system.profile"), SYSTEM_PROFILE_ACTIONS),
            ],
        ),
        _role("dbOwner", roles=["readWrite", "dbAdmin", "userAdmin"]),
        _role(
            "enableSharding",
            privileges=[
                (
                    ("any_normal",),
                    {"analyzeShardKey", "enableSharding", "moveCollection", "refineCollectionShardKey", "reshardCollection"},
                )
            ],
        ),
        _role(
            "readAnyDatabase",
            admin_only=True,
            privileges=[
                (("any_normal",), READ_ACTIONS),
                (("cluster",), {"listDatabases"}),
                (("coll", "system.js"), READ_ACTIONS),
            ],
        ),
        _role(
            "readWriteAnyDatabase",
            admin_only=True,
            roles=["readAnyDatabase"],
            privileges=[(("any_normal",), READ_WRITE_ACTIONS), (("coll", "system.js"), READ_WRITE_ACTIONS)],
        ),
        _role(
            "userAdminAnyDatabase",
            admin_only=True,
            privileges=[
                (("any_normal",), USER_ADMIN_ACTIONS | {"listCachedAndActiveUsers"}),
                (("db", "local"), USER_ADMIN_ACTIONS),
                (("db", "config"), USER_ADMIN_ACTIONS),
                (("cluster",), {"listDatabases", "authSchemaUpgrade", "invalidateUserCache", "viewUser"}),
                (("ns", "admin", "system.users"), READ_ACTIONS | {"createIndex", "createSearchIndexes", "dropIndex", "dropSearchIndex"}),
                (("ns", "admin", "system.roles"), READ_ACTIONS | {"createIndex", "createSearchIndexes", "dropIndex", "dropSearchIndex"}),
                (("coll", "system.users"), READ_ACTIONS),
                (("ns", "admin", "system.version"), READ_ACTIONS),
                (("ns", "admin", "system.backup_users"), READ_ACTIONS),
            ],
        ),
        _role(
            "dbAdminAnyDatabase",
            admin_only=True,
            privileges=[
                (("cluster",), {"listDatabases", "applyOps"}),
                (("any_normal",), DB_ADMIN_ACTIONS | {"configureQueryAnalyzer"}),
                (("coll", "system.profile"), SYSTEM_PROFILE_ACTIONS),
            ],
        ),
        _role(
            "clusterMonitor",
            admin_only=True,
            roles=[("read", "config"), ("read", "local")],
            privileges=[
                (("cluster",), CLUSTER_MONITOR_CLUSTER_ACTIONS),
                (("any_normal",), CLUSTER_MONITOR_DB_ACTIONS),
                (("db", "config"), CLUSTER_MONITOR_DB_ACTIONS),
                (("ns", "config", "system.sessions"), CLUSTER_MONITOR_DB_ACTIONS),
                (("db", "local"), CLUSTER_MONITOR_DB_ACTIONS),
                (("ns", "local", "system.replset"), {"find"}),
                (("ns", "local", "replset.election"), {"find"}),
                (("ns", "local", "replset.minvalid"), {"find"}),
                (("coll", "system.profile"), {"find"}),
            ],
        ),
        _role(
            "hostManager",
            admin_only=True,
            privileges=[(("cluster",), HOST_MANAGER_CLUSTER_ACTIONS), (("any_normal",), {"killCursors"})],
        ),
        _role(
            "clusterManager",
            admin_only=True,
            roles=[("read", "config")],
            privileges=[
                (("cluster",), CLUSTER_MANAGER_CLUSTER_ACTIONS),
                (("any_normal",), CLUSTER_MANAGER_DB_ACTIONS),
                (("db", "config"), CLUSTER_MANAGER_DB_ACTIONS | WRITE_ACTIONS),
                (("db", "local"), CLUSTER_MANAGER_DB_ACTIONS | WRITE_ACTIONS),
                (("ns", "local", "system.replset"), READ_ACTIONS),
                (("any",), {"dbCheck"}),
                (("ns", "local", "system.healthlog"), READ_ACTIONS),
                (("ns", "local", "replset.election"), WRITE_ACTIONS),
                (("ns", "local", "replset.minvalid"), WRITE_ACTIONS),
            ],
        ),
        _role(
            "clusterAdmin",
            admin_only=True,
            roles=["clusterMonitor", "hostManager", "clusterManager"],
            privileges=[(("any_normal",), {"dropDatabase"}), (("any",), {"importCollection", "exportCollection"})],
        ),
        _role(
            "__queryableBackup",
            admin_only=True,
            privileges=[
                (("any",), {"collStats", "listCollections", "listIndexes", "listSearchIndexes"}),
                (("any_normal",), {"find"}),
                (("cluster",), {"getParameter", "listDatabases", "useUUID"}),
                (("db", "config"), {"find"}),
                (("db", "local"), {"find"}),
                (("ns", "local", "replset.election"), {"find"}),
                (("ns", "local", "replset.minvalid"), {"find"}),
                (("coll", "system.js"), {"find"}),
                (("coll", "system.users"), {"find"}),
                (("coll", "system.profile"), {"find"}),
                (("ns", "admin", "system.backup_users"), {"find"}),
                (("ns", "admin", "system.roles"), {"find"}),
                (("ns", "admin", "system.version"), {"find"}),
                (("ns", "config", "settings"), {"find"}),
            ],
        ),
        _role(
            "backup",
            admin_only=True,
            roles=["__queryableBackup"],
            privileges=[
                (("cluster",), {"appendOplogNote", "serverStatus", "setUserWriteBlockMode"}),
                (("ns", "config", "settings"), {"insert", "update"}),
            ],
        ),
        _role(
            "restore",
            admin_only=True,
            privileges=[
                (
                    ("cluster",),
                    {"getParameter", "forceUUID", "useUUID", "bypassWriteBlockingMode", "setUserWriteBlockMode", "applyOps"},
                ),
                (("db", "local"), RESTORE_WRITE_ACTIONS),
                (("db", "config"), RESTORE_WRITE_ACTIONS),
                (("ns", "local", "system.replset"), RESTORE_WRITE_ACTIONS),
                (("ns", "local", "replset.election"), RESTORE_WRITE_ACTIONS),
                (("ns", "local", "replset.minvalid"), RESTORE_WRITE_ACTIONS),
                (("any",), {"listCollections"}),
                (("any_normal",), RESTORE_WRITE_ACTIONS | USER_ADMIN_ACTIONS),
                (("coll", "system.js"), RESTORE_WRITE_ACTIONS),
                (("ns", "admin", "tempusers"), {"find"}),
                (("ns", "admin", "temproles"), {"find"}),
                (("ns", "admin", "system.backup_users"), RESTORE_WRITE_ACTIONS),
                (("ns", "admin", "system.version"), RESTORE_WRITE_ACTIONS | {"find"}),
                (("coll", "system.users"), RESTORE_WRITE_ACTIONS | {"find", "update", "remove"}),
                (("ns", "admin", "system.roles"), {"createIndex"}),
            ],
        ),
        _role("directShardOperations", admin_only=True, privileges=[(("cluster",), {"issueDirectShardOperations"})]),
        _role(
            "root",
            admin_only=True,
            roles=[
                "clusterAdmin",
                "userAdminAnyDatabase",
                "dbAdminAnyDatabase",
                "readWriteAnyDatabase",
                "backup",
                "restore",
                "directShardOperations",
            ],
            privileges=[
                (("any",), {"validate"}),
                (("cluster",), {"useTenant"}),
                (("ns", "config", "system.preimages"), {"find", "remove"}),
                (("ns", "config", "system.change_collection"), {"find", "insert", "remove", "update"}),
            ],
        ),
        _role("__system", admin_only=True, privileges=[(("any",), ALL_ACTIONS)]),
    )
}


def is_builtin_role(role: RoleName) -> bool:
    """The server's isBuiltinRole: a built-in name on any valid database but ``$external`` (admin-only ones on admin)."""
    spec = BUILTIN_ROLES.get(role.role)
    if spec is None or not role.db or role.db == "$external":
        return False
    return not spec.admin_only or role.db == "admin"


def builtin_role_names(db: str) -> list[RoleName]:
    """The built-in roles of `db` (getBuiltinRoleNamesForDB): all of them on admin, the others elsewhere."""
    if not db or db == "$external":
        return []
    return [RoleName(name, db) for name, spec in BUILTIN_ROLES.items() if db == "admin" or not spec.admin_only]


def _resource(spec: _Spec, db: str) -> Resource:
    kind = spec[0]
    if kind == "db":
        return Resource.database(spec[1] if len(spec) > 1 else db)
    if kind == "ns":
        return Resource.namespace(db, spec[1]) if len(spec) == 2 else Resource.namespace(spec[1], spec[2])
    if kind == "coll":
        return Resource.collection(spec[1])
    return {"any_normal": ANY_NORMAL, "cluster": CLUSTER, "any": ANY}[kind]


def _expand(actions: frozenset[str]) -> frozenset[str]:
    return ALL_ACTIONS if "anyAction" in actions else actions


@functools.lru_cache(maxsize=256)
def builtin_privileges(role: RoleName) -> dict[Resource, frozenset[str]]:
    """A built-in role's privileges, flattened as the server generates them from builtin_roles.yml:
    each inherited role's first (depth first, in the yml's order), then the role's own, merged by
    resource in order of first appearance. Empty for a name that is not a built-in role."""
    if not is_builtin_role(role):
        return {}
    spec = BUILTIN_ROLES[role.role]
    merged: dict[Resource, frozenset[str]] = {}
    for sub, sub_db in spec.roles:
        for resource, actions in builtin_privileges(RoleName(sub, sub_db or role.db)).items():
            merged[resource] = merged.get(resource, frozenset()) | actions
    for pattern, actions in spec.privileges:
        resource = _resource(pattern, role.db)
        merged[resource] = merged.get(resource, frozenset()) | _expand(actions)
    return merged


class Resolved(NamedTuple):
    """What a set of roles amounts to: every role reached (the given ones first) and the privileges."""

    roles: list[RoleName]
    privileges: dict[Resource, frozenset[str]]


# lookup(role) -> (direct privileges, direct subordinate roles) of a user-defined role, or None
RoleLookup = Callable[[RoleName], "tuple[Mapping[Resource, frozenset[str]], Iterable[RoleName]] | None"]


def resolve(roles: Iterable[RoleName], lookup: RoleLookup | None = None) -> Resolved:
    """The server's resolveRoles, breadth first from `roles`.

    Each role is visited once: a built-in role adds its flattened privileges and is a leaf; a
    user-defined role (found by `lookup`) adds its direct privileges and puts its subordinate
    roles on the next frontier; a role that exists neither way adds nothing. Privileges merge by
    resource in the order met. The given roles head ``roles`` whether or not they exist.
    """
    start = list(dict.fromkeys(roles))
    reached: dict[RoleName, None] = dict.fromkeys(start)
    privileges: dict[Resource, frozenset[str]] = {}
    frontier = start
    while frontier:
        following: list[RoleName] = []
        for role in frontier:
            if is_builtin_role(role):
                found: tuple[Mapping[Resource, frozenset[str]], Iterable[RoleName]] | None = (
                    builtin_privileges(role), ())
            else:
                found = lookup(role) if lookup is not None else None
            if found is None:
                continue
            direct, subordinates = found
            for resource, actions in direct.items():
                privileges[resource] = privileges.get(resource, frozenset()) | actions
            for sub in subordinates:
                if sub not in reached:
                    reached[sub] = None
                    following.append(sub)
        frontier = following
    return Resolved(list(reached), privileges)


def resolve_roles(roles: Iterable[Any], lookup: RoleLookup | None = None) -> list[RoleName]:
    """`roles` and every role they inherit (built-in roles are leaves: they inherit nothing)."""
    return resolve([_as_role(r) for r in roles], lookup).roles


@functools.lru_cache(maxsize=1024)
def _builtin_only(roles: tuple[RoleName, ...]) -> dict[Resource, frozenset[str]]:
    return resolve(roles).privileges


def _as_role(role: Any) -> RoleName:
    if isinstance(role, RoleName):
        return role
    if isinstance(role, Mapping):
        return RoleName(role["role"], role["db"])
    name, db = role
    return RoleName(name, db)


def privileges_for_roles(roles: Iterable[Any], lookup: RoleLookup | None = None) -> dict[Resource, frozenset[str]]:
    """resource -> actions granted by `roles` ((role, db) pairs, RoleNames or {role, db} documents);
    user-defined roles through `lookup` (`RoleGraph.lookup`), else built-in roles only."""
    names = tuple(dict.fromkeys(_as_role(r) for r in roles))
    if lookup is None:
        return _builtin_only(names)
    return resolve(names, lookup).privileges


def check(roles: Iterable[Any], actions: str | Iterable[str], resource: Resource,
          lookup: RoleLookup | None = None) -> bool:
    """Do `roles` allow `actions` on `resource`?"""
    wanted = frozenset([actions] if isinstance(actions, str) else actions)
    return is_authorized(privileges_for_roles(roles, lookup), Privilege(resource, wanted))
