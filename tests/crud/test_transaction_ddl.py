"""DDL inside a transaction, through pymongo in both topologies: what the server allows, and that a
collection or index created by a transaction is the transaction's alone until it commits."""

from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure


@pytest.fixture
def db(client):
    client.drop_database("tddl")
    yield client.tddl
    client.admin.command("killAllSessions", [])


def _names(db) -> list[str]:
    return sorted(db.list_collection_names())


def _code(fn) -> tuple[int, str]:
    with pytest.raises(OperationFailure) as info:
        fn()
    return info.value.code, info.value.details["errmsg"]


def test_create_is_seen_by_the_transaction_alone_until_commit(db):
    db.other.insert_one({"_id": 0})  # (the database exists)
    with db.client.start_session() as s:
        s.start_transaction()
        db.create_collection("c", session=s)
        db.c.insert_one({"_id": 1}, session=s)
        assert db.c.find_one({}, session=s) == {"_id": 1}
        assert _names(db) == ["other"] and db.c.find_one() is None
        s.commit_transaction()
    assert _names(db) == ["c", "other"]
    assert list(db.c.find()) == [{"_id": 1}]


def test_an_aborted_transaction_leaves_no_collection(db):
    db.other.insert_one({"_id": 0})
    with db.client.start_session() as s:
        s.start_transaction()
        db.c.insert_one({"_id": 1}, session=s)  # implicit creation
        db.d.create_index("x", session=s)
        s.abort_transaction()
    assert _names(db) == ["other"]
    db.c.insert_one({"_id": 2})  # the name is free
    assert list(db.c.find()) == [{"_id": 2}]


def test_implicit_creation_by_insert(db):
    db.other.insert_one({"_id": 0})
    with db.client.start_session() as s:
        s.start_transaction()
        db.c.insert_many([{"_id": 1}, {"_id": 2}], session=s)
        assert db.c.count_documents({}, session=s) == 2
        assert db.c.count_documents({}) == 0 and "c" not in _names(db)
        s.commit_transaction()
    assert db.c.count_documents({}) == 2


def test_create_index_on_a_new_collection(db):
    db.other.insert_one({"_id": 0})
    with db.client.start_session() as s:
        s.start_transaction()
        reply = db.command("createIndexes", "c", indexes=[{"key": {"x": 1}, "name": "t_1"}], session=s)
        assert (reply["numIndexesBefore"], reply["numIndexesAfter"], reply["createdCollectionAutomatically"]) == (1, 2, True)
        assert "c" not in _names(db)
        s.commit_transaction()
    assert [ix["name"] for ix in db.c.list_indexes()] == ["_id_", "t_1"]


def test_create_index_on_a_collection_created_in_the_same_transaction(db):
    db.other.insert_one({"_id": 0})
    with db.client.start_session() as s:
        s.start_transaction()
        db.create_collection("c", session=s)
        db.c.create_index("x", name="t_1", unique=True, session=s)
        db.c.insert_one({"_id": 1, "x": 1}, session=s)
        assert _code(lambda: db.c.create_index("y", session=s)) == (
            263, "Cannot create new indexes on non-empty collection tddl.c in a multi-document transaction.")
        s.abort_transaction()
    with db.client.start_session() as s:
        s.start_transaction()
        db.create_collection("c", session=s)
        db.c.create_index("x", name="t_1", unique=True, session=s)
        s.commit_transaction()
    assert db.c.index_information()["t_1"]["unique"] is True
    db.c.insert_one({"x": 1})
    assert _code(lambda: db.c.insert_one({"x": 1}))[0] == 11000  # the unique index works after commit


def test_create_index_on_an_existing_collection(db):
    db.c.insert_one({"_id": 1})
    db.c.create_index("y")
    db.e.insert_one({"_id": 1})
    db.e.delete_many({})  # existing and empty: refused all the same
    for name in ("c", "e"):
        with db.client.start_session() as s:
            s.start_transaction()
            # indexes that all exist already: answered, even in a transaction
            reply = db.command("createIndexes", name, indexes=[{"key": {"_id": 1}, "name": "_id_"}], session=s)
            assert reply["note"] == "all indexes already exist"
            assert _code(lambda: db[name].create_index("x", session=s)) == (
                263, f"Cannot create new indexes on existing collection tddl.{name} in a multi-document transaction.")
    assert [ix["name"] for ix in db.c.list_indexes()] == ["_id_", "y_1"]


def test_create_of_an_existing_collection_aborts_the_transaction(db):
    db.c.insert_one({"_id": 1})
    with db.client.start_session() as s:
        s.start_transaction()
        db.d.insert_one({"_id": 1}, session=s)
        assert _code(lambda: db.command("create", "c", session=s)) == (48, "Collection tddl.c already exists.")
        with pytest.raises(OperationFailure) as info:
            db.d.insert_one({"_id": 2}, session=s)
        assert info.value.code == 251 and info.value.has_error_label("TransientTransactionError")
    assert "d" not in _names(db)


def test_twice_in_one_transaction(db):
    db.other.insert_one({"_id": 0})
    with db.client.start_session() as s:
        s.start_transaction()
        db.create_collection("c", session=s)
        assert _code(lambda: db.command("create", "c", session=s)) == (48, "Collection tddl.c already exists.")


def test_views_time_series_and_system_collections_are_refused(db):
    db.c.insert_one({"_id": 1})
    cases = [
        ({"create": "v", "viewOn": "c", "pipeline": []}, "Cannot create a view in a multi-document transaction."),
        ({"create": "t", "timeseries": {"timeField": "t"}},
         "Cannot create a time-series collection in a multi-document transaction."),
        ({"create": "system.js"}, "Cannot create system collection tddl.system.js within a transaction."),
        ({"createIndexes": "system.js", "indexes": [{"key": {"x": 1}, "name": "x_1"}]},
         "Cannot write to system collection tddl.system.js within a transaction."),
    ]
    for command, message in cases:
        with db.client.start_session() as s:
            s.start_transaction()
            assert _code(lambda: db.command(command, session=s)) == (263, message)
    assert _names(db) == ["c"]


def test_a_namespace_created_meanwhile_is_a_write_conflict_at_commit(db):
    db.other.insert_one({"_id": 0})
    with db.client.start_session() as s:
        s.start_transaction()
        db.c.insert_one({"_id": 1}, session=s)
        db.c.insert_one({"_id": 2})  # outside: creates the collection
        with pytest.raises(OperationFailure) as info:
            s.commit_transaction()
        assert info.value.code == 112 and info.value.has_error_label("TransientTransactionError")
        assert info.value.details["errmsg"] == (
            f"Caused by :: Unable to write to collection '{db.name}.c' due to catalog changes; please retry the "
            "operation :: Please retry your operation or multi-document transaction.")
    assert list(db.c.find()) == [{"_id": 2}]


def test_a_change_stream_sees_the_creation_with_the_transaction(db):
    """The create is an operation of the transaction's applyOps: its event carries the session."""
    db.other.insert_one({"_id": 0})
    with db.watch(show_expanded_events=True) as stream:
        with db.client.start_session() as s:
            s.start_transaction()
            db.c.insert_one({"_id": 1}, session=s)
            s.commit_transaction()
        events = [stream.next() for _ in range(2)]
    assert [e["operationType"] for e in events] == ["create", "insert"]
    assert events[0]["txnNumber"] == events[1]["txnNumber"] and events[0]["lsid"] == events[1]["lsid"]
    assert events[0]["clusterTime"] == events[1]["clusterTime"]
