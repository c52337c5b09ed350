"""dbHash on a replica-set member, through pymongo: the md5 the server computes (dbhash.cpp), its reply and
its errors; mongos has no dbHash."""

from __future__ import annotations

import datetime
import hashlib

import bson
import pymongo
import pytest
from bson import Int64, ObjectId, Timestamp
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument
from pymongo.errors import OperationFailure

from tests.crud.conftest import _cleanup, _client, _cluster

EMPTY_MD5 = hashlib.md5(b"").hexdigest()


@pytest.fixture
def member(clusters):
    """A client of a replica-set endpoint (the member answers dbHash itself)."""
    cl = _client(_cluster(clusters, "replset"))
    yield cl
    _cleanup(cl)


def md5_of(*docs: dict) -> str:
    return hashlib.md5(b"".join(bson.encode(d) for d in docs)).hexdigest()


def _code(fn) -> tuple[int, str, str]:
    with pytest.raises(OperationFailure) as info:
        fn()
    return info.value.code, info.value.details["codeName"], info.value.details["errmsg"]


def test_the_md5_of_the_documents_in_id_order(member):
    db = member.dbh
    oid = ObjectId("650000000000000000000001")
    # inserted out of order; _id order is BSON order: numbers (by value, whatever their type), strings, ObjectIds
    docs = [{"_id": "b", "s": 1}, {"_id": oid}, {"_id": Int64(7), "x": [1, 2]}, {"_id": 2.5, "y": {"z": None}},
            {"_id": "a"}, {"_id": -1, "when": datetime.datetime(2024, 1, 2, 3, 4, 5)}]
    db.c.insert_many(docs)
    db.d.insert_one({"_id": 1})
    reply = db.command("dbHash")
    assert list(reply)[:7] == ["host", "collections", "capped", "uuids", "md5", "timeMillis", "ok"]
    in_order = [docs[5], docs[3], docs[2], docs[4], docs[0], docs[1]]
    assert reply["collections"] == {"c": md5_of(*in_order), "d": md5_of({"_id": 1})}
    assert reply["md5"] == hashlib.md5((md5_of(*in_order) + md5_of({"_id": 1})).encode()).hexdigest()
    assert reply["capped"] == [] and isinstance(reply["timeMillis"], int)
    infos = {c["name"]: c["info"]["uuid"] for c in db.command("listCollections")["cursor"]["firstBatch"]}
    assert reply["uuids"] == infos
    assert reply["host"] == member.mongosim_cluster.core.replica_sets["shard00"].primary.host
    assert db.command("dbhash")["md5"] == reply["md5"]  # (the lower-case alias)
    db.c.update_one({"_id": "a"}, {"$set": {"v": 1}})
    after = db.command("dbHash")
    assert after["collections"]["c"] != reply["collections"]["c"] and after["collections"]["d"] == reply["collections"]["d"]
    assert after["md5"] != reply["md5"]


def test_a_collection_with_a_collation_hashes_in_its_id_index_order(member):
    db = member.dbh
    db.create_collection("ci", collation={"locale": "en", "strength": 2})
    db.ci.insert_many([{"_id": "c"}, {"_id": "B"}, {"_id": "a"}])
    # (in binary order "B" would come first)
    assert db.command("dbHash")["collections"]["ci"] == md5_of({"_id": "a"}, {"_id": "B"}, {"_id": "c"})


def test_capped_views_time_series_temp_and_the_filter(member):
    db = member.dbh
    db.create_collection("cap", capped=True, size=4096)
    db.cap.insert_many([{"_id": 3}, {"_id": 1}])
    db.create_collection("v", viewOn="cap", pipeline=[{"$match": {"_id": 1}}])
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many([{"t": datetime.datetime(2024, 1, 1), "m": 2}, {"t": datetime.datetime(2024, 1, 1), "m": 1}])
    db.command("create", "scratch", temp=True)
    db.command("profile", 2)
    db.cap.find_one()
    db.command("profile", 0)
    assert "system.profile" in db.list_collection_names()
    reply = db.command("dbHash")
    # the profile is not replicated, a view is a document of system.views, a capped collection is listed
    assert sorted(reply["collections"]) == ["cap", "scratch", "system.buckets.ts", "system.views"]
    assert reply["capped"] == ["cap"]
    assert reply["collections"]["cap"] == md5_of({"_id": 1}, {"_id": 3})
    assert reply["collections"]["scratch"] == EMPTY_MD5
    raw = CodecOptions(document_class=RawBSONDocument)
    views = list(db.get_collection("system.views", codec_options=raw).find().sort("_id", 1))
    assert [v["_id"] for v in views] == ["dbh.ts", "dbh.v"]  # (a time-series collection's view, then ours)
    assert views[1].raw == bson.encode({"_id": "dbh.v", "viewOn": "cap", "pipeline": [{"$match": {"_id": 1}}]})
    assert reply["collections"]["system.views"] == hashlib.md5(b"".join(v.raw for v in views)).hexdigest()
    buckets = list(db.get_collection("system.buckets.ts", codec_options=raw).find().sort("_id", 1))
    assert len(buckets) == 2
    assert reply["collections"]["system.buckets.ts"] == hashlib.md5(b"".join(b.raw for b in buckets)).hexdigest()
    assert sorted(db.command("dbHash", skipTempCollections=True)["collections"]) == \
        ["cap", "system.buckets.ts", "system.views"]
    only = db.command("dbHash", collections=["cap", "nothere"])
    assert only["collections"] == {"cap": reply["collections"]["cap"]} and only["capped"] == ["cap"]
    assert list(only["uuids"]) == ["cap"]
    assert only["md5"] == hashlib.md5(reply["collections"]["cap"].encode()).hexdigest()
    assert db.command("dbHash", collections="cap")["collections"] == reply["collections"]  # (not an array: ignored)
    assert db.command("dbHash", collections=[])["collections"] == reply["collections"]
    assert member.local.command("dbHash")["collections"] == {}  # (the local database is not replicated)
    empty = member.nothing_here.command("dbHash")
    assert (empty["collections"], empty["uuids"], empty["md5"]) == ({}, {}, EMPTY_MD5)


