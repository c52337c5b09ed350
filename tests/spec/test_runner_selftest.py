"""The runner's own rules (unified test format: "Evaluating Matches", expectedError,
expectedEventsForClient, runOnRequirement, result documents, arguments), checked without a server."""

from __future__ import annotations

import pytest
from bson import Binary, Int64, ObjectId, Timestamp
from pymongo.errors import (AutoReconnect, BulkWriteError, ClientBulkWriteException, NotPrimaryError,
                            OperationFailure)
from pymongo.operations import InsertOne, ReplaceOne, UpdateMany
from pymongo.results import BulkWriteResult, ClientBulkWriteResult, InsertManyResult, InsertOneResult, UpdateResult

from tests.spec.conftest import needs_secondaries
from tests.spec.entities import ClientConfig, EntityMap, create_client, read_preference, with_hosts, write_concern
from tests.spec.errors import MissingFeature, RequirementsNotMet, UnsupportedByRunner
from tests.spec.events import EventRecorder, ObservedEvent, check_events
from tests.spec.expected_error import check_error
from tests.spec.matching import Matcher, RootDocuments, exactly_equal
from tests.spec.operations import OPERATIONS, Args, write_model
from tests.spec.requirements import (Deployment, check_requirements, check_schema_version, parse_version,
                                     requirement_problem)
from tests.spec.results import partial_result, result_to_document
from tests.spec.runner import _operation_names, _raised_by_driver, spec_files
from tests.spec.special_operations import SPECIAL_OPERATIONS
from tests.driver_version import UPDATE_ONE_SORT


def ok(expected, actual, root=True, entities=None):
    Matcher(entities or EntityMap()).match(expected, actual, root=root)


def bad(expected, actual, root=True, entities=None):
    with pytest.raises(AssertionError):
        Matcher(entities or EntityMap()).match(expected, actual, root=root)


# ----------------------------------------------------------------------------- matching


def test_root_documents_allow_extra_keys_nested_ones_do_not():
    ok({"x": 1}, {"x": 1, "y": 1})
    bad({"x": 1, "y": 1}, {"x": 1})
    bad({"x": {"y": 1}}, {"x": {"y": 1, "z": 1}})
    ok({"b": 1, "a": 2}, {"a": 2, "b": 1})  # key order is free


def test_flexible_numerics_but_not_bool_or_strings():
    ok({"ok": 1}, {"ok": 1.0})
    ok({"n": 5}, {"n": Int64(5)})
    bad({"ok": 1}, {"ok": 1.5})
    bad({"ok": 1}, {"ok": True})
    bad({"s": "1"}, {"s": 1})
    bad({"v": None}, {"v": 0})


def test_arrays_have_the_same_length_and_elements_are_not_root():
    ok([1, 2], [1, 2])
    bad([1, 2], [1, 2, 3])
    bad([{"a": 1}], [{"a": 1, "b": 2}])


def test_iterated_results_have_root_level_elements():
    ok([{"a": 1}], RootDocuments([{"a": 1, "b": 2}]))  # find / aggregate: each document is root-level
    bad([{"a": 1}], RootDocuments([{"a": 1}, {"a": 2}]))  # still the same length
    bad([{"a": {"b": 1}}], RootDocuments([{"a": {"b": 1, "c": 1}}]))  # nested documents are not


def test_exists():
    ok({"a": {"$$exists": True}}, {"a": None})
    bad({"a": {"$$exists": True}}, {})
    ok({"a": {"$$exists": False}}, {})
    bad({"a": {"$$exists": False}}, {"a": 1})
    ok({"c": {"$changeStream": {"x": {"$$exists": False}}}}, {"c": {"$changeStream": {}}})


def test_type():
    ok({"id": {"$$type": ["int", "long"]}}, {"id": Int64(7)})
    ok({"id": {"$$type": ["int", "long"]}}, {"id": 7})
    bad({"id": {"$$type": "int"}}, {"id": Int64(7)})
    bad({"id": {"$$type": "int"}}, {"id": True})
    ok({"b": {"$$type": "bool"}}, {"b": False})
    ok({"o": {"$$type": "object"}}, {"o": {"anything": 1}})
    bad({"o": {"$$type": "object"}}, {})
    ok({"t": {"$$type": "timestamp"}}, {"t": Timestamp(1, 2)})
    ok(["a", {"$$type": "int"}, "1"], ["a", 0, "1"], root=False)
    with pytest.raises(UnsupportedByRunner):
        ok({"x": {"$$type": "nonsense"}}, {"x": 1})


