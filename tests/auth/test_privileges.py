"""Built-in roles against representative commands, change streams at every level included."""

from __future__ import annotations

import pytest
from bson.binary import Binary

from mongosim.oplog.errors import MongoError
from mongosim.router.auth import ANY_NORMAL, CLUSTER, AuthManager, Resource, UserStore, check, required_privileges
from mongosim.router.auth.commands import NO_AUTH_COMMANDS, AnyOf, RenameWithinDatabase
from mongosim.router.auth.privileges import Privilege, search_list

ROLES = {
    "read": [("read", "shop")],
    "readWrite": [("readWrite", "shop")],
    "dbAdmin": [("dbAdmin", "shop")],
    "userAdmin": [("userAdmin", "shop")],
    "dbOwner": [("dbOwner", "shop")],
    "clusterMonitor": [("clusterMonitor", "admin")],
    "readAnyDatabase": [("readAnyDatabase", "admin")],
    "readWriteAnyDatabase": [("readWriteAnyDatabase", "admin")],
    "userAdminAnyDatabase": [("userAdminAnyDatabase", "admin")],
    "clusterAdmin": [("clusterAdmin", "admin")],
    "root": [("root", "admin")],
    "none": [],
}

CS = [{"$changeStream": {}}]
COMMANDS = {
    "find": ("shop", {"find": "orders", "filter": {}}),
    "find other db": ("crm", {"find": "leads"}),
    "count": ("shop", {"count": "orders"}),
    "distinct": ("shop", {"distinct": "orders", "key": "x"}),
    "insert": ("shop", {"insert": "orders", "documents": [{}]}),
    "update": ("shop", {"update": "orders", "updates": [{"q": {}, "u": {"$set": {"a": 1}}}]}),
    "upsert": ("shop", {"update": "orders", "updates": [{"q": {}, "u": {"$set": {"a": 1}}, "upsert": True}]}),
    "delete": ("shop", {"delete": "orders", "deletes": [{"q": {}, "limit": 0}]}),
    "findAndModify": ("shop", {"findAndModify": "orders", "query": {}, "update": {"$inc": {"n": 1}}}),
    "aggregate": ("shop", {"aggregate": "orders", "pipeline": [{"$match": {}}], "cursor": {}}),
    "aggregate $lookup other db": ("shop", {"aggregate": "orders", "pipeline": [{"$lookup": {"from": {"db": "crm", "coll": "leads"}, "as": "l"}}], "cursor": {}}),
    "aggregate $out": ("shop", {"aggregate": "orders", "pipeline": [{"$out": "copy"}], "cursor": {}}),
    "change stream on collection": ("shop", {"aggregate": "orders", "pipeline": CS, "cursor": {}}),
    "change stream on database": ("shop", {"aggregate": 1, "pipeline": CS, "cursor": {}}),
    "change stream on cluster": ("admin", {"aggregate": 1, "pipeline": [{"$changeStream": {"allChangesForCluster": True}}], "cursor": {}}),
    "change stream on other db": ("crm", {"aggregate": "leads", "pipeline": CS, "cursor": {}}),
    "getMore": ("shop", {"getMore": Binary(b"\0" * 8), "collection": "orders"}),
    "killCursors": ("shop", {"killCursors": "orders", "cursors": [1]}),
    "listCollections": ("shop", {"listCollections": 1}),
    "listCollections authorized": ("crm", {"listCollections": 1, "authorizedCollections": True, "nameOnly": True}),
    "listIndexes": ("shop", {"listIndexes": "orders"}),
    "listDatabases": ("admin", {"listDatabases": 1}),
    "createIndexes": ("shop", {"createIndexes": "orders", "indexes": [{"key": {"a": 1}, "name": "a_1"}]}),
    "drop": ("shop", {"drop": "orders"}),
    "create": ("shop", {"create": "fresh"}),
    "collMod": ("shop", {"collMod": "orders"}),
    "collStats": ("shop", {"collStats": "orders"}),
    "renameCollection": ("admin", {"renameCollection": "shop.orders", "to": "shop.archive"}),
    "renameCollection across dbs": ("admin", {"renameCollection": "shop.orders", "to": "crm.orders"}),
    "dropDatabase": ("shop", {"dropDatabase": 1}),
    "createUser": ("shop", {"createUser": "bob", "pwd": "x", "roles": ["read"]}),
    "usersInfo": ("shop", {"usersInfo": 1}),
    "dropUser": ("shop", {"dropUser": "bob"}),
    "serverStatus": ("admin", {"serverStatus": 1}),
    "listShards": ("admin", {"listShards": 1}),
    "addShard": ("admin", {"addShard": "rs1/localhost:27018"}),
    "enableSharding": ("admin", {"enableSharding": "shop"}),
    "shardCollection": ("admin", {"shardCollection": "shop.orders", "key": {"_id": "hashed"}}),
    "balancerStatus": ("admin", {"balancerStatus": 1}),
    "find config.chunks": ("config", {"find": "chunks"}),
    "find local.oplog.rs": ("local", {"find": "oplog.rs"}),
    "find shop.system.users": ("shop", {"find": "system.users"}),
    "commitTransaction": ("admin", {"commitTransaction": 1}),
}

