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
clusterManager, clusterAdmin, backup, restore, directShardOperations and
root on ``admin`` only.

`check(roles, actions, resource)` answers one question; the command side
(`required_privileges`) lives in `router.auth.commands`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from mongosim.router.auth.names import RoleName

__all__ = [
    "ANY",
    "ANY_NORMAL",
    "BUILTIN_ROLES",
    "CLUSTER",
    "Privilege",
    "Resource",
    "check",
    "is_authorized",
    "is_builtin_role",
    "merge_privileges",
    "privileges_for_roles",
    "resolve_roles",
    "search_list",
]


@dataclass(frozen=True, slots=True)
class Resource:
    """A resource pattern; concrete requests use ``database``, ``namespace``, ``cluster`` or ``any_normal``."""

    kind: str  # any | cluster | any_normal | database | collection | namespace
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
        return {"db": self.db, "collection": self.coll}

    def __str__(self) -> str:
        if self.kind in ("any", "cluster", "any_normal"):
            return {"any": "<any resource>", "cluster": "<cluster>", "any_normal": "<all normal resources>"}[self.kind]
        if self.kind == "database":
            return f"<database {self.db}>"
        if self.kind == "collection":
            return f"<collection {self.coll} in any database>"
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
        return {"resource": self.resource.to_doc(), "actions": sorted(self.actions)}


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
        found.append(Resource.collection(target.coll))
    elif target.kind == "database":
        if target.db not in ("local", "config"):
            found.append(ANY_NORMAL)
    found.append(target)
    return tuple(dict.fromkeys(found))


def merge_privileges(privileges: Iterable[Privilege]) -> dict[Resource, frozenset[str]]:
    merged: dict[Resource, set[str]] = {}
    for resource, actions in privileges:
        merged.setdefault(resource, set()).update(actions)
    return {resource: frozenset(actions) for resource, actions in merged.items()}


def is_authorized(granted: Mapping[Resource, frozenset[str]], wanted: Privilege) -> bool:
    """True when the privileges `granted` (resource -> actions) cover `wanted`."""
    missing = set(wanted.actions)
    for pattern in search_list(wanted.resource):
        missing -= granted.get(pattern, frozenset())
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
    )
}

def is_builtin_role(role: RoleName) -> bool:
    spec = BUILTIN_ROLES.get(role.role)
    if spec is None:
        return False
    return not spec.admin_only or role.db == "admin"


def _resource(spec: _Spec, db: str) -> Resource:
    kind = spec[0]
    if kind == "db":
        return Resource.database(spec[1] if len(spec) > 1 else db)
    if kind == "ns":
        return Resource.namespace(db, spec[1]) if len(spec) == 2 else Resource.namespace(spec[1], spec[2])
    if kind == "coll":
        return Resource.collection(spec[1])
    return {"any_normal": ANY_NORMAL, "cluster": CLUSTER, "any": ANY}[kind]


def resolve_roles(roles: Iterable[RoleName]) -> list[RoleName]:
    """All roles reachable from `roles` (themselves included), built-in ones expanded; unknown ones kept."""
    seen: dict[RoleName, None] = {}
    frontier = list(roles)
    while frontier:
        role = frontier.pop(0)
        if role in seen:
            continue
        seen[role] = None
        if is_builtin_role(role):
            for sub, sub_db in BUILTIN_ROLES[role.role].roles:
                frontier.append(RoleName(sub, sub_db or role.db))
    return list(seen)


@functools.lru_cache(maxsize=1024)
def _privileges_for(roles: frozenset[RoleName]) -> dict[Resource, frozenset[str]]:
    granted: list[Privilege] = []
    for role in resolve_roles(sorted(roles)):
        if not is_builtin_role(role):
            continue
        for spec, actions in BUILTIN_ROLES[role.role].privileges:
            granted.append(Privilege(_resource(spec, role.db), actions))
    return merge_privileges(granted)


def _as_role(role: Any) -> RoleName:
    if isinstance(role, RoleName):
        return role
    if isinstance(role, Mapping):
        return RoleName(role["role"], role["db"])
    name, db = role
    return RoleName(name, db)


def privileges_for_roles(roles: Iterable[Any]) -> dict[Resource, frozenset[str]]:
    """resource -> actions granted by `roles` ((role, db) pairs, RoleNames or {role, db} documents)."""
    return _privileges_for(frozenset(_as_role(r) for r in roles))


def check(roles: Iterable[Any], actions: str | Iterable[str], resource: Resource) -> bool:
    """Do `roles` allow `actions` on `resource`?"""
    wanted = frozenset([actions] if isinstance(actions, str) else actions)
    return is_authorized(privileges_for_roles(roles), Privilege(resource, wanted))
