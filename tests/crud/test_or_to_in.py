"""The $or -> $in rewrite (shardsim/query/or_to_in.py), through pymongo, both topologies.

The pairs are those of the server's jstests/core/query/or/or_to_in.js (8.0):
the first query of a pair is an $or the optimizer rewrites, the second the
equivalent query written with $in.  Each pair must have the same
`parsedQuery`, the same winning plan and the same answer (also under a
collation), with no index, with one, and with three (several candidate
plans); and the negative cases keep their $or.  Beside them, a property test:
the rewritten filter matches exactly the documents the original does.
"""

from __future__ import annotations

import math
import re

import bson
import pytest
from bson import Regex
from hypothesis import given, settings
from hypothesis import strategies as st

from mongosim.shardsim.query.matcher import Matcher
from mongosim.shardsim.query.or_to_in import rewrite
from tests.crud.test_indexes import plan_of

NAN = float("nan")

DATA = [
    {"_id": 0, "f1": 3, "f2": 7},
    {"_id": 1, "f1": 1, "f2": [32, 42, 52, [11]]},
    {"_id": 2, "f1": 2, "f2": 9},
    {"_id": 3, "f1": 5, "f2": 42},
    {"_id": 4, "f1": 1, "f2": [23, 42, 13]},
    {"_id": 5, "f1": "xz", "f2": 13},
    {"_id": 6, "f1": "ab", "f2": 15},
    {"_id": 7, "f1": None, "f2": None},
    {"_id": 8},
    {"_id": 9, "f1": NAN, "f2": NAN},
    {"_id": 10, "f1": 1, "f2": [32, 52]},
    {"_id": 11, "f1": 1, "f2": [42, [13, 11]]},
]

X, AB, C = re.compile("^x"), re.compile("ab"), re.compile("c")

PAIRS = [
    ({"$or": [{"f1": 5}, {"f1": 3}, {"f1": 7}]}, {"f1": {"$in": [7, 3, 5]}}),
    ({"$or": [{"f1": {"$eq": 5}}, {"f1": {"$eq": 3}}, {"f1": {"$eq": 7}}]}, {"f1": {"$in": [7, 3, 5]}}),
    ({"$or": [{"f1": 42}, {"f1": NAN}, {"f1": 99}]}, {"f1": {"$in": [42, NAN, 99]}}),
    ({"$or": [{"f1": X}, {"f1": "ab"}]}, {"f1": {"$in": [X, "ab"]}}),
    ({"$or": [{"f1": X}, {"f1": "ab"}]}, {"$or": [{"f1": "ab"}, {"f1": X}]}),
    ({"$or": [{"f1": X}, {"f1": "^a"}]}, {"f1": {"$in": [X, "^a"]}}),
    ({"$or": [{"f1": 42}, {"f1": None}, {"f1": 99}]}, {"f1": {"$in": [42, 99, None]}}),
    ({"$or": [{"f1": 1}, {"f2": 9}, {"f1": 99}]}, {"$or": [{"f2": 9}, {"f1": {"$in": [1, 99]}}]}),
    ({"$or": [{"f1": {"$regex": X}}, {"f1": {"$regex": AB}}]}, {"f1": {"$in": [X, AB]}}),
    ({"$or": [{"f1": {"$regex": "^x", "$options": "i"}}, {"f1": "q"}]}, {"f1": {"$in": [Regex("^x", "i"), "q"]}}),
    ({"$and": [{"$or": [{"f1": 7}, {"f1": 3}, {"f1": 5}]}, {"$or": [{"f1": 1}, {"f1": 2}, {"f1": 3}]}]},
     {"$and": [{"f1": {"$in": [7, 3, 5]}}, {"f1": {"$in": [1, 2, 3]}}]}),
    ({"$or": [{"$or": [{"f1": 7}, {"f1": 3}, {"f1": 5}]}, {"$or": [{"f1": 1}, {"f1": 2}, {"f1": 3}]}]},
     {"$or": [{"f1": {"$in": [7, 3, 5]}}, {"f1": {"$in": [1, 2, 3]}}]}),
    ({"$or": [{"$and": [{"f1": 7}, {"f2": 7}, {"f1": 5}]}, {"$or": [{"f1": 1}, {"f1": 2}, {"f1": 3}]}]},
     {"$or": [{"$and": [{"f1": 7}, {"f2": 7}, {"f1": 5}]}, {"f1": {"$in": [1, 2, 3]}}]}),
    ({"$or": [{"f2": [32, 52]}, {"f2": [42, [13, 11]]}]}, {"f2": {"$in": [[32, 52], [42, [13, 11]]]}}),
    ({"$or": [{"f2": 52}, {"f2": 13}]}, {"f2": {"$in": [52, 13]}}),
    ({"$or": [{"f2": [11]}, {"f2": [23]}]}, {"f2": {"$in": [[11], [23]]}}),
    ({"$or": [{"f1": 42}, {"f1": None}]}, {"f1": {"$in": [42, None]}}),
    ({"$or": [{"f1": "a"}, {"f1": "b"}, {"f1": C}]}, {"f1": {"$in": ["a", "b", C]}}),
    ({"$or": [{"f1": "a"}, {"f1": "b"}, {"f1": C}]}, {"$or": [{"f1": C}, {"f1": "a"}, {"f1": "b"}]}),
    ({"$or": [{"f2": 9}, {"f1": 1}, {"f1": 99}]}, {"$or": [{"f2": 9}, {"f1": {"$in": [1, 99]}}]}),
    ({"$or": [{"f1": 1}, {"f1": 2}, {"f2": 3}, {"f2": 4}]}, {"$or": [{"f1": {"$in": [1, 2]}}, {"f2": {"$in": [3, 4]}}]}),
    ({"$or": [{"f1": 1}, {"f2": 3}, {"f1": 2}, {"f2": 4}]}, {"$or": [{"f1": {"$in": [1, 2]}}, {"f2": {"$in": [3, 4]}}]}),
    ({"$or": [{"f1": 1}, {"f1": 2}, {"f2": 3}, {"f2": 4}, {"f3": 5}]},
     {"$or": [{"f1": {"$in": [1, 2]}}, {"f2": {"$in": [3, 4]}}, {"f3": 5}]}),
    ({"$or": [{"f1": 1}, {"f1": 1}]}, {"f1": 1}),
    # beside another predicate: the $in joins the conjunction
    ({"f2": {"$gt": 8}, "$or": [{"f1": 2}, {"f1": 5}]}, {"f2": {"$gt": 8}, "f1": {"$in": [2, 5]}}),
]

