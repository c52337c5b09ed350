"""`Cluster.reset()` (what the pytest fixtures run before each test) leaves nothing of the last test behind:
data, cursors, open transactions, faults, skews, failpoints — in both topologies, and with --auth."""

from __future__ import annotations

import json

import pymongo
import pytest
from pymongo.errors import OperationFailure

from mongosim import Cluster


@pytest.fixture(scope="module", params=["sharded", "replset"])
def cluster(request):
    with Cluster(shards=2, instant_hwm=True, topology=request.param) as c:
        yield c


def test_reset_drops_user_databases_and_kills_cursors(cluster):
    with pymongo.MongoClient(cluster.uri) as client:
        client.a.c.insert_many([{"_id": i} for i in range(5)])
        client.b.c.insert_one({"_id": 1})
        cursor = client.a.c.find(batch_size=1)
        next(cursor)
        assert sorted(cluster.reset()) == ["a", "b"]
        assert set(client.list_database_names()) <= {"admin", "config", "local"}
        with pytest.raises(OperationFailure) as err:
            list(cursor)
        assert err.value.code == 43  # CursorNotFound: it was killed
        nodes = cluster.call(lambda: [len(n.cursors) for n in cluster.core.nodes.values()])
        assert nodes == [0] * len(nodes)


def test_reset_ends_an_open_transaction(cluster):
    with pymongo.MongoClient(cluster.uri) as client:
        client.t.c.insert_one({"_id": 0})
        session = client.start_session()
        session.start_transaction()
        client.t.c.insert_one({"_id": 1}, session=session)  # never committed
        cluster.reset()
        with pytest.raises(OperationFailure) as err:  # it was ended: the next test cannot commit it
            session.commit_transaction()
        assert err.value.code == 251  # NoSuchTransaction
        session.end_session()
        client.t.c.insert_one({"_id": 1})  # the document it wrote is free
        assert client.t.c.find_one({"_id": 1}) == {"_id": 1}


def test_reset_clears_failpoints_and_skews(cluster):
    with pymongo.MongoClient(cluster.uri) as client:
        client.admin.command("configureFailPoint", "failCommand", mode="alwaysOn",
                             data={"failCommands": ["find"], "errorCode": 2})
        name = next(iter(cluster.core.nodes))
        cluster.call(lambda: setattr(cluster.core.nodes[name].wall, "skew", 30.0))
        cluster.reset()
        assert client.f.c.find_one() is None
        assert cluster.call(lambda: cluster.core.nodes[name].wall.skew) == 0.0


def test_reset_under_auth(tmp_path):
    users = tmp_path / "users.json"
    users.write_text(json.dumps([{"createUser": "root", "pwd": "pw", "roles": ["root"]}]))
    with Cluster(shards=2, instant_hwm=True, auth=True, users_file=str(users)) as c:
        with pymongo.MongoClient(c.uri, username="root", password="pw") as client:
            client.secret.c.insert_one({"_id": 1})
            assert c.reset() == ["secret"]
            assert "secret" not in client.list_database_names()
        with pymongo.MongoClient(c.uri) as anonymous:  # authorization is on again
            with pytest.raises(OperationFailure) as err:
                anonymous.x.c.insert_one({"_id": 1})
            assert err.value.code == 13