def test_unset_or_matches():
    ok({"a": {"$$unsetOrMatches": 2}}, {})
    ok({"a": {"$$unsetOrMatches": 2}}, {"a": 2})
    bad({"a": {"$$unsetOrMatches": 2}}, {"a": 3})
    ok({"t": {"$$unsetOrMatches": {"$$exists": True}}}, {"t": {"_data": "82"}})
    ok({"t": {"$$unsetOrMatches": {"$$exists": True}}}, {})
    bad({"d": {"$$unsetOrMatches": {"x": 1}}}, {"d": {"x": 1, "y": 2}})  # not a root document
    # as a whole result it keeps the result root-level, and an operation returning nothing is unset
    ok({"$$unsetOrMatches": {"insertedId": {"$$unsetOrMatches": 1}}}, {"insertedId": 1, "extra": 0})
    ok({"$$unsetOrMatches": {"acknowledged": {"$$unsetOrMatches": False}}}, None)
    bad({"$$unsetOrMatches": {"insertedId": 1}}, {"insertedId": 2})


def test_lte_and_hex_bytes():
    ok({"n": {"$$lte": 5}}, {"n": 5.0})
    ok({"n": {"$$lte": 5}}, {"n": Int64(0)})
    bad({"n": {"$$lte": 5}}, {"n": 5.5})
    bad({"n": {"$$lte": 5}}, {"n": "4"})
    ok({"$$matchesHexBytes": "1122aB"}, b"\x11\x22\xab")
    ok({"$$matchesHexBytes": ""}, b"")
    bad({"$$matchesHexBytes": "1122"}, b"\x11\x23")
    with pytest.raises(UnsupportedByRunner):
        ok({"$$matchesHexBytes": "123"}, b"\x12")


def test_match_as_document_and_as_root():
    ok({"$$matchAsDocument": {"a": 1}}, '{"a": 1}')
    bad({"$$matchAsDocument": {"a": 1}}, '{"a": 1, "b": 2}')  # not root-level
    ok({"$$matchAsDocument": {"$$matchAsRoot": {"a": 1}}}, '{"a": 1, "b": 2}')
    bad({"x": {"a": 1}}, {"x": {"a": 1, "b": 2}})
    ok({"x": {"$$matchAsRoot": {"a": 1}}}, {"x": {"a": 1, "b": 2}})


def test_matches_entity_and_session_lsid():
    ents = EntityMap()
    ents.add("id0", 5)
    ok({"x": {"$$matchesEntity": "id0"}}, {"x": 5}, entities=ents)
    bad({"x": {"$$matchesEntity": "id0"}}, {"x": 6}, entities=ents)
    with pytest.raises(UnsupportedByRunner):
        ok({"x": {"$$matchesEntity": "nope"}}, {"x": 6}, entities=ents)
    with pytest.raises(UnsupportedByRunner):  # an entity that is not a session
        ok({"lsid": {"$$sessionLsid": "id0"}}, {"lsid": {}}, entities=ents)


def test_entity_names_are_unique():
    ents = EntityMap()
    ents.add("a", 1)
    with pytest.raises(UnsupportedByRunner):
        ents.add("a", 2)
    with pytest.raises(UnsupportedByRunner):
        ents.get("a", str)


def test_outcome_is_exact_but_key_order_free():
    assert exactly_equal([{"_id": 1, "x": {"a": 1, "b": 2}}], [{"x": {"b": 2, "a": 1}, "_id": 1}])
    assert not exactly_equal([{"_id": 1}], [{"_id": 1, "x": 1}])  # no extra fields
    assert not exactly_equal([{"_id": 1, "x": 1}], [{"_id": 1, "x": 1.0}])  # int is not double
    assert not exactly_equal([{"_id": 1, "x": Int64(1)}], [{"_id": 1, "x": 1}])  # long is not int
    assert exactly_equal([{"_id": 1, "x": Int64(1)}], [{"_id": 1, "x": Int64(1)}])
    assert not exactly_equal([{"_id": 1}], [])


