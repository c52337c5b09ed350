"""Log components and their verbosity: the `logLevel` and `logComponentVerbosity` server parameters.

The server's log components form a tree (logv2/log_component.h): `default` at
the root, `network.asio`, `storage.wt.wtCheckpoint`, ...  Each component may
have a minimum verbosity of its own (0 = log, N > 0 = debug level N) or none
(-1: it inherits its parent's).  `logLevel` is the default component's.

`describe` is what getParameter shows (parameters.cpp getLogComponentVerbosity):
`{verbosity: <default>, accessControl: {verbosity: -1}, ..., network: {verbosity:
-1, asio: {...}, ...}, ...}` in the order of the component table.  `parse` reads
a setting document as parse_log_component_settings.cpp does: `verbosity` sets
the enclosing component, `<component>: N` or `<component>: {verbosity: N, <child>:
...}` the named child; a name that is not a child of the enclosing component, a
value that is neither a number nor an object, or a level below -1 is BadValue
and nothing is set.
"""

from __future__ import annotations

import math
from typing import Any

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.values import type_name

__all__ = ["COMPONENTS", "describe", "parse", "apply", "dotted_name"]

# (short name, parent) in the server's table order (8.0's log_component.h); "default" is the root
COMPONENTS: tuple[tuple[str, str | None], ...] = (
    ("default", None),
    ("accessControl", "default"), ("assert", "default"), ("command", "default"), ("control", "default"),
    ("executor", "default"), ("geo", "default"), ("globalIndex", "default"), ("index", "default"),
    ("network", "default"), ("processHealth", "default"), ("query", "default"), ("replication", "default"),
    ("election", "replication"), ("heartbeats", "replication"), ("initialSync", "replication"),
    ("rollback", "replication"), ("sharding", "default"), ("rangeDeleter", "sharding"),
    ("shardingCatalogRefresh", "sharding"), ("migration", "sharding"), ("reshard", "sharding"),
    ("migrationPerf", "sharding"), ("storage", "default"), ("recovery", "storage"), ("journal", "storage"),
    ("wt", "storage"), ("wtBackup", "wt"), ("wtCheckpoint", "wt"), ("wtCompact", "wt"), ("wtEviction", "wt"),
    ("wtHS", "wt"), ("wtRecovery", "wt"), ("wtRTS", "wt"), ("wtSalvage", "wt"), ("wtTiered", "wt"),
    ("wtTimestamp", "wt"), ("wtTransaction", "wt"), ("wtVerify", "wt"), ("wtWriteLog", "wt"),
    ("write", "default"), ("ftdc", "default"), ("asio", "network"), ("bridge", "network"),
    ("tracking", "default"), ("transaction", "default"), ("tenantMigration", "default"),
    ("connectionPool", "network"), ("test", "default"), ("resourceConsumption", "default"),
)
_PARENT = dict(COMPONENTS)


def dotted_name(component: str) -> str:
    """`storage.wt.wtCheckpoint`; the root is `default`."""
    if component == "default":
        return "default"
    parts = [component]
    parent = _PARENT[component]
    while parent is not None and parent != "default":
        parts.append(parent)
        parent = _PARENT[parent]
    return ".".join(reversed(parts))


def describe(levels: dict[str, int]) -> dict[str, Any]:
    """The getParameter form of `levels` (component -> level; a component absent has none: -1)."""
    root: dict[str, Any] = {"verbosity": levels.get("default", 0)}
    nodes: dict[str, dict] = {"default": root}
    for name, parent in COMPONENTS[1:]:
        node = {"verbosity": levels.get(name, -1)}
        nodes[name] = node
        nodes[parent][name] = node
    return root


def _verbosity(value: Any, parent: str, field: str) -> int:
    """tryCoerceVerbosity: a number that is an integer, at least -1."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            isinstance(value, float) and (not math.isfinite(value) or value != int(value))):
        raise MongoError("BadValue", f"Expected {dotted_name(parent)}.{field} to be safely cast to integer, but could "
                                     f"not: Unable to coerce value to integer: {bson_str(value)}")
    level = int(value)
    if level < -1:
        raise MongoError("BadValue", f"Expected {dotted_name(parent)}.{field} to be greater than or equal to -1, but "
                                     f"found {bson_str(value)}")
    return level


def parse(settings: dict) -> list[tuple[str, int]]:
    """The (component, level) settings of a logComponentVerbosity document, in document order."""
    out: list[tuple[str, int]] = []

    def walk(doc: dict, parent: str) -> None:
        for key, value in doc.items():
            if key == "verbosity":
                out.append((parent, _verbosity(value, parent, key)))
                continue
            if _PARENT.get(key, "") != parent or key == "default":
                raise MongoError("BadValue", f"Invalid component name {dotted_name(parent)}.{key}")
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out.append((key, _verbosity(value, parent, key)))
            elif isinstance(value, dict):
                walk(value, key)
            else:
                raise MongoError("BadValue", f"Invalid type {type_name(value)}for component "
                                             f"{dotted_name(parent)}.{key}")

    walk(settings, "default")
    return out


def apply(levels: dict[str, int], settings: list[tuple[str, int]]) -> dict[str, int]:
    """`levels` with `settings` applied (a level of -1 clears the component's own level)."""
    new = dict(levels)
    for component, level in settings:
        if level < 0:
            if component == "default":
                new["default"] = 0  # (the root always has a level)
            else:
                new.pop(component, None)
        else:
            new[component] = level
    return new
