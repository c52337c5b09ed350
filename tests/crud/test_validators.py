"""Collection validators through pymongo, in both topologies: DocumentValidationFailure (121) with the
server's errInfo, validationLevel and validationAction, bypassDocumentValidation, collMod, listCollections."""

from __future__ import annotations

import logging

import pymongo
import pytest
from pymongo.errors import BulkWriteError, ClientBulkWriteException, OperationFailure, WriteError
from pymongo.operations import InsertOne as ClientInsertOne

from tests.crud.conftest import shard_two_ways

PEOPLE = {"$jsonSchema": {
    "bsonType": "object", "required": ["name", "age"],
    "properties": {"name": {"bsonType": "string"}, "age": {"bsonType": "int", "minimum": 0}}}}


@pytest.fixture
def db(client, request):
    db = client[f"val_{request.node.name.split('[')[0][-24:]}"]
    client.drop_database(db.name)
    return db


def test_insert_failing_a_json_schema_is_refused_with_the_servers_errinfo(db):
    db.create_collection("people", validator=PEOPLE)
    with pytest.raises(WriteError) as e:
        db.people.insert_one({"_id": 1, "name": "ann"})
    assert e.value.code == 121 and e.value.details["codeName"] if "codeName" in e.value.details else True
    assert str(e.value).startswith("Document failed validation")
    assert e.value.details["errInfo"] == {"failingDocumentId": 1, "details": {
        "operatorName": "$jsonSchema", "schemaRulesNotSatisfied": [
            {"operatorName": "required", "specifiedAs": {"required": ["name", "age"]}, "missingProperties": ["age"]}]}}
    assert list(e.value.details) == ["index", "code", "errInfo", "errmsg"]
    db.people.insert_one({"_id": 2, "name": "bob", "age": 3})
    assert db.people.count_documents({}) == 1


def test_list_collections_shows_the_validator_and_the_level_and_action_set(db):
    db.create_collection("people", validator=PEOPLE)
    [info] = db.list_collections(filter={"name": "people"})
    assert info["options"] == {"validator": PEOPLE}  # (level and action only once set)
    db.command("collMod", "people", validationLevel="moderate", validationAction="warn")
    [info] = db.list_collections(filter={"name": "people"})
    assert info["options"] == {"validator": PEOPLE, "validationLevel": "moderate", "validationAction": "warn"}


def test_coll_mod_adds_a_query_validator_and_updates_are_checked(db):
    db.c.insert_one({"_id": 1, "x": "foo"})
    db.command("collMod", "c", validator={"x": {"$type": "string"}})
    with pytest.raises(OperationFailure) as e:
        db.c.find_one_and_update({"_id": 1}, {"$set": {"x": 1}})
    assert (e.value.code, e.value.details["codeName"]) == (121, "DocumentValidationFailure")
    assert e.value.details["errInfo"] == {"failingDocumentId": 1, "details": {
        "operatorName": "$type", "specifiedAs": {"x": {"$type": "string"}}, "reason": "type did not match",
        "consideredValue": 1, "consideredType": "int"}}
    with pytest.raises(WriteError) as e:
        db.c.replace_one({"_id": 1}, {"x": 2})
    assert e.value.code == 121
    with pytest.raises(WriteError) as e:
        db.c.update_one({"_id": 5}, {"$set": {"x": 5}}, upsert=True)  # an upsert inserts: checked
    assert e.value.code == 121
    assert db.c.find_one({"_id": 1}) == {"_id": 1, "x": "foo"} and db.c.count_documents({}) == 1


def test_bypass_document_validation_on_every_write(db, client):
    db.create_collection("c", validator={"x": {"$gt": 0}})
    db.c.insert_one({"_id": 1, "x": -1}, bypass_document_validation=True)
    db.c.insert_many([{"_id": 2, "x": -2}, {"_id": 3, "x": -3}], bypass_document_validation=True)
    db.c.update_one({"_id": 1}, {"$set": {"x": -5}}, bypass_document_validation=True)
    db.c.find_one_and_update({"_id": 2}, {"$set": {"x": -6}}, bypassDocumentValidation=True)
    db.c.bulk_write([pymongo.InsertOne({"_id": 4, "x": -4})], bypass_document_validation=True)
    client.bulk_write([ClientInsertOne({"_id": 5, "x": -7}, namespace=f"{db.name}.c")], bypass_document_validation=True)
    with pytest.raises(BulkWriteError) as e:
        db.c.bulk_write([pymongo.InsertOne({"_id": 6, "x": -1})])
    assert e.value.details["writeErrors"][0]["code"] == 121
    with pytest.raises(ClientBulkWriteException) as e:
        client.bulk_write([ClientInsertOne({"_id": 7, "x": -7}, namespace=f"{db.name}.c")])
    assert e.value.write_errors[0]["code"] == 121
    assert sorted(d["x"] for d in db.c.find()) == [-7, -6, -5, -4, -3]


def test_out_and_merge_validate_unless_bypassed(db):
    db.src.insert_many([{"_id": 1, "x": -1}, {"_id": 2, "x": 2}])
    db.create_collection("target", validator={"x": {"$gt": 0}})
    with pytest.raises(OperationFailure) as e:
        list(db.src.aggregate([{"$merge": {"into": "target"}}]))
    assert e.value.code == 121
    list(db.src.aggregate([{"$merge": {"into": "target"}}], bypassDocumentValidation=True))
    assert db.target.count_documents({}) == 2
    with pytest.raises(OperationFailure) as e:
        list(db.src.aggregate([{"$out": "target"}]))
    assert e.value.code == 121
    list(db.src.aggregate([{"$out": "target"}], bypassDocumentValidation=True))
    assert db.target.count_documents({}) == 2


