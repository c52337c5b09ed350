"""A statement error ends the transaction, as on the server: every participant aborts at once (a mongos's
implicitlyAbortTransaction, whether the error came from a shard or from the mongos itself), a later
statement or commit is NoSuchTransaction, and an explicit abort says so too."""

from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure

from tests.crud.conftest import shard_two_ways


@pytest.fixture
def coll(client):
    client.drop_database("s")
    if client.topology_name == "sharded":
        shard_two_ways(client)  # shard00: k < 100, shard01: k >= 100
    c = client.s.c
    c.insert_many([{"_id": 1, "k": 1}, {"_id": 2, "k": 150}])
    yield c
    client.admin.command("killAllSessions", [])


def _no_such_transaction(fn) -> OperationFailure:
    with pytest.raises(OperationFailure) as info:
        fn()
    assert info.value.code == 251 and info.value.has_error_label("TransientTransactionError")
    return info.value


def test_a_write_conflict_aborts_every_participant(coll):
    client = coll.database.client
    with client.start_session() as holder, client.start_session() as s:
        holder.start_transaction()
        coll.update_one({"k": 150}, {"$set": {"by": "holder"}}, session=holder)  # locks k: 150 (shard01)
        s.start_transaction()
        coll.update_one({"k": 1}, {"$set": {"by": "s"}}, session=s)  # shard00
        with pytest.raises(OperationFailure) as info:
            coll.update_one({"k": 150}, {"$set": {"by": "s"}}, session=s)
        assert info.value.code == 112 and info.value.has_error_label("TransientTransactionError")
        # k: 1 is free at once: the transaction was aborted on shard00 too (a write would wait for it)
        coll.database.command("update", "c", updates=[{"q": {"k": 1}, "u": {"$set": {"by": "outside"}}}], maxTimeMS=2000)
        _no_such_transaction(lambda: coll.find_one({"k": 1}, session=s))
        _no_such_transaction(lambda: client.admin.command("abortTransaction", session=s))
        holder.abort_transaction()
    assert coll.find_one({"k": 1})["by"] == "outside"


def test_an_error_at_the_router_aborts_the_transaction(coll):
    """$out in a transaction is refused where the pipeline is parsed (on a mongos, by the mongos):
    the transaction's earlier write is gone all the same."""
    client = coll.database.client
    with client.start_session() as s:
        s.start_transaction()
        coll.insert_one({"_id": 3, "k": 3}, session=s)
        with pytest.raises(OperationFailure) as info:
            list(coll.aggregate([{"$match": {}}, {"$out": "o"}], session=s))
        assert info.value.code == 263
        coll.database.command("insert", "c", documents=[{"_id": 3, "k": 3, "outside": True}],
                              maxTimeMS=2000)  # not held by the aborted transaction: no wait, no duplicate
        _no_such_transaction(s.commit_transaction)
    assert coll.find_one({"_id": 3}) == {"_id": 3, "k": 3, "outside": True}


def test_abort_before_any_statement_reached_a_shard(sharded_client):
    """A mongos that sent nothing to a shard for the transaction answers abortTransaction as a shard would."""
    with sharded_client.start_session() as s:
        s.start_transaction()
        assert sharded_client.nowhere.c.find_one({}, session=s) is None  # (no database: no shard asked)
        err = _no_such_transaction(lambda: sharded_client.admin.command("abortTransaction", session=s))
        assert err.details["errmsg"] == "no known command has been sent by this router for this transaction"


def test_a_failpoint_error_leaves_the_transaction_open(coll):
    """failCommand fails a statement before the transaction is touched: it goes on (the drivers'
    backpressure retries rely on it)."""
    client = coll.database.client
    with client.start_session() as s:
        s.start_transaction()
        coll.insert_one({"_id": 3, "k": 3}, session=s)
        client.admin.command({"configureFailPoint": "failCommand", "mode": {"times": 1},
                              "data": {"failCommands": ["insert"], "errorCode": 112}})
        with pytest.raises(OperationFailure) as info:
            coll.insert_one({"_id": 4, "k": 4}, session=s)
        assert info.value.code == 112 and info.value.has_error_label("TransientTransactionError")
        coll.insert_one({"_id": 4, "k": 4}, session=s)
        s.commit_transaction()
    assert sorted(d["_id"] for d in coll.find({"_id": {"$gt": 2}})) == [3, 4]
