"""DBRef parts in paths, through pymongo in both topologies: a DBRef is the embedded
document {$ref, $id[, $db]} and FieldPath allows `$id`, `$ref`, `$db`
(kAllowedDollarPrefixedFields in src/mongo/db/pipeline/field_path.cpp).  This is what
beanie's `fetch_links` and Link queries and mongoengine's `dbref=True` references send."""

from __future__ import annotations

import pytest
from bson import DBRef, ObjectId
from pymongo.errors import OperationFailure

from tests.crud.conftest import shard_two_ways


@pytest.fixture
def db(client):
    if client.topology_name == "sharded":
        shard_two_ways(client, "dbr.p")
    d = client.dbr
    d.v.insert_many([{"_id": 1, "name": "acme"}, {"_id": 2, "name": "zeta"}])
    d.p.insert_many([
        {"_id": 1, "k": 1, "vendor": DBRef("v", 1), "tags": [DBRef("t", "a"), DBRef("t", "b", "other")]},
        {"_id": 2, "k": 150, "vendor": DBRef("v", 2, "dbr"), "tags": []},
        {"_id": 3, "k": 151, "vendor": {"$ref": "w", "$id": 1}},
    ])
    return d


def test_queries_walk_into_a_dbref(db):
    assert db.p.count_documents({"vendor.$id": 1}) == 2
    assert sorted(d["_id"] for d in db.p.find({"vendor.$ref": "v"})) == [1, 2]
    assert [d["_id"] for d in db.p.find({"vendor.$db": "dbr"})] == [2]
    assert [d["_id"] for d in db.p.find({"tags.$id": "b"})] == [1]
    assert [d["_id"] for d in db.p.find({"tags.1.$db": "other"})] == [1]
    assert [d["_id"] for d in db.p.find({"vendor.$id": {"$in": [2, 9]}})] == [2]
    assert db.p.count_documents({"vendor.$id": 3}) == 0


def test_expressions_group_and_lookup_on_dbref_parts(db):
    got = list(db.p.aggregate([{"$sort": {"_id": 1}}, {"$project": {"x": "$vendor.$id", "r": "$tags.$ref"}}]))
    assert got == [{"_id": 1, "x": 1, "r": ["t", "t"]}, {"_id": 2, "x": 2, "r": []}, {"_id": 3, "x": 1}]
    groups = list(db.p.aggregate([{"$group": {"_id": "$vendor.$id", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}]))
    assert groups == [{"_id": 1, "n": 2}, {"_id": 2, "n": 1}]
    # beanie's fetch_links: $lookup on localField "vendor.$id"
    joined = list(db.p.aggregate([
        {"$match": {"vendor.$ref": "v"}},
        {"$lookup": {"from": "v", "localField": "vendor.$id", "foreignField": "_id", "as": "_link_vendor"}},
        {"$unwind": {"path": "$_link_vendor", "preserveNullAndEmptyArrays": True}},
        {"$sort": {"_id": 1}}, {"$project": {"name": "$_link_vendor.name"}},
    ]))
    assert joined == [{"_id": 1, "name": "acme"}, {"_id": 2, "name": "zeta"}]
    # and the reverse join, on the foreign side's DBRef
    back = list(db.v.aggregate([
        {"$lookup": {"from": "p", "localField": "_id", "foreignField": "vendor.$id", "as": "ps"}},
        {"$sort": {"_id": 1}}, {"$project": {"ids": "$ps._id"}},
    ]))
    assert [sorted(d["ids"]) for d in back] == [[1, 3], [2]]


def test_sort_distinct_unwind_and_index_keys_read_dbref_parts(db):
    assert [d["_id"] for d in db.p.find().sort([("vendor.$id", -1), ("_id", 1)])] == [2, 1, 3]
    assert [d["_id"] for d in db.p.aggregate([{"$sort": {"vendor.$ref": -1, "_id": -1}}])] == [3, 2, 1]
    assert sorted(db.p.distinct("vendor.$id")) == [1, 2]
    assert sorted(db.p.distinct("tags.$id")) == ["a", "b"]
    # a scalar at the path passes $unwind unchanged
    assert [d["_id"] for d in db.p.aggregate([{"$unwind": "$vendor.$id"}, {"$sort": {"_id": 1}}])] == [1, 2, 3]
    db.p.create_index("vendor.$id")
    assert sorted(d["_id"] for d in db.p.find({"vendor.$id": 1}).hint("vendor.$id_1")) == [1, 3]


def test_projections_walk_into_a_dbref(db):
    assert db.p.find_one({"_id": 1}, {"vendor.$id": 1}) == {"_id": 1, "vendor": {"$id": 1}}
    assert db.p.find_one({"_id": 2}, {"vendor.$db": 0, "tags": 0, "k": 0}) == {"_id": 2, "vendor": DBRef("v", 2)}
    assert db.p.find_one({"_id": 1}, {"_id": 0, "tags.$ref": 1}) == {"tags": [{"$ref": "t"}, {"$ref": "t"}]}


def test_other_dollar_fields_still_refused(db):
    with pytest.raises(OperationFailure) as e:
        list(db.p.aggregate([{"$project": {"x": "$vendor.$foo"}}]))
    assert e.value.code == 16410
    with pytest.raises(OperationFailure) as e:
        list(db.p.aggregate([{"$lookup": {"from": "v", "localField": "vendor.$x", "foreignField": "_id", "as": "a"}}]))
    assert e.value.code == 16410
