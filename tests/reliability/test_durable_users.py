"""`--data-dir` keeps the users and roles createUser / createRole made (users.bin), through a restart
and beside a `--users` file, with or without --auth."""

from __future__ import annotations

import json

import pymongo
import pytest
from pymongo.errors import OperationFailure

from mongosim import Cluster


def _client(cluster, **kw) -> pymongo.MongoClient:
    return pymongo.MongoClient(cluster.uri, serverSelectionTimeoutMS=5000, **kw)


@pytest.mark.parametrize("topology", ["sharded", "replset"])
def test_users_and_roles_survive_a_restart(tmp_path, topology):
    d = str(tmp_path / "data")
    users = tmp_path / "users.json"
    users.write_text(json.dumps([{"createUser": "admin", "pwd": "first", "roles": ["root"]}]))
    opts = dict(port=0, topology=topology, auth=True, users_file=str(users), data_dir=d)
    with Cluster(**opts) as cluster, _client(cluster, username="admin", password="first") as admin:
        admin.shop.command("createRole", "reader", roles=[],
                           privileges=[{"resource": {"db": "shop", "collection": "orders"}, "actions": ["find"]}])
        admin.shop.command("createUser", "clerk", pwd="c", roles=["reader"])
        admin.admin.command("updateUser", "admin", pwd="second")  # changed since the --users file
    with Cluster(**opts) as cluster:
        with _client(cluster, username="clerk", password="c", authSource="shop") as clerk:
            assert clerk.shop.orders.find_one() is None  # the role's privilege came back too
            with pytest.raises(OperationFailure) as e:
                clerk.shop.orders.insert_one({"_id": 1})
            assert e.value.code == 13
        with _client(cluster, username="admin", password="second") as admin:  # the saved user wins
            info = admin.shop.command("rolesInfo", "reader", showPrivileges=True)["roles"][0]
            assert info["privileges"][0]["actions"] == ["find"]
            admin.shop.command("dropUser", "clerk")
    with Cluster(**opts) as cluster, _client(cluster, username="admin", password="second") as admin:
        assert admin.shop.command("usersInfo", "clerk")["users"] == []  # a drop is kept too


def test_without_auth_too(tmp_path):
    d = str(tmp_path / "data")
    with Cluster(port=0, data_dir=d) as cluster, _client(cluster) as c:
        c.admin.command("createUser", "u", pwd="p", roles=["read"])
    with Cluster(port=0, data_dir=d) as cluster, _client(cluster) as c:
        assert [u["user"] for u in c.admin.command("usersInfo", 1)["users"]] == ["u"]