# ----------------------------------------------------------------------------- requirements


def _dep(version=(8, 0, 4), topology="sharded", **kw) -> Deployment:
    return Deployment(version, topology, **kw)


def test_requirements():
    d = _dep()
    met = {"minServerVersion": "4.1.7", "topologies": ["sharded"], "serverless": "forbid"}
    assert requirement_problem(d, met) is None
    assert requirement_problem(d, {"maxServerVersion": "4.2.99"})[0] == "server version"
    assert requirement_problem(d, {"minServerVersion": "8.1.0"})[0] == "server version"
    assert requirement_problem(d, {"minServerVersion": "8.0.4", "maxServerVersion": "8.0.4"}) is None
    assert requirement_problem(d, {"topologies": ["replicaset"]})[0] == "topology"
    assert requirement_problem(d, {"topologies": ["sharded-replicaset"]}) is None
    assert requirement_problem(_dep(shards_are_replsets=False), {"topologies": ["sharded-replicaset"]})
    assert requirement_problem(d, {"serverless": "require"})[0] == "serverless"
    assert requirement_problem(d, {"auth": True})[0] == "auth"
    assert requirement_problem(_dep(auth=True), {"auth": True}) is None
    mechanisms = {"authenticationMechanisms": ["SCRAM-SHA-1", "SCRAM-SHA-256"]}
    assert requirement_problem(_dep(auth=True, parameter=lambda n: mechanisms.get(n, KeyError)),
                               {"auth": True, "authMechanism": "scram-sha-256"}) is None
    assert requirement_problem(_dep(auth=True), {"authMechanism": "MONGODB-OIDC"})[0] == "auth"
    assert requirement_problem(d, {"csfle": True})[0] == "csfle"
    assert requirement_problem(d, {"csfle": False}) is None
    check_requirements(d, [{"topologies": ["single"]}, {"minServerVersion": "3.6"}], "test")  # any one suffices
    with pytest.raises(RequirementsNotMet) as info:
        check_requirements(d, [{"topologies": ["single"]}, {"minServerVersion": "9.0"}], "test")
    assert info.value.kind == "server version / topology"
    with pytest.raises(UnsupportedByRunner):
        requirement_problem(d, {"somethingNew": 1})
    assert parse_version("4.9.0-alpha4-271-g7d5cf02") == (4, 9, 0) and parse_version("4") == (4, 0, 0)


def test_server_parameters_compare_flexibly_and_unknown_ones_do_not_match():
    params = {"enableTestCommands": True, "n": 1}
    d = _dep(parameter=lambda name: params.get(name, KeyError))
    assert requirement_problem(d, {"serverParameters": {"n": 1.0}}) is None
    assert requirement_problem(d, {"serverParameters": {"n": 2}})[0] == "serverParameters"
    assert requirement_problem(d, {"serverParameters": {"missing": 1}})[0] == "serverParameters"
    assert requirement_problem(d, {"serverParameters": {"enableTestCommands": 1}})  # bool is not a number


def test_schema_version():
    for v in ("1.0", "1.9", "1.21"):
        check_schema_version({"schemaVersion": v})
    for v in ("1.99", "2.0"):
        with pytest.raises(UnsupportedByRunner):
            check_schema_version({"schemaVersion": v})


def test_every_shared_file_has_a_supported_schema_version():
    from tests.spec.conftest import spec_root
    from tests.spec.runner import load_spec_file

    for path in spec_files(spec_root()):
        check_schema_version(load_spec_file(path))


# ----------------------------------------------------------------------------- results and errors


