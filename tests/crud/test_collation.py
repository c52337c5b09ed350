"""Collation through pymongo, in both topologies: the cases of the server's collation jstests.

Strength 1 and 2 (accent- and case-insensitive matching), caseFirst, numericOrdering,
alternate shifted, French secondaries; on find (filter and sort), count, distinct,
aggregate ($match, $sort, $group), update, delete, findAndModify and bulk writes; collection
default collations, indexes with a collation (unique ones refuse what the collation calls
equal), views; the normalised collation echoed by listCollections and listIndexes; the
server's errors for bad collations.  Through mongos, a shard-key equality on a string under
a non-simple collation asks every shard.
"""

from __future__ import annotations

import pymongo
import pytest
from pymongo import DeleteOne, UpdateMany, UpdateOne
from pymongo.collation import Collation, CollationStrength
from pymongo.errors import DuplicateKeyError, OperationFailure

from tests.crud.conftest import shard_two_ways

EN2 = {"locale": "en_US", "strength": 2}
EN1 = {"locale": "en_US", "strength": 1}
NORMALISED_FR_CA = {"locale": "fr_CA", "caseLevel": False, "caseFirst": "off", "strength": 3,
                    "numericOrdering": False, "alternate": "non-ignorable", "maxVariable": "punct",
                    "normalization": False, "backwards": True, "version": "57.1"}


@pytest.fixture
def coll(client):
    c = client.coll_db.c
    c.insert_many([{"_id": 1, "x": "ping"}, {"_id": 2, "x": "PING"}, {"_id": 3, "x": "píng"},
                   {"_id": 4, "x": "pong"}, {"_id": 5, "x": 11}])
    return c


def ids(cursor):
    return sorted(d["_id"] for d in cursor)


def test_strength_two_ignores_case_not_accents(coll):
    assert ids(coll.find({"x": "ping"})) == [1]
    assert ids(coll.find({"x": "ping"}, collation=EN2)) == [1, 2]
    assert ids(coll.find({"x": "ping"}, collation=EN1)) == [1, 2, 3]
    assert ids(coll.find({"x": {"$in": ["PONG", 11]}}, collation=EN2)) == [4, 5]
    assert ids(coll.find({"x": {"$gte": "PING", "$lt": "PO"}}, collation=EN2)) == [1, 2, 3]
    assert ids(coll.find({"x": {"$ne": "PING"}}, collation=EN1)) == [4, 5]
    assert ids(coll.find({"$expr": {"$eq": ["$x", "PONG"]}}, collation=EN2)) == [4]
    # numbers are not strings: a collation leaves them alone
    assert ids(coll.find({"x": 11}, collation=EN1)) == [5]


def test_strings_inside_documents_and_arrays_compare_under_the_collation(client):
    c = client.coll_db.nested
    c.insert_many([{"_id": 1, "a": {"b": "X"}}, {"_id": 2, "a": ["y", "Z"]}])
    assert ids(c.find({"a": {"b": "x"}}, collation=EN2)) == [1]
    assert ids(c.find({"a": "z"}, collation=EN2)) == [2]
    assert ids(c.find({"a": ["Y", "z"]}, collation=EN2)) == [2]
    assert ids(c.find({"a": {"$elemMatch": {"$eq": "Y"}}}, collation=EN2)) == [2]
    assert ids(c.find({"a": "z"})) == []


def test_sort_orders_by_the_collation(client):
    c = client.coll_db.sorted
    words = ["b", "B", "a", "A", "á", "10", "9", "_x"]
    c.insert_many([{"_id": i, "w": w} for i, w in enumerate(words)])

    def order(**kw):
        return [d["w"] for d in c.find({}, sort=[("w", 1), ("_id", 1)], **kw)]

    assert order() == ["10", "9", "A", "B", "_x", "a", "b", "á"]  # code points
    assert order(collation={"locale": "en"}) == ["_x", "10", "9", "a", "A", "á", "b", "B"]
    assert order(collation={"locale": "en", "caseFirst": "upper"}) == ["_x", "10", "9", "A", "a", "á", "B", "b"]
    assert order(collation={"locale": "en", "numericOrdering": True}) == ["_x", "9", "10", "a", "A", "á", "b", "B"]
    desc = [d["w"] for d in c.find({}, sort=[("w", -1)], collation={"locale": "en"})]
    assert desc == ["B", "b", "á", "A", "a", "9", "10", "_x"]


