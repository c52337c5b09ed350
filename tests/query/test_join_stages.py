"""$lookup, $graphLookup, $unionWith, $facet: examples of the server's documented behaviour, its parse
errors, and property tests of the hash join against the query it stands for."""

from __future__ import annotations

import pytest
from bson import Int64, Regex
from hypothesis import given
from hypothesis import strategies as st

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.document_path_support import visit_all_values_at_path
from mongosim.shardsim.query.document_sources.lookup_hash_table import LookupHashTable
from mongosim.shardsim.query.matcher import Matcher
from mongosim.shardsim.query.process_interface import InMemoryProcessInterface
from mongosim.shardsim.query.stages import run_pipeline
from tests.query._settings import QUERY_SETTINGS
from tests.query.strategies import documents, values

ORDERS = [{"_id": 1, "item": "almonds", "price": 12, "quantity": 2},
          {"_id": 2, "item": "pecans", "price": 20, "quantity": 1},
          {"_id": 3}]
INVENTORY = [{"_id": 1, "sku": "almonds", "description": "product 1", "instock": 120},
             {"_id": 2, "sku": "bread", "description": "product 2", "instock": 80},
             {"_id": 3, "sku": "cashews", "description": "product 3", "instock": 60},
             {"_id": 4, "sku": "pecans", "description": "product 4", "instock": 70},
             {"_id": 5, "sku": None, "description": "Incomplete"},
             {"_id": 6}]


def agg(docs, pipeline, colls=None, views=None, **kw):
    process = InMemoryProcessInterface({("db", k): v for k, v in (colls or {}).items()},
                                       {("db", k): v for k, v in (views or {}).items()}, **kw)
    return list(run_pipeline(docs, pipeline, variables={}, process=process, db="db"))


def err(docs, pipeline, colls=None):
    with pytest.raises(MongoError) as e:
        agg(docs, pipeline, colls)
    return e.value


def test_lookup_equality_docs_example():
    # the $lookup manual's first example: a missing local field matches null and missing foreign fields
    out = agg(ORDERS, [{"$lookup": {"from": "inventory", "localField": "item", "foreignField": "sku",
                                    "as": "inventory_docs"}}], {"inventory": INVENTORY})
    assert [[d["_id"] for d in o["inventory_docs"]] for o in out] == [[1], [4], [5, 6]]


def test_lookup_local_array_matches_each_element_and_foreign_arrays_elementwise():
    classes = [{"_id": 1, "title": "Reading", "enrollmentlist": ["giraffe2", "pandabear"]}]
    members = [{"_id": 1, "name": "pandabear"}, {"_id": 2, "name": ["x", "giraffe2"]}, {"_id": 3, "name": "z"}]
    out = agg(classes, [{"$lookup": {"from": "members", "localField": "enrollmentlist", "foreignField": "name",
                                     "as": "m"}}], {"members": members})
    assert [d["_id"] for d in out[0]["m"]] == [1, 2]
    # an empty local array has no values: it looks up null
    out = agg([{"_id": 1, "a": []}], [{"$lookup": {"from": "f", "localField": "a", "foreignField": "b", "as": "m"}}],
              {"f": [{"_id": 1, "b": None}, {"_id": 2, "b": 1}]})
    assert out[0]["m"] == [{"_id": 1, "b": None}]


def test_lookup_regex_only_meets_regex():
    foreign = [{"_id": 1, "v": "abc"}, {"_id": 2, "v": Regex("^a")}, {"_id": 3, "v": 1}]
    out = agg([{"_id": 1, "l": [Regex("^a"), 1]}],
              [{"$lookup": {"from": "f", "localField": "l", "foreignField": "v", "as": "m"}}], {"f": foreign})
    assert [d["_id"] for d in out[0]["m"]] == [2, 3]


def test_lookup_pipeline_with_let_and_the_combined_form():
    out = agg(ORDERS[:2], [{"$lookup": {"from": "inventory", "let": {"item": "$item", "q": "$quantity"},
                                        "pipeline": [{"$match": {"$expr": {"$eq": ["$sku", "$$item"]}}},
                                                     {"$project": {"_id": 0, "instock": 1, "ordered": "$$q"}}],
                                        "as": "stock"}}], {"inventory": INVENTORY})
    assert [o["stock"] for o in out] == [[{"instock": 120, "ordered": 2}], [{"instock": 70, "ordered": 1}]]
    out = agg(ORDERS[:2], [{"$lookup": {"from": "inventory", "localField": "item", "foreignField": "sku",
                                        "let": {"q": "$quantity"},
                                        "pipeline": [{"$project": {"_id": 0, "left": {"$subtract": ["$instock", "$$q"]}}}],
                                        "as": "stock"}}], {"inventory": INVENTORY})
    assert [o["stock"] for o in out] == [[{"left": 118}], [{"left": 69}]]


