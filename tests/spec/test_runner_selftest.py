"""The runner's own rules (unified test format, "Evaluating Matches", expectedError,
expectedEventsForClient, runOnRequirement), checked without a server."""

from __future__ import annotations

import pytest
from bson import Int64
from pymongo.errors import AutoReconnect, NotPrimaryError, OperationFailure

from tests.spec.runner import (CaseRun, Deployment, EntityMap, EventRecorder, Matcher, ObservedEvent,
                               RequirementsNotMet, SpecRunner, UnsupportedByRunner, check_schema_version,
                               parse_version)


def ok(expected, actual, root=True):
    Matcher(EntityMap()).match(expected, actual, root=root)


def bad(expected, actual, root=True):
    with pytest.raises(AssertionError):
        Matcher(EntityMap()).match(expected, actual, root=root)


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


def test_matches_entity_and_session_lsid():
    ents = EntityMap()
    ents.add("id0", 5)
    Matcher(ents).match({"x": {"$$matchesEntity": "id0"}}, {"x": 5})
    with pytest.raises(AssertionError):
        Matcher(ents).match({"x": {"$$matchesEntity": "id0"}}, {"x": 6})
    with pytest.raises(UnsupportedByRunner):
        Matcher(ents).match({"x": {"$$matchesEntity": "nope"}}, {"x": 6})


def _runner(version=(8, 0, 4), topology="sharded") -> SpecRunner:
    runner = object.__new__(SpecRunner)
    runner.serverless = False
    runner.auth = False
    runner.deployment = Deployment(version, topology)
    return runner


def test_requirements():
    r = _runner()
    met = {"minServerVersion": "4.1.7", "topologies": ["sharded"], "serverless": "forbid"}
    assert r.requirement_problem(met) is None
    assert r.requirement_problem({"maxServerVersion": "4.2.99"})
    assert r.requirement_problem({"minServerVersion": "8.1.0"})
    assert r.requirement_problem({"minServerVersion": "8.0.4", "maxServerVersion": "8.0.4"}) is None
    assert r.requirement_problem({"topologies": ["replicaset"]})
    assert r.requirement_problem({"topologies": ["sharded-replicaset"]}) is None
    assert r.requirement_problem({"serverless": "require"})
    assert r.requirement_problem({"auth": True})
    r.check_requirements([{"topologies": ["single"]}, {"minServerVersion": "3.6"}], "test")  # any one suffices
    with pytest.raises(RequirementsNotMet):
        r.check_requirements([{"topologies": ["single"]}, {"minServerVersion": "9.0"}], "test")
    with pytest.raises(UnsupportedByRunner):
        r.requirement_problem({"somethingNew": 1})
    assert parse_version("4.9.0-alpha4-271-g7d5cf02") == (4, 9, 0) and parse_version("4") == (4, 0, 0)


def test_schema_version():
    check_schema_version({"schemaVersion": "1.9"})
    check_schema_version({"schemaVersion": "1.0"})
    for v in ("1.99", "2.0"):
        with pytest.raises(UnsupportedByRunner):
            check_schema_version({"schemaVersion": v})


def _run() -> CaseRun:
    return CaseRun(_runner(), {"tests": []}, {"operations": []})


def test_expect_error():
    run = _run()
    server = OperationFailure("boom", 280, {"ok": 0, "code": 280, "codeName": "ChangeStreamFatalError",
                                            "errmsg": "boom", "errorLabels": ["NonResumableChangeStreamError"]})
    run.check_error({"errorCode": 280, "errorCodeName": "changestreamfatalerror", "isClientError": False,
                     "errorLabelsContain": ["NonResumableChangeStreamError"],
                     "errorLabelsOmit": ["ResumableChangeStreamError"], "errorContains": "BOOM"}, server, "op")
    for wrong in ({"errorCode": 43}, {"isClientError": True}, {"errorLabelsContain": ["X"]},
                  {"errorLabelsOmit": ["NonResumableChangeStreamError"]}):
        with pytest.raises(AssertionError):
            run.check_error(wrong, server, "op")
    network = AutoReconnect("connection closed")
    run.check_error({"isClientError": True, "isError": True}, network, "op")
    with pytest.raises(AssertionError):
        run.check_error({"errorCode": 6}, network, "op")
    not_primary = NotPrimaryError("not primary", {"ok": 0, "code": 10107, "codeName": "NotWritablePrimary"})
    run.check_error({"isClientError": False, "errorCode": 10107}, not_primary, "op")


def _recorded(run: CaseRun, events: list[ObservedEvent]) -> None:
    rec = EventRecorder(["commandStartedEvent"], [], False)
    rec.events = events
    run.entities.recorders["client0"] = rec


def test_expect_events():
    agg = ObservedEvent("commandStartedEvent", "aggregate", "db",
                        command={"aggregate": "c", "pipeline": [], "$db": "db"})
    gm = ObservedEvent("commandStartedEvent", "getMore", "db", command={"getMore": Int64(1), "collection": "c"})
    run = _run()
    _recorded(run, [agg, gm])
    want_agg = {"commandStartedEvent": {"command": {"aggregate": "c"}, "commandName": "aggregate",
                                        "databaseName": "db"}}
    run.check_events({"client": "client0", "events": [want_agg], "ignoreExtraEvents": True})
    with pytest.raises(AssertionError):  # an extra event without ignoreExtraEvents
        run.check_events({"client": "client0", "events": [want_agg]})
    with pytest.raises(AssertionError):  # too few events
        run.check_events({"client": "client0", "events": [want_agg] * 3, "ignoreExtraEvents": True})
    with pytest.raises(AssertionError):  # wrong order
        run.check_events({"client": "client0", "events": [
            {"commandStartedEvent": {"commandName": "getMore"}}, want_agg]})
    run.check_events({"client": "client0", "events": [
        want_agg, {"commandStartedEvent": {"command": {"getMore": {"$$type": ["int", "long"]}}}}]})
    with pytest.raises(AssertionError):  # an event of another kind
        run.check_events({"client": "client0", "events": [{"commandSucceededEvent": {}}], "ignoreExtraEvents": True})