def test_french_accents_weigh_from_the_end(client):
    c = client.coll_db.fr
    c.insert_many([{"_id": i, "w": w} for i, w in enumerate(["côté", "coté", "côte", "cote"])])
    fr_ca = [d["w"] for d in c.find({}, sort=[("w", 1)], collation={"locale": "fr_CA"})]
    fr = [d["w"] for d in c.find({}, sort=[("w", 1)], collation={"locale": "fr"})]
    assert fr_ca == ["cote", "côte", "coté", "côté"]
    assert fr == ["cote", "coté", "côte", "côté"]


def test_alternate_shifted_ignores_spaces_and_punctuation(client):
    c = client.coll_db.shifted
    c.insert_many([{"_id": 1, "w": "a b"}, {"_id": 2, "w": "a-b"}, {"_id": 3, "w": "ab"}, {"_id": 4, "w": "a+b"}])
    assert ids(c.find({"w": "ab"}, collation={"locale": "en", "alternate": "shifted"})) == [1, 2, 3]
    space_only = {"locale": "en", "alternate": "shifted", "maxVariable": "space"}
    assert ids(c.find({"w": "ab"}, collation=space_only)) == [1, 3]
    # at strength 4 the shifted characters count again
    assert ids(c.find({"w": "ab"}, collation={"locale": "en", "alternate": "shifted", "strength": 4})) == [3]


def test_case_level_tells_case_apart_at_strength_one(client):
    c = client.coll_db.case_level
    c.insert_many([{"_id": 1, "w": "a"}, {"_id": 2, "w": "A"}, {"_id": 3, "w": "á"}])
    assert ids(c.find({"w": "a"}, collation={"locale": "en", "strength": 1, "caseLevel": True})) == [1, 3]


def test_count_distinct_and_aggregate(coll):
    assert coll.count_documents({"x": "PING"}, collation=EN2) == 2
    assert coll.count_documents({"x": "PING"}) == 1
    assert coll.database.command("count", "c", query={"x": "PING"}, collation=EN1)["n"] == 3
    assert coll.distinct("x", {"_id": {"$lt": 5}}, collation=EN2) == ["ping", "píng", "pong"]
    assert coll.distinct("x", {"_id": {"$lt": 5}}, collation=EN1) == ["ping", "pong"]
    assert len(coll.distinct("x", {"_id": {"$lt": 5}})) == 4
    matched = list(coll.aggregate([{"$match": {"x": "PING"}}, {"$sort": {"_id": 1}}], collation=EN2))
    assert [d["_id"] for d in matched] == [1, 2]
    groups = list(coll.aggregate([{"$match": {"_id": {"$lt": 5}}}, {"$sort": {"_id": 1}},
                                  {"$group": {"_id": "$x", "n": {"$sum": 1}}}, {"$sort": {"n": -1, "_id": 1}}],
                                 collation=EN1))
    assert groups == [{"_id": "ping", "n": 3}, {"_id": "pong", "n": 1}]
    cmp = list(coll.aggregate([{"$match": {"_id": 2}}, {"$project": {"eq": {"$eq": ["$x", "ping"]},
                                                                       "in": {"$in": ["$x", ["píng"]]}}}],
                              collation=EN1))
    assert cmp == [{"_id": 2, "eq": True, "in": True}]


def test_writes_with_a_collation(coll):
    r = coll.update_many({"x": "PING"}, {"$set": {"hit": True}}, collation=EN2)
    assert (r.matched_count, r.modified_count) == (2, 2)
    assert coll.update_one({"x": "PONG"}, {"$set": {"hit": True}}).matched_count == 0
    assert coll.replace_one({"x": "PONG"}, {"x": "pong!"}, collation=EN2).modified_count == 1
    doc = coll.find_one_and_update({"x": "PÍNG"}, {"$set": {"f": 1}}, collation=EN2,
                                   return_document=pymongo.ReturnDocument.AFTER)
    assert doc == {"_id": 3, "x": "píng", "f": 1}
    gone = coll.find_one_and_delete({"x": "PING"}, sort=[("_id", -1)], collation=EN2)
    assert gone["_id"] == 2
    assert coll.delete_many({"x": "PÍNG"}, collation=EN1).deleted_count == 2
    assert ids(coll.find()) == [4, 5]


