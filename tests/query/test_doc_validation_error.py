"""Validation errors (`errInfo.details`), byte for byte as the server's doc_validation_error builds them.

The cases are the server's own unit tests (doc_validation_error_test.cpp and
doc_validation_error_json_schema_test.cpp): a validator, a document that fails
it, and the error the server generates.  Field order counts, so the
comparison is of BSON bytes.
"""

from __future__ import annotations

import pytest
from bson import Regex, encode

from mongosim.shardsim import document_validation
from mongosim.shardsim.doc_validation_error import generate_error
from mongosim.shardsim.match_expression import parse_validator
from mongosim.shardsim.query.matcher import compile_filter


def details(query: dict, doc: dict) -> dict:
    assert document_validation  # (registers $jsonSchema)
    assert not compile_filter(query)(doc, None), "the document must fail the validator"
    if "_id" not in doc:
        doc = {**doc, "_id": 1}
    err = generate_error(parse_validator(query), doc)
    assert err["failingDocumentId"] == doc["_id"]
    return err["details"]


def same(actual: dict, expected: dict) -> None:
    assert actual == expected
    assert encode({"d": actual}) == encode({"d": expected}), "field order differs"


def leaf(op: str, spec: dict, reason: str, **more) -> dict:
    return {"operatorName": op, "specifiedAs": spec, "reason": reason, **more}


