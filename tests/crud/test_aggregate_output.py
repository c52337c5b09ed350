"""$out, $merge and $documents, through pymongo in both topologies.

$out writes a temporary collection and renames it over the target (the oplog
and change streams show that); $merge turns each result into an insert or an
update; $documents is the source of a collectionless `{aggregate: 1}`.
"""

from __future__ import annotations

import pytest
from pymongo import ReadPreference, WriteConcern
from pymongo.errors import DuplicateKeyError, OperationFailure
from pymongo.read_concern import ReadConcern

from tests.crud.conftest import shard_two_ways


@pytest.fixture
def src(client):
    c = client.ao.src
    c.insert_many([{"_id": 1, "x": 11}, {"_id": 2, "x": 22}, {"_id": 3, "x": 33}])
    return c


def code_of(fn) -> int:
    with pytest.raises(OperationFailure) as ei:
        fn()
    return ei.value.code


# -- $out --------------------------------------------------------------------------------
def test_out_replaces_the_target_keeping_its_indexes_and_options(client, src):
    db = client.ao
    db.create_collection("dst", validator={"x": {"$exists": True}})
    db.dst.insert_many([{"_id": 100, "x": 0}, {"_id": 101, "x": 0}])
    db.dst.create_index("x")
    assert list(src.aggregate([{"$sort": {"x": 1}}, {"$match": {"_id": {"$gt": 1}}}, {"$out": "dst"}],
                              batchSize=0)) == []
    assert list(db.dst.find()) == [{"_id": 2, "x": 22}, {"_id": 3, "x": 33}]
    assert sorted(db.dst.index_information()) == ["_id_", "x_1"]
    info = next(db.list_collections(filter={"name": "dst"}))
    assert info["options"] == {"validator": {"x": {"$exists": True}}}
    assert not [n for n in db.list_collection_names() if n.startswith("tmp.agg_out")]


def test_out_to_another_database_and_with_let(client, src):
    src.aggregate([{"$match": {"$expr": {"$eq": ["$_id", "$$id"]}}}, {"$project": {"_id": 1}},
                   {"$out": {"db": "ao_other", "coll": "dst"}}], let={"id": 1})
    assert list(client.ao_other.dst.find()) == [{"_id": 1}]
    src.aggregate([{"$match": {"_id": 0}}, {"$out": {"db": "ao_other", "coll": "dst"}}])
    assert list(client.ao_other.dst.find()) == [] and "dst" in client.ao_other.list_collection_names()


def test_out_read_and_write_concerns(client, src):
    for level in ("majority", "local", "available"):
        coll = src.with_options(read_concern=ReadConcern(level), write_concern=WriteConcern(w="majority"))
        coll.aggregate([{"$match": {"_id": {"$gt": 2}}}, {"$out": f"rc_{level}"}])
        assert [d["_id"] for d in client.ao[f"rc_{level}"].find()] == [3]
    linear = src.with_options(read_concern=ReadConcern("linearizable"))
    with pytest.raises(OperationFailure) as ei:
        linear.aggregate([{"$out": "rc_lin"}])
    assert ei.value.code == 72 and "linearizable" in ei.value.details["errmsg"]


def test_out_with_secondary_read_preference(client, src):
    coll = src.with_options(read_preference=ReadPreference.SECONDARY_PREFERRED)
    coll.aggregate([{"$match": {"_id": {"$gt": 1}}}, {"$out": "rp"}])
    assert client.ao.rp.count_documents({}) == 2


def test_out_errors(client, src):
    assert code_of(lambda: src.aggregate([{"$out": "a"}, {"$match": {}}])) == 40601
    assert code_of(lambda: src.aggregate([{"$out": "system.x"}])) == 17385
    assert code_of(lambda: src.aggregate([{"$out": {"db": "admin", "coll": "x"}}])) == 31321
    assert code_of(lambda: src.aggregate([{"$out": 5}])) == 16990
    with client.start_session() as s:
        s.start_transaction()
        assert code_of(lambda: src.aggregate([{"$out": "t"}], session=s)) == 263
        s.abort_transaction()


def test_out_duplicate_key_leaves_the_target_alone(client, src):
    db = client.ao
    db.dst.insert_one({"_id": 9, "x": 1})
    db.dst.create_index("x", unique=True)
    src.insert_one({"_id": 4, "x": 11})
    with pytest.raises(DuplicateKeyError):
        src.aggregate([{"$out": "dst"}])
    assert list(db.dst.find()) == [{"_id": 9, "x": 1}]
    assert not [n for n in db.list_collection_names() if n.startswith("tmp.agg_out")]


