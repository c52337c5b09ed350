"""A `bson.DBRef` in a document is walked as the embedded document {$ref, $id[, $db], extras}
by the matcher, by expression field paths and by `$lookup`'s path reader."""

from __future__ import annotations

import pytest
from bson import DBRef
from hypothesis import given
from hypothesis import strategies as st

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.document_path_support import visit_all_values_at_path
from mongosim.shardsim.query.expressions import compile_expression
from mongosim.shardsim.query.matcher import Matcher
from tests.query._settings import QUERY_SETTINGS

DOC = {"v": DBRef("c", 7, "d", extra=1), "vs": [DBRef("c", 1), {"$ref": "c", "$id": 2}, DBRef("e", 3)]}


@pytest.mark.parametrize("flt, expected", [
    ({"v.$id": 7}, True), ({"v.$ref": "c"}, True), ({"v.$db": "d"}, True), ({"v.extra": 1}, True),
    ({"v.$id": 8}, False), ({"vs.$id": 3}, True), ({"vs.$ref": "e"}, True), ({"vs.0.$id": 1}, True),
    ({"vs.2.$id": 1}, False), ({"v.$id.x": 7}, False),
])
def test_matcher_walks_into_a_dbref(flt, expected):
    assert Matcher(flt).matches(DOC) is expected


def test_expression_paths_and_lookup_values():
    assert compile_expression("$v.$id")(DOC) == 7
    assert compile_expression("$v.$db")(DOC) == "d"
    assert compile_expression("$vs.$id")(DOC) == [1, 2, 3]
    assert list(visit_all_values_at_path(DOC, ("vs", "$id"))) == [1, 2, 3]
    assert list(visit_all_values_at_path(DOC, ("v", "$ref"))) == ["c"]
    with pytest.raises(MongoError) as e:
        compile_expression("$v.$other")
    assert e.value.code == 16410


@QUERY_SETTINGS
@given(ref=st.text(min_size=1, max_size=3), id_=st.integers() | st.text(max_size=3), db=st.none() | st.text(max_size=3))
def test_a_dbref_answers_as_its_embedded_document(ref, id_, db):
    r = DBRef(ref, id_, db)
    emb = {"$ref": ref, "$id": id_, **({"$db": db} if db is not None else {})}
    for path in ("$id", "$ref", "$db"):
        assert Matcher({f"a.{path}": emb.get(path)}).matches({"a": r}) == Matcher({f"a.{path}": emb.get(path)}).matches({"a": emb})
        assert compile_expression(f"$a.{path}")({"a": r}) == compile_expression(f"$a.{path}")({"a": emb})