CASES = [
    # comparison
    ({"a": {"$eq": 2}}, {"a": 1}, leaf("$eq", {"a": {"$eq": 2}}, "comparison failed", consideredValue=1)),
    ({"a": {"$eq": 2}}, {"b": 1}, leaf("$eq", {"a": {"$eq": 2}}, "field was missing")),
    ({"a": {"$eq": 2}}, {"a": [3, 4, 5]}, leaf("$eq", {"a": {"$eq": 2}}, "comparison failed", consideredValues=[3, 4, 5])),
    ({"a.b": {"$eq": 2}}, {"a": [{"b": 3}]}, leaf("$eq", {"a.b": {"$eq": 2}}, "comparison failed", consideredValue=3)),
    ({"a.b": {"$eq": 0}}, {"a": [{"b": [1, 2]}, {"b": [3, 4]}]},
     leaf("$eq", {"a.b": {"$eq": 0}}, "comparison failed", consideredValues=[1, 2, 3, 4])),
    ({"a": {"$eq": [1, 2]}}, {"a": []}, leaf("$eq", {"a": {"$eq": [1, 2]}}, "comparison failed", consideredValues=[])),
    ({"a": 2}, {"a": 1}, leaf("$eq", {"a": 2}, "comparison failed", consideredValue=1)),
    ({"a": {"$ne": 2}}, {"a": 2}, leaf("$ne", {"a": {"$ne": 2}}, "comparison succeeded", consideredValue=2)),
    ({"a": {"$ne": 2}}, {"a": [1, 2, 3]}, leaf("$ne", {"a": {"$ne": 2}}, "comparison succeeded", consideredValues=[1, 2, 3])),
    ({"a": {"$lt": 0}}, {"a": 1}, leaf("$lt", {"a": {"$lt": 0}}, "comparison failed", consideredValue=1)),
    ({"a": {"$gte": 3}}, {"a": []}, leaf("$gte", {"a": {"$gte": 3}}, "comparison failed", consideredValues=[])),
    ({"a": {"$in": [1, 2, 3]}}, {"a": 4}, leaf("$in", {"a": {"$in": [1, 2, 3]}}, "no matching value found in array",
                                            consideredValue=4)),
    ({"a": {"$in": [1, 2, 3]}}, {"b": 1}, leaf("$in", {"a": {"$in": [1, 2, 3]}}, "field was missing")),
    ({"a": {"$nin": [1, 2, 3]}}, {"a": 3}, leaf("$nin", {"a": {"$nin": [1, 2, 3]}}, "matching value found in array",
                                             consideredValue=3)),
    ({"a": {"$in": [Regex("^v"), Regex("^b")]}}, {"a": "Validation"},
     leaf("$in", {"a": {"$in": [Regex("^v"), Regex("^b")]}}, "no matching value found in array", consideredValue="Validation")),
    # logical
    ({"$and": [{"b": {"$gt": 0}}, {"a": {"$lt": 10}}]}, {"a": 11, "b": 2},
     {"operatorName": "$and", "clausesNotSatisfied": [
         {"index": 1, "details": leaf("$lt", {"a": {"$lt": 10}}, "comparison failed", consideredValue=11)}]}),
    ({"a": {"$gt": 0, "$lt": 10}}, {"a": 11},
     {"operatorName": "$and", "clausesNotSatisfied": [
         {"index": 1, "details": leaf("$lt", {"a": {"$lt": 10}}, "comparison failed", consideredValue=11)}]}),
    ({"$and": [{"$and": [{"a": 1}]}, {"$and": [{"b": 1}]}]}, {"a": 1, "b": 2},
     {"operatorName": "$and", "clausesNotSatisfied": [{"index": 1, "details": {
         "operatorName": "$and", "clausesNotSatisfied": [
             {"index": 0, "details": leaf("$eq", {"b": 1}, "comparison failed", consideredValue=2)}]}}]}),
    ({"$or": [{"a": {"$lt": 10}}, {"a": {"$gt": 20}}]}, {"a": 15},
     {"operatorName": "$or", "clausesNotSatisfied": [
         {"index": 0, "details": leaf("$lt", {"a": {"$lt": 10}}, "comparison failed", consideredValue=15)},
         {"index": 1, "details": leaf("$gt", {"a": {"$gt": 20}}, "comparison failed", consideredValue=15)}]}),
    ({"$nor": [{"a": {"$gt": 10}}, {"b": {"$lt": 10}}]}, {"a": 9, "b": 9},
     {"operatorName": "$nor", "clausesSatisfied": [
         {"index": 1, "details": leaf("$lt", {"b": {"$lt": 10}}, "comparison succeeded", consideredValue=9)}]}),
    ({"a": {"$not": {"$lt": 10}}}, {"a": 9},
     {"operatorName": "$not", "details": leaf("$lt", {"a": {"$lt": 10}}, "comparison succeeded", consideredValue=9)}),
    ({"a": {"$not": {"$lt": 20, "$gt": 5}}}, {"a": 10},
     {"operatorName": "$not", "details": {"operatorName": "$and", "clausesSatisfied": [
         {"index": 0, "details": leaf("$lt", {"a": {"$lt": 20}}, "comparison succeeded", consideredValue=10)},
         {"index": 1, "details": leaf("$gt", {"a": {"$gt": 5}}, "comparison succeeded", consideredValue=10)}]}}),
    ({"a": {"$not": {"$not": {"$lt": 10}}}}, {"a": 11},
     {"operatorName": "$not", "details": {"operatorName": "$not", "details":
                                          leaf("$lt", {"a": {"$lt": 10}}, "comparison failed", consideredValue=11)}}),
    ({"$and": [{"$or": [{"price": {"$lt": 20}}]}, {"$nor": [{"qty": {"$gt": 30}}, {"qty": {"$not": {"$lt": 20}}}]}]},
     {"price": 10, "qty": 25},
     {"operatorName": "$and", "clausesNotSatisfied": [{"index": 1, "details": {
         "operatorName": "$nor", "clausesSatisfied": [{"index": 1, "details": {
             "operatorName": "$not", "details": leaf("$lt", {"qty": {"$lt": 20}}, "comparison failed",
                                                     consideredValue=25)}}]}}]}),
    # miscellaneous
    ({"a": {"$exists": True}}, {"b": 1}, leaf("$exists", {"a": {"$exists": True}}, "path does not exist")),
    ({"a": {"$exists": False}}, {"a": 1}, leaf("$exists", {"a": {"$exists": False}}, "path does exist")),
    ({"a": {"$type": "int"}}, {"a": "one"},
     leaf("$type", {"a": {"$type": "int"}}, "type did not match", consideredValue="one", consideredType="string")),
    ({"a": {"$not": {"$type": "string"}}}, {"a": "words"},
     {"operatorName": "$not", "details": leaf("$type", {"a": {"$type": "string"}}, "type did match",
                                              consideredValue="words", consideredType="string")}),
    ({"a": {"$type": "double"}}, {"b": 1}, leaf("$type", {"a": {"$type": "double"}}, "field was missing")),
    ({"a": {"$type": "double"}}, {"a": ["x", "y", "z"]},
     leaf("$type", {"a": {"$type": "double"}}, "type did not match", consideredValues=["x", "y", "z"],
          consideredType="string")),
    ({"$expr": {"$eq": ["$a", "$b"]}}, {"a": 1, "b": 2},
     leaf("$expr", {"$expr": {"$eq": ["$a", "$b"]}}, "expression did not match", expressionResult=False)),
    ({"$nor": [{"$expr": {"$eq": ["$a", "$b"]}}]}, {"a": 1, "b": 1},
     {"operatorName": "$nor", "clausesSatisfied": [{"index": 0, "details": leaf(
         "$expr", {"$expr": {"$eq": ["$a", "$b"]}}, "expression did match", expressionResult=True)}]}),
    ({"$expr": 0}, {"a": 1}, leaf("$expr", {"$expr": 0}, "expression did not match", expressionResult=0)),
    ({"a": {"$mod": [2, 1]}}, {"a": 2},
     leaf("$mod", {"a": {"$mod": [2, 1]}}, "$mod did not evaluate to expected remainder", consideredValue=2)),
    ({"a": {"$mod": [2, 1]}}, {"a": "two"},
     leaf("$mod", {"a": {"$mod": [2, 1]}}, "type did not match", consideredType="string",
          expectedTypes=["decimal", "double", "int", "long"], consideredValue="two")),
    ({"a": {"$mod": [2, 1]}}, {"a": [0, "two", "four"]},
     leaf("$mod", {"a": {"$mod": [2, 1]}}, "$mod did not evaluate to expected remainder",
          consideredValues=[0, "two", "four"])),
    ({"a": {"$regex": Regex("/myRegex/", ""), "$options": ""}}, {"a": "one"},
     leaf("$regex", {"a": {"$regex": Regex("/myRegex/", ""), "$options": ""}}, "regular expression did not match",
          consideredValue="one")),
    ({"a": {"$regex": Regex("/myRegex/", ""), "$options": ""}}, {"a": 1},
     leaf("$regex", {"a": {"$regex": Regex("/myRegex/", ""), "$options": ""}}, "type did not match",
          consideredType="int", expectedTypes=["regex", "string", "symbol"], consideredValue=1)),
    ({"a": Regex("^S")}, {"a": "so sorry; not capitalized"},
     leaf("$regex", {"a": Regex("^S")}, "regular expression did not match", consideredValue="so sorry; not capitalized")),
    ({"a": {"$not": Regex("^S")}}, {"a": "S"},
     {"operatorName": "$not", "details": leaf("$regex", {"a": Regex("^S")}, "regular expression did match",
                                              consideredValue="S")}),
    ({"a": {"$bitsAllClear": 2}}, {"a": 7},
     leaf("$bitsAllClear", {"a": {"$bitsAllClear": 2}}, "bitwise operator failed to match", consideredValue=7)),
    ({"a": {"$bitsAnyClear": 3}}, {"a": "someString"},
     leaf("$bitsAnyClear", {"a": {"$bitsAnyClear": 3}}, "type did not match", consideredType="string",
          expectedTypes=["binData", "decimal", "double", "int", "long"], consideredValue="someString")),
    # arrays
    ({"a": {"$size": 2}}, {"a": [1, 2, 3]},
     leaf("$size", {"a": {"$size": 2}}, "array length was not equal to given size", consideredValue=[1, 2, 3])),
    ({"a": {"$size": 2}}, {"a": 3},
     leaf("$size", {"a": {"$size": 2}}, "type did not match", consideredType="int", expectedType="array",
          consideredValue=3)),
    ({"a": {"$all": [1, 2, 3]}}, {"a": [1, 2, 4]},
     leaf("$all", {"a": {"$all": [1, 2, 3]}}, "array did not contain all specified values", consideredValue=[1, 2, 4])),
    ({"a": {"$all": []}}, {"a": [1, 2, 3]}, leaf("$all", {"a": {"$all": []}}, "expression always evaluates to false")),
    ({"a": {"$not": {"$all": [1, 2, 3]}}}, {"a": [1, 2, 3]},
     {"operatorName": "$not", "details": leaf("$all", {"a": {"$all": [1, 2, 3]}}, "array did contain all specified values",
                                              consideredValue=[1, 2, 3])}),
    ({"a": {"$elemMatch": {"$gt": 0, "$lt": 10}}}, {"a": [10, 11, 12]},
     leaf("$elemMatch", {"a": {"$elemMatch": {"$gt": 0, "$lt": 10}}}, "array did not satisfy the child predicate",
          consideredValue=[10, 11, 12])),
    ({"a": {"$elemMatch": {"b": {"$gt": 0}}}}, {"a": "foo"},
     leaf("$elemMatch", {"a": {"$elemMatch": {"b": {"$gt": 0}}}}, "type did not match", consideredType="string",
          expectedType="array", consideredValue="foo")),
    ({"a": {"$lt": 0}}, {"a": list(range(1000))},
     leaf("$lt", {"a": {"$lt": 0}}, "comparison failed", consideredValues=list(range(10)),
          consideredValuesTruncated=True)),
]