def test_out_change_stream_events(client, src):
    db = client.ao
    db.dst.insert_one({"_id": 0})
    with db.watch(show_expanded_events=True) as dbs, db.dst.watch() as cs:
        src.aggregate([{"$match": {"_id": {"$lt": 3}}}, {"$out": "dst"}])
        events = [dbs.next() for _ in range(4)]
        coll_events = [cs.next() for _ in range(2)]
    tmp = events[0]["ns"]["coll"]
    assert tmp.startswith("tmp.agg_out.")
    assert [(e["operationType"], e["ns"]["coll"]) for e in events] == [
        ("create", tmp), ("insert", tmp), ("insert", tmp), ("rename", tmp)]
    assert events[3]["to"] == {"db": "ao", "coll": "dst"}
    assert [e["operationType"] for e in coll_events] == ["rename", "invalidate"]


def test_out_to_a_sharded_collection_is_refused(sharded_client):
    shard_two_ways(sharded_client, "aos.dst")
    sharded_client.aos.src.insert_one({"_id": 1})
    with pytest.raises(OperationFailure) as ei:
        sharded_client.aos.src.aggregate([{"$out": "dst"}])
    assert ei.value.code == 28769


def test_sharded_source_out_to_the_primary_shard(sharded_client):
    shard_two_ways(sharded_client, "aos.src")
    sharded_client.aos.src.insert_many([{"_id": i, "k": k} for i, k in enumerate([1, 150, 2, 160])])
    sharded_client.aos.src.aggregate([{"$sort": {"k": 1}}, {"$out": "dst"}])
    assert [d["k"] for d in sharded_client.aos.dst.find()] == [1, 2, 150, 160]
    nodes = sharded_client.mongosim_cluster.core.nodes
    assert len(nodes["shard00"].catalog.collection("aos", "dst")) == 4
    assert nodes["shard01"].catalog.collection("aos", "dst") is None
    # the shard recorded its temporary collection while it existed, and forgot it after
    temp = nodes["shard00"].catalog.collection("config", "agg_temp_collections")
    assert temp is not None and len(temp) == 0


# -- $merge ------------------------------------------------------------------------------
def test_merge_default_modes_and_batch_size_zero(client, src):
    db = client.ao
    db.dst.insert_many([{"_id": 2, "x": 0, "keep": True}, {"_id": 7, "x": 7}])
    src.aggregate([{"$sort": {"x": 1}}, {"$match": {"_id": {"$gt": 1}}}, {"$merge": {"into": "dst"}}], batchSize=0)
    assert list(db.dst.find().sort("_id")) == [{"_id": 2, "x": 22, "keep": True}, {"_id": 3, "x": 33},
                                               {"_id": 7, "x": 7}]


@pytest.mark.parametrize("matched, not_matched, expected", [
    ("replace", "insert", [{"_id": 1, "x": 11}, {"_id": 2, "x": 22}, {"_id": 3, "x": 33}]),
    ("replace", "discard", [{"_id": 1, "x": 11}, {"_id": 2, "x": 22}]),
    ("keepExisting", "insert", [{"_id": 1, "y": 1}, {"_id": 2, "y": 2}, {"_id": 3, "x": 33}]),
    ("merge", "discard", [{"_id": 1, "y": 1, "x": 11}, {"_id": 2, "y": 2, "x": 22}]),
    ([{"$set": {"y": {"$add": ["$y", "$$new.x"]}}}], "insert",
     [{"_id": 1, "y": 12}, {"_id": 2, "y": 24}, {"_id": 3, "x": 33}]),
])
def test_merge_modes(client, src, matched, not_matched, expected):
    client.ao.dst.insert_many([{"_id": 1, "y": 1}, {"_id": 2, "y": 2}])
    src.aggregate([{"$merge": {"into": "dst", "whenMatched": matched, "whenNotMatched": not_matched}}])
    assert list(client.ao.dst.find().sort("_id")) == expected


def test_merge_pipeline_with_let_and_command_variables(client, src):
    client.ao.dst.insert_many([{"_id": 1}, {"_id": 2}])
    src.aggregate([{"$merge": {"into": "dst", "let": {"nx": "$x"},
                               "whenMatched": [{"$set": {"got": "$$nx", "tag": "$$tag"}}],
                               "whenNotMatched": "discard"}}], let={"tag": "t"})
    assert list(client.ao.dst.find().sort("_id")) == [{"_id": 1, "got": 11, "tag": "t"}, {"_id": 2, "got": 22, "tag": "t"}]


