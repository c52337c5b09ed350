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
from mongosim.testing import AsyncClient
from shardsim import snapshots
from shardsim.catalog import Catalog, Collection
from shardsim.query.values import hashable
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