def test_lookup_uncorrelated_pipeline_and_documents_source_and_nested_lookup():
    out = agg(ORDERS[:2], [{"$lookup": {"from": "inventory", "pipeline": [{"$match": {"instock": {"$gt": 100}}},
                                                                           {"$project": {"sku": 1, "_id": 0}}],
                                        "as": "big"}}], {"inventory": INVENTORY})
    assert [o["big"] for o in out] == [[{"sku": "almonds"}]] * 2
    out = agg([{"_id": 1, "x": 5}], [{"$lookup": {"let": {"x": "$x"}, "pipeline": [{"$documents": [{"v": "$$x"}, {"v": 1}]}],
                                                  "as": "d"}}])
    assert out[0]["d"] == [{"v": 5}, {"v": 1}]
    # a nested $lookup sees the outer one's variables
    out = agg([{"_id": 1, "k": "pecans"}], [{"$lookup": {
        "from": "inventory", "let": {"k": "$k"}, "pipeline": [
            {"$match": {"$expr": {"$eq": ["$sku", "$$k"]}}},
            {"$lookup": {"from": "orders", "let": {"s": "$sku"}, "pipeline": [
                {"$match": {"$expr": {"$and": [{"$eq": ["$item", "$$s"]}, {"$eq": ["$item", "$$k"]}]}}},
                {"$project": {"_id": 1}}], "as": "o"}},
            {"$project": {"_id": 0, "o": 1}}], "as": "r"}}], {"inventory": INVENTORY, "orders": ORDERS})
    assert out[0]["r"] == [{"o": [{"_id": 2}]}]


def test_lookup_as_replaces_what_is_on_its_path():
    out = agg([{"_id": 1, "a": [1, 2], "k": 1}],
              [{"$lookup": {"from": "f", "localField": "k", "foreignField": "k", "as": "a.b"}}], {"f": [{"_id": 9, "k": 1}]})
    assert out == [{"_id": 1, "a": {"b": [{"_id": 9, "k": 1}]}, "k": 1}]


def test_lookup_on_a_view():
    out = agg([{"_id": 1, "k": 2}], [{"$lookup": {"from": "v", "localField": "k", "foreignField": "k", "as": "m"}}],
              {"base": [{"_id": 1, "k": 1}, {"_id": 2, "k": 2, "hidden": 1}]},
              views={"v": ("base", [{"$project": {"hidden": 0}}])})
    assert out[0]["m"] == [{"_id": 2, "k": 2}]


@pytest.mark.parametrize("spec, code, msg", [
    (1, 9, "the $lookup stage specification must be an object, but found int"),
    ({"from": 1, "as": "x"}, 9, "$lookup 'from' field must be a string, but found int"),
    ({"from": "f", "as": 1}, 9, "$lookup argument 'as' must be a string, found as: 1: int"),
    ({"from": "f", "localField": "a", "foreignField": "b"}, 9, "must specify 'as' field for a $lookup"),
    ({"from": "f", "localField": "a", "as": "x"}, 9,
     "$lookup requires either 'pipeline' or both 'localField' and 'foreignField' to be specified"),
    ({"from": "f", "localField": "a", "pipeline": [], "as": "x"}, 9,
     "$lookup requires both or neither of 'localField' and 'foreignField' to be specified"),
    ({"from": "f", "localField": "a", "foreignField": "b", "let": {"x": 1}, "as": "x"}, 9,
     "$lookup with a 'let' argument must also specify 'pipeline'"),
    ({"from": "f", "foo": "a", "as": "x"}, 9, "unknown argument to $lookup: foo"),
    ({"as": "x", "pipeline": [{"$match": {}}]}, 9,
     "$lookup stage without explicit collection must have a pipeline with $documents as first stage"),
    ({"from": "f", "as": "x", "pipeline": {}}, 14, "'pipeline' option must be specified as an array"),
    ({"from": "f", "as": "x", "pipeline": [{"$out": "y"}]}, 51047, "$out is not allowed within a $lookup's sub-pipeline"),
    ({"from": "f", "as": "x", "let": {"Bad": 1}, "pipeline": []}, 16867,
     "'Bad' starts with an invalid character for a user variable name"),
    ({"from": "f", "as": "x", "pipeline": [{"$match": {"$expr": "$$nope"}}]}, 17276, "Use of undefined variable: nope"),
    ({"from": "f", "as": "$x", "localField": "a", "foreignField": "b"}, 16410,
     "FieldPath field names may not start with '$'. Consider using $getField or $setField."),
])
def test_lookup_parse_errors(spec, code, msg):
    e = err([], [{"$lookup": spec}])
    assert (e.code, e.errmsg) == (code, msg)