def test_merge_fail_modes(client, src):
    client.ao.dst.insert_one({"_id": 2})
    with pytest.raises(OperationFailure) as ei:
        client.ao.aggregate([{"$documents": [{"_id": 2, "x": 1}]}, {"$merge": {"into": "dst", "whenMatched": "fail"}}])
    assert ei.value.code == 11000
    assert (ei.value.details["keyPattern"], ei.value.details["keyValue"]) == ({"_id": 1}, {"_id": 2})
    assert code_of(lambda: src.aggregate([{"$merge": {"into": "dst", "whenNotMatched": "fail"}}])) == 13113
    assert code_of(lambda: src.aggregate([{"$merge": {"into": "dst", "whenMatched": "fail",
                                                       "whenNotMatched": "discard"}}])) == 51181


def test_merge_on_other_fields(client, src):
    db = client.ao
    db.dst.insert_one({"_id": 50, "x": 11, "old": True})
    assert code_of(lambda: src.aggregate([{"$merge": {"into": "dst", "on": "x"}}])) == 51183
    db.dst.create_index("x", unique=True)
    src.aggregate([{"$project": {"_id": 0, "x": 1, "new": {"$literal": True}}}, {"$merge": {"into": "dst", "on": "x"}}])
    docs = list(db.dst.find({}, {"_id": 0}).sort("x"))
    assert docs == [{"x": 11, "old": True, "new": True}, {"x": 22, "new": True}, {"x": 33, "new": True}]
    src.insert_one({"_id": 9})
    assert code_of(lambda: src.aggregate([{"$merge": {"into": "dst", "on": "x"}}])) == 51132


def test_merge_errors(client, src):
    assert code_of(lambda: src.aggregate([{"$merge": {"into": "dst", "bogus": 1}}])) == 40415
    assert code_of(lambda: src.aggregate([{"$merge": {"into": "dst", "whenMatched": "nope"}}])) == 2
    assert code_of(lambda: src.aggregate([{"$merge": {"into": "dst", "let": {"a": 1}}}])) == 51199
    assert code_of(lambda: src.aggregate([{"$merge": {"into": "dst"}}, {"$match": {}}])) == 40601
    assert code_of(lambda: src.aggregate([{"$merge": {"into": {"db": "config", "coll": "x"}}}])) == 31320


def test_merge_into_a_sharded_collection(sharded_client):
    shard_two_ways(sharded_client, "aos.dst")
    db = sharded_client.aos
    db.dst.insert_many([{"_id": 1, "k": 1, "v": 0}, {"_id": 2, "k": 150, "v": 0}])
    db.aggregate([{"$documents": [{"_id": 1, "k": 1, "v": 1}, {"_id": 2, "k": 150, "v": 2}, {"_id": 3, "k": 160}]},
                  {"$merge": {"into": "dst"}}])
    assert list(db.dst.find().sort("_id")) == [{"_id": 1, "k": 1, "v": 1}, {"_id": 2, "k": 150, "v": 2},
                                               {"_id": 3, "k": 160}]
    nodes = sharded_client.mongosim_cluster.core.nodes
    assert sorted(d["_id"] for d in nodes["shard01"].catalog.collection("aos", "dst").scan()) == [2, 3]
    with pytest.raises(OperationFailure) as ei:
        db.aggregate([{"$documents": [{"_id": 1}]}, {"$merge": {"into": "dst", "on": "_id"}}])
    assert ei.value.code == 51190


# -- $documents ---------------------------------------------------------------------------
def test_documents(client):
    db = client.ao
    assert list(db.aggregate([{"$documents": [{"_id": 1, "a": "$missing"}, {"b": [1]}]}])) == [{"_id": 1}, {"b": [1]}]
    assert list(db.aggregate([{"$documents": "$$docs"}, {"$group": {"_id": None, "n": {"$sum": "$a"}}}],
                             let={"docs": [{"a": 1}, {"a": 2}]})) == [{"_id": None, "n": 3}]
    assert list(db.aggregate([{"$documents": {"$map": {"input": [1, 2], "in": {"v": "$$this"}}}}])) == [{"v": 1}, {"v": 2}]


def test_documents_errors(client):
    db = client.ao
    assert code_of(lambda: db.src.aggregate([{"$documents": [{}]}])) == 73
    assert code_of(lambda: db.aggregate([{"$match": {}}, {"$documents": [{}]}])) == 73
    assert code_of(lambda: db.aggregate([{"$documents": [{}]}, {"$documents": [{}]}])) == 40602
    assert code_of(lambda: db.aggregate([{"$documents": 5}])) == 5858203
    assert code_of(lambda: db.aggregate([{"$documents": [1]}])) == 40228


def test_an_explained_out_writes_nothing(client, src):
    client.ao.command({"aggregate": "src", "pipeline": [{"$out": "ex"}], "explain": True})
    client.ao.command({"aggregate": "src", "pipeline": [{"$merge": {"into": "ex"}}], "explain": True})
    assert "ex" not in client.ao.list_collection_names()
