"""`_id` is never an array or a regex: InvalidIdField (53), as the server's storage validation says."""

from __future__ import annotations

import re

import pymongo
import pytest
from bson import Regex
from pymongo.errors import WriteError


@pytest.mark.parametrize(("bad", "kind"), [([1, 2], "array"), (re.compile("a"), "regex"), (Regex("^x", "i"), "regex")])
def test_an_array_or_regex_id_is_refused_everywhere_a_document_is_stored(client, bad, kind):
    coll = client.ids.c
    coll.insert_one({"_id": 1, "v": 0})
    writes = [
        lambda: coll.insert_one({"_id": bad}),
        lambda: coll.replace_one({"_id": 1}, {"_id": bad, "v": 1}),  # (also immutable: checked first)
        lambda: coll.update_one({"v": 5}, {"$set": {"w": 1}, "$setOnInsert": {"_id": bad}}, upsert=True),
    ]
    codes = []
    for write in writes:
        with pytest.raises(WriteError) as err:
            write()
        codes.append((err.value.code, str(err.value)))
    assert codes[0] == (53, f"The '_id' value cannot be of type {kind}, full error: "
                            f"{{'index': 0, 'code': 53, 'errmsg': \"The '_id' value cannot be of type {kind}\"}}")
    assert codes[1][0] == 66 and codes[2][0] == 53
    assert list(coll.find()) == [{"_id": 1, "v": 0}]  # nothing stored


@pytest.mark.parametrize("idv, bad", [({"$a": 1}, "$a"), ({"x": {"$b": 1}}, "$b"), ({"x": [{"$c": 1}]}, "$c"),
                                      ({"$ref": "c", "$id": 1, "$x": 2}, "$x")])
def test_dollar_prefixed_fields_in_id_are_refused(client, idv, bad):
    coll = client.idv.dollar
    with pytest.raises(pymongo.errors.WriteError) as e:
        coll.insert_one({"_id": idv})
    assert e.value.code == 52
    assert e.value.details["errmsg"] == f"_id fields may not contain '$'-prefixed fields: {bad} is not valid for storage."
    assert coll.count_documents({}) == 0


def test_dbref_and_dotted_ids_are_stored(client):
    coll = client.idv.dbref
    coll.insert_one({"_id": {"$ref": "c", "$id": 1, "$db": "d"}})
    coll.insert_one({"_id": {"a.b": 1}})
    assert coll.count_documents({}) == 2