@pytest.mark.parametrize("query,doc,expected", CASES, ids=[str(i) for i in range(len(CASES))])
def test_query_operator_errors_are_the_servers(query, doc, expected):
    same(details(query, doc), expected)


def schema(*rules: dict) -> dict:
    return {"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": list(rules)}


def props(*entries: dict) -> dict:
    return {"operatorName": "properties", "propertiesNotSatisfied": list(entries)}


def prop(name: str, *errs: dict) -> dict:
    return {"propertyName": name, "details": list(errs)}


def kw(op: str, spec: dict, reason: str, **more) -> dict:
    return {"operatorName": op, "specifiedAs": spec, "reason": reason, **more}


NOT_MATCHED = {"operatorName": "not", "reason": "child expression matched"}
SCHEMA_CASES = [
    ({"properties": {"a": {"minimum": 1}}}, {"a": 0},
     schema(props(prop("a", kw("minimum", {"minimum": 1}, "comparison failed", consideredValue=0))))),
    ({"properties": {"a": {"minimum": 1, "exclusiveMinimum": True}}}, {"a": 1},
     schema(props(prop("a", kw("minimum", {"minimum": 1, "exclusiveMinimum": True}, "comparison failed",
                              consideredValue=1))))),
    ({"not": {"properties": {"a": {"minimum": 1, "exclusiveMinimum": True}}}}, {"a": 2}, schema(NOT_MATCHED)),
    ({"properties": {"a": {"properties": {"b": {"minimum": 10, "maximum": -10}}}}}, {"a": {"b": 5}},
     schema(props(prop("a", props(prop("b", kw("maximum", {"maximum": -10}, "comparison failed", consideredValue=5),
                                       kw("minimum", {"minimum": 10}, "comparison failed", consideredValue=5))))))),
    ({"properties": {"a": {"type": "object", "properties": {"b": {"minimum": 10}}}}}, {"a": "eleven"},
     schema(props(prop("a", kw("type", {"type": "object"}, "type did not match", consideredValue="eleven",
                              consideredType="string"))))),
    ({"type": "object", "properties": {"a": {"type": "string", "minimum": 5}}}, {"a": 6},
     schema(props(prop("a", kw("type", {"type": "string"}, "type did not match", consideredValue=6,
                              consideredType="int"))))),
    ({"properties": {"a": {"type": "string"}}}, {"a": ["Mihai", "was", "here"]},
     schema(props(prop("a", kw("type", {"type": "string"}, "type did not match",
                              consideredValue=["Mihai", "was", "here"], consideredType="array"))))),
    ({"properties": {"a": {"bsonType": "double"}, "b": {"bsonType": "int"}, "c": {"bsonType": "decimal"}}},
     {"a": {"b": 1}, "b": 4, "c": "foo"},
     schema(props(prop("a", kw("bsonType", {"bsonType": "double"}, "type did not match", consideredValue={"b": 1},
                              consideredType="object")),
                  prop("c", kw("bsonType", {"bsonType": "decimal"}, "type did not match", consideredValue="foo",
                               consideredType="string"))))),
    ({"properties": {"a": {"type": "string", "minLength": 4}}}, {"a": "foo"},
     schema(props(prop("a", kw("minLength", {"minLength": 4}, "specified string length was not satisfied",
                              consideredValue="foo"))))),
    ({"properties": {"a": {"type": "string", "minLength": 4}}}, {"a": 1},
     schema(props(prop("a", kw("type", {"type": "string"}, "type did not match", consideredValue=1,
                              consideredType="int"))))),  # (not minLength: the type reports it)
    ({"properties": {"a": {"type": "string", "pattern": "^S"}}}, {"a": 1},
     schema(props(prop("a", kw("type", {"type": "string"}, "type did not match", consideredValue=1,
                              consideredType="int"))))),
    ({"properties": {"a": {"multipleOf": 2.1}}}, {"a": 1.1},
     schema(props(prop("a", kw("multipleOf", {"multipleOf": 2.1},
                              "considered value is not a multiple of the specified value", consideredValue=1.1))))),
    ({"properties": {"a": {"type": "number", "multipleOf": 2.1}}}, {"a": "foo"},
     schema(props(prop("a", kw("type", {"type": "number"}, "type did not match", consideredValue="foo",
                              consideredType="string"))))),
    ({"allOf": [{"properties": {"a": {"minimum": 1}}}, {"properties": {"b": {"minimum": 2}}}]}, {"a": 1, "b": 0},
     schema({"operatorName": "allOf", "schemasNotSatisfied": [{"index": 1, "details": [props(prop(
         "b", kw("minimum", {"minimum": 2}, "comparison failed", consideredValue=0)))]}]})),
    ({"properties": {"a": {"anyOf": [{"type": "string"}, {"maximum": 3}]}}}, {"a": 4},
     schema(props(prop("a", {"operatorName": "anyOf", "schemasNotSatisfied": [
         {"index": 0, "details": [kw("type", {"type": "string"}, "type did not match", consideredValue=4,
                                     consideredType="int")]},
         {"index": 1, "details": [kw("maximum", {"maximum": 3}, "comparison failed", consideredValue=4)]}]})))),
    ({"properties": {"a": {"oneOf": [{"minimum": 1}, {"maximum": 3}]}}}, {"a": 2},
     schema(props(prop("a", {"operatorName": "oneOf", "reason": "more than one subschema matched",
                             "matchingSchemaIndexes": [0, 1]})))),
    ({"properties": {"a": {"oneOf": [{"minimum": 4}, {"maximum": 1}, {"bsonType": "int"}]}}}, {"a": 2.1},
     schema(props(prop("a", {"operatorName": "oneOf", "schemasNotSatisfied": [
         {"index": 0, "details": [kw("minimum", {"minimum": 4}, "comparison failed", consideredValue=2.1)]},
         {"index": 1, "details": [kw("maximum", {"maximum": 1}, "comparison failed", consideredValue=2.1)]},
         {"index": 2, "details": [kw("bsonType", {"bsonType": "int"}, "type did not match", consideredValue=2.1,
                                     consideredType="double")]}]})))),
    ({"properties": {"a": {"not": {}}}}, {"a": "foo"}, schema(props(prop("a", NOT_MATCHED)))),
    ({"properties": {"a": {"enum": [1, 2, 3]}}}, {"a": 0},
     schema(props(prop("a", kw("enum", {"enum": [1, 2, 3]}, "value was not found in enum", consideredValue=0))))),
    ({"enum": [{"a": 1, "b": 1}, {"a": 0, "b": {"c": [1, 2, 3]}}]}, {"a": 0, "b": 1, "_id": 1},
     schema(kw("enum", {"enum": [{"a": 1, "b": 1}, {"a": 0, "b": {"c": [1, 2, 3]}}]}, "value was not found in enum",
               consideredValue={"a": 0, "b": 1, "_id": 1}))),
    ({"properties": {"a": {"allOf": [{"bsonType": "int"}, {"oneOf": [{"minimum": 1}, {"enum": [6, 7, 8]}]}]}}}, {"a": 0},
     schema(props(prop("a", {"operatorName": "allOf", "schemasNotSatisfied": [{"index": 1, "details": [
         {"operatorName": "oneOf", "schemasNotSatisfied": [
             {"index": 0, "details": [kw("minimum", {"minimum": 1}, "comparison failed", consideredValue=0)]},
             {"index": 1, "details": [kw("enum", {"enum": [6, 7, 8]}, "value was not found in enum",
                                         consideredValue=0)]}]}]}]})))),
    ({"type": "number", "properties": {"a": {"minimum": 1}}}, {"a": 0},
     {"operatorName": "$jsonSchema", "specifiedAs": {"$jsonSchema": {"type": "number", "properties": {
         "a": {"minimum": 1}}}}, "reason": "expression always evaluates to false"}),
    # keywords the unit tests above leave out: what the same rules produce
    ({"required": ["a", "b"], "properties": {"a": {"bsonType": "int"}}}, {"c": 1},
     schema({"operatorName": "required", "specifiedAs": {"required": ["a", "b"]}, "missingProperties": ["a", "b"]})),
    ({"properties": {"a": {"required": ["b"]}}}, {"a": {}},
     schema(props(prop("a", {"operatorName": "required", "specifiedAs": {"required": ["b"]},
                             "missingProperties": ["b"]})))),
    ({"properties": {"_id": {}, "a": {}}, "additionalProperties": False}, {"a": 1, "b": 2, "c": 3},
     schema({"operatorName": "additionalProperties", "specifiedAs": {"additionalProperties": False},
             "additionalProperties": ["b", "c"]})),
    ({"properties": {"_id": {}}, "additionalProperties": {"bsonType": "string"}}, {"a": "x", "b": 2},
     schema({"operatorName": "additionalProperties", "reason": "at least one additional property did not match the "
             "subschema", "failingProperty": "b", "details": [kw("bsonType", {"bsonType": "string"},
                                                                 "type did not match", consideredValue=2,
                                                                 consideredType="int")]})),
    ({"patternProperties": {"^a": {"bsonType": "int"}}}, {"ab": "x"},
     schema({"operatorName": "patternProperties", "details": [
         {"propertyName": "ab", "regexMatched": "^a", "details": [kw("bsonType", {"bsonType": "int"},
                                                                   "type did not match", consideredValue="x",
                                                                   consideredType="string")]}]})),
    ({"properties": {"a": {"minItems": 2, "maxItems": 3, "uniqueItems": True}}}, {"a": [1, 1]},
     schema(props(prop("a", kw("uniqueItems", {"uniqueItems": True}, "found a duplicate item", consideredValue=[1, 1],
                              duplicatedValue=1))))),
    ({"properties": {"a": {"minItems": 2}}}, {"a": [1]},
     schema(props(prop("a", kw("minItems", {"minItems": 2}, "array did not match specified length",
                              consideredValue=[1], numberOfItems=1))))),
    ({"properties": {"a": {"items": {"bsonType": "int"}}}}, {"a": [1, "x"]},
     schema(props(prop("a", {"operatorName": "items", "reason": "At least one item did not match the sub-schema",
                             "itemIndex": 1, "details": [kw("bsonType", {"bsonType": "int"}, "type did not match",
                                                            consideredValue="x", consideredType="string")]})))),
    ({"properties": {"a": {"items": [{"bsonType": "int"}], "additionalItems": False}}}, {"a": [1, 2, 3]},
     schema(props(prop("a", kw("additionalItems", {"additionalItems": False}, "found additional items",
                              additionalItems=[2, 3]))))),
    ({"properties": {"a": {"items": [{"bsonType": "int"}, {"bsonType": "string"}]}}}, {"a": [1, 2]},
     schema(props(prop("a", {"operatorName": "items", "details": [{"itemIndex": 1, "details": [
         kw("bsonType", {"bsonType": "string"}, "type did not match", consideredValue=2, consideredType="int")]}]})))),
    ({"minProperties": 3}, {"a": 1},
     schema(kw("minProperties", {"minProperties": 3}, "specified number of properties was not satisfied",
               numberOfProperties=2))),
    ({"dependencies": {"a": ["b", "c"]}}, {"a": 1, "c": 1},
     schema({"operatorName": "dependencies", "failingDependencies": [
         {"conditionalProperty": "a", "missingProperties": ["b"]}]})),
    ({"dependencies": {"a": {"required": ["b"]}}}, {"a": 1},
     schema({"operatorName": "dependencies", "failingDependencies": [{"conditionalProperty": "a", "details": [
         {"operatorName": "required", "specifiedAs": {"required": ["b"]}, "missingProperties": ["b"]}]}]})),
    ({"title": "t", "description": "d", "properties": {"a": {"description": "must be int", "bsonType": "int"}}},
     {"a": "x"},
     {"operatorName": "$jsonSchema", "title": "t", "description": "d", "schemaRulesNotSatisfied": [props(
         {"propertyName": "a", "description": "must be int", "details": [
             kw("bsonType", {"bsonType": "int"}, "type did not match", consideredValue="x",
                consideredType="string")]})]}),
]


@pytest.mark.parametrize("js,doc,expected", SCHEMA_CASES, ids=[str(i) for i in range(len(SCHEMA_CASES))])
def test_json_schema_errors_are_the_servers(js, doc, expected):
    same(details({"$jsonSchema": js}, doc), expected)


def test_json_schema_in_query_operators():
    query = {"$and": [{"$jsonSchema": {"properties": {"a": {"minimum": 1}}}},
                      {"$jsonSchema": {"properties": {"b": {"minimum": 1}}}}]}
    same(details(query, {"a": 0, "b": 2}), {"operatorName": "$and", "clausesNotSatisfied": [
        {"index": 0, "details": schema(props(prop("a", kw("minimum", {"minimum": 1}, "comparison failed",
                                                          consideredValue=0))))}]})
    same(details({"$nor": [{"$jsonSchema": {"minimum": 1}}]}, {"a": 2}),
         {"operatorName": "$nor", "clausesSatisfied": [
             {"index": 0, "details": {"operatorName": "$jsonSchema", "reason": "schema matched"}}]})