def test_read_concern(member):
    db = member.dbh
    db.c.insert_one({"_id": 1})
    md5 = db.command("dbHash")["md5"]
    assert db.command({"dbHash": 1, "readConcern": {"level": "local"}})["md5"] == md5
    assert db.command({"dbHash": 1, "readConcern": {"level": "snapshot"}})["md5"] == md5
    for level in ("majority", "available", "linearizable"):
        code, name, msg = _code(lambda: db.command({"dbHash": 1, "readConcern": {"level": level}}))
        assert (code, name) == (72, "InvalidOptions") and msg.endswith(":: caused by :: read concern not supported")
    at = db.command("ping")["operationTime"]
    assert _code(lambda: db.command({"dbHash": 1, "readConcern": {"afterClusterTime": at}})) == (
        72, "InvalidOptions", "afterClusterTime is not allowed for this command")


def test_internal_read_at_cluster_time(member):
    db = member.dbh
    db.c.insert_one({"_id": 1})
    now = db.command("ping")["operationTime"]
    assert db.command({"dbHash": 1, "$_internalReadAtClusterTime": now})["collections"]["c"] == md5_of({"_id": 1})
    db.c.insert_one({"_id": 2})
    # the documents as they were at that time (the read pinned its snapshot), by either option
    assert db.command({"dbHash": 1, "$_internalReadAtClusterTime": now})["collections"]["c"] == md5_of({"_id": 1})
    snap = {"dbHash": 1, "readConcern": {"level": "snapshot", "atClusterTime": now}}
    assert db.command(snap)["collections"]["c"] == md5_of({"_id": 1})
    assert db.command("dbHash")["collections"]["c"] == md5_of({"_id": 1}, {"_id": 2})
    assert _code(lambda: db.command({"dbHash": 1, "$_internalReadAtClusterTime": 5})) == (
        14, "TypeMismatch", "The '$_internalReadAtClusterTime' option must be a Timestamp")
    assert _code(lambda: db.command({"dbHash": 1, "$_internalReadAtClusterTime": Timestamp(0, 0)})) == (
        72, "InvalidOptions", "$_internalReadAtClusterTime value must not be a null timestamp.")
    later = Timestamp(now.time + 1000, 1)
    code, name, msg = _code(lambda: db.command({"dbHash": 1, "$_internalReadAtClusterTime": later}))
    assert (code, name) == (72, "InvalidOptions")
    assert msg.startswith("$_internalReadAtClusterTime value must not be greater than the last applied opTime. "
                          f"Requested clusterTime: Timestamp({later.time}, 1); last applied opTime: {{ ts: Timestamp(")


def test_bad_arguments(member):
    db = member.dbh
    assert _code(lambda: db.command("dbHash", collections=["c", 1])) == (
        2, "BadValue", "collections entries have to be strings")
    assert _code(lambda: db.command({"dbHash": ""})) == (
        73, "InvalidNamespace", "Cannot pass empty string for 'dbHash' field")


def test_mongos_has_no_db_hash(sharded_client):
    assert _code(lambda: sharded_client.dbh.command("dbHash"))[:2] == (59, "CommandNotFound")
    shard = sharded_client.mongosim_cluster.core.replica_sets["shard00"].primary.host
    with pymongo.MongoClient(f"mongodb://{shard}/?directConnection=true") as direct:
        assert direct.dbh.command("dbHash")["ok"] == 1.0  # (a shard's member has it)
