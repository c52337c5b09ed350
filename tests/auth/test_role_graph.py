"""The role graph against a naive model: random role DAGs, a user's privileges, refused cycles.

The model keeps each user-defined role's direct privileges and direct roles as the test
created them; a user's privileges are then the naive transitive union: every role reachable
from the user's roles (depth first over the model), each contributing its own privileges (a
built-in role its flattened ones, `builtin_privileges`, checked on its own in test_roles).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mongosim.oplog.errors import MongoError
from mongosim.router.auth import AuthManager, UserStore
from mongosim.router.auth.names import RoleName
from mongosim.router.auth.privileges import ALL_ACTIONS, Privilege, Resource, builtin_privileges, is_authorized
from mongosim.router.auth.role_graph import RoleGraph
from mongosim.router.auth.scram import make_credential

CRED = {"SCRAM-SHA-256": make_credential("SCRAM-SHA-256", "u", "pw", iterations=4096).to_doc()}
ACTIONS = ["find", "insert", "update", "remove", "collStats", "serverStatus", "listDatabases", "anyAction"]
# resources a role of "t" may name; an admin role may name any of these
T_RESOURCES = [{"db": "t", "collection": ""}, {"db": "t", "collection": "a"}, {"db": "t", "collection": "b"}]
ADMIN_RESOURCES = T_RESOURCES + [{"cluster": True}, {"anyResource": True}, {"db": "", "collection": ""},
                                 {"db": "", "collection": "a"}, {"db": "x", "collection": "y"}]
T_BUILTINS = [RoleName("read", "t"), RoleName("readWrite", "t"), RoleName("dbAdmin", "t")]
ADMIN_BUILTINS = T_BUILTINS + [RoleName("clusterMonitor", "admin"), RoleName("readAnyDatabase", "admin")]
REQUESTS = [Resource.namespace("t", "a"), Resource.namespace("t", "c"), Resource.namespace("x", "y"),
            Resource.database("t"), Resource("cluster"), Resource.namespace("local", "oplog.rs"),
            Resource.namespace("t", "system.js")]


def _resource(doc: dict) -> Resource:
    if "cluster" in doc:
        return Resource("cluster")
    if "anyResource" in doc:
        return Resource("any")
    db, coll = doc["db"], doc["collection"]
    if not db:
        return Resource("any_normal") if not coll else Resource.collection(coll)
    return Resource.database(db) if not coll else Resource.namespace(db, coll)


@st.composite
def role_dags(draw):
    """Roles created in order, each inheriting only roles created before it: always a DAG."""
    count = draw(st.integers(1, 8))
    roles: list[tuple[RoleName, list[dict], list[RoleName]]] = []
    for i in range(count):
        role = RoleName(f"r{i}", draw(st.sampled_from(["t", "admin"])))
        admin = role.db == "admin"
        earlier = [r for r, _, _ in roles if admin or r.db == role.db]
        subs = draw(st.lists(st.sampled_from(earlier + (ADMIN_BUILTINS if admin else T_BUILTINS)), max_size=3,
                             unique=True))
        privs = draw(st.lists(
            st.fixed_dictionaries({"resource": st.sampled_from(ADMIN_RESOURCES if admin else T_RESOURCES),
                                   "actions": st.lists(st.sampled_from(ACTIONS), min_size=1, max_size=3)}),
            max_size=3))
        roles.append((role, privs, subs))
    return roles


class Model:
    """The naive model: direct privileges and direct roles per user-defined role."""

    def __init__(self) -> None:
        self.privileges: dict[RoleName, dict[Resource, frozenset[str]]] = {}
        self.roles: dict[RoleName, list[RoleName]] = {}

    def add(self, role: RoleName, privs: list[dict], subs: list[RoleName]) -> None:
        merged: dict[Resource, frozenset[str]] = {}
        for p in privs:
            actions = ALL_ACTIONS if "anyAction" in p["actions"] else frozenset(p["actions"])
            res = _resource(p["resource"])
            merged[res] = merged.get(res, frozenset()) | actions
        self.privileges[role] = merged
        self.roles[role] = list(subs)

    def reachable(self, start: list[RoleName]) -> set[RoleName]:
        seen: set[RoleName] = set()
        stack = list(start)
        while stack:
            role = stack.pop()
            if role not in seen:
                seen.add(role)
                stack += self.roles.get(role, [])
        return seen

    def union(self, start: list[RoleName]) -> dict[Resource, frozenset[str]]:
        out: dict[Resource, frozenset[str]] = {}
        for role in self.reachable(start):
            for res, actions in (self.privileges.get(role) or builtin_privileges(role)).items():
                out[res] = out.get(res, frozenset()) | actions
        return out

    def acyclic(self) -> bool:
        return all(role not in self.reachable(subs) for role, subs in self.roles.items())


def _build(dag) -> tuple[UserStore, Model]:
    store, model = UserStore(), Model()
    for role, privs, subs in dag:
        store.run_command(role.db, {"createRole": role.role, "privileges": privs, "roles": [r.to_doc() for r in subs]})
        model.add(role, privs, subs)
    return store, model


@given(role_dags(), st.data())
def test_effective_privileges_are_the_transitive_union(dag, data):
    store, model = _build(dag)
    every = [r for r, _, _ in dag] + ADMIN_BUILTINS
    held = data.draw(st.lists(st.sampled_from(every), max_size=4, unique=True))
    store.run_command("t", {"createUser": "u", "credentials": CRED, "roles": [r.to_doc() for r in held]})
    expected = model.union(held)
    assert store.effective_privileges(("u", "t")) == expected
    # and the authorization decisions follow: the AuthManager answers as the naive union does
    manager = AuthManager(enabled=True, store=store)
    conn = manager.new_connection()
    conn.user = ("u", "t")
    granted = manager.granted_privileges(conn)
    for resource in REQUESTS:
        for action in ("find", "insert", "serverStatus"):
            want = Privilege.of(resource, action)
            assert is_authorized(granted, want) == is_authorized(expected, want)


@given(role_dags(), st.data())
def test_cycles_are_always_refused(dag, data):
    store, model = _build(dag)
    names = [r for r, _, _ in dag]
    for _ in range(data.draw(st.integers(1, 6))):
        role = data.draw(st.sampled_from(names))
        allowed = [r for r in names if role.db == "admin" or r.db == role.db]
        granting = data.draw(st.lists(st.sampled_from(allowed), min_size=1, max_size=2, unique=True))
        replace = data.draw(st.booleans())
        cmd = ({"updateRole": role.role, "roles": [r.to_doc() for r in granting]} if replace
               else {"grantRolesToRole": role.role, "roles": [r.to_doc() for r in granting]})
        closes_cycle = role in model.reachable(granting)
        try:
            store.run_command(role.db, cmd)
        except MongoError as exc:
            assert closes_cycle
            assert exc.code_name == "InvalidRoleModification"
            assert exc.errmsg in (f"Cannot grant role {role} to itself.",
                                  f"Granting roles to {role} would introduce a cycle in the role graph")
        else:
            assert not closes_cycle
            model.roles[role] = list(granting) if replace else list(dict.fromkeys(model.roles[role] + granting))
        assert model.acyclic()
        assert [RoleName(r["role"], r["db"]) for r in store.roles.get(role)["roles"]] == model.roles[role]
        for start in names:
            assert store.roles.graph.privileges([start]) == model.union([start])


def test_graph_resolution_visits_each_role_once():
    graph = RoleGraph()
    a, b, c = RoleName("a", "t"), RoleName("b", "t"), RoleName("c", "t")
    graph.put(c, {Resource.database("t"): frozenset({"find"})}, [RoleName("read", "t")])
    graph.put(b, {}, [c])
    graph.put(a, {Resource.namespace("t", "x"): frozenset({"insert"})}, [b, c])
    resolved = graph.resolve([a])
    assert resolved.roles == [a, b, c, RoleName("read", "t")]
    assert resolved.privileges[Resource.namespace("t", "x")] == {"insert"}
    assert "find" in resolved.privileges[Resource.database("t")]
    assert graph.would_create_cycle(c, [a]) and not graph.would_create_cycle(a, [c])
    generation = graph.generation
    graph.remove(c)
    assert graph.generation > generation
    # the cache was dropped: a dangling reference is reached but contributes nothing
    assert graph.resolve([a]).roles == [a, b, c]
    assert Resource.database("t") not in graph.resolve([a]).privileges
    assert graph.resolve([RoleName("gone", "t")]).roles == [RoleName("gone", "t")]
