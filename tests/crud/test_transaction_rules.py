"""What a transaction may run, as a mongod and a mongos decide it (transaction_validation.cpp).

Each refused statement is OperationNotSupportedInTransaction (263) without a
label, and leaves the transaction as it was: a later statement and the commit
go through.
"""

from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure

COUNT_MESSAGE = ("Cannot run 'count' in a multi-document transaction. Please see "
                 "http://dochub.mongodb.org/core/transaction-count for a recommended alternative.")


@pytest.fixture
def coll(client):
    client.drop_database("rules")
    c = client.rules.c
    c.insert_one({"_id": 0})
    return c


def _refused(fn, message: str) -> None:
    with pytest.raises(OperationFailure) as info:
        fn()
    assert info.value.code == 263 and info.value.details["codeName"] == "OperationNotSupportedInTransaction"
    assert info.value.details["errmsg"] == message
    assert "errorLabels" not in info.value.details


def test_count_is_refused_and_the_transaction_goes_on(coll):
    with coll.database.client.start_session() as s:
        s.start_transaction()
        coll.insert_one({"_id": 1}, session=s)
        _refused(lambda: coll.database.command("count", "c", session=s), COUNT_MESSAGE)
        coll.insert_one({"_id": 2}, session=s)
        assert coll.count_documents({}, session=s) == 3  # (an aggregate: allowed)
        s.commit_transaction()
    assert sorted(d["_id"] for d in coll.find()) == [0, 1, 2]


def test_count_as_the_first_statement_starts_nothing(coll):
    with coll.database.client.start_session() as s:
        s.start_transaction()
        _refused(lambda: coll.database.command("count", "c", session=s), COUNT_MESSAGE)
        s.abort_transaction()  # (its NoSuchTransaction is swallowed by the driver)


@pytest.mark.parametrize("command", [
    {"drop": "c"}, {"dropDatabase": 1}, {"dropIndexes": "c", "index": "*"}, {"listCollections": 1},
    {"collMod": "c"}, {"renameCollection": "rules.c", "to": "rules.d"},
])
def test_commands_not_allowed_in_transactions(coll, command):
    name = next(iter(command))
    db = coll.database.client.admin if name == "renameCollection" else coll.database
    with coll.database.client.start_session() as s:
        s.start_transaction()
        coll.insert_one({"_id": 1}, session=s)
        _refused(lambda: db.command(command, session=s), f"Cannot run '{name}' in a multi-document transaction.")
        s.commit_transaction()
    assert coll.count_documents({}) == 2  # nothing dropped, the insert committed


def test_local_and_config_databases(coll):
    client = coll.database.client
    with client.start_session() as s:
        s.start_transaction()
        _refused(lambda: client.local.c.find_one(session=s), "Cannot run command against the 'local' database in a transaction.")
        _refused(lambda: client.config.c.find_one(session=s), "Cannot run command against the config database in a transaction.")
        _refused(lambda: coll.database["system.profile"].find_one(session=s),
                 "Cannot run command against the 'rules.system.profile' collection in a transaction.")
        s.abort_transaction()
