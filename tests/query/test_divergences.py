"""Where mongomock (the test oracle) differs from the real server, we follow the server.

Each test shows mongomock's answer and ours, and names the server behaviour it
follows.  If mongomock ever fixes one of these, its assertion fails and the case
can move back into the differential tests.
"""

from __future__ import annotations

import copy

import mongomock
import pytest
from mongomock.filtering import filter_applies

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.matcher import Matcher
from mongosim.shardsim.query.update import apply_update

_COLL = mongomock.MongoClient().db.divergences


def mongomock_update(doc, update):
    _COLL.delete_many({})
    _COLL.insert_one(copy.deepcopy(doc))
    _COLL.update_one({"_id": doc["_id"]}, update)
    return _COLL.find_one({"_id": doc["_id"]})


# --- queries (src/mongo/db/matcher/path.cpp, expression_leaf.cpp) -----------------


def test_path_through_a_scalar_is_missing():
    # The server's element iterator yields EOO (missing) when a path runs into a
    # scalar, and {$eq: null} matches missing ("Query for Null or Missing Fields").
    flt, doc = {"a.b": None}, {"a": 5}
    assert filter_applies(flt, doc) is False
    assert Matcher(flt).matches(doc) is True


def test_size_only_matches_arrays():
    # SizeMatchExpression::matchesSingleElement: `if (e.type() != Array) return false`.
    flt, doc = {"a": {"$size": 1}}, {"a": 2}
    assert filter_applies(flt, doc) is True
    assert Matcher(flt).matches(doc) is False


def test_empty_object_is_an_equality():
    # {b: {}} is not an operator document (its first field is not $-prefixed):
    # equality with the empty document, which a missing field does not satisfy.
    assert filter_applies({"b": {}}, {}) is True
    assert Matcher({"b": {}}).matches({}) is False
    assert Matcher({"b": {}}).matches({"b": {}}) is True


def test_bool_is_not_a_number():
    # Canonical type order puts bool after ObjectId, apart from numbers.
    assert filter_applies({"a": 0}, {"a": False}) is True
    assert Matcher({"a": 0}).matches({"a": False}) is False


def test_lte_null_matches_missing():
    # ComparisonMatchExpressionBase: null and missing compare equal for $eq, $lte, $gte.
    assert filter_applies({"a": {"$lte": None}}, {}) is False
    assert Matcher({"a": {"$lte": None}}).matches({}) is True


def test_empty_array_in_the_middle_of_a_path_yields_nothing():
    # Nothing is iterated, so {$not: {$lt: 0}} holds.
    flt, doc = {"a.b": {"$not": {"$lt": 0}}}, {"a": []}
    assert filter_applies(flt, doc) is False
    assert Matcher(flt).matches(doc) is True


# --- updates (src/mongo/db/update/) ------------------------------------------------


def test_update_fields_are_applied_in_field_name_order():
    # Update operator reference (5.0+): "update operators process document fields with
    # string-based names in lexicographic order" (UpdateObjectNode's ordered children).
    update = {"$set": {"b": 1, "a": 1}}
    assert list(mongomock_update({"_id": 1}, update)) == ["_id", "b", "a"]
    assert list(apply_update({"_id": 1}, update).doc) == ["_id", "a", "b"]


def test_conflicting_operators_fail():
    # UpdateObjectNode::parseAndMerge: ConflictingUpdateOperators (40).
    update = {"$set": {"a": 1}, "$inc": {"a": 1}}
    assert mongomock_update({"_id": 1}, update) == {"_id": 1, "a": 2}
    with pytest.raises(MongoError) as e:
        apply_update({"_id": 1}, update)
    assert e.value.code == 40


def test_unset_of_an_array_element_sets_null():
    # UnsetNode: "if the parent is an array, set the element to null".
    update = {"$unset": {"a.0": ""}}
    assert mongomock_update({"_id": 1, "a": [1, 2]}, update)["a"] == [1, 2]
    assert apply_update({"_id": 1, "a": [1, 2]}, update).doc["a"] == [None, 2]


def test_add_to_set_each_is_deduplicated():
    # AddToSetNode::setCollator -> deduplicate(_elements).
    update = {"$addToSet": {"a": {"$each": [1, 0, 1]}}}
    assert mongomock_update({"_id": 1}, update)["a"] == [1, 0, 1]
    assert apply_update({"_id": 1}, update).doc["a"] == [1, 0]


def test_rename_to_itself_fails():
    # RenameNode::init: "The source and target field for $rename must differ".
    assert mongomock_update({"_id": 1, "a": 1}, {"$rename": {"a": "a"}}) == {"_id": 1, "a": 1}
    with pytest.raises(MongoError) as e:
        apply_update({"_id": 1, "a": 1}, {"$rename": {"a": "a"}})
    assert e.value.code == 2