def test_bulk_writes_carry_a_collation_per_operation(coll):
    r = coll.bulk_write([UpdateMany({"x": "PING"}, {"$set": {"b": 1}}, collation=EN2),
                         UpdateOne({"x": "PONG"}, {"$set": {"b": 2}}),
                         DeleteOne({"x": "PÍNG"}, collation=Collation("en_US", strength=CollationStrength.PRIMARY))])
    assert (r.matched_count, r.deleted_count) == (2, 1)
    client = coll.database.client
    from pymongo.operations import DeleteMany as ClientDeleteMany

    res = client.bulk_write([ClientDeleteMany({"x": "PONG"}, namespace="coll_db.c", collation=EN2)])
    assert res.deleted_count == 1


def test_collection_default_collation(client):
    db = client.coll_db
    db.create_collection("d", collation={"locale": "fr_CA"})
    info = next(db.list_collections(filter={"name": "d"}))
    assert info["options"]["collation"] == NORMALISED_FR_CA
    assert info["idIndex"]["collation"] == NORMALISED_FR_CA
    db.d.create_index("a")
    db.d.create_index("b", collation={"locale": "en_US", "strength": 2})
    db.d.create_index("e", collation={"locale": "simple"})
    indexes = {ix["name"]: ix for ix in db.d.list_indexes()}
    assert indexes["a_1"]["collation"] == NORMALISED_FR_CA
    assert indexes["b_1"]["collation"]["strength"] == 2 and indexes["b_1"]["collation"]["backwards"] is False
    assert "collation" not in indexes["e_1"]

    db.create_collection("ci", collation=EN2)
    db.ci.insert_many([{"_id": 1, "s": "foo"}, {"_id": 2, "s": "FOO"}])
    assert ids(db.ci.find({"s": "Foo"})) == [1, 2]
    assert ids(db.ci.find({"s": "Foo"}, collation={"locale": "simple"})) == []
    assert db.ci.count_documents({"s": "fOO"}) == 2
    assert len(list(db.ci.aggregate([{"$match": {"s": "FOO"}}]))) == 2
    assert db.ci.delete_many({"s": "fOo"}).deleted_count == 2

    db.create_collection("simple", collation={"locale": "simple"})
    info = next(db.list_collections(filter={"name": "simple"}))
    assert "collation" not in info["options"]


def test_an_empty_collation_is_no_collation(client):
    """`collation: {}` on a read or a write statement means the collection's default (the server tests
    getCollation().isEmpty()); on `create`, whose collation is a Collation struct, it lacks its locale."""
    db = client.coll_db
    db.create_collection("ci", collation=EN2)
    db.ci.insert_many([{"_id": 1, "s": "foo"}, {"_id": 2, "s": "FOO"}, {"_id": 3, "s": "bar"}])
    assert ids(db.ci.find({"s": "Foo"}, collation={})) == [1, 2]
    assert db.ci.count_documents({"s": "fOO"}, collation={}) == 2
    assert sorted(db.ci.distinct("_id", {"s": "FoO"}, collation={})) == [1, 2]
    assert len(list(db.ci.aggregate([{"$match": {"s": "FOO"}}], collation={}))) == 2
    assert db.ci.update_many({"s": "FOO"}, {"$set": {"u": 1}}, collation={}).modified_count == 2
    assert db.ci.find_one_and_update({"s": "BAR"}, {"$set": {"u": 2}}, collation={})["_id"] == 3
    db.plain.insert_many([{"_id": 1, "s": "foo"}, {"_id": 2, "s": "FOO"}])
    assert ids(db.plain.find({"s": "FOO"}, collation={})) == [2]  # no default: the simple collation
    assert db.plain.delete_many({"s": "Foo"}, collation={}).deleted_count == 0
    assert db.ci.delete_many({"s": "fOo"}, collation={}).deleted_count == 2
    with pytest.raises(OperationFailure) as err:
        db.create_collection("bad", collation={})
    assert err.value.code == 40414


def test_unique_index_with_a_collation(client):
    c = client.coll_db.u
    c.create_index("name", unique=True, collation=EN2)
    c.insert_one({"_id": 1, "name": "alice"})
    with pytest.raises(DuplicateKeyError) as err:
        c.insert_one({"_id": 2, "name": "ALICE"})
    msg = err.value.details["errmsg"]
    assert "index: name_1 collation: { locale: \"en_US\"" in msg and "CollationKey(0x" in msg
    c.insert_one({"_id": 3, "name": "álice"})  # accents still count at strength 2