def test_moderate_level_lets_invalid_documents_stay_invalid(db):
    db.c.insert_many([{"_id": 1, "x": 5}, {"_id": 2, "x": -5}])
    db.command("collMod", "c", validator={"x": {"$gt": 0}}, validationLevel="moderate")
    db.c.update_one({"_id": 2}, {"$set": {"x": -6}})  # bad -> bad: allowed
    with pytest.raises(WriteError):
        db.c.update_one({"_id": 1}, {"$set": {"x": -1}})  # good -> bad: refused
    with pytest.raises(WriteError):
        db.c.insert_one({"_id": 3, "x": -1})  # inserts are always checked
    db.command("collMod", "c", validationLevel="off")
    db.c.insert_one({"_id": 3, "x": -1})
    assert sorted(d["x"] for d in db.c.find()) == [-6, -1, 5]


def test_warn_action_writes_and_logs_the_servers_warning(db, caplog):
    db.create_collection("c", validator={"x": {"$gt": 0}}, validationAction="warn")
    with caplog.at_level(logging.WARNING, logger="mongosim.storage"):
        db.c.insert_one({"_id": 1, "x": -1})
    assert db.c.count_documents({}) == 1
    [record] = [r for r in caplog.records if r.name == "mongosim.storage"]
    assert (record.getMessage(), record.log_id, record.component) == ("Document would fail validation", 20294, "STORAGE")
    assert record.attr["namespace"] == f"{db.name}.c" and record.attr["document"] == {"_id": 1, "x": -1}
    assert record.attr["errInfo"]["details"]["operatorName"] == "$gt"


def test_bad_validation_options_get_the_servers_errors(db):
    with pytest.raises(OperationFailure) as e:
        db.create_collection("c", validator={"$foo": 1})
    assert e.value.code == 2 and "Parsing of collection validator failed :: caused by :: unknown top level operator: $foo" \
        in str(e.value)
    with pytest.raises(OperationFailure) as e:
        db.create_collection("c", validator={"$jsonSchema": {"bsonType": "object", "foo": 1}})
    assert (e.value.code, e.value.details["codeName"]) == (9, "FailedToParse")
    assert "Unknown $jsonSchema keyword: foo" in str(e.value)
    with pytest.raises(OperationFailure) as e:
        db.create_collection("c", validator={"a": 1}, validationLevel="sometimes")
    assert e.value.code == 2 and "Enumeration value 'sometimes' for field 'create.validationLevel'" in str(e.value)
    db.create_collection("c")
    with pytest.raises(OperationFailure) as e:
        db.command("collMod", "c", validationAction="shout")
    assert e.value.code == 2 and "'collMod.validationAction'" in str(e.value)
    with pytest.raises(OperationFailure) as e:
        db.command("collMod", "c", validator=5)
    assert e.value.code == 14


def test_json_schema_as_a_query_operator(db):
    db.c.insert_many([{"_id": 1, "a": 1}, {"_id": 2, "a": "x"}, {"_id": 3}])
    assert [d["_id"] for d in db.c.find({"$jsonSchema": {"required": ["a"], "properties": {"a": {"bsonType": "int"}}}})] \
        == [1]
    assert [d["_id"] for d in db.c.find({"$nor": [{"$jsonSchema": {"required": ["a"]}}]})] == [3]


def test_validation_inside_a_transaction(db, client):
    db.create_collection("c", validator={"x": {"$gt": 0}})
    with client.start_session() as s:
        with pytest.raises(OperationFailure) as e:
            with s.start_transaction():
                db.c.insert_one({"_id": 1, "x": 1}, session=s)
                db.c.insert_one({"_id": 2, "x": -1}, session=s)
        assert e.value.code == 121
    assert db.c.count_documents({}) == 0


def test_every_shard_of_a_sharded_collection_validates(sharded_client):
    db = sharded_client.val_sharded
    sharded_client.drop_database(db.name)
    db.create_collection("c", validator={"k": {"$type": "int"}})
    shard_two_ways(sharded_client, f"{db.name}.c")
    db.c.insert_many([{"_id": 1, "k": 1}, {"_id": 2, "k": 200}])
    with pytest.raises(WriteError) as e:
        db.c.insert_one({"_id": 3, "k": 300.5})  # owned by shard01
    assert e.value.details["errInfo"]["details"]["consideredType"] == "double"
    db.command("collMod", "c", validator={"y": {"$exists": False}})
    with pytest.raises(WriteError):
        db.c.update_one({"_id": 2, "k": 200}, {"$set": {"y": 1}})
    assert db.c.find_one({"_id": 2}) == {"_id": 2, "k": 200}


def test_validate_counts_the_documents_the_validator_rejects(db, client):
    db.c.insert_many([{"_id": 1, "x": 1}, {"_id": 2, "x": -1}])
    db.command("collMod", "c", validator={"x": {"$gt": 0}})
    reply = db.command("validate", "c")
    result = next(iter(reply["raw"].values())) if "raw" in reply else reply
    assert reply["valid"] is True and result["nNonCompliantDocuments"] == 1 and result["nrecords"] == 2
    assert result["warnings"] == ["Detected one or more documents not compliant with the collection's schema. "
                                  "Check logs for log id 5363500."]
    assert result["keysPerIndex"] == {"_id_": 2}
    with pytest.raises(OperationFailure) as e:
        db.command("validate", "nothing")
    assert e.value.code == 26