def test_results_as_documents():
    assert result_to_document(InsertOneResult(5, True)) == {"insertedId": 5}
    assert result_to_document(InsertOneResult(5, False)) == {"acknowledged": False}
    assert result_to_document(InsertManyResult([1, 2], True)) == {"insertedIds": {"0": 1, "1": 2}}
    assert result_to_document(UpdateResult({"n": 1, "nModified": 0, "upserted": 7}, True)) == {
        "matchedCount": 0, "modifiedCount": 0, "upsertedCount": 1, "upsertedId": 7}
    assert result_to_document(UpdateResult({"n": 2, "nModified": 1}, True)) == {
        "matchedCount": 2, "modifiedCount": 1, "upsertedCount": 0}
    bulk = BulkWriteResult({"nInserted": 1, "nUpserted": 1, "nMatched": 2, "nModified": 2, "nRemoved": 3,
                            "upserted": [{"index": 4, "_id": "u"}]}, True)
    assert result_to_document(bulk) == {"deletedCount": 3, "insertedCount": 1, "matchedCount": 2, "modifiedCount": 2,
                                        "upsertedCount": 1, "upsertedIds": {"4": "u"}}


def test_client_bulk_write_results():
    raw = {"nInserted": 1, "nUpserted": 0, "nMatched": 1, "nModified": 1, "nDeleted": 0,
           "insertResults": {0: InsertOneResult(1, True)},
           "updateResults": {1: UpdateResult({"n": 1, "nModified": 1}, True)}, "deleteResults": {}}
    summary = result_to_document(ClientBulkWriteResult(raw, True, False))
    assert "insertResults" not in summary and summary["insertedCount"] == 1
    verbose = result_to_document(ClientBulkWriteResult(raw, True, True))
    assert verbose["insertResults"] == {"0": {"insertedId": 1}}
    assert verbose["updateResults"] == {"1": {"matchedCount": 1, "modifiedCount": 1}}  # (no upsertedCount per op)
    assert verbose["deleteResults"] == {}


def _run_ctx():
    class Ctx:
        entities = EntityMap()
        matcher = Matcher(entities)
    return Ctx()


def test_expect_error():
    m = Matcher(EntityMap())
    server = OperationFailure("boom", 280, {"ok": 0, "code": 280, "codeName": "ChangeStreamFatalError",
                                            "errmsg": "boom", "errorLabels": ["NonResumableChangeStreamError"]})
    check_error(m, {"errorCode": 280, "errorCodeName": "changestreamfatalerror", "isClientError": False,
                    "errorLabelsContain": ["NonResumableChangeStreamError"],
                    "errorLabelsOmit": ["ResumableChangeStreamError"], "errorContains": "BOOM",
                    "errorResponse": {"code": 280}}, server, "op")
    for wrong in ({"errorCode": 43}, {"isClientError": True}, {"errorLabelsContain": ["X"]},
                  {"errorLabelsOmit": ["NonResumableChangeStreamError"]}, {"errorResponse": {"code": 1}},
                  {"errorContains": "nothing like it"}):
        with pytest.raises(AssertionError):
            check_error(m, wrong, server, "op")
    with pytest.raises(UnsupportedByRunner):
        check_error(m, {"errorSomething": 1}, server, "op")
    network = AutoReconnect("connection closed")
    check_error(m, {"isClientError": True, "isError": True}, network, "op")
    with pytest.raises(AssertionError):
        check_error(m, {"errorCode": 6}, network, "op")
    not_primary = NotPrimaryError("not primary", {"ok": 0, "code": 10107, "codeName": "NotWritablePrimary"})
    check_error(m, {"isClientError": False, "errorCode": 10107}, not_primary, "op")


def test_bulk_write_error_aggregates_its_errors():
    m = Matcher(EntityMap())
    details = {"writeErrors": [{"index": 1, "code": 11000, "errmsg": "E11000 duplicate key"}],
               "writeConcernErrors": [{"code": 64, "codeName": "WriteConcernTimeout", "errmsg": "waiting"}],
               "nInserted": 1, "nUpserted": 0, "nMatched": 0, "nModified": 0, "nRemoved": 0, "upserted": []}
    exc = BulkWriteError(details)
    check_error(m, {"isClientError": False, "errorCode": 11000, "errorCodeName": "DuplicateKey",
                    "errorContains": "duplicate key",
                    "expectResult": {"insertedCount": 1, "upsertedIds": {}}}, exc, "op")
    check_error(m, {"errorCodeName": "WriteConcernTimeout", "errorContains": "waiting"}, exc, "op")
    with pytest.raises(AssertionError):
        check_error(m, {"errorCodeName": "NotWritablePrimary"}, exc, "op")
    assert partial_result(exc)["insertedCount"] == 1