# Which roles may run which commands (roles not listed for a command: refused).
ALL_ROLES = set(ROLES)  # "none" too: an authenticated user without roles
SHOP_READERS = {"read", "readWrite", "dbOwner", "readAnyDatabase", "readWriteAnyDatabase", "root"}
SHOP_WRITERS = {"readWrite", "dbOwner", "readWriteAnyDatabase", "root"}
SHOP_DDL = {"readWrite", "dbAdmin", "dbOwner", "readWriteAnyDatabase", "root"}
ANY_READERS = {"readAnyDatabase", "readWriteAnyDatabase", "root"}
USER_ADMINS = {"userAdmin", "dbOwner", "userAdminAnyDatabase", "root"}
EXPECTED = {
    "find": SHOP_READERS,
    "find other db": ANY_READERS,
    "count": SHOP_READERS,
    "distinct": SHOP_READERS,
    "insert": SHOP_WRITERS,
    "update": SHOP_WRITERS,
    "upsert": SHOP_WRITERS,
    "delete": SHOP_WRITERS,
    "findAndModify": SHOP_WRITERS,
    "aggregate": SHOP_READERS,
    "aggregate $lookup other db": ANY_READERS,
    "aggregate $out": SHOP_WRITERS,
    "change stream on collection": SHOP_READERS,
    "change stream on database": SHOP_READERS,
    "change stream on cluster": ANY_READERS,
    "change stream on other db": ANY_READERS,
    "getMore": ALL_ROLES,
    "killCursors": ALL_ROLES,
    "listCollections": SHOP_DDL | SHOP_READERS,
    # any privilege on anything in crm will do
    "listCollections authorized": {"clusterMonitor", "readAnyDatabase", "readWriteAnyDatabase", "userAdminAnyDatabase", "clusterAdmin", "root"},
    "listIndexes": SHOP_DDL | SHOP_READERS,
    "listDatabases": ALL_ROLES,
    "createIndexes": SHOP_DDL,
    "drop": SHOP_DDL,
    "create": SHOP_DDL,
    "collMod": {"dbAdmin", "dbOwner", "root"},
    "collStats": SHOP_DDL | SHOP_READERS | {"clusterMonitor", "clusterAdmin"},
    "renameCollection": SHOP_DDL,  # dbAdmin: renameCollectionSameDB and cannot read either side
    "renameCollection across dbs": {"readWriteAnyDatabase", "root"},
    "dropDatabase": {"dbAdmin", "dbOwner", "clusterAdmin", "root"},
    "createUser": USER_ADMINS,
    "usersInfo": USER_ADMINS,
    "dropUser": USER_ADMINS,
    "serverStatus": {"clusterMonitor", "clusterAdmin", "root"},
    "listShards": {"clusterMonitor", "clusterAdmin", "root"},
    "addShard": {"clusterAdmin", "root"},
    "enableSharding": {"clusterAdmin", "root"},
    "shardCollection": {"clusterAdmin", "root"},
    "balancerStatus": {"clusterMonitor", "clusterAdmin", "root"},
    "find config.chunks": {"clusterMonitor", "clusterAdmin", "root"},
    "find local.oplog.rs": {"clusterMonitor", "clusterAdmin", "root"},
    "find shop.system.users": {"userAdminAnyDatabase", "root"},
    "commitTransaction": ALL_ROLES,
}


