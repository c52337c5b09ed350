"""Reads inside a transaction see one snapshot (shardsim/snapshots.py), as on mongod.

Through pymongo: a transaction keeps seeing what was there at its first
statement while other clients write; writing a document changed since that
snapshot is a WriteConflict (TransientTransactionError). On virtual time: a
transaction left open past transactionLifetimeLimitSeconds is aborted and
releases what it held.  A property test checks the version rule itself.
"""

from __future__ import annotations

import pymongo
import pytest
import trio
from bson import Binary
from hypothesis import given, settings
from hypothesis import strategies as st

from mongosim.core import open_cluster
from mongosim.oplog.errors import MongoError
from mongosim.testing import AsyncClient
from mongosim.shardsim import snapshots
from mongosim.shardsim.catalog import Catalog, Collection
from mongosim.shardsim.query.values import hashable
from tests.scenarios.conftest import shard_three_ways


def test_a_transaction_reads_its_snapshot_while_others_write(client):
    coll = client.snap.c
    coll.insert_many([{"_id": 1, "v": 1}, {"_id": 2, "v": 2}, {"_id": 3, "v": 3}])
    with client.start_session() as s, s.start_transaction():
        assert coll.find_one({"_id": 1}, session=s) == {"_id": 1, "v": 1}  # the snapshot is taken here
        coll.update_one({"_id": 1}, {"$set": {"v": 10}})  # other clients, outside the transaction
        coll.delete_one({"_id": 2})
        coll.insert_one({"_id": 4, "v": 4})
        assert coll.find_one({"_id": 1}, session=s) == {"_id": 1, "v": 1}
        assert sorted(d["_id"] for d in coll.find({}, session=s)) == [1, 2, 3]
        assert coll.count_documents({}, session=s) == 3
        assert coll.find_one({"_id": 4}, session=s) is None
        coll.update_one({"_id": 3}, {"$set": {"v": 30}}, session=s)  # its own write: visible to it only
        assert coll.find_one({"_id": 3}, session=s)["v"] == 30
        assert coll.find_one({"_id": 3})["v"] == 3
    assert sorted((d["_id"], d["v"]) for d in coll.find()) == [(1, 10), (3, 30), (4, 4)]


def test_snapshot_holds_on_every_shard_of_a_sharded_collection(client):
    shard_three_ways(client, "snap.sharded")
    coll = client.snap.sharded
    coll.insert_many([{"_id": k, "k": k} for k in (5, 150, 250)])
    with client.start_session() as s, s.start_transaction():
        assert len(list(coll.find({}, session=s))) == 3  # a snapshot on each shard
        coll.delete_many({})
        coll.insert_one({"_id": 99, "k": 99})
        assert sorted(d["k"] for d in coll.find({}, session=s)) == [5, 150, 250]
    assert [d["k"] for d in coll.find()] == [99]


def test_writing_a_document_changed_since_the_snapshot_is_a_write_conflict(client):
    coll = client.snap.w
    coll.insert_one({"_id": 1, "v": 0})
    with client.start_session() as s:
        s.start_transaction()
        coll.find_one({"_id": 1}, session=s)
        coll.update_one({"_id": 1}, {"$inc": {"v": 1}})  # committed after the snapshot
        with pytest.raises(pymongo.errors.OperationFailure) as err:
            coll.update_one({"_id": 1}, {"$inc": {"v": 100}}, session=s)
        assert err.value.code == 112 and err.value.has_error_label("TransientTransactionError")
        with pytest.raises(pymongo.errors.OperationFailure) as gone:
            s.commit_transaction()  # the conflict aborted it
        assert gone.value.code == 251
    assert coll.find_one({"_id": 1})["v"] == 1  # no update lost, none applied twice


def test_inserting_an_id_created_since_the_snapshot_is_a_write_conflict(client):
    coll = client.snap.i
    coll.insert_one({"_id": 0})
    with client.start_session() as s:
        s.start_transaction()
        coll.find_one({"_id": 0}, session=s)
        coll.insert_one({"_id": 1, "by": "outside"})
        with pytest.raises(pymongo.errors.OperationFailure) as err:
            coll.insert_one({"_id": 1, "by": "txn"}, session=s)
        assert err.value.code == 112
        s.abort_transaction()
    assert coll.find_one({"_id": 1})["by"] == "outside"