NEGATIVE = [
    {"$or": [{"f1": {"$eq": X}}, {"f1": {"$eq": AB}}]},  # a regex *value*: $in would apply it as a pattern
    {"$or": [{"f1": {"$lt": 2}}, {"f1": {"$gt": 3}}]},
]


def _parsed(explain: dict) -> dict:
    qp = explain["queryPlanner"]
    wp = qp["winningPlan"]
    return wp["shards"][0]["parsedQuery"] if "shards" in wp and "parsedQuery" in wp["shards"][0] else qp[
        "parsedQuery"]


def _bytes(doc: dict) -> bytes:
    """A document's BSON: equal bytes, equal documents (field order and NaN included)."""
    return bson.encode({"v": doc})


def _without_cached(plan: dict) -> dict:
    return {k: v for k, v in plan.items() if k != "isCached"}


def _ids(cursor) -> list:
    return sorted(d["_id"] for d in cursor)


def _check_pairs(coll) -> None:
    for original, written in PAIRS:
        a, b = coll.find(original).explain(), coll.find(written).explain()
        assert _bytes(_parsed(a)) == _bytes(_parsed(b)), (original, _parsed(a), _parsed(b))
        assert _bytes(_without_cached(plan_of(a))) == _bytes(_without_cached(plan_of(b))), original
        assert _ids(coll.find(original)) == _ids(coll.find(written)), original
        en = {"locale": "en_US"}
        assert _ids(coll.find(original).sort("f1", 1).collation(en)) == \
            _ids(coll.find(written).sort("f1", 1).collation(en)), original
        assert _bytes(_parsed(coll.find(original).sort("f1", 1).collation(en).explain())) == \
            _bytes(_parsed(coll.find(written).sort("f1", 1).collation(en).explain()))


@pytest.fixture
def coll(client):
    db = client.or_to_in
    client.drop_database(db.name)
    db.c.insert_many(DATA)
    return db.c