def test_client_bulk_write_exception():
    m = Matcher(EntityMap())
    top = OperationFailure("no", 8, {"ok": 0, "code": 8, "codeName": "UnknownError", "errmsg": "no",
                                     "errorLabels": ["RetryableWriteError"]})
    exc = ClientBulkWriteException({"error": top, "writeErrors": [{"idx": 1, "code": 11000, "errmsg": "dup"}],
                                    "writeConcernErrors": [{"code": 91, "errmsg": "shutdown"}],
                                    "anySuccessful": True, "nInserted": 1, "nUpserted": 0, "nMatched": 0,
                                    "nModified": 0, "nDeleted": 0, "insertResults": {0: InsertOneResult(1, True)},
                                    "updateResults": {}, "deleteResults": {}}, True)
    check_error(m, {"errorCode": 8, "errorLabelsContain": ["RetryableWriteError"], "isClientError": False,
                    "writeErrors": {"1": {"code": 11000}}, "writeConcernErrors": [{"code": 91}],
                    "expectResult": {"insertedCount": 1, "insertResults": {"0": {"insertedId": 1}}}}, exc, "op")
    for wrong in ({"writeErrors": {"0": {"code": 11000}}}, {"writeErrors": {}}, {"writeConcernErrors": []},
                  {"errorCode": 11000}):
        with pytest.raises(AssertionError):
            check_error(m, wrong, exc, "op")
    only_write_errors = ClientBulkWriteException({"error": None, "writeErrors": [{"idx": 0, "code": 2}],
                                                  "writeConcernErrors": []}, False)
    check_error(m, {"isClientError": False, "writeErrors": {"0": {"code": 2}}}, only_write_errors, "op")
    assert partial_result(only_write_errors) is None


# ----------------------------------------------------------------------------- events


def _recorded(ents: EntityMap, events: list[ObservedEvent], observe=("commandStartedEvent",)) -> EventRecorder:
    rec = EventRecorder(list(observe), [], False)
    rec.events = events
    ents.recorders["client0"] = rec
    return rec


def _started(name: str, command: dict) -> ObservedEvent:
    return ObservedEvent("commandStartedEvent", {"commandName": name, "databaseName": "db", "command": command,
                                                 "serviceId": None, "serverConnectionId": 3})


def test_expect_events():
    ents = EntityMap()
    m = Matcher(ents)
    agg = _started("aggregate", {"aggregate": "c", "pipeline": [], "$db": "db"})
    gm = _started("getMore", {"getMore": Int64(1), "collection": "c"})
    _recorded(ents, [agg, gm])
    want_agg = {"commandStartedEvent": {"command": {"aggregate": "c"}, "commandName": "aggregate",
                                        "databaseName": "db", "hasServerConnectionId": True, "hasServiceId": False}}
    check_events(m, {"client": "client0", "events": [want_agg], "ignoreExtraEvents": True}, ents.recorders)
    with pytest.raises(AssertionError):  # an extra event without ignoreExtraEvents
        check_events(m, {"client": "client0", "events": [want_agg]}, ents.recorders)
    with pytest.raises(AssertionError):  # too few events
        check_events(m, {"client": "client0", "events": [want_agg] * 3, "ignoreExtraEvents": True}, ents.recorders)
    with pytest.raises(AssertionError):  # wrong order
        check_events(m, {"client": "client0", "events": [
            {"commandStartedEvent": {"commandName": "getMore"}}, want_agg]}, ents.recorders)
    check_events(m, {"client": "client0", "events": [
        want_agg, {"commandStartedEvent": {"command": {"getMore": {"$$type": ["int", "long"]}}}}]}, ents.recorders)
    with pytest.raises(AssertionError):  # an event of another kind
        check_events(m, {"client": "client0", "events": [{"commandSucceededEvent": {}}], "ignoreExtraEvents": True},
                     ents.recorders)
    with pytest.raises(UnsupportedByRunner):  # a field the format does not define
        check_events(m, {"client": "client0", "events": [{"commandStartedEvent": {"nonsense": 1}}],
                         "ignoreExtraEvents": True}, ents.recorders)