def test_min_creates_a_path_inside_an_array():
    # CompareNode allows creation; createPathAt pads arrays with null.
    update = {"$min": {"c.1": "y"}}
    assert mongomock_update({"_id": 1, "c": []}, update)["c"] == []
    assert apply_update({"_id": 1, "c": []}, update).doc["c"] == [None, "y"]


def test_pull_all_on_a_missing_path_is_a_noop():
    # ArrayCullingNode does not create paths (allowCreation() is false).
    update = {"$pullAll": {"b.a": [3]}}
    assert mongomock_update({"_id": 1}, update) == {"_id": 1, "b": {}}
    res = apply_update({"_id": 1}, update)
    assert res.doc == {"_id": 1} and res.diff is None


def test_pull_all_on_a_scalar_fails():
    # ArrayCullingNode::updateExistingElement: "Cannot apply $pull to a non-array value".
    update = {"$pullAll": {"a.0": []}}
    assert mongomock_update({"_id": 1, "a": [5]}, update)["a"] == [5]
    with pytest.raises(MongoError) as e:
        apply_update({"_id": 1, "a": [5]}, update)
    assert e.value.errmsg == "Cannot apply $pull to a non-array value"


def test_set_through_a_scalar_is_not_viable():
    # createPathAt: PathNotViable (28) "Cannot create field 'c' in element {c: [ null, false ]}".
    update = {"$max": {"c.c": 0.5}}
    doc = {"_id": 1, "c": [None, False]}
    assert mongomock_update(doc, update) == doc
    with pytest.raises(MongoError) as e:
        apply_update(doc, update)
    assert e.value.code == 28 and e.value.errmsg == "Cannot create field 'c' in element {c: [ null, false ]}"


# --- projections (src/mongo/db/exec/exclusion_projection_executor.cpp) -------------


def test_exclusion_below_a_scalar_keeps_the_scalar():
    # An exclusion of a.b only removes b inside documents; a scalar `a` is kept.
    from mongosim.shardsim.query.projection import compile_projection

    _COLL.delete_many({})
    _COLL.insert_one({"_id": 0, "a": 0})
    assert _COLL.find_one({}, {"a.a": 0}) == {"_id": 0}
    assert compile_projection({"a.a": 0})({"_id": 0, "a": 0}) == {"_id": 0, "a": 0}


def test_inclusion_drops_scalars_inside_arrays():
    # Inclusion of a.b keeps only the documents of an array (and their b).
    from mongosim.shardsim.query.projection import compile_projection

    _COLL.delete_many({})
    _COLL.insert_one({"_id": 0, "a": [1, {"b": 2, "c": 3}]})
    with pytest.raises(AttributeError):  # mongomock crashes on the scalar element
        _COLL.find_one({}, {"a.b": 1})
    assert compile_projection({"a.b": 1})({"_id": 0, "a": [1, {"b": 2, "c": 3}]}) == {"_id": 0, "a": [{"b": 2}]}


def test_array_offset_at_the_end_of_a_path_is_not_expanded():
    # path.cpp: "Our path terminates at the array offset. _next should point at the current
    # array element" -- the element itself, not its elements.
    flt, doc = {"a.0": 1}, {"a": [[1, 2]]}
    assert filter_applies(flt, doc) is True
    assert Matcher(flt).matches(doc) is False
    assert Matcher({"a.0": [1, 2]}).matches(doc) is True


# --- aggregation expressions (src/mongo/db/pipeline/expression.cpp) ----------------


def test_eq_on_missing_values_is_a_boolean():
    # ExpressionCompare always yields a bool: missing == missing, missing != "x".
    from mongosim.shardsim.query.stages import run_pipeline

    _COLL.delete_many({})
    _COLL.insert_one({"_id": 0})
    pipeline = [{"$addFields": {"a": {"$eq": ["$a", "$c"]}}}]
    assert list(_COLL.aggregate(pipeline)) == [{"_id": 0}]
    assert list(run_pipeline([{"_id": 0}], pipeline)) == [{"_id": 0, "a": True}]
    pipeline = [{"$addFields": {"a": {"$eq": ["$a", "x"]}}}]
    assert list(_COLL.aggregate(pipeline)) == [{"_id": 0}]
    assert list(run_pipeline([{"_id": 0}], pipeline)) == [{"_id": 0, "a": False}]


def test_add_fields_with_a_missing_value_removes_the_field():
    # A field path to a missing field evaluates to missing, which a document does not store.
    from mongosim.shardsim.query.stages import run_pipeline

    _COLL.delete_many({})
    _COLL.insert_one({"_id": 0, "a": None})
    pipeline = [{"$addFields": {"a": "$b"}}]
    assert list(_COLL.aggregate(pipeline)) == [{"_id": 0, "a": None}]
    assert list(run_pipeline([{"_id": 0, "a": None}], pipeline)) == [{"_id": 0}]


