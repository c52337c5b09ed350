"""readConcern levels a command refuses, as a mongod and a mongos do (supportsReadConcern), through
pymongo in both topologies: InvalidOptions (72) naming the command, the readConcern and the reason."""

from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure
from pymongo.read_concern import ReadConcern


@pytest.fixture
def coll(client):
    client.drop_database("rcs")
    c = client.rcs.c
    c.insert_many([{"_id": 1}, {"_id": 2}])
    return c


def _refused(fn) -> str:
    with pytest.raises(OperationFailure) as info:
        fn()
    assert info.value.code == 72 and info.value.details["codeName"] == "InvalidOptions"
    return info.value.details["errmsg"]


SNAPSHOT = '{ readConcern: { level: "snapshot", provenance: "clientSupplied" } }'


def test_a_snapshot_session_reads_but_does_not_write(coll):
    client = coll.database.client
    with client.start_session(snapshot=True) as s:
        assert [d["_id"] for d in coll.find({}, session=s)] == [1, 2]  # find: every level
        assert coll.distinct("_id", session=s) == [1, 2]
        assert _refused(lambda: coll.insert_one({"_id": 3}, session=s)).startswith("Command insert does not support { readConcern: { level: \"snapshot\", atClusterTime: Timestamp(")
        assert _refused(lambda: coll.find_one_and_update({"_id": 1}, {"$set": {"x": 1}}, session=s)).endswith(
            ":: caused by :: read concern not supported")
        for fn in (lambda: client.list_database_names(session=s), lambda: coll.database.list_collection_names(session=s),
                   lambda: list(coll.list_indexes(session=s))):
            assert ":: caused by :: read concern not supported" in _refused(fn)
    assert coll.count_documents({}) == 2  # nothing written


def test_the_first_statement_of_a_snapshot_session(coll):
    """Before the session has a time, the readConcern the server names holds the level alone."""
    client = coll.database.client
    with client.start_session(snapshot=True) as s:
        assert _refused(lambda: coll.insert_one({"_id": 3}, session=s)) == (
            f"Command insert does not support {SNAPSHOT} :: caused by :: read concern not supported")
        assert _refused(lambda: coll.database.command("count", "c", session=s)) == (
            f"Command count does not support {SNAPSHOT} :: caused by :: read concern snapshot not supported")


def test_count_takes_majority(coll):
    assert coll.with_options(read_concern=ReadConcern("majority")).count_documents({}) == 2
    assert coll.database.command("count", "c", readConcern={"level": "majority"})["n"] == 2


@pytest.mark.parametrize("level", ["local", "available", "linearizable"])
def test_a_change_stream_takes_majority_only(coll, level):
    msg = _refused(lambda: coll.with_options(read_concern=ReadConcern(level)).watch())
    assert msg == (f'Command aggregate does not support {{ readConcern: {{ level: "{level}", provenance: "clientSupplied" }} }}'
                   f" :: caused by :: Aggregation stage $changeStream cannot run with a readConcern other than "
                   f"'majority'. Current readConcern: {level}")
    with coll.with_options(read_concern=ReadConcern("majority")).watch() as stream:
        coll.insert_one({"_id": 3})
        assert stream.next()["documentKey"] == {"_id": 3}


def test_a_change_stream_in_a_snapshot_session(coll):
    with coll.database.client.start_session(snapshot=True) as s:
        assert _refused(lambda: coll.watch(session=s)).endswith("Current readConcern: snapshot")


def test_a_transaction_reads_local_majority_or_snapshot(coll):
    client = coll.database.client
    for level in ("available", "linearizable"):
        with client.start_session() as s:
            s.start_transaction(read_concern=ReadConcern(level))
            assert _refused(lambda: coll.find_one({}, session=s)) == (
                "The readConcern level must be either 'local' (default), 'majority' or 'snapshot' in order to run "
                "in a transaction")
    with client.start_session() as s:
        s.start_transaction(read_concern=ReadConcern("snapshot"))
        coll.insert_one({"_id": 3}, session=s)  # writes take the transaction's readConcern
        s.commit_transaction()
    assert coll.count_documents({}) == 3


def test_the_default_read_concern_applies_where_the_command_permits_it(coll):
    """setDefaultRWConcern's defaultReadConcern (here "available", which no transaction and no change
    stream accepts) goes to the reads naming none that permit a default — a transaction's first
    read among them — and not to a change stream, a transaction a write starts, or an explicit level."""
    client = coll.database.client
    client.admin.command("setDefaultRWConcern", defaultReadConcern={"level": "available"})
    try:
        assert client.admin.command("getDefaultRWConcern")["defaultReadConcern"] == {"level": "available"}
        assert coll.count_documents({}) == 2 and coll.find_one({"_id": 1}) == {"_id": 1}
        with coll.watch() as stream:  # (majority by itself: no default)
            coll.insert_one({"_id": 3})
            assert stream.next()["documentKey"] == {"_id": 3}
        with client.start_session() as s:
            s.start_transaction()
            assert _refused(lambda: coll.find_one({}, session=s)) == (
                "The readConcern level must be either 'local' (default), 'majority' or 'snapshot' in order to run "
                "in a transaction")
        with client.start_session() as s:
            with s.start_transaction(read_concern=ReadConcern("local")):
                assert coll.find_one({"_id": 1}, session=s) == {"_id": 1}
        with client.start_session() as s:
            with s.start_transaction():  # started by a write: no default, nor for its later reads
                coll.insert_one({"_id": 4}, session=s)
                assert coll.count_documents({}, session=s) == 4
    finally:
        client.admin.command("setDefaultRWConcern", defaultReadConcern={})
    got = client.admin.command("getDefaultRWConcern")
    assert (got["defaultReadConcern"], got["defaultReadConcernSource"]) == ({"level": "local"}, "implicit")