@pytest.fixture(scope="module")
def manager():
    store = UserStore()
    for label, roles in ROLES.items():
        # roles only matter here: skip PBKDF2 and write the documents directly
        store.docs[(label, "admin")] = {
            "_id": f"admin.{label}",
            "user": label,
            "db": "admin",
            "credentials": {},
            "roles": [{"role": r, "db": d} for r, d in roles],
        }
    store.docs[("seed", "admin")] = {"_id": "admin.seed", "user": "seed", "db": "admin", "credentials": {}, "roles": []}
    return AuthManager(enabled=True, store=store)


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("role", sorted(ROLES))
def test_role_against_command(manager, role, command):
    db, cmd = COMMANDS[command]
    conn = manager.new_connection()
    conn.user = (role, "admin")
    allowed = role in EXPECTED[command]
    if allowed:
        manager.authorize(db, {**cmd, "$db": db}, conn)
    else:
        with pytest.raises(MongoError) as info:
            manager.authorize(db, {**cmd, "$db": db}, conn)
        assert info.value.code == 13 and info.value.code_name == "Unauthorized"
        assert info.value.errmsg.startswith(f"not authorized on {db} to execute command {{ {next(iter(cmd))}: ")


def test_change_stream_requirements():
    assert required_privileges("shop", {"aggregate": "orders", "pipeline": CS}) == [
        Privilege(Resource.namespace("shop", "orders"), frozenset({"changeStream", "find"}))
    ]
    assert required_privileges("shop", {"aggregate": 1, "pipeline": CS}) == [
        Privilege(Resource.database("shop"), frozenset({"changeStream", "find"}))
    ]
    assert required_privileges("admin", {"aggregate": 1, "pipeline": [{"$changeStream": {"allChangesForCluster": True}}]}) == [
        Privilege(ANY_NORMAL, frozenset({"changeStream", "find"}))
    ]
    # later stages add what they read
    reqs = required_privileges("shop", {"aggregate": "o", "pipeline": [*CS, {"$lookup": {"from": "x", "as": "y"}}]})
    assert Privilege(Resource.namespace("shop", "x"), frozenset({"find"})) in reqs


def test_change_stream_needs_both_actions():
    # find without changeStream (or the reverse) on the namespace is not enough
    assert not check([], {"changeStream", "find"}, Resource.namespace("shop", "orders"))
    assert check([("read", "shop")], {"changeStream", "find"}, Resource.namespace("shop", "orders"))
    assert check([("read", "shop")], {"changeStream", "find"}, Resource.database("shop"))
    assert not check([("read", "shop")], {"changeStream", "find"}, ANY_NORMAL)
    assert check([("readAnyDatabase", "admin")], {"changeStream", "find"}, ANY_NORMAL)
    assert not check([("clusterMonitor", "admin")], "find", Resource.namespace("shop", "orders"))
    assert not check([("dbAdmin", "shop")], "changeStream", Resource.namespace("shop", "orders"))