def test_pairs_plan_and_answer_alike_with_no_one_and_three_indexes(coll):
    _check_pairs(coll)
    coll.create_index("f1")
    _check_pairs(coll)
    coll.create_index("f2")
    coll.create_index([("f1", -1), ("f2", 1)])
    _check_pairs(coll)


@pytest.mark.parametrize("locale", ["en_US", "de"])
def test_pairs_on_a_collection_with_a_default_collation(client, locale):
    db = client.or_to_in_collated
    client.drop_database(db.name)
    db.create_collection("c", collation={"locale": locale})
    db.c.insert_many(DATA)
    _check_pairs(db.c)


@pytest.mark.parametrize("query", NEGATIVE)
def test_these_stay_an_or(coll, query):
    parsed = _parsed(coll.find(query).explain())
    assert list(parsed) == ["$or"]
    assert all("$in" not in next(iter(child.values())) for child in parsed["$or"])


def test_the_rewrite_is_what_explain_shows_and_plans(coll):
    coll.create_index("f1")
    explain = coll.find({"$or": [{"f1": 5}, {"f1": 3}, {"f1": 5.0}]}).explain()
    assert _parsed(explain) == {"f1": {"$in": [3, 5]}}  # sorted, each value once
    plan = plan_of(explain)
    assert [plan["stage"], plan["inputStage"]["stage"]] == ["FETCH", "IXSCAN"]  # no SUBPLAN, one scan
    assert plan["inputStage"]["indexBounds"] == {"f1": ["[3, 3]", "[5, 5]"]}


def test_negative_operators_are_shown_as_the_server_serializes_them(coll):
    assert _parsed(coll.find({"f1": {"$ne": 3}}).explain()) == {"f1": {"$not": {"$eq": 3}}}
    assert _parsed(coll.find({"f1": {"$nin": [3, 1, 3]}}).explain()) == {"f1": {"$not": {"$in": [1, 3]}}}
    assert _parsed(coll.find({"f1": {"$exists": 0}}).explain()) == {"f1": {"$not": {"$exists": True}}}
    assert _parsed(coll.find({"f1": {"$exists": 1}}).explain()) == {"f1": {"$exists": True}}


# -- the rewrite keeps the answer -------------------------------------------------------------------

_values = st.one_of(st.integers(-2, 3), st.sampled_from([None, "a", "B", "ab", 2.0, NAN]),
                    st.lists(st.integers(0, 3), max_size=2))
_docs = st.fixed_dictionaries({}, optional={"a": _values, "b": _values, "c": st.fixed_dictionaries({}, optional={
    "d": _values})})
_paths = st.sampled_from(["a", "b", "c.d", "a.0"])
_patterns = st.sampled_from([re.compile("^a"), re.compile("b", re.I), Regex("B", "i"), Regex("^$")])


@st.composite
def _clauses(draw, depth: int = 0):
    path = draw(_paths)
    kind = draw(st.sampled_from(["eq", "$eq", "regex", "$regex", "$eq-regex", "$in", "$gt", "pair", "or"]
                                if depth < 2 else ["eq", "$eq", "regex", "$gt"]))
    if kind == "eq":
        return {path: draw(_values)}
    if kind == "$eq":
        return {path: {"$eq": draw(_values)}}
    if kind == "regex":
        return {path: draw(_patterns)}
    if kind == "$regex":
        return {path: {"$regex": draw(st.sampled_from(["^a", "b", "^$"])), "$options": draw(st.sampled_from(["", "i"]))}}
    if kind == "$eq-regex":
        return {path: {"$eq": draw(_patterns)}}
    if kind == "$in":
        return {path: {"$in": draw(st.lists(_values, max_size=3))}}
    if kind == "$gt":
        return {path: {"$gt": draw(_values)}}
    if kind == "pair":
        return {path: draw(_values), draw(_paths): draw(_values)}
    return {draw(st.sampled_from(["$or", "$and", "$nor"])): draw(st.lists(_clauses(depth + 1), min_size=1,
                                                                            max_size=4))}


@settings(max_examples=300, deadline=None)
@given(flt=_clauses(), docs=st.lists(_docs, max_size=12))
def test_the_rewritten_filter_matches_the_same_documents(flt, docs):
    rewritten = rewrite(flt)
    before, after = Matcher(flt), Matcher(rewritten)
    for doc in docs:
        assert before.matches(doc) == after.matches(doc), (flt, rewritten, doc)
    assert repr(rewrite(rewritten)) == repr(rewritten)  # one pass (bottom-up) leaves nothing to merge


