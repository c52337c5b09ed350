"""An update that changes a document's shard-key value to one another shard owns (WouldChangeOwningShard).

The shard refuses to write it; mongos deletes the original and inserts the
updated document on the owning shard in one transaction (the client's, or an
internal one for a retryable write).  A change stream sees a delete and an
insert.  A multi-update may not change the shard key; neither may a write that
is neither retryable nor in a transaction.
"""

from __future__ import annotations

import pymongo
import pytest
from pymongo import ReturnDocument
from pymongo.errors import WriteError

from tests.scenarios.conftest import read, read_quiet, shard_three_ways


def _placement(cluster, ns: str = "s.c") -> dict:
    """_id -> the shard holding it (read on the shards themselves)."""
    db, coll = ns.split(".")
    out = {}
    for name, node in cluster.core.shards.items():
        c = node.catalog.collection(db, coll)
        for doc in (c.scan() if c is not None else ()):
            assert doc["_id"] not in out, f"{doc['_id']} on two shards"
            out[doc["_id"]] = name
    return out


@pytest.fixture
def sharded(client):
    shard_three_ways(client)
    client.s.c.insert_many([{"_id": 1, "k": 5, "v": 1}, {"_id": 2, "k": 150, "v": 2}])
    return client.s.c


def test_a_retryable_update_moves_the_document_and_the_stream_sees_delete_then_insert(cluster, sharded):
    with sharded.watch() as stream:
        with sharded.database.client.start_session() as session:
            r = sharded.update_one({"_id": 1, "k": 5}, {"$set": {"k": 250, "v": 10}}, session=session)
            client_lsid, client_txn = session.session_id["id"], session._server_session.transaction_id
        assert (r.matched_count, r.modified_count) == (1, 1)
        # Each event's clusterTime is its own shard's commitTransaction entry (as on the server), so the
        # pair comes in either order; with equal times the delete sorts first (its operationType).
        events = sorted(read(stream, 2), key=lambda e: e["operationType"])
        assert [(e["operationType"], e["documentKey"]) for e in events] == [
            ("delete", {"k": 5, "_id": 1}), ("insert", {"k": 250, "_id": 1})]
        assert events[1]["fullDocument"] == {"_id": 1, "k": 250, "v": 10}
        assert events[0]["txnNumber"] == events[1]["txnNumber"] and events[0]["lsid"] == events[1]["lsid"]
        # mongos's internal transaction runs on a child of the client's session (as the server's
        # transactions API does): the client's id and txnNumber, a txnUUID, its own txnNumber 0
        lsid = events[0]["lsid"]
        assert list(lsid) == ["id", "uid", "txnNumber", "txnUUID"] and events[0]["txnNumber"] == 0
        assert (lsid["id"], lsid["txnNumber"]) == (client_lsid, client_txn)
        assert read_quiet(stream, 0.3) == []  # and no update event
    assert _placement(cluster) == {1: "shard02", 2: "shard01"}
    assert sharded.find_one({"k": 250}) == {"_id": 1, "k": 250, "v": 10}  # found where mongos targets it
    assert sharded.count_documents({}) == 2


def test_within_the_owning_shard_it_is_an_ordinary_update(cluster, sharded):
    with sharded.watch() as stream:
        sharded.update_one({"_id": 1}, {"$set": {"k": 50}})
        assert [e["operationType"] for e in read(stream, 1)] == ["update"]
    assert _placement(cluster)[1] == "shard00"


def test_find_one_and_update_and_replace_move_the_document(cluster, sharded):
    after = sharded.find_one_and_update({"_id": 2, "k": 150}, {"$set": {"k": 20}},
                                        return_document=ReturnDocument.AFTER, projection={"v": 0})
    assert after == {"_id": 2, "k": 20}
    before = sharded.find_one_and_replace({"_id": 2, "k": 20}, {"k": 300, "v": 3})
    assert before == {"_id": 2, "k": 20, "v": 2}
    assert _placement(cluster)[2] == "shard02"
    r = sharded.replace_one({"_id": 2, "k": 300}, {"k": 120, "v": 4})
    assert r.modified_count == 1 and _placement(cluster)[2] == "shard01"