def test_check_api_and_search_list():
    assert check([("read", "shop")], "find", Resource.namespace("shop", "orders"))
    assert check([{"role": "read", "db": "shop"}], ["find", "listIndexes"], Resource.namespace("shop", "orders"))
    assert not check([("read", "shop")], "find", Resource.namespace("shop", "system.users"))
    assert check([("read", "shop")], "find", Resource.namespace("shop", "system.js"))
    assert not check([("readAnyDatabase", "admin")], "find", Resource.namespace("config", "chunks"))
    assert check([("readAnyDatabase", "admin")], "listDatabases", CLUSTER)
    # admin-only roles do not exist on other databases
    assert not check([("root", "shop")], "find", Resource.namespace("shop", "orders"))
    assert search_list(Resource.namespace("shop", "orders")) == (
        Resource("any"),
        ANY_NORMAL,
        Resource.database("shop"),
        Resource.collection("orders"),
        Resource.namespace("shop", "orders"),
    )
    assert search_list(Resource.namespace("local", "oplog.rs"))[1:] == (
        Resource.database("local"),
        Resource.collection("oplog.rs"),
        Resource.namespace("local", "oplog.rs"),
    )


def test_requirement_forms():
    create = required_privileges("shop", {"create": "c"})
    assert create == [
        AnyOf(((Privilege.of(Resource.namespace("shop", "c"), "createCollection"),), (Privilege.of(Resource.namespace("shop", "c"), "insert"),)))
    ]
    rename = required_privileges("admin", {"renameCollection": "shop.a", "to": "shop.b", "dropTarget": True})
    assert isinstance(rename[0], AnyOf)
    assert rename[0].alternatives[0] == (RenameWithinDatabase(Resource.namespace("shop", "a"), Resource.namespace("shop", "b"), True),)
    for resource, actions in required_privileges("shop", {"insert": "c", "bypassDocumentValidation": True}):
        assert resource == Resource.namespace("shop", "c") and actions == {"insert", "bypassDocumentValidation"}
    assert required_privileges("admin", {"hello": 1}) == []
    assert required_privileges("admin", {"noSuchCommand": 1}) == [Privilege.of(Resource("any"), "anyAction")]
    for name in ("hello", "isMaster", "ping", "buildInfo", "saslStart", "saslContinue", "logout", "endSessions"):
        assert name in NO_AUTH_COMMANDS


def test_configure_collection_balancing_requirements():
    """splitChunk on the namespace (cluster_configure_collection_balancing.cpp); moveChunk too to defragment."""
    ns = Resource.namespace("shop", "c")
    assert required_privileges("admin", {"configureCollectionBalancing": "shop.c", "chunkSize": 64}) == [
        Privilege.of(ns, "splitChunk")]
    assert required_privileges("admin", {"configureCollectionBalancing": "shop.c", "defragmentCollection": True}) == [
        Privilege.of(ns, "splitChunk", "moveChunk")]


def test_user_management_requirements():
    assert required_privileges("shop", {"createUser": "u", "pwd": "p", "roles": ["read", {"role": "read", "db": "crm"}]}) == [
        Privilege.of(Resource.database("shop"), "createUser"),
        Privilege.of(Resource.database("shop"), "grantRole"),
        Privilege.of(Resource.database("crm"), "grantRole"),
    ]
    assert required_privileges("shop", {"usersInfo": {"forAllDBs": True}}) == [Privilege.of(CLUSTER, "viewUser")]
    # one's own user needs nothing
    assert required_privileges("shop", {"usersInfo": "me"}, user=("me", "shop")) == []
    with pytest.raises(MongoError):
        required_privileges("shop", {"grantRolesToUser": "u", "roles": [{"role": "read"}]})


def test_unknown_commands_are_for_root_only(manager):
    for role in ROLES:
        conn = manager.new_connection()
        conn.user = (role, "admin")
        if role == "root":
            manager.authorize("admin", {"someFutureCommand": 1}, conn)
        else:
            with pytest.raises(MongoError):
                manager.authorize("admin", {"someFutureCommand": 1}, conn)