def test_lookup_sharded_foreign_collection_in_a_transaction_is_refused():
    with pytest.raises(MongoError) as e:
        agg([{"_id": 1}], [{"$lookup": {"from": "f", "localField": "a", "foreignField": "b", "as": "x"}}],
            {"f": []}, sharded={("db", "f")}, in_transaction=True)
    assert e.value.code == 3904800


def test_union_with():
    out = agg([{"_id": 1}], [{"$unionWith": {"coll": "f", "pipeline": [{"$match": {"x": {"$gt": 1}}}]}},
                             {"$unionWith": "g"}], {"f": [{"_id": 2, "x": 1}, {"_id": 3, "x": 2}], "g": [{"_id": 4}]})
    assert out == [{"_id": 1}, {"_id": 3, "x": 2}, {"_id": 4}]
    assert agg([{"_id": 1}], [{"$unionWith": {"pipeline": [{"$documents": [{"a": 1}]}]}}]) == [{"_id": 1}, {"a": 1}]
    assert err([], [{"$unionWith": {"colll": "f"}}]).code == 40415
    assert err([], [{"$unionWith": {"coll": 1}}]).code == 14
    assert err([], [{"$unionWith": {"pipeline": []}}]).code == 9
    assert err([], [{"$unionWith": {"coll": "f", "pipeline": [{"$merge": "y"}]}}]).code == 31441


def test_facet():
    docs = [{"_id": i, "g": i % 2} for i in range(5)]
    out = agg(docs, [{"$facet": {"count": [{"$count": "n"}], "byG": [{"$sortByCount": "$g"}], "none": [{"$match": {"x": 1}}]}}])
    assert out == [{"count": [{"n": 5}], "byG": [{"_id": 0, "count": 3}, {"_id": 1, "count": 2}], "none": []}]
    assert agg([], [{"$facet": {"c": [{"$count": "n"}]}}]) == [{"c": []}]
    assert err([], [{"$facet": {}}]).code == 40169
    assert err([], [{"$facet": {"a": 1}}]).code == 40170
    assert err([], [{"$facet": {"a": [1]}}]).code == 40171
    assert err([], [{"$facet": {"$a": []}}]).code == 16410
    e = err([], [{"$facet": {"a": [{"$facet": {"b": []}}]}}])
    assert (e.code, e.errmsg) == (40600, "$facet is not allowed to be used within a $facet stage")
    assert err([], [{"$facet": {"a": [{"$out": "x"}]}}]).code == 40600


def test_sub_pipeline_depth_limit():
    pipeline: list = [{"$match": {}}]
    for _ in range(21):
        pipeline = [{"$unionWith": {"coll": "f", "pipeline": pipeline}}]
    assert err([], pipeline, {"f": []}).code == 232


def test_graph_lookup_docs_example():
    employees = [{"_id": 1, "name": "Dev"}, {"_id": 2, "name": "Eliot", "reportsTo": "Dev"},
                 {"_id": 3, "name": "Ron", "reportsTo": "Eliot"}, {"_id": 4, "name": "Andrew", "reportsTo": "Eliot"},
                 {"_id": 5, "name": "Asya", "reportsTo": "Ron"}, {"_id": 6, "name": "Dan", "reportsTo": "Andrew"}]
    spec = {"from": "employees", "startWith": "$reportsTo", "connectFromField": "reportsTo",
            "connectToField": "name", "as": "reportingHierarchy", "depthField": "d"}
    out = agg(employees, [{"$graphLookup": spec}], {"employees": employees})
    by_id = {o["_id"]: {(h["name"], h["d"]) for h in o["reportingHierarchy"]} for o in out}
    assert by_id[1] == set()
    assert by_id[5] == {("Ron", Int64(0)), ("Eliot", Int64(1)), ("Dev", Int64(2))}
    out = agg(employees[4:5], [{"$graphLookup": {**spec, "maxDepth": 1}}], {"employees": employees})
    assert {h["name"] for h in out[0]["reportingHierarchy"]} == {"Ron", "Eliot"}
    out = agg(employees[4:5], [{"$graphLookup": {**spec, "restrictSearchWithMatch": {"name": {"$ne": "Eliot"}}}}],
              {"employees": employees})
    assert {h["name"] for h in out[0]["reportingHierarchy"]} == {"Ron"}


