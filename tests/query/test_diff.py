"""The $v:2 diff: computeOplogDiff, the applier, and updateDescription.

The updateDescription cases are the acceptance facts of the driver specification's
change-stream tests (tests/spec/data/change-streams/change-streams.json "Test array
truncation" and change-streams-disambiguatedPaths.json).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mongosim.shardsim.query.diff import apply_diff, binary_equal, compute_diff, doc_size, update_description, value_size
from mongosim.shardsim.query.update import apply_update
from tests.spec.conftest import spec_root

SPEC = spec_root() / "change-streams"


def _spec_test(file: str, description: str) -> dict:
    data = json.loads((SPEC / file).read_text())
    for t in data["tests"]:
        if t["description"] == description:
            return t
    raise KeyError(description)


def _run_spec_update(test: dict):
    ops = test["operations"]
    doc = next(o for o in ops if o["name"] == "insertOne")["arguments"]["document"]
    update = next(o for o in ops if o["name"] == "updateOne")["arguments"]["update"]
    expected = next(o for o in ops if o["name"] == "iterateUntilDocumentOrError")["expectResult"]["updateDescription"]
    show = any(o["name"] == "createChangeStream" and o["arguments"].get("showExpandedEvents") for o in ops)
    res = apply_update(doc, update)
    assert not res.is_replacement
    return update_description(res.diff, show_expanded=show), expected


def test_spec_array_truncation():
    got, expected = _run_spec_update(_spec_test("change-streams.json", "Test array truncation"))
    assert got["updatedFields"] == expected["updatedFields"] == {}
    assert got["removedFields"] == expected["removedFields"] == []
    assert got["truncatedArrays"] == expected["truncatedArrays"] == [{"field": "array", "newSize": 2}]


def test_spec_disambiguated_paths_numeric_field():
    got, expected = _run_spec_update(
        _spec_test("change-streams-disambiguatedPaths.json", "disambiguatedPaths is present on updateDescription when an ambiguous path is present")
    )
    assert got["disambiguatedPaths"] == expected["disambiguatedPaths"] == {"a.1": ["a", "1"]}
    assert got["updatedFields"] == {"a.1": 2}


def test_spec_disambiguated_paths_array_index_is_int():
    got, _expected = _run_spec_update(
        _spec_test("change-streams-disambiguatedPaths.json", "disambiguatedPaths returns array indices as integers")
    )
    assert got["disambiguatedPaths"] == {"a.0.1": ["a", 0, "1"]}
    assert type(got["disambiguatedPaths"]["a.0.1"][1]) is int


def test_spec_no_disambiguated_paths_without_show_expanded():
    got, _ = _run_spec_update(
        _spec_test("change-streams-disambiguatedPaths.json", "disambiguatedPaths is not present when showExpandedEvents is false/unset")
    )
    assert "disambiguatedPaths" not in got
    assert list(got) == ["updatedFields", "removedFields", "truncatedArrays"]


def test_update_description_order_and_sections():
    diff = {"d": {"x": False}, "u": {"a": 1}, "i": {"b": 2}, "sc": {"a": True, "l": 1, "u3": 9, "s0": {"u": {"y": 1}}}}
    ud = update_description(diff, show_expanded=True)
    assert list(ud) == ["updatedFields", "removedFields", "truncatedArrays", "disambiguatedPaths"]
    assert list(ud["updatedFields"].items()) == [("a", 1), ("b", 2), ("c.3", 9), ("c.0.y", 1)]
    assert ud["removedFields"] == ["x"]
    assert ud["truncatedArrays"] == [{"field": "c", "newSize": 1}]
    assert ud["disambiguatedPaths"] == {}


def test_dotted_field_names_are_ambiguous():
    ud = update_description({"sa": {"u": {"b.c": 1}}, "u": {"x.y": 2}, "s1": {"u": {"2": 3}}}, show_expanded=True)
    assert ud["updatedFields"] == {"x.y": 2, "a.b.c": 1, "1.2": 3}
    # a dotted name anywhere, a numeric name except at the top level
    assert ud["disambiguatedPaths"] == {"x.y": ["x.y"], "a.b.c": ["a", "b.c"], "1.2": ["1", "2"]}


def test_compute_diff_shapes():
    assert compute_diff({"a": 1, "b": 2}, {"a": 1, "c": 3}, ignore_size_limit=True) == {"d": {"b": False}, "i": {"c": 3}}
    assert compute_diff({"a": [1, 2, 3]}, {"a": [1, 5]}, ignore_size_limit=True) == {"sa": {"a": True, "l": 2, "u1": 5}}
    assert compute_diff({"a": {"b": 1, "c": 1}}, {"a": {"b": 2, "c": 1}}, ignore_size_limit=True) == {"sa": {"u": {"b": 2}}}
    # a field moved: only an insert (the applier drops the old position, appends at the end)
    moved = compute_diff({"a": 1, "b": 2}, {"b": 2, "a": 1}, ignore_size_limit=True)
    assert moved == {"i": {"a": 1}}
    assert list(apply_diff({"a": 1, "b": 2}, moved)) == ["b", "a"]
    # type change with equal value is an update
    assert compute_diff({"a": 1}, {"a": 1.0}, ignore_size_limit=True) == {"u": {"a": 1.0}}


def test_compute_diff_size_limit():
    assert compute_diff({"_id": 1, "a": 1}, {"_id": 1, "a": 2}) is None
    big = "x" * 200
    assert compute_diff({"_id": 1, "a": 1, "p": big}, {"_id": 1, "a": 2, "p": big}) == {"u": {"a": 2}}


def test_apply_diff_cases():
    assert apply_diff({"a": [1, 2, 3]}, {"sa": {"a": True, "l": 1}}) == {"a": [1]}
    assert apply_diff({"a": [1]}, {"sa": {"a": True, "u3": 4}}) == {"a": [1, None, None, 4]}
    assert apply_diff({"a": 1, "b": 2}, {"d": {"a": False}, "i": {"a": 3}}) == {"b": 2, "a": 3}
    assert list(apply_diff({"a": 1, "b": 2}, {"u": {"a": 5}})) == ["a", "b"]


def test_sizes_match_bson():
    import bson
    from bson import Int64, ObjectId

    doc = {"_id": ObjectId(), "a": [1, 2.5, "é", None, True, {"x": Int64(3)}], "n": 2**40}
    assert doc_size(doc) == len(bson.encode(doc))
    assert value_size("abc") == 8


def test_binary_equal():
    assert binary_equal({"a": 1}, {"a": 1})
    assert not binary_equal({"a": 1}, {"a": 1.0})
    assert not binary_equal({"a": 1, "b": 2}, {"b": 2, "a": 1})
    assert not binary_equal(True, 1)


def test_spec_update_event_description():
    test = _spec_test("change-streams.json", "Test insert, update, replace, and delete event types")
    ops = test["operations"]
    doc = next(o for o in ops if o["name"] == "insertOne")["arguments"]["document"]
    update = next(o for o in ops if o["name"] == "updateOne")["arguments"]["update"]
    expected = next(
        o for o in ops if isinstance(o.get("expectResult"), dict) and "updateDescription" in o["expectResult"]
    )["expectResult"]["updateDescription"]
    res = apply_update(doc, update)
    got = update_description(res.diff)
    assert got["updatedFields"] == expected["updatedFields"] and got["removedFields"] == expected["removedFields"]


def test_update_description_with_and_without_show_expanded_agree():
    from hypothesis import given

    from tests.query._settings import QUERY_SETTINGS
    from tests.query.strategies import documents

    from hypothesis import settings

    @settings(QUERY_SETTINGS, max_examples=min(QUERY_SETTINGS.max_examples, 60))
    @given(pre=documents(), post=documents())
    def check(pre, post):
        diff = compute_diff(pre, post, ignore_size_limit=True)
        plain = update_description(diff)
        full = update_description(diff, show_expanded=True)
        assert full.pop("disambiguatedPaths") is not None
        assert list(plain["updatedFields"].items()) == list(full["updatedFields"].items())
        assert plain == full

    check()