def test_inside_a_transaction_the_move_is_part_of_it(cluster, client, sharded):
    with client.start_session() as s:
        with s.start_transaction():
            sharded.update_one({"_id": 1, "k": 5}, {"$set": {"k": 150}}, session=s)
            assert sharded.find_one({"_id": 1}, session=s)["k"] == 150
            s.abort_transaction()
        assert _placement(cluster)[1] == "shard00" and sharded.find_one({"_id": 1})["k"] == 5
        with s.start_transaction():
            sharded.update_one({"_id": 1, "k": 5}, {"$set": {"k": 150}}, session=s)
        assert _placement(cluster) == {1: "shard01", 2: "shard01"}


def test_what_may_not_change_a_shard_key(cluster, sharded):
    with pytest.raises(WriteError) as err:
        sharded.update_many({}, {"$inc": {"k": 1000}})
    assert err.value.code == 72  # InvalidOptions: a multi-update
    plain = pymongo.MongoClient(cluster.uri, retryWrites=False)
    with pytest.raises(WriteError) as err:
        plain.s.c.update_one({"_id": 1, "k": 5}, {"$set": {"k": 250}})
    assert err.value.code == 20  # IllegalOperation: neither retryable nor in a transaction
    plain.close()
    with pytest.raises(WriteError) as err:  # the target shard already has this _id: nothing moves
        sharded.insert_one({"_id": 1, "k": 201})  # (_id is unique per shard only)
        sharded.update_one({"_id": 1, "k": 5}, {"$set": {"k": 250}})
    assert err.value.code == 11000
    assert sharded.find_one({"_id": 1, "k": 5}) == {"_id": 1, "k": 5, "v": 1}


def test_a_retry_of_the_moving_statement_is_answered_not_run_again(cluster, client, sharded):
    from bson import Int64

    cmd = {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"k": 300, "v": 1}}}], "txnNumber": Int64(7)}
    with client.start_session() as s:
        first = client.s.command(dict(cmd), session=s)
        again = client.s.command(dict(cmd), session=s)  # the driver's retry after a lost reply
    assert (first["n"], first["nModified"]) == (again["n"], again["nModified"]) == (1, 1)
    assert sharded.find_one({"_id": 1}) == {"_id": 1, "k": 305, "v": 2}  # incremented once
    assert _placement(cluster)[1] == "shard02"


def test_a_retried_find_and_modify_that_moved_its_document_is_answered_not_run_again(cluster, client, sharded):
    from bson import Int64

    cmd = {"findAndModify": "c", "query": {"_id": 2}, "update": {"$inc": {"k": 100, "v": 1}}, "new": True,
           "txnNumber": Int64(3)}
    with client.start_session() as s:
        first = client.s.command(dict(cmd), session=s)
        again = client.s.command(dict(cmd), session=s)
    assert first["value"] == again["value"] == {"_id": 2, "k": 250, "v": 3}
    assert sharded.find_one({"_id": 2}) == {"_id": 2, "k": 250, "v": 3}
    assert _placement(cluster)[2] == "shard02"


def _write_in_between(monkeypatch, cluster, cmd: dict) -> list:
    """Run `cmd` on shard00 right after it refused a move, before mongos moves the document."""
    import mongosim.router.commands_crud as crud

    real, ran = crud.change_owning_shard, []

    async def racing(router, *args, **kwargs):
        ran.append(await router.shard("shard00").command("s", dict(cmd)))
        return await real(router, *args, **kwargs)

    monkeypatch.setattr(crud, "change_owning_shard", racing)
    return ran


def test_a_write_between_the_refusal_and_the_move_is_kept(monkeypatch, cluster, sharded):
    # mongos runs the statement again inside its transaction, so the move carries the document
    # as it is now (the pre-image is the delete's whole predicate: a stale one would match nothing).
    ran = _write_in_between(monkeypatch, cluster, {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"w": 7}}}]})
    r = sharded.update_one({"_id": 1, "k": 5}, {"$set": {"k": 250, "v": 10}})
    assert ran[0]["nModified"] == 1 and (r.matched_count, r.modified_count) == (1, 1)
    assert sharded.find_one({"_id": 1}) == {"_id": 1, "k": 250, "v": 10, "w": 7}
    assert _placement(cluster)[1] == "shard02"