def test_max_of_one_array_argument_runs_over_its_elements():
    # ExpressionFromAccumulator: a single argument that evaluates to an array is accumulated
    # element by element, also when written as a one-element argument list.
    from mongosim.shardsim.query.stages import run_pipeline

    _COLL.delete_many({})
    _COLL.insert_one({"_id": 0, "xs": [3, 1, 2]})
    pipeline = [{"$project": {"m": {"$max": ["$xs"]}}}]
    assert list(_COLL.aggregate(pipeline)) == [{"_id": 0, "m": [3, 1, 2]}]
    assert list(run_pipeline([{"_id": 0, "xs": [3, 1, 2]}], pipeline)) == [{"_id": 0, "m": 3}]


def test_set_union_answers_in_bson_order():
    # ExpressionSetUnion collects into an ordered ValueSet: the result is sorted, not first-seen.
    from mongosim.shardsim.query.stages import run_pipeline

    _COLL.delete_many({})
    _COLL.insert_one({"_id": 0})
    pipeline = [{"$project": {"u": {"$setUnion": [[3, 1], [2, 1]]}}}]
    assert list(_COLL.aggregate(pipeline)) == [{"_id": 0, "u": [3, 1, 2]}]
    assert list(run_pipeline([{"_id": 0}], pipeline)) == [{"_id": 0, "u": [1, 2, 3]}]


def test_a_path_to_an_id_projected_away_is_missing_too():
    # Found by the random stage fuzz: after {$project: {_id: 0}} the path $_id is missing, so
    # setting a field to it removes the field (mongomock keeps the field's previous value).
    from mongosim.shardsim.query.stages import run_pipeline

    pipeline = [{"$project": {"a": 1, "_id": 0}}, {"$addFields": {"a": 0}}, {"$addFields": {"a": "$_id"}}]
    _COLL.delete_many({})
    _COLL.insert_one({"_id": 0})
    assert list(_COLL.aggregate(copy.deepcopy(pipeline))) == [{"a": 0}]
    assert list(run_pipeline([{"_id": 0}], pipeline)) == [{}]


def test_inc_on_a_boolean_fails():
    # ArithmeticNode: "Cannot apply $inc to a value of non-numeric type" (bool is not a number).
    assert mongomock_update({"_id": 0, "a": False}, {"$inc": {"a": 0}}) == {"_id": 0, "a": 0}
    with pytest.raises(MongoError) as e:
        apply_update({"_id": 0, "a": False}, {"$inc": {"a": 0}})
    assert e.value.code == 14


# --- aggregation stages (document_source_*.cpp, accumulator_*.cpp) --------------------------------


def _both_aggregate(docs, pipeline, foreign=None):
    from mongosim.shardsim.query.process_interface import InMemoryProcessInterface
    from mongosim.shardsim.query.stages import run_pipeline

    db = mongomock.MongoClient().divergence_agg
    db.local.insert_many(copy.deepcopy(docs))
    if foreign:
        db.foreign.insert_many(copy.deepcopy(foreign))
    theirs = list(db.local.aggregate(copy.deepcopy(pipeline)))
    process = InMemoryProcessInterface({("divergence_agg", "foreign"): foreign or []})
    return list(run_pipeline(docs, pipeline, variables={}, process=process, db="divergence_agg")), theirs


def test_lookup_of_an_empty_local_array_looks_up_null():
    # DocumentSourceLookUp::makeMatchStageFromInput: no value at the local path ("Missing values are
    # treated as null") makes {foreignField: {$eq: null}}; an empty array has no value.
    ours, theirs = _both_aggregate([{"_id": 0, "a": []}],
                                   [{"$lookup": {"from": "foreign", "localField": "a", "foreignField": "b", "as": "j"}}],
                                   [{"_id": 1}, {"_id": 2, "b": 1}])
    assert theirs == [{"_id": 0, "a": [], "j": []}]
    assert ours == [{"_id": 0, "a": [], "j": [{"_id": 1}]}]


def test_count_of_no_documents_is_no_document():
    # $count is a $group then a $project: no input, no group, no output.
    ours, theirs = _both_aggregate([{"_id": 0, "v": 1}], [{"$match": {"v": 2}}, {"$count": "n"}])
    assert theirs == [{"n": 0}]
    assert ours == []


def test_group_and_bucket_output_id_first():
    # DocumentSourceGroup builds its output as {_id, <accumulators in spec order>}.
    ours, theirs = _both_aggregate([{"_id": 0, "v": 1}], [{"$bucket": {"groupBy": "$v", "boundaries": [0, 5]}}])
    assert list(theirs[0]) == ["count", "_id"]
    assert list(ours[0]) == ["_id", "count"]


def test_add_to_set_keeps_falsy_values():
    ours, theirs = _both_aggregate([{"_id": 0, "v": 0}], [{"$group": {"_id": None, "s": {"$addToSet": "$v"}}}])
    assert theirs[0]["s"] == [None]
    assert ours[0]["s"] == [0]