def test_a_value_given_twice_is_one_equality_nan_too():
    r = rewrite({"$or": [{"a": NAN}, {"a": NAN}]})
    assert list(r) == ["a"] and list(r["a"]) == ["$eq"] and math.isnan(r["a"]["$eq"])
    assert rewrite({"$or": [{"a": 1}, {"a": 1.0}, {"b": 2}]}) == {"$or": [{"b": 2}, {"a": {"$eq": 1}}]}


def test_parsed_query_siblings_are_in_sort_tree_order(coll):
    """The server sorts the parsed query (canonical_query.cpp's sortTree): by match type (AND, OR, ...,
    EQ, LTE, LT, GT, GTE, REGEX, MOD, EXISTS, IN, ..., NOT, NOR, ...), then path; a NOT by its child."""
    q = {"z": 1, "m": {"$gt": 0}, "a": 1, "$or": [{"q": 1}, {"p": {"$lt": 1}}], "n": {"$ne": 2}, "k": {"$in": [2, 1]}}
    assert _parsed(coll.find(q).explain()) == {"$and": [
        {"$or": [{"q": {"$eq": 1}}, {"p": {"$lt": 1}}]}, {"a": {"$eq": 1}}, {"z": {"$eq": 1}}, {"m": {"$gt": 0}},
        {"k": {"$in": [1, 2]}}, {"n": {"$not": {"$eq": 2}}}]}
    assert _parsed(coll.find({"b": {"$ne": 1}, "a": {"$exists": False}, "c": {"$all": [3]}}).explain()) == {
        "$and": [{"c": {"$eq": 3}}, {"b": {"$not": {"$eq": 1}}}, {"a": {"$not": {"$exists": True}}}]}


def test_an_expr_comparison_bounds_an_index_and_still_decides(coll):
    """RewriteExpr: {$expr: {$eq: ["$f1", 3]}} plans as {f1: {$_internalExprEq: 3}} beside the $expr (an
    IXSCAN on f1), and the $expr still decides (an array holding 3 is not equal to 3); not on a multikey
    path, and not for $lt with the field first (a missing field is less than anything to $expr)."""
    coll.create_index("f1")
    coll.create_index("f2")
    q = {"$expr": {"$eq": ["$f1", 3]}}
    explain = coll.find(q).explain()
    assert _parsed(explain) == {"$and": [{"$expr": {"$eq": ["$f1", 3]}}, {"f1": {"$_internalExprEq": 3}}]}
    scan = plan_of(explain)["inputStage"]
    assert scan["stage"] == "IXSCAN" and scan["indexBounds"] == {"f1": ["[3, 3]"]}
    assert [d["_id"] for d in coll.find(q)] == [0]
    q = {"$expr": {"$lt": [40, "$f2"]}}  # f2 > 40, f2 multikey: no bounds from the rewrite
    assert plan_of(coll.find(q).explain())["stage"] == "COLLSCAN"
    assert sorted(d["_id"] for d in coll.find(q)) == sorted(d["_id"] for d in coll.find(q).hint([("$natural", 1)]))
    q = {"$expr": {"$lt": ["$f1", 2]}}
    assert plan_of(coll.find(q).explain())["stage"] == "COLLSCAN"
    assert 8 in [d["_id"] for d in coll.find(q)]  # (the document without f1)


def test_regex_and_type_are_shown_as_the_server_serializes_them(coll):
    """RegexMatchExpression: `$regex` and `$options` as strings; MatcherTypeSet: "number" first, then the
    type codes in order."""
    assert _parsed(coll.find({"f1": Regex("^x", "i")}).explain()) == {"f1": {"$regex": "^x", "$options": "i"}}
    assert _parsed(coll.find({"f1": {"$regex": "b"}}).explain()) == {"f1": {"$regex": "b"}}
    assert _parsed(coll.find({"f1": {"$type": ["string", "number", 16]}}).explain()) == {
        "f1": {"$type": ["number", 2, 16]}}
    assert _parsed(coll.find({"f1": {"$all": [Regex("^a", "i")]}}).explain()) == {"f1": {"$regex": "^a", "$options": "i"}}
