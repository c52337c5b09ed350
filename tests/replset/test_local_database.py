"""A member's `local` database through pymongo: `local.oplog.rs` (a capped collection of the oplog's own
entries) and `local.system.replset` (the set's config document) seen by every read — listCollections,
count, aggregate, distinct, $collStats, listIndexes —, and listDatabases listing admin, config and local
on a member (never local through mongos)."""

from __future__ import annotations

import pymongo
import pytest
from bson import Timestamp
from pymongo.errors import OperationFailure

import mongosim
from mongosim.shardsim.local_database import DEFAULT_OPLOG_BYTES


@pytest.fixture(scope="module")
def replset():
    with mongosim.Cluster(topology="replset", members=3, port=0, instant_hwm=True, noop_interval=3600) as cl:
        yield cl


@pytest.fixture(scope="module")
def sharded():
    with mongosim.Cluster(shards=2, port=0, instant_hwm=True, noop_interval=3600) as cl:
        yield cl


@pytest.fixture(params=("replset", "shard00"))
def member(request, replset, sharded):
    """A client of a replica set: the replset topology's, or a sharded cluster's shard reached directly (no
    periodic noop writes: the oplog changes only with the test's own writes)."""
    cluster = replset if request.param == "replset" else sharded
    uri = cluster.uri if request.param == "replset" else cluster.core.replica_set_uri("shard00")
    with pymongo.MongoClient(uri, serverSelectionTimeoutMS=10_000) as c:
        c.mongosim_cluster = cluster
        c.set_name = c.admin.command("hello")["setName"]
        yield c


def _primary_node(c):
    return next(rs for rs in c.mongosim_cluster.core.replica_sets.values() if rs.name == c.set_name).primary.node


def _oplog(c):
    return c.local["oplog.rs"]


def test_list_collections_shows_the_oplog_and_the_set_config(member):
    infos = {i["name"]: i for i in member.local.list_collections()}
    assert {"oplog.rs", "system.replset"} <= set(infos)
    oplog = infos["oplog.rs"]
    assert oplog["type"] == "collection"
    assert oplog["options"] == {"capped": True, "size": DEFAULT_OPLOG_BYTES, "autoIndexId": False}
    assert "idIndex" not in oplog  # (autoIndexId: false: the oplog has no _id index)
    assert infos["system.replset"]["idIndex"] == {"v": 2, "key": {"_id": 1}, "name": "_id_"}
    assert member.local.list_collection_names(filter={"name": "oplog.rs"}) == ["oplog.rs"]
    assert list(_oplog(member).list_indexes()) == []


def test_count_aggregate_and_distinct_see_the_oplog(member):
    db = member.loc_reads
    db.c.drop()
    db.c.insert_many([{"_id": i} for i in range(4)])
    oplog = _oplog(member)
    found = list(oplog.find())
    n = len(found)
    assert n > 4
    assert oplog.count_documents({}) == n
    assert oplog.estimated_document_count() == n
    assert member.local.command("count", "oplog.rs")["n"] == n
    assert oplog.count_documents({"ns": "loc_reads.c", "op": "i"}) == 4
    assert list(oplog.aggregate([{"$match": {"ns": "loc_reads.c"}}, {"$count": "n"}])) == [{"n": 4}]
    assert list(oplog.aggregate([{"$count": "n"}])) == [{"n": n}]
    assert "i" in oplog.distinct("op")
    got = [e["ts"] for e in oplog.aggregate([{"$project": {"ts": 1}}])]
    assert got == [e["ts"] for e in found]  # natural (timestamp) order, the entries find returns


def test_first_and_last_entries_by_natural_order(member):
    oplog = _oplog(member)
    first = oplog.find().sort("$natural", 1).limit(1).next()
    last = oplog.find().sort("$natural", -1).limit(1).next()
    assert isinstance(first["ts"], Timestamp) and first["ts"] < last["ts"]
    node = _primary_node(member)
    assert last["ts"] == max(e["ts"] for e in oplog.find()) and len(node.oplog) == oplog.count_documents({})