def test_views_use_their_collation(client):
    db = client.coll_db
    db.src.insert_many([{"_id": 1, "s": "a"}, {"_id": 2, "s": "A"}])
    db.command("create", "v", viewOn="src", pipeline=[], collation=EN2)
    info = next(db.list_collections(filter={"name": "v"}))
    assert info["options"]["collation"]["strength"] == 2
    assert ids(db.v.find({"s": "a"})) == [1, 2]
    assert db.v.count_documents({"s": "A"}) == 2
    with pytest.raises(OperationFailure) as err:
        list(db.v.find({"s": "a"}, collation={"locale": "fr"}))
    assert err.value.code == 167


@pytest.mark.parametrize("collation, code, message", [
    ({"locale": "xx"}, 2, "Field 'locale' is invalid in: { locale: \"xx\" }"),
    ({"locale": "fr_FR"}, 2, "Field 'locale' is invalid in: { locale: \"fr_FR\" }. Did you mean 'fr'?"),
    ({"locale": "en", "blah": 1}, 40415, "BSON field 'collation.blah' is an unknown field."),
    ({"strength": 2}, 40414, "BSON field 'collation.locale' is missing but a required field"),
    ({"locale": "en", "strength": 99}, 51024, "BSON field 'strength' value must be <= 5, actual value '99'"),
    ({"locale": "en", "caseFirst": "up"}, 2, "Enumeration value 'up' for field 'collation.caseFirst' is not a valid value."),
    ({"locale": "en", "version": "1.0"}, 161, "Requested collation version 1.0 but the only available collator version "
                                              "was 57.1. Requested collation spec: { locale: \"en\", version: \"1.0\" }"),
    ({"locale": "fr_CA", "strength": 1}, 2, "'backwards' is invalid with 'strength' of 1 in: { locale: \"fr_CA\", strength: 1 }"),
    ({"locale": "en", "numericOrdering": 1}, 14, "BSON field 'collation.numericOrdering' is the wrong type 'int', "
                                                 "expected type 'bool'"),
])
def test_bad_collations_get_the_servers_errors(coll, collation, code, message):
    with pytest.raises(OperationFailure) as err:
        list(coll.find({}, collation=collation))
    assert (err.value.code, err.value.details["errmsg"]) == (code, message)
    with pytest.raises(OperationFailure) as err:
        coll.database.create_collection("bad", collation=collation)
    assert err.value.code == code


def test_simple_locale_is_binary(coll):
    assert ids(coll.find({"x": "PING"}, collation={"locale": "simple"})) == [2]


def test_mongos_asks_every_shard_for_a_collated_shard_key_equality(sharded_client):
    shard_two_ways(sharded_client, "ks.c", key="k", split="m")
    c = sharded_client.ks.c
    c.insert_many([{"_id": 1, "k": "Zed"}, {"_id": 2, "k": "zed"}, {"_id": 3, "k": "alpha"}])
    per_shard = {s: sharded_client.mongosim_cluster.core.nodes[s].catalog.collection("ks", "c") for s in ("shard00", "shard01")}
    assert {d["k"] for d in per_shard["shard00"].scan()} == {"Zed", "alpha"}
    assert {d["k"] for d in per_shard["shard01"].scan()} == {"zed"}
    assert ids(c.find({"k": "zed"})) == [2]
    assert ids(c.find({"k": "zed"}, collation=EN2)) == [1, 2]
    assert c.count_documents({"k": "ZED"}, collation=EN2) == 2
    assert sorted(v.lower() for v in c.distinct("k", collation=EN2)) == ["alpha", "zed"]
    assert [d["k"] for d in c.find({}, sort=[("k", 1), ("_id", 1)], collation={"locale": "en"})] == ["alpha", "zed", "Zed"]
    assert c.update_many({"k": "ZED"}, {"$set": {"u": 1}}, collation=EN2).modified_count == 2
    assert c.delete_one({"k": "ZED"}, collation=EN2).deleted_count == 1
    assert c.count_documents({}) == 2


def _stages(plan: dict) -> list[str]:
    out = []
    while plan:
        out.append(plan["stage"])
        plan = plan.get("inputStage") or (plan.get("shards") or [{}])[0].get("winningPlan")
    return out


