"""The role graph: user-defined roles as nodes, "inherits" as edges, built-in roles as leaves.

A node is a user-defined role with its direct privileges (resource -> actions,
in the order of its ``privileges`` array) and its direct subordinate roles (the
roles it inherits, user-defined or built-in). Built-in roles are not nodes:
they are leaves whose privileges `builtin_privileges` flattens, as the server
does (``rolesInfo`` shows them with ``roles: []``).

Questions it answers, all through `resolve` (the server's resolveRoles, a
breadth-first walk that visits each role once, so it terminates on any graph):

- what a user (or a role's subordinates) amounts to: every role reached and
  the union of their privileges (cached per role set until the graph changes);
- whether granting roles to a role would close a cycle: it would exactly when
  the role is reachable from the roles being granted (checkOkayToGrantRolesToRole).
  The commands refuse such grants, so the graph stays acyclic.

`generation` moves with every change; the user store's generation (the
server's user cache generation) moves with it, and `AuthManager` recomputes a
connection's privileges on every command, so a change applies at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from mongosim.router.auth.names import RoleName
from mongosim.router.auth.privileges import Resolved, Resource, is_builtin_role, resolve

__all__ = ["RoleGraph", "RoleNode"]


class RoleNode(NamedTuple):
    privileges: dict[Resource, frozenset[str]]
    roles: tuple[RoleName, ...]


class RoleGraph:
    """User-defined roles; see the module docstring."""

    def __init__(self) -> None:
        self._nodes: dict[RoleName, RoleNode] = {}
        self._cache: dict[tuple[RoleName, ...], Resolved] = {}
        self.generation = 0

    def __contains__(self, role: object) -> bool:
        return role in self._nodes

    def __len__(self) -> int:
        return len(self._nodes)

    def exists(self, role: RoleName) -> bool:
        """A built-in role, or a user-defined one in the graph."""
        return is_builtin_role(role) or role in self._nodes

    def lookup(self, role: RoleName) -> tuple[Mapping[Resource, frozenset[str]], Iterable[RoleName]] | None:
        """(direct privileges, direct subordinates) of a user-defined role; None otherwise (`resolve`'s lookup)."""
        return self._nodes.get(role)

    def node(self, role: RoleName) -> RoleNode | None:
        return self._nodes.get(role)

    # -- changes -------------------------------------------------------------------------------

    def put(self, role: RoleName, privileges: Mapping[Resource, frozenset[str]], roles: Iterable[RoleName]) -> None:
        """Create or replace a role's node."""
        self._nodes[role] = RoleNode(dict(privileges), tuple(dict.fromkeys(roles)))
        self._changed()

    def remove(self, role: RoleName) -> None:
        if self._nodes.pop(role, None) is not None:
            self._changed()

    def clear(self) -> None:
        self._nodes.clear()
        self._changed()

    def _changed(self) -> None:
        self.generation += 1
        self._cache.clear()

    # -- questions -----------------------------------------------------------------------------

    def resolve(self, roles: Iterable[RoleName]) -> Resolved:
        """`roles`, every role they inherit (transitively) and the union of their privileges."""
        key = tuple(dict.fromkeys(roles))
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = resolve(key, self.lookup)
        return found

    def privileges(self, roles: Iterable[RoleName]) -> dict[Resource, frozenset[str]]:
        return self.resolve(roles).privileges

    def would_create_cycle(self, role: RoleName, granting: Iterable[RoleName]) -> bool:
        """Would `role` inheriting `granting` close a cycle (is `role` reachable from them)?"""
        return role in self.resolve(granting).roles