def test_coll_stats_of_the_oplog(member):
    oplog = _oplog(member)
    stats = list(oplog.aggregate([{"$collStats": {"storageStats": {}, "count": {}}}]))[0]
    storage = stats["storageStats"]
    assert storage["capped"] is True
    assert storage["maxSize"] == DEFAULT_OPLOG_BYTES
    assert storage["count"] == stats["count"] == oplog.count_documents({})
    node = _primary_node(member)
    assert storage["size"] == node.oplog.size_bytes  # the entries' own bytes
    assert storage["nindexes"] == 0


def test_system_replset_holds_the_set_config(member):
    coll = member.local["system.replset"]
    assert coll.count_documents({}) == 1
    doc = coll.find_one()
    config = member.admin.command("replSetGetConfig")["config"]
    assert doc == config and doc["_id"] == member.set_name
    assert coll.find_one({"_id": member.set_name})["members"] == config["members"]
    assert coll.count_documents({"_id": "other"}) == 0


def test_list_databases_on_a_member_lists_admin_config_and_local(member):
    reply = member.admin.command("listDatabases")
    names = [d["name"] for d in reply["databases"]]
    assert {"admin", "config", "local"} <= set(names) and names == sorted(names)
    local = next(d for d in reply["databases"] if d["name"] == "local")
    assert isinstance(local["sizeOnDisk"], int) and local["sizeOnDisk"] > 0 and local["empty"] is False
    assert reply["totalSize"] == sum(d["sizeOnDisk"] for d in reply["databases"])
    assert member.admin.command("listDatabases", filter={"name": "local"}, nameOnly=True)["databases"] == [
        {"name": "local"}]


def test_mongos_never_lists_local_nor_reads_it(sharded):
    with pymongo.MongoClient(sharded.uri) as router:
        assert "local" not in router.list_database_names()
        with pytest.raises(OperationFailure) as e:
            router.local["system.replset"].count_documents({})
        assert e.value.code == 20


def test_a_member_of_a_set_with_a_capped_oplog_reports_its_size():
    with mongosim.Cluster(topology="replset", port=0, instant_hwm=True, oplog_size_mb=1) as cl, \
            pymongo.MongoClient(cl.uri) as c:
        info = next(c.local.list_collections(filter={"name": "oplog.rs"}))
        assert info["options"]["size"] == 1024 * 1024
        stats = list(_oplog(c).aggregate([{"$collStats": {"storageStats": {"scale": 1024}}}]))[0]["storageStats"]
        assert stats["maxSize"] == 1024 and stats["capped"] is True


def test_the_size_commands_see_the_local_collections(member):
    node = _primary_node(member)
    stats = member.local.command("collStats", "oplog.rs")
    assert stats["ns"] == "local.oplog.rs" and stats["capped"] is True and stats["maxSize"] == DEFAULT_OPLOG_BYTES
    assert stats["count"] == _oplog(member).count_documents({})
    size = member.local.command("dataSize", "local.oplog.rs")
    assert size["numObjects"] == stats["count"] and size["size"] == stats["size"] == node.oplog.size_bytes
    db_stats = member.local.command("dbStats")
    assert db_stats["collections"] >= 2 and db_stats["objects"] >= stats["count"] + 1


@pytest.mark.parametrize("db, coll", [("local", "oplog.rs"), ("app", "system.views"), ("app", "system.profile")])
def test_a_client_cannot_write_to_the_oplog_views_or_profile(member, db, coll):
    """ops/insert.cpp userAllowedWriteNS: InvalidNamespace, and nothing is written."""
    before = member.local["oplog.rs"].estimated_document_count()
    for write in (lambda c: c.insert_one({"x": 1}), lambda c: c.update_many({}, {"$set": {"x": 2}}),
                  lambda c: c.delete_many({})):
        with pytest.raises(OperationFailure) as e:
            write(member[db][coll])
        assert e.value.code == 73 and e.value.details["errmsg"] == f"cannot write to {db}.{coll}"
    assert db != "local" or member.local["oplog.rs"].estimated_document_count() == before
    assert coll not in member[db].list_collection_names() or db == "local"