def test_cmap_events_are_their_own_event_type_and_count_checked_out_connections():
    ents = EntityMap()
    m = Matcher(ents)
    rec = EventRecorder(["connectionCheckOutStartedEvent", "commandStartedEvent"], [], False)
    ents.recorders["client0"] = rec

    class E:  # a pool event (pymongo's events carry an address; the recorder reads no field of these)
        reason = "error"
    rec.connection_check_out_started(E())
    rec.connection_checked_out(E())
    rec.connection_checked_out(E())
    rec.connection_checked_in(E())
    rec.connection_created(E())  # not observed
    rec.events.append(_started("ping", {"ping": 1}))
    assert rec.checked_out == 1
    check_events(m, {"client": "client0", "eventType": "cmap", "events": [{"connectionCheckOutStartedEvent": {}}]},
                 ents.recorders)
    check_events(m, {"client": "client0", "events": [{"commandStartedEvent": {"commandName": "ping"}}]},
                 ents.recorders)
    with pytest.raises(UnsupportedByRunner):
        EventRecorder(["serverHeartbeatStartedEvent"], [], False)


def test_sensitive_and_ignored_commands_are_not_observed():
    rec = EventRecorder(["commandStartedEvent"], ["insert"], False)
    assert rec._ignored("saslStart", {"saslStart": 1})
    assert rec._ignored("hello", {})  # redacted: it carried speculativeAuthenticate
    assert not rec._ignored("hello", {"hello": 1})
    assert rec._ignored("configureFailPoint", {})
    assert rec._ignored("insert", {})
    assert not EventRecorder(["commandStartedEvent"], [], True)._ignored("saslStart", {"saslStart": 1})


# ----------------------------------------------------------------------------- entities and arguments


def test_use_multiple_mongoses():
    assert with_hosts("mongodb://a:1/?replicaSet=rs", ["b:2", "c:3"]) == "mongodb://b:2,c:3/?replicaSet=rs"
    assert with_hosts("mongodb://u:p@a:1,b:2/", ["a:1"]) == "mongodb://u:p@a:1/"
    config = ClientConfig(uri="mongodb://127.0.0.1:1/", topology="sharded", routers=["127.0.0.1:1"])
    with pytest.raises(MissingFeature):  # one router: a missing feature of the deployment, a failure
        create_client({"id": "c", "useMultipleMongoses": True}, config, EntityMap())
    with pytest.raises(UnsupportedByRunner):
        create_client({"id": "c", "storeEventsAsEntities": []}, config, EntityMap())


def test_common_options():
    assert write_concern({"w": "majority", "journal": True, "wtimeoutMS": 5}).document == {
        "w": "majority", "j": True, "wtimeout": 5}
    assert read_preference({"mode": "secondaryPreferred"}).mongos_mode == "secondaryPreferred"
    with pytest.raises(UnsupportedByRunner):
        write_concern({"fsync": True})


@UPDATE_ONE_SORT
def test_write_models():
    assert isinstance(write_model({"insertOne": {"document": {"_id": 1}}}, client_level=False), InsertOne)
    model = write_model({"updateMany": {"namespace": "db.c", "filter": {}, "update": {"$set": {"x": 1}},
                                        "upsert": True}}, client_level=True)
    assert isinstance(model, UpdateMany) and model._namespace == "db.c"
    assert isinstance(write_model({"replaceOne": {"filter": {}, "replacement": {}, "sort": {"a": 1}}},
                                  client_level=False), ReplaceOne)
    with pytest.raises(UnsupportedByRunner):
        write_model({"insertOne": {"document": {}, "bogus": 1}}, client_level=False)
    with pytest.raises(UnsupportedByRunner):
        write_model({"upsertOne": {}}, client_level=False)


