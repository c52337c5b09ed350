"""Index keys and the DuplicateKey error."""

from __future__ import annotations

import pytest
from bson import Int64

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.index_keys import UNDEFINED, duplicate_key_error, index_key_hashes, index_keys, index_name


def test_multikey_and_missing():
    assert index_keys({"a": [1, 2, 1]}, {"a": 1}) == [(1,), (2,)]
    assert index_keys({}, {"a": 1}) == [(None,)]
    assert index_keys({"a": []}, {"a": 1}) == [(UNDEFINED,)]
    assert index_keys({"a": [{"b": 1}, {"b": 2}], "c": 3}, {"a.b": 1, "c": -1}) == [(1, 3), (2, 3)]
    assert index_key_hashes({"a": 1}, {"a": 1}) == index_key_hashes({"a": 1.0}, {"a": 1}) == index_key_hashes({"a": Int64(1)}, {"a": 1})


def test_parallel_arrays():
    with pytest.raises(MongoError) as e:
        index_keys({"a": [1], "b": [2]}, {"a": 1, "b": 1})
    assert e.value.code == 171


def test_duplicate_key_error_shape():
    err = duplicate_key_error("db.coll", "name_1", {"name": 1}, ("x",))
    assert err.code == 11000 and err.code_name == "DuplicateKey"
    assert err.errmsg == 'E11000 duplicate key error collection: db.coll index: name_1 dup key: { name: "x" }'
    assert err.extra == {"keyPattern": {"name": 1}, "keyValue": {"name": "x"}}
    reply = err.to_reply()
    assert reply["keyPattern"] == {"name": 1} and reply["keyValue"] == {"name": "x"}
    err = duplicate_key_error("db.coll", "_id_", {"_id": 1}, (1,))
    assert err.errmsg == "E11000 duplicate key error collection: db.coll index: _id_ dup key: { _id: 1 }"
    assert index_name({"a": 1, "b": -1}) == "a_1_b_-1"