async def test_an_expired_transaction_is_aborted_and_releases_its_documents(autojump_clock):
    async with open_cluster(shards=1, listen=False, epoch=1_700_000_000) as core:
        c = AsyncClient(core.router)
        await c.insert("db", "c", [{"_id": 1, "v": 0}])
        lsid = {"id": Binary(b"\x01" * 16, 4)}
        txn = {"lsid": lsid, "txnNumber": 1, "autocommit": False}
        await c.command("db", {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"v": 1}}}],
                               "startTransaction": True, **txn})
        node = next(iter(core.shards.values()))
        assert node.catalog.snapshots.readers  # the open transaction holds a snapshot
        await trio.sleep(node.txn_lifetime_s + 2)  # virtual time: the reaper runs every second
        reply = await c.command("db", {"find": "c", "filter": {}, **txn}, check=False)
        assert reply["codeName"] == "NoSuchTransaction"
        assert "TransientTransactionError" in reply.get("errorLabels", [])
        assert not node.catalog.snapshots.readers and not node.txn_locks
        # another transaction can now write the document the expired one had locked
        lsid2 = {"id": Binary(b"\x02" * 16, 4)}
        txn2 = {"lsid": lsid2, "txnNumber": 1, "autocommit": False}
        await c.command("db", {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"v": 2}}}],
                               "startTransaction": True, **txn2})
        await c.admin({"commitTransaction": 1, **txn2})
        assert (await c.find("db", "c")) == [{"_id": 1, "v": 2}]


# -- the version rule ----------------------------------------------------------------------

_ops = st.lists(st.one_of(
    st.tuples(st.just("write"), st.integers(0, 5), st.integers(0, 3)),  # set _id to value (3: delete)
    st.tuples(st.just("open"), st.just(0), st.just(0)),
    st.tuples(st.just("close"), st.integers(0, 10), st.just(0)),
), max_size=60)


@settings(max_examples=300, deadline=None)
@given(_ops)
def test_every_snapshot_sees_the_collection_as_it_was_when_opened(ops):
    catalog = Catalog()
    coll = catalog.add_collection(Collection("db", "c"))
    open_: list[tuple[int, dict]] = []  # (snapshot, the documents at that moment)
    for kind, a, b in ops:
        if kind == "write":
            current = coll.get(a)
            if b == 3:
                if current is not None:
                    coll.delete(current)
            elif current is None:
                coll.insert({"_id": a, "v": b})
            else:
                coll.replace(current, {"_id": a, "v": b})
        elif kind == "open":
            open_.append((catalog.snapshots.open(), dict(coll.docs)))
        elif open_:
            snap, _ = open_.pop(a % len(open_))
            catalog.snapshots.close(snap)
        for snap, seen in open_:
            assert dict(snapshots.scan(coll, snap)) == seen
            assert all(snapshots.visible(coll, hashable(k), snap) == seen.get(hashable(k)) for k in range(6))
    for snap, _ in open_:
        catalog.snapshots.close(snap)
    assert coll.versions == {}  # nothing kept once no snapshot is open


# -- a write outside a transaction waits for it ----------------------------------------------

def _txn(lsid_byte: int, number: int = 1) -> dict:
    return {"lsid": {"id": Binary(bytes([lsid_byte]) * 16, 4)}, "txnNumber": number, "autocommit": False}


async def _outside_write_waits(core, c, outside_cmd: dict, end: str, session: int = 7) -> dict:
    """Run `outside_cmd` while a transaction holds _id 1; return its reply after the transaction ends."""
    t = _txn(session)
    await c.command("db", {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"v": 1}}}],
                           "startTransaction": True, **t})
    done: dict = {}

    async def outside():
        done["reply"] = await c.command("db", outside_cmd, check=False)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(outside)
        await trio.testing.wait_all_tasks_blocked()
        assert "reply" not in done, "the write went through a document the transaction holds"
        await c.admin({end: 1, **t})
    return done["reply"]


async def test_an_update_outside_waits_for_the_transaction_then_applies_on_top(autojump_clock):
    async with open_cluster(shards=1, listen=False, epoch=1_700_000_000) as core:
        c = AsyncClient(core.router)
        await c.insert("db", "c", [{"_id": 1, "v": 0}])
        reply = await _outside_write_waits(core, c, {"update": "c", "updates": [
            {"q": {"_id": 1}, "u": {"$inc": {"v": 10}}}]}, "commitTransaction")
        assert reply["nModified"] == 1
        assert await c.find("db", "c") == [{"_id": 1, "v": 11}]  # neither update lost
        node = next(iter(core.shards.values()))
        ops = [e["op"] if e["op"] != "c" else next(iter(e["o"])) for e in
               (node.oplog.entry_at(p) for p in range(node.oplog.end)) if e.get("ns") in ("db.c", "admin.$cmd")]
        assert ops[-2:] == ["applyOps", "u"]  # the transaction's commit, then the write that waited


async def test_an_insert_of_an_id_a_transaction_inserted_waits_for_its_outcome(autojump_clock):
    async with open_cluster(shards=1, listen=False, epoch=1_700_000_000) as core:
        c = AsyncClient(core.router)
        await c.insert("db", "c", [{"_id": 0}])
        for end, expect_dup in (("commitTransaction", True), ("abortTransaction", False)):
            t = _txn(8 if expect_dup else 9)
            await c.command("db", {"insert": "c", "documents": [{"_id": 1, "by": "txn"}], "startTransaction": True, **t})
            done: dict = {}

            async def outside():
                done["reply"] = await c.command("db", {"insert": "c", "documents": [{"_id": 1, "by": "outside"}]},
                                                check=False)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(outside)
                await trio.testing.wait_all_tasks_blocked()
                assert "reply" not in done
                await c.admin({end: 1, **t})
            errors = done["reply"].get("writeErrors", [])
            assert [e["code"] for e in errors] == ([11000] if expect_dup else [])
            assert (await c.find("db", "c", {"_id": 1}))[0]["by"] == ("txn" if expect_dup else "outside")
            await c.delete("db", "c", {"_id": 1})