def test_an_argument_left_untaken_is_refused_before_the_call():
    class Runner:
        class deployment:
            version = (8, 0, 4)

    class Ctx:
        runner = Runner
        entities = EntityMap()
    calls = []
    a = Args(Ctx, "insertOne", {"document": {}, "unknownOption": 1})
    a.required("document")
    with pytest.raises(UnsupportedByRunner):
        a.call(calls.append, 1)
    assert calls == []
    # rawData, an 8.2 option, is left out for an older server (what pymongo 4.20, without it, does)
    a = Args(Ctx, "find", {"filter": {}, "rawData": True})
    a.required("filter")
    a.call(calls.append, 1)
    assert calls == [1]
    Runner.deployment.version = (8, 2, 0)
    a = Args(Ctx, "find", {"filter": {}, "rawData": True})
    with pytest.raises(UnsupportedByRunner):
        a.call(calls.append, 1)
    with pytest.raises(UnsupportedByRunner):
        Args(Ctx, "x", {}).required("missing")


def test_every_operation_of_the_suite_is_implemented():
    """Each (entity kind, operation) and testRunner operation the shared files use has a handler."""
    from tests.spec.conftest import spec_root
    from tests.spec.runner import load_spec_file

    kinds = {"client": "client", "database": "database", "collection": "collection", "session": "session",
             "bucket": "bucket"}
    saved_kinds = {"createChangeStream": "changeStream", "createCommandCursor": "cursor",
                   "createCollection": "collection"}
    missing = set()
    for path in spec_files(spec_root()):
        spec = load_spec_file(path)
        base = {next(iter(e.values()))["id"]: next(iter(e)) for e in spec.get("createEntities", [])}
        for test in spec["tests"]:
            objects = dict(base)
            for op in _flat(test["operations"]):
                if op["object"] == "testRunner":
                    if op["name"] not in SPECIAL_OPERATIONS:
                        missing.add(("testRunner", op["name"]))
                    for e in op.get("arguments", {}).get("entities", []):
                        objects[next(iter(e.values()))["id"]] = kinds[next(iter(e))]
                    continue
                kind = objects.get(op["object"])
                if (kind, op["name"]) not in OPERATIONS:
                    missing.add((kind, op["name"]))
                if "saveResultAsEntity" in op and op["name"] in saved_kinds:
                    objects[op["saveResultAsEntity"]] = saved_kinds[op["name"]]
    assert missing == set()


def _flat(ops):
    for op in ops:
        yield op
        if op["name"] == "withTransaction":
            yield from _flat(op["arguments"]["callback"])


def test_operation_names_look_into_with_transaction_callbacks():
    ops = [{"name": "withTransaction", "arguments": {"callback": [{"name": "insertOne"}]}}, {"name": "failPoint"}]
    assert list(_operation_names(ops)) == ["withTransaction", "insertOne", "failPoint"]


def test_driver_type_errors_are_operation_errors_but_runner_ones_are_not():
    from pymongo.write_concern import WriteConcern

    with pytest.raises(TypeError) as driver:
        WriteConcern(w=1.5)  # pymongo refuses the value: a client error of the operation
    assert _raised_by_driver(driver.value)
    with pytest.raises(TypeError) as runner_side:
        WriteConcern(bogus=1)  # a keyword pymongo does not have: a bug of the runner
    assert not _raised_by_driver(runner_side.value)


def test_object_ids_and_binary_compare_by_value_and_subtype():
    oid = ObjectId()
    ok({"_id": oid}, {"_id": oid})
    ok({"b": Binary(b"\x01", 0)}, {"b": b"\x01"})
    bad({"b": Binary(b"\x01", 4)}, {"b": b"\x01"})


def test_needs_secondaries_finds_a_read_preference_that_selects_a_secondary():
    op = {"name": "find", "object": "c", "arguments": {"filter": {}}}
    with_rp = {"operations": [{**op, "arguments": {"readPreference": {"mode": "secondary"}}}]}
    assert needs_secondaries({}, with_rp)
    assert needs_secondaries({"createEntities": [{"client": {"uriOptions": {"readPreference": "nearest"}}}]},
                             {"operations": [op]})
    assert not needs_secondaries({}, {"operations": [{**op, "arguments": {"readPreference": {"mode": "primary"}}}]})
    assert not needs_secondaries({"createEntities": [{"client": {"id": "c0"}}]}, {"operations": [op]})