def test_graph_lookup_cycles_null_and_errors():
    nodes = [{"_id": 1, "to": 2}, {"_id": 2, "to": 1}, {"_id": 3, "to": None}, {"_id": 4}]
    spec = {"from": "n", "startWith": "$to", "connectFromField": "to", "connectToField": "_id", "as": "r"}
    out = agg(nodes[:1], [{"$graphLookup": spec}], {"n": nodes})
    assert sorted(d["_id"] for d in out[0]["r"]) == [1, 2]
    # null reaches a null connectToField, never a missing one
    out = agg([{"_id": 0, "s": None}], [{"$graphLookup": {**spec, "startWith": "$s", "connectToField": "to"}}], {"n": nodes})
    assert [d["_id"] for d in out[0]["r"]] == [3]
    assert err([], [{"$graphLookup": {"from": "n", "as": "r"}}]).code == 40105
    assert err([], [{"$graphLookup": {**spec, "maxDepth": -1}}]).code == 40101
    assert err([], [{"$graphLookup": {**spec, "maxDepth": "a"}}]).code == 40100
    assert err([], [{"$graphLookup": {**spec, "bogus": 1}}]).code == 40104
    assert err([], [{"$graphLookup": {**spec, "restrictSearchWithMatch": 1}}]).code == 40185
    with pytest.raises(MongoError) as e:
        agg([{"_id": 0, "s": 1}], [{"$graphLookup": {**spec, "startWith": "$s", "connectToField": "k"}}], {"n": [{"k": 1}]})
    assert e.value.code == 40271


# --- properties -----------------------------------------------------------------------------------

join_values = st.one_of(st.integers(-2, 2), st.sampled_from([None, "x", 1.0, Int64(1)]), st.lists(st.integers(0, 2), max_size=2))


@QUERY_SETTINGS
@given(foreign=st.lists(documents(), max_size=6), values=st.lists(join_values, min_size=1, max_size=3),
       path=st.sampled_from(["a", "a.b", "b.a"]))
def test_hash_table_matches_exactly_what_the_query_matches(foreign, values, path):
    flt = {path: {"$in": values}} if len(values) > 1 else {path: {"$eq": values[0]}}
    expected = [d for d in foreign if Matcher(flt).matches(d)]
    assert LookupHashTable(foreign, path).matching(flt, values) == expected


@QUERY_SETTINGS
@given(local=st.lists(documents(), max_size=4), foreign=st.lists(documents(), max_size=5))
def test_equality_lookup_is_the_documented_query(local, foreign):
    """$lookup's equality form equals, per document, the $match the server builds from the local values."""
    out = agg(local, [{"$lookup": {"from": "f", "localField": "a", "foreignField": "b", "as": "j"}}], {"f": foreign})
    for doc, got in zip(local, out):
        vals = list(visit_all_values_at_path(doc, ("a",))) or [None]
        flt = {"b": {"$eq": vals[0]}} if len(vals) == 1 else (
            {"$or": [{"b": {"$eq": v}} for v in vals]} if any(isinstance(v, Regex) for v in vals) else {"b": {"$in": vals}})
        assert got["j"] == [f for f in foreign if Matcher(flt).matches(f)]
        assert {k: v for k, v in got.items() if k != "j"} == doc


@QUERY_SETTINGS
@given(edges=st.lists(st.tuples(st.integers(0, 6), st.lists(st.integers(0, 6), max_size=2)), max_size=8,
                      unique_by=lambda e: e[0]),
       start=st.integers(0, 6), max_depth=st.one_of(st.none(), st.integers(0, 3)))
def test_graph_lookup_is_a_breadth_first_search(edges, start, max_depth):
    nodes = [{"_id": i, "to": to} for i, to in edges]
    spec = {"from": "n", "startWith": "$s", "connectFromField": "to", "connectToField": "_id", "as": "r",
            "depthField": "d"}
    if max_depth is not None:
        spec["maxDepth"] = max_depth
    out = agg([{"s": start}], [{"$graphLookup": spec}], {"n": nodes})
    got = {d["_id"]: d["d"] for d in out[0]["r"]}
    # the reference: plain BFS levels
    adj = {i: to for i, to in edges}
    expected, frontier, depth = {}, [start], 0
    while frontier and (max_depth is None or depth <= max_depth):
        nxt = []
        for v in frontier:
            if v in adj and v not in expected:
                expected[v] = depth
                nxt.extend(adj[v])
        frontier, depth = nxt, depth + 1
    assert got == expected


@QUERY_SETTINGS
@given(docs=st.lists(st.fixed_dictionaries({"v": values(3)}), max_size=8), k=st.integers(1, 4))
def test_sort_then_limit_is_the_top_k_of_the_sort(docs, k):
    docs = [{"_id": i, **d} for i, d in enumerate(docs)]
    top = agg(docs, [{"$sort": {"v": 1}}, {"$limit": k}])
    full = agg(docs, [{"$sort": {"v": 1}}])
    assert top == full[:k]