async def test_a_delete_outside_waits_and_matches_again(autojump_clock):
    async with open_cluster(shards=1, listen=False, epoch=1_700_000_000) as core:
        c = AsyncClient(core.router)
        await c.insert("db", "c", [{"_id": 1, "v": 0}])
        # the delete matches v: 0; the transaction moves v to 1; after it commits, nothing matches
        reply = await _outside_write_waits(core, c, {"delete": "c", "deletes": [{"q": {"v": 0}, "limit": 0}]},
                                           "commitTransaction")
        assert reply["n"] == 0
        assert await c.find("db", "c") == [{"_id": 1, "v": 1}]
        # had the transaction aborted, the delete would have found v: 0 still there
        reply = await _outside_write_waits(core, c, {"delete": "c", "deletes": [{"q": {"v": 1}, "limit": 0}]},
                                           "abortTransaction", session=6)
        assert reply["n"] == 1 and await c.find("db", "c") == []


async def test_a_newer_txn_number_aborts_an_open_transaction_but_not_a_prepared_one(autojump_clock):

    async with open_cluster(shards=1, listen=False, epoch=1_700_000_000) as core:
        node = next(iter(core.shards.values()))
        t1 = _txn(3, 1)
        await node.run_command("db", {"insert": "c", "documents": [{"_id": 1}], "startTransaction": True, **t1})
        retryable = {"lsid": t1["lsid"], "txnNumber": 2}
        await node.run_command("db", {"insert": "c", "documents": [{"_id": 2}], **retryable})
        assert node.sessions.state(t1["lsid"]).txn is None and not node.txn_locks  # transaction 1 aborted
        t3 = _txn(3, 3)
        await node.run_command("db", {"insert": "c", "documents": [{"_id": 3}], "startTransaction": True, **t3})
        prepared = await node.run_command("admin", {"prepareTransaction": 1, **t3}, from_router=True)
        for cmd in ({"insert": "c", "documents": [{"_id": 4}], "lsid": t1["lsid"], "txnNumber": 4},
                    {"insert": "c", "documents": [{"_id": 4}], "startTransaction": True, **_txn(3, 4)}):
            with pytest.raises(MongoError) as err:
                await node.run_command("db", cmd)
            assert err.value.code_name == "PreparedTransactionInProgress"
        await node.run_command("admin", {"commitTransaction": 1, "commitTimestamp": prepared["prepareTimestamp"],
                                         **t3}, from_router=True)
        docs = (await node.run_command("db", {"find": "c"}))["cursor"]["firstBatch"]
        assert sorted(d["_id"] for d in docs) == [2, 3]


async def test_a_waiting_write_gives_up_at_its_max_time_ms(autojump_clock):
    async with open_cluster(shards=1, listen=False, epoch=1_700_000_000) as core:
        c = AsyncClient(core.router)
        await c.insert("db", "c", [{"_id": 1, "v": 0}, {"_id": 2, "v": 0}])
        t = _txn(5)
        await c.command("db", {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"v": 1}}}],
                               "startTransaction": True, **t})
        t0 = trio.current_time()
        reply = await c.command("db", {"update": "c", "ordered": False, "maxTimeMS": 300, "updates": [
            {"q": {"_id": 2}, "u": {"$set": {"v": 2}}}, {"q": {"_id": 1}, "u": {"$set": {"v": 9}}}]}, check=False)
        assert trio.current_time() - t0 == pytest.approx(0.3)
        assert reply["ok"] == 1 and reply["nModified"] == 1  # the free document was written
        assert [(e["index"], e["code"], e["errmsg"]) for e in reply["writeErrors"]] == [(1, 50, "operation exceeded time limit")]
        await c.admin({"commitTransaction": 1, **t})
        assert await c.find("db", "c") == [{"_id": 1, "v": 1}, {"_id": 2, "v": 2}]

        node = next(iter(core.shards.values()))
        t3 = _txn(6, 3)
        await node.run_command("db", {"insert": "c", "documents": [{"_id": 3}], "startTransaction": True, **t3})
        prepared = await node.run_command("admin", {"prepareTransaction": 1, **t3}, from_router=True)
        with pytest.raises(MongoError) as err:  # a write to a namespace a prepared transaction holds
            await node.run_command("db", {"insert": "c", "documents": [{"_id": 4}], "maxTimeMS": 100})
        assert err.value.code == 50
        await node.run_command("admin", {"commitTransaction": 1, "commitTimestamp": prepared["prepareTimestamp"],
                                         **t3}, from_router=True)
        assert [d["_id"] for d in await c.find("db", "c")] == [1, 2, 3]