def _winning(explain: dict) -> dict:
    qp = explain["queryPlanner"]
    return qp["winningPlan"].get("shards", [qp["winningPlan"]])[0].get("winningPlan", qp["winningPlan"]) \
        if "shards" in qp["winningPlan"] else qp["winningPlan"]


def test_an_index_serves_strings_only_under_its_own_collation(client):
    c = client.coll_db.ix
    c.create_index("a", collation={"locale": "fr_CA"})
    c.insert_many([{"_id": 1, "a": "foo"}, {"_id": 2, "a": "FOO"}, {"_id": 3, "a": 5}])
    fr_ca = {"locale": "fr_CA"}
    ci = {"locale": "fr_CA", "strength": 2}
    assert "COLLSCAN" in _stages(_winning(c.find({"a": "foo"}).explain()))
    assert "COLLSCAN" in _stages(_winning(c.find({"a": "foo"}, collation={"locale": "en_US"}).explain()))
    explained = c.find({"a": "foo"}, collation=fr_ca).explain()
    stages = _stages(_winning(explained))
    assert "IXSCAN" in stages or "EXPRESS_IXSCAN" in stages
    qp = explained["queryPlanner"]
    shard_qp = qp["winningPlan"]["shards"][0] if "shards" in qp["winningPlan"] else qp
    assert shard_qp["collation"]["locale"] == "fr_CA"
    # numbers compare alike under every collation: the index bounds them for a simple query too
    assert "IXSCAN" in _stages(_winning(c.find({"a": {"$gt": 1}}).explain()))
    assert ids(c.find({"a": "foo"})) == [1]
    assert ids(c.find({"a": "foo"}, collation=fr_ca)) == [1]
    # a strength-2 query cannot use the strength-3 index's bounds, and still finds both
    assert ids(c.find({"a": "foo"}, collation=ci)) == [1, 2]
    assert ids(c.find({"a": {"$gte": "f"}}, collation=fr_ca, hint="a_1")) == [1, 2]


def test_an_index_with_the_querys_collation_gives_its_order(client):
    c = client.coll_db.ixsort
    c.create_index("w", collation={"locale": "en"})
    c.insert_many([{"_id": i, "w": w} for i, w in enumerate(["b", "B", "a", "A"])])
    explained = c.find({}, sort=[("w", 1)], collation={"locale": "en"}).explain()
    assert "SORT" not in _stages(_winning(explained))
    assert [d["w"] for d in c.find({}, sort=[("w", 1)], collation={"locale": "en"})] == ["a", "A", "b", "B"]
    assert "SORT" in _stages(_winning(c.find({}, sort=[("w", 1)]).explain()))
    assert [d["w"] for d in c.find({}, sort=[("w", 1)])] == ["A", "B", "a", "b"]


def test_sharding_a_collection_with_a_default_collation(sharded_client):
    db = sharded_client.kd
    sharded_client.admin.command("enableSharding", "kd", primaryShard="shard00")
    db.create_collection("c", collation=EN2)
    with pytest.raises(OperationFailure) as err:
        sharded_client.admin.command("shardCollection", "kd.c", key={"k": 1})
    assert err.value.code == 2 and "Must specify collation {locale: 'simple'}" in err.value.details["errmsg"]
    with pytest.raises(OperationFailure) as err:
        sharded_client.admin.command("shardCollection", "kd.c", key={"k": 1}, collation={"locale": "fr"})
    assert err.value.code == 2
    sharded_client.admin.command("shardCollection", "kd.c", key={"k": 1}, collation={"locale": "simple"})
    meta = sharded_client.config.collections.find_one({"_id": "kd.c"})
    assert meta["defaultCollation"]["strength"] == 2
    key_index = next(ix for ix in db.c.list_indexes() if ix["name"] == "k_1")
    assert "collation" not in key_index
    sharded_client.admin.command("split", "kd.c", middle={"k": "m"})
    sharded_client.admin.command("moveChunk", "kd.c", find={"k": "m"}, to="shard01")
    db.c.insert_many([{"_id": 1, "k": "Zed"}, {"_id": 2, "k": "zed"}, {"_id": 3, "k": "alpha"}])
    assert ids(db.c.find({"k": "ZED"})) == [1, 2]  # the default collation, on both shards
    assert ids(db.c.find({"k": "ZED"}, collation={"locale": "simple"})) == []
    assert [d["_id"] for d in db.c.find({}, sort=[("k", -1), ("_id", 1)])] == [1, 2, 3]