def test_a_delete_between_the_refusal_and_the_move_leaves_nothing_to_move(monkeypatch, cluster, sharded):
    _write_in_between(monkeypatch, cluster, {"delete": "c", "deletes": [{"q": {"_id": 1}, "limit": 1}]})
    r = sharded.update_one({"_id": 1, "k": 5}, {"$set": {"k": 250}})
    assert (r.matched_count, r.modified_count) == (0, 0)
    assert sharded.find_one({"_id": 1}) is None and _placement(cluster) == {2: "shard01"}


def test_a_write_that_keeps_the_document_in_place_is_the_statements_result(monkeypatch, cluster, sharded):
    # In between, the shard key moved so far that the update now leaves it on shard00: an ordinary update.
    import uuid

    from bson import Binary, Int64

    ran = _write_in_between(monkeypatch, cluster, {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"k": -500}}}],
                                                   "lsid": {"id": Binary(uuid.uuid4().bytes, 4)}, "txnNumber": Int64(1)})
    with sharded.watch() as stream:
        r = sharded.update_one({"_id": 1}, {"$inc": {"k": 300}})
        assert [e["operationType"] for e in read(stream, 2)] == ["update", "update"]
    assert ran[0]["nModified"] == 1 and (r.matched_count, r.modified_count) == (1, 1)
    assert sharded.find_one({"_id": 1})["k"] == -200 and _placement(cluster)[1] == "shard00"


def test_an_upsert_whose_document_belongs_to_another_shard_is_inserted_there(cluster, sharded):
    with sharded.watch() as stream:
        # targeted by the query (k: 5, shard00); the new document has k: 250 (shard02)
        r = sharded.update_one({"_id": 9, "k": 5}, {"$set": {"k": 250}}, upsert=True)
        assert (r.matched_count, r.modified_count, r.upserted_id) == (0, 0, 9)
        events = read(stream, 1)
        assert [(e["operationType"], e["documentKey"]) for e in events] == [("insert", {"k": 250, "_id": 9})]
        after = sharded.find_one_and_update({"_id": 10, "k": 150}, {"$set": {"k": 20, "v": 1}}, upsert=True,
                                            return_document=ReturnDocument.AFTER)
        assert after == {"_id": 10, "k": 20, "v": 1}
        assert sharded.find_one_and_update({"_id": 11, "k": 150}, {"$set": {"k": 21}}, upsert=True) is None
        assert [e["documentKey"]["_id"] for e in read(stream, 2)] == [10, 11]
    assert _placement(cluster) == {1: "shard00", 2: "shard01", 9: "shard02", 10: "shard00", 11: "shard00"}
    plain = pymongo.MongoClient(cluster.uri, retryWrites=False)
    with pytest.raises(WriteError) as err:
        plain.s.c.update_one({"_id": 12, "k": 5}, {"$set": {"k": 250}}, upsert=True)
    assert err.value.code == 20 and "Cross-shard upserts" in str(err.value)
    plain.close()
    assert sharded.find_one({"_id": 12}) is None


def test_a_write_during_the_internal_transaction_makes_it_run_again(monkeypatch, cluster, sharded):
    # The write lands after the re-run read the document: the transaction's delete meets a
    # WriteConflict, and mongos runs the whole internal transaction again (the server's
    # transactions API retries transient errors), so the move carries the write.
    import mongosim.router.change_owning_shard as cos

    real, raced = cos._delete_and_insert, []

    async def racing(router, *args, **kwargs):
        if not raced:
            raced.append(await router.shard("shard00").command(
                "s", {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"w": 7}}}]}))
        return await real(router, *args, **kwargs)

    monkeypatch.setattr(cos, "_delete_and_insert", racing)
    r = sharded.update_one({"_id": 1, "k": 5}, {"$set": {"k": 250}})
    assert raced[0]["nModified"] == 1 and (r.matched_count, r.modified_count) == (1, 1)
    assert sharded.find_one({"_id": 1}) == {"_id": 1, "k": 250, "v": 1, "w": 7}
    assert _placement(cluster)[1] == "shard02"
