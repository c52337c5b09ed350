"""killAllSessions, killSessions and endSessions abort the sessions' open transactions.

Test suites (the driver specifications' runner among them) call killAllSessions
between tests: a transaction left open would otherwise hold its documents until
transactionLifetimeLimitSeconds, and every later write to them would wait.
Through pymongo, against a mongos and against a replica-set primary.
"""

from __future__ import annotations

import pymongo
import pytest
from pymongo.errors import OperationFailure

from mongosim import Cluster


@pytest.fixture(scope="module", params=["sharded", "replset"])
def cluster(request):
    with Cluster(shards=2, port=0, topology=request.param, instant_hwm=True) as c:
        yield c


@pytest.fixture
def client(cluster):
    cl = pymongo.MongoClient(cluster.uri, serverSelectionTimeoutMS=5000)
    cl.drop_database("k")
    cl.k.c.insert_many([{"_id": 1, "x": 0}, {"_id": 2, "x": 0}])
    yield cl
    cl.drop_database("k")
    cl.close()


def _open_transaction(client: pymongo.MongoClient, doc_id: int):
    session = client.start_session()
    session.start_transaction()
    client.k.c.update_one({"_id": doc_id}, {"$set": {"x": "in txn"}}, session=session)
    return session


def _assert_aborted(session) -> None:
    with pytest.raises(OperationFailure) as info:
        session.commit_transaction()
    assert info.value.code == 251  # NoSuchTransaction
    assert "has been aborted" in str(info.value)
    assert info.value.has_error_label("TransientTransactionError")


def test_kill_all_sessions_aborts_every_open_transaction(client):
    first, second = _open_transaction(client, 1), _open_transaction(client, 2)
    client.admin.command("killAllSessions", [])
    _assert_aborted(first)
    _assert_aborted(second)
    # the documents are free: a write outside the transactions goes through at once
    client.k.c.update_many({}, {"$set": {"x": "after"}})
    assert [d["x"] for d in client.k.c.find(sort=[("_id", 1)])] == ["after", "after"]


def test_kill_sessions_aborts_only_the_named_sessions(client):
    killed, kept = _open_transaction(client, 1), _open_transaction(client, 2)
    client.admin.command("killSessions", [killed.session_id])
    _assert_aborted(killed)
    kept.commit_transaction()
    assert [d["x"] for d in client.k.c.find(sort=[("_id", 1)])] == [0, "in txn"]


def test_end_sessions_aborts_the_open_transaction(client):
    session = _open_transaction(client, 1)
    client.admin.command("endSessions", [session.session_id])
    client.k.c.update_one({"_id": 1}, {"$set": {"x": "after"}})
    assert client.k.c.find_one({"_id": 1})["x"] == "after"


def test_kill_all_sessions_of_other_users_leaves_the_transaction_open(client):
    session = _open_transaction(client, 1)
    client.admin.command("killAllSessions", [{"user": "someone", "db": "admin"}])
    session.commit_transaction()
    assert client.k.c.find_one({"_id": 1})["x"] == "in txn"
