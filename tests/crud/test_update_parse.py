"""An update is parsed before any document is read: a bad update fails even when nothing matches."""

from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure, WriteError


@pytest.mark.parametrize("op", ["update_one", "update_many", "find_one_and_update"])
def test_unknown_modifier_on_an_empty_collection_is_failed_to_parse(client, op):
    coll = client.parse_db[f"empty_{op}"]
    with pytest.raises((WriteError, OperationFailure)) as e:
        getattr(coll, op)({"x": 1}, {"$frobnicate": {"a": 1}})
    assert e.value.code == 9
    assert "Unknown modifier: $frobnicate" in str(e.value)


def test_unused_array_filter_on_an_empty_collection(client):
    coll = client.parse_db.empty_af
    with pytest.raises(WriteError) as e:
        coll.update_one({"x": 1}, {"$set": {"a": 1}}, array_filters=[{"i": 0}])
    assert e.value.code == 9 and "The array filter for identifier 'i' was not used in the update" in str(e.value)


def test_bad_update_pipeline_stage_on_an_empty_collection(client):
    coll = client.parse_db.empty_pipe
    with pytest.raises(WriteError) as e:
        coll.update_one({"x": 1}, [{"$group": {"_id": 1}}])
    assert e.value.code == 72  # InvalidOptions


def test_a_valid_update_on_an_empty_collection_matches_nothing(client):
    res = client.parse_db.empty_ok.update_one({"x": 1}, {"$set": {"a": 1}})
    assert (res.matched_count, res.modified_count) == (0, 0)
