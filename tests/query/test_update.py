"""Unit tests of apply_update: the documents and the `$v:2` diffs the server logs.

Diff shapes follow src/mongo/db/update/v2_log_builder.cpp and the modifier nodes
(push_node.cpp logs appends element by element, addtoset_node.cpp likewise,
update_array_node.cpp logs the whole array when several elements changed).
"""

from __future__ import annotations

import datetime

import pytest
from bson import Int64, Timestamp

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.diff import apply_diff
from mongosim.shardsim.query.update import apply_update, classify_update, finish_upsert, upsert_seed


def upd(doc, update, **kw):
    res = apply_update(doc, update, **kw)
    if res.diff is not None and not res.is_replacement:
        assert apply_diff(doc, res.diff) == res.doc
    return res


def test_set_existing_is_u_and_new_is_i():
    r = upd({"_id": 1, "a": 1}, {"$set": {"a": 2, "b": 3}})
    assert r.doc == {"_id": 1, "a": 2, "b": 3}
    assert r.diff == {"u": {"a": 2}, "i": {"b": 3}}


def test_new_fields_are_appended_in_field_name_order():
    r = upd({"_id": 1}, {"$set": {"b": 1, "a": 1}, "$inc": {"10": 1, "9": 1}})
    assert list(r.doc) == ["_id", "9", "10", "a", "b"]
    assert list(r.diff["i"]) == ["9", "10", "a", "b"]


def test_set_same_value_is_a_noop_but_other_type_is_not():
    assert upd({"_id": 1, "a": 1}, {"$set": {"a": 1}}).diff is None
    r = upd({"_id": 1, "a": 1}, {"$set": {"a": 1.0}})
    assert r.diff == {"u": {"a": 1.0}} and type(r.doc["a"]) is float


def test_set_creates_nested_documents_as_one_insert():
    r = upd({"_id": 1}, {"$set": {"a.b.c": 1}})
    assert r.doc == {"_id": 1, "a": {"b": {"c": 1}}}
    assert r.diff == {"i": {"a": {"b": {"c": 1}}}}


def test_siblings_created_under_a_new_parent():
    r = upd({"_id": 1}, {"$inc": {"b.b": -1}, "$push": {"b.c": {"$each": [3, 3]}}})
    assert r.doc == {"_id": 1, "b": {"b": -1, "c": [3, 3]}}
    assert r.diff == {"i": {"b": {"b": -1, "c": [3, 3]}}}


def test_set_inside_existing_object_is_a_subdiff():
    r = upd({"_id": 1, "a": {"x": 1}}, {"$set": {"a.y": 2}, "$unset": {"a.x": 1}})
    assert r.doc == {"_id": 1, "a": {"y": 2}}
    assert r.diff == {"sa": {"d": {"x": False}, "i": {"y": 2}}}


def test_unset():
    r = upd({"_id": 1, "a": 1, "b": 2}, {"$unset": {"a": ""}})
    assert r.doc == {"_id": 1, "b": 2} and r.diff == {"d": {"a": False}}
    assert upd({"_id": 1}, {"$unset": {"a.b": 1}}).diff is None


def test_unset_array_element_sets_null():
    r = upd({"_id": 1, "a": [1, 2, 3]}, {"$unset": {"a.1": 1}})
    assert r.doc == {"_id": 1, "a": [1, None, 3]}
    assert r.diff == {"sa": {"a": True, "u1": None}}


def test_set_past_the_end_pads_with_null():
    r = upd({"_id": 1, "a": [1]}, {"$set": {"a.3": 9}})
    assert r.doc == {"_id": 1, "a": [1, None, None, 9]}
    assert r.diff == {"sa": {"a": True, "u3": 9}}


def test_set_numeric_component_in_object_is_a_field():
    r = upd({"_id": 1, "a": {"1": 1}}, {"$set": {"a.1": 2}})
    assert r.diff == {"sa": {"u": {"1": 2}}}


def test_push_appends_are_logged_per_element():
    r = upd({"_id": 1, "a": [1, 2]}, {"$push": {"a": {"$each": [3, 4]}}})
    assert r.doc == {"_id": 1, "a": [1, 2, 3, 4]}
    assert r.diff == {"sa": {"a": True, "u2": 3, "u3": 4}}


def test_push_to_empty_array_or_with_position_logs_the_array():
    assert upd({"_id": 1, "a": []}, {"$push": {"a": 1}}).diff == {"u": {"a": [1]}}
    r = upd({"_id": 1, "a": [1, 2]}, {"$push": {"a": {"$each": [0], "$position": 0}}})
    assert r.doc["a"] == [0, 1, 2] and r.diff == {"u": {"a": [0, 1, 2]}}
    # $position equal to the length is not an append for the server (push_node.cpp)
    r = upd({"_id": 1, "a": [1, 2]}, {"$push": {"a": {"$each": [3], "$position": 2}}})
    assert r.diff == {"u": {"a": [1, 2, 3]}}


def test_push_sort_and_slice():
    r = upd({"_id": 1, "a": [3, 1]}, {"$push": {"a": {"$each": [2], "$sort": 1, "$slice": 2}}})
    assert r.doc["a"] == [1, 2] and r.diff == {"u": {"a": [1, 2]}}
    r = upd({"_id": 1, "a": [{"x": 2}, {"x": 1}]}, {"$push": {"a": {"$each": [], "$sort": {"x": 1}}}})
    assert r.doc["a"] == [{"x": 1}, {"x": 2}]
    r = upd({"_id": 1}, {"$push": {"a": {"$each": [1, 2, 3], "$slice": -2}}})
    assert r.doc["a"] == [2, 3] and r.diff == {"i": {"a": [2, 3]}}


def test_push_empty_each_is_a_noop():
    assert upd({"_id": 1, "a": [1]}, {"$push": {"a": {"$each": []}}}).diff is None


def test_push_on_non_array():
    with pytest.raises(MongoError) as e:
        upd({"_id": 1, "a": 5}, {"$push": {"a": 1}})
    assert e.value.code == 2
    assert e.value.errmsg == "The field 'a' must be an array but is of type int in document {_id: 1}"


def test_add_to_set():
    r = upd({"_id": 1, "a": [1]}, {"$addToSet": {"a": {"$each": [1, 2, 2.0, 3]}}})
    assert r.doc["a"] == [1, 2, 3]
    assert r.diff == {"sa": {"a": True, "u1": 2, "u2": 3}}
    assert upd({"_id": 1, "a": []}, {"$addToSet": {"a": 7}}).diff == {"sa": {"a": True, "u0": 7}}
    assert upd({"_id": 1, "a": [1.0]}, {"$addToSet": {"a": 1}}).diff is None


def test_pull_pullall_pop():
    r = upd({"_id": 1, "a": [1, 5, 2, 6]}, {"$pull": {"a": {"$gte": 5}}})
    assert r.doc["a"] == [1, 2] and r.diff == {"u": {"a": [1, 2]}}
    r = upd({"_id": 1, "a": [{"b": 1}, {"b": 2}, 3]}, {"$pull": {"a": {"b": 1}}})
    assert r.doc["a"] == [{"b": 2}, 3]
    r = upd({"_id": 1, "a": [1, 2, 1]}, {"$pullAll": {"a": [1]}})
    assert r.doc["a"] == [2]
    assert upd({"_id": 1, "a": [1, 2]}, {"$pop": {"a": -1}}).doc["a"] == [2]
    assert upd({"_id": 1, "a": [1, 2]}, {"$pop": {"a": 1}}).doc["a"] == [1]
    assert upd({"_id": 1, "a": []}, {"$pop": {"a": 1}}).diff is None


def test_inc_and_mul_types():
    r = upd({"_id": 1, "a": 2147483647}, {"$inc": {"a": 1}})
    assert r.doc["a"] == 2147483648 and type(r.doc["a"]) is Int64
    assert type(upd({"_id": 1, "a": 1}, {"$inc": {"a": 1.5}}).doc["a"]) is float
    assert upd({"_id": 1, "a": 1}, {"$inc": {"a": 0}}).diff is None
    assert upd({"_id": 1}, {"$mul": {"a": 3}}).doc == {"_id": 1, "a": 0}
    assert type(upd({"_id": 1}, {"$mul": {"a": 2.5}}).doc["a"]) is float


def test_inc_long_overflow_fails():
    with pytest.raises(MongoError) as e:
        upd({"_id": 1, "a": Int64(2**63 - 1)}, {"$inc": {"a": 1}})
    assert e.value.code == 2
    assert e.value.errmsg == (
        "Failed to apply $inc operations to current value ((NumberLong)9223372036854775807) for document {_id: 1}"
    )


def test_inc_non_numeric():
    with pytest.raises(MongoError) as e:
        upd({"_id": 1, "a": "x"}, {"$inc": {"a": 1}})
    assert e.value.code == 14
    assert e.value.errmsg == (
        "Cannot apply $inc to a value of non-numeric type. {_id: 1} has the field 'a' of non-numeric type string"
    )
    with pytest.raises(MongoError) as e:
        upd({"_id": 1}, {"$inc": {"a": "x"}})
    assert e.value.code == 14 and e.value.errmsg == 'Cannot increment with non-numeric argument: {a: "x"}'


def test_min_max():
    assert upd({"_id": 1, "a": 5}, {"$min": {"a": 3}}).doc["a"] == 3
    assert upd({"_id": 1, "a": 5}, {"$min": {"a": 7}}).diff is None
    assert upd({"_id": 1, "a": 5}, {"$max": {"a": "x"}}).doc["a"] == "x"  # strings sort after numbers
    assert upd({"_id": 1}, {"$max": {"a": 1}}).doc["a"] == 1


def test_rename():
    r = upd({"_id": 1, "a": 1, "c": 2}, {"$rename": {"a": "b"}})
    assert r.doc == {"_id": 1, "c": 2, "b": 1}
    assert r.diff == {"d": {"a": False}, "i": {"b": 1}}
    r = upd({"_id": 1, "a": 1, "b": 2}, {"$rename": {"a": "b"}})
    assert r.doc == {"_id": 1, "b": 1} and r.diff == {"d": {"a": False}, "u": {"b": 1}}
    assert upd({"_id": 1}, {"$rename": {"a": "b"}}).diff is None


def test_current_date():
    now = datetime.datetime(2026, 1, 2, 3, 4, 5, 678000)
    r = upd({"_id": 1}, {"$currentDate": {"a": True, "b": {"$type": "timestamp"}}}, now=now)
    assert r.doc["a"] == now and isinstance(r.doc["b"], Timestamp)


def test_set_on_insert():
    assert upd({"_id": 1}, {"$setOnInsert": {"a": 1}}).diff is None
    assert upd({"_id": 1}, {"$setOnInsert": {"a": 1}}, is_insert=True).doc == {"_id": 1, "a": 1}


def test_positional_operator():
    r = upd({"_id": 1, "a": [{"b": 1}, {"b": 2}]}, {"$set": {"a.$.b": 5}}, match_position=1)
    assert r.doc["a"] == [{"b": 1}, {"b": 5}]
    assert r.diff == {"sa": {"a": True, "s1": {"u": {"b": 5}}}}
    r = upd({"_id": 1, "a": [1, 2, 3]}, {"$inc": {"a.$": 10}}, upsert_query={"a": 2})
    assert r.doc["a"] == [1, 12, 3]
    with pytest.raises(MongoError) as e:
        upd({"_id": 1, "a": [1]}, {"$set": {"a.$": 1}})
    assert e.value.errmsg == "The positional operator did not find the match needed from the query."


def test_all_positional_logs_whole_array_when_several_elements_change():
    r = upd({"_id": 1, "a": [{"b": 1}, {"b": 2}]}, {"$inc": {"a.$[].b": 1}})
    assert r.doc["a"] == [{"b": 2}, {"b": 3}]
    assert r.diff == {"u": {"a": [{"b": 2}, {"b": 3}]}}
    # two elements targeted, one actually modified: the whole element is logged
    r = upd({"_id": 1, "a": [{"b": 1}, {"b": 2}]}, {"$max": {"a.$[].b": 2}})
    assert r.diff == {"sa": {"a": True, "u0": {"b": 2}}}


def test_array_filters():
    r = upd({"_id": 1, "a": [1, 5, 7]}, {"$set": {"a.$[x]": 0}}, array_filters=[{"x": {"$gte": 5}}])
    assert r.doc["a"] == [1, 0, 0]
    r = upd({"_id": 1, "a": [{"b": 1}, {"b": 2}]}, {"$inc": {"a.$[e].b": 10}}, array_filters=[{"e.b": 2}])
    assert r.diff == {"sa": {"a": True, "s1": {"u": {"b": 12}}}}


def test_array_filter_errors():
    with pytest.raises(MongoError) as e:
        upd({"_id": 1, "a": [1]}, {"$set": {"a.$[x]": 0}})
    assert e.value.code == 2 and e.value.errmsg == "No array filter found for identifier 'x' in path 'a.$[x]'"
    with pytest.raises(MongoError) as e:
        upd({"_id": 1, "a": [1]}, {"$set": {"a": 0}}, array_filters=[{"x": 1}])
    assert e.value.code == 9
    assert e.value.errmsg.startswith("The array filter for identifier 'x' was not used in the update")
    with pytest.raises(MongoError) as e:
        upd({"_id": 1}, {"$set": {"a.$[]": 0}})
    assert e.value.errmsg == "The path 'a' must exist in the document in order to apply array updates."
    with pytest.raises(MongoError) as e:
        upd({"_id": 1, "a": 1}, {"$set": {"a.$[]": 0}})
    assert e.value.errmsg == "Cannot apply array updates to non-array element a: 1"


@pytest.mark.parametrize(
    "update, at",
    [
        ({"$set": {"a": 1, "a.b": 2}}, "a"),
        ({"$set": {"a.b": 1}, "$inc": {"a": 2}}, "a"),
        ({"$set": {"a": 1}, "$inc": {"a": 2}}, "a"),
        ({"$rename": {"a": "b"}, "$set": {"b.c": 1}}, "b"),
    ],
)
def test_conflicting_paths(update, at):
    with pytest.raises(MongoError) as e:
        apply_update({"_id": 1}, update)
    assert e.value.code == 40 and e.value.code_name == "ConflictingUpdateOperators"
    assert e.value.errmsg.endswith(f"would create a conflict at '{at}'")


def test_conflict_message_shape():
    with pytest.raises(MongoError) as e:
        apply_update({"_id": 1}, {"$set": {"a": 1, "a.b": 2}})
    assert e.value.errmsg == "Updating the path 'a.b' would create a conflict at 'a'"


def test_path_not_viable():
    with pytest.raises(MongoError) as e:
        upd({"_id": 1, "a": 1}, {"$set": {"a.b": 1}})
    assert e.value.code == 28 and e.value.errmsg == "Cannot create field 'b' in element {a: 1}"
    with pytest.raises(MongoError) as e:
        upd({"_id": 1, "a": [1]}, {"$set": {"a.b": 1}})
    assert e.value.errmsg == "Cannot create field 'b' in element {a: [ 1 ]}"


def test_unknown_modifier_and_bad_argument():
    with pytest.raises(MongoError) as e:
        apply_update({"_id": 1}, {"$foo": {"a": 1}})
    assert e.value.code == 9
    assert e.value.errmsg == (
        "Unknown modifier: $foo. Expected a valid update modifier or pipeline-style update specified as an array"
    )
    with pytest.raises(MongoError) as e:
        apply_update({"_id": 1}, {"$set": 1})
    assert e.value.code == 9


def test_immutable_id():
    with pytest.raises(MongoError) as e:
        upd({"_id": 1}, {"$set": {"_id": 2}})
    assert e.value.code == 66
    assert e.value.errmsg == "Updating the path '_id' to _id: 2 would modify the immutable field '_id'"
    assert upd({"_id": 1}, {"$set": {"_id": 1}}).diff is None
    with pytest.raises(MongoError) as e:
        upd({"_id": 1, "a": 1}, {"_id": 2, "a": 1})
    assert e.value.code == 66
    assert e.value.errmsg == "After applying the update, the (immutable) field '_id' was found to have been altered to _id: 2"


def test_replacement():
    r = upd({"_id": 1, "a": 1}, {"b": 2})
    assert r.is_replacement and r.doc == {"_id": 1, "b": 2} and r.diff == r.doc
    assert r.oplog_o() == {"_id": 1, "b": 2}
    assert upd({"_id": 1, "a": 1}, {"a": 1}).diff is None
    with pytest.raises(MongoError) as e:
        upd({"_id": 1}, {"a": 1, "$set": {"b": 1}})
    assert e.value.code == 52


def test_classify():
    assert classify_update({"$set": {}}) == "operators"
    assert classify_update({"a": 1}) == "replacement"
    assert classify_update({}) == "replacement"
    assert classify_update([{"$set": {"a": 1}}]) == "pipeline"


def test_pipeline_update_small_document_is_a_replacement():
    # the diff {$v:2, diff: {u: {a: 2}}} with its 15-byte padding is not smaller than the document
    r = upd({"_id": 1, "a": 1, "c": 2}, [{"$set": {"a": 2}}])
    assert r.is_replacement and r.doc == {"_id": 1, "a": 2, "c": 2}


def test_pipeline_update_large_document_is_a_delta():
    pre = {"_id": 1, "a": 1, "pad": "x" * 100}
    r = upd(pre, [{"$set": {"a": 2}}, {"$unset": "zz"}])
    assert not r.is_replacement and r.diff == {"u": {"a": 2}}
    assert oplog_o(r) == {"$v": 2, "diff": {"u": {"a": 2}}}


def oplog_o(r):
    return r.oplog_o()


def test_pipeline_truncation_diff():
    pre = {"_id": 1, "a": 1, "array": ["foo", {"a": "bar"}, 1, 2, 3]}
    r = upd(pre, [{"$set": {"array": ["foo", {"a": "bar"}]}}])
    assert r.diff == {"sarray": {"a": True, "l": 2}}


def test_pipeline_noop_and_disallowed_stage():
    assert upd({"_id": 1, "a": 1}, [{"$set": {"a": 1}}]).diff is None
    with pytest.raises(MongoError) as e:
        upd({"_id": 1}, [{"$group": {"_id": 1}}])
    assert e.value.code == 72 and e.value.errmsg == "$group is not allowed to be used within an update"


def test_upsert_seed_from_query_equalities():
    seed = upsert_seed({"b.c": 1, "a": {"$eq": 2}, "x": {"$gt": 1}, "_id": 7, "$and": [{"d": 4}]})
    assert seed == {"_id": 7, "a": 2, "b": {"c": 1}, "d": 4}
    r = upd(seed, {"$set": {"e": 5}, "$setOnInsert": {"f": 6}}, is_insert=True)
    assert r.doc == {"_id": 7, "a": 2, "b": {"c": 1}, "d": 4, "e": 5, "f": 6}
    assert upsert_seed({"_id": 3, "a": 1}, {"z": 1}) == {"_id": 3}
    doc = finish_upsert({"a": 1})
    assert list(doc) == ["_id", "a"]
    with pytest.raises(MongoError) as e:
        upsert_seed({"a": 1, "a.b": 2})
    assert e.value.code == 54 and e.value.code_name == "NotSingleValueField"


def test_input_is_never_mutated():
    pre = {"_id": 1, "a": [1, {"b": 2}], "c": {"d": 1}}
    import copy

    snap = copy.deepcopy(pre)
    upd(pre, {"$set": {"a.1.b": 3, "c.e": 1}, "$unset": {"c.d": 1}})
    upd(pre, {"$push": {"a": 4}})
    assert pre == snap


def test_upsert_through_apply_update():
    r = apply_update({}, {"$inc": {"n": 1}, "$setOnInsert": {"s": 1}}, upsert_query={"_id": 5, "k": "x"}, is_insert=True)
    assert r.doc == {"_id": 5, "k": "x", "n": 1, "s": 1} and r.is_replacement and r.diff == r.doc
    r = apply_update({}, {"b": 1}, upsert_query={"_id": 5, "k": "x"}, is_insert=True)
    assert r.doc == {"_id": 5, "b": 1}
    r = apply_update({}, {"$set": {"b": 1}}, upsert_query={"k": "x"}, is_insert=True)
    assert list(r.doc) == ["_id", "k", "b"]
    r = apply_update({}, [{"$set": {"b": "$k"}}], upsert_query={"_id": 1, "k": "x"}, is_insert=True)
    assert r.doc == {"_id": 1, "k": "x", "b": "x"}


def test_rename_errors_follow_rename_node():
    with pytest.raises(MongoError) as e:
        apply_update({"_id": "test_object", "a": [{"a": 1}, {"b": 2}]}, {"$rename": {"a.0.a": "b"}})
    assert e.value.code == 2 and e.value.errmsg == (
        "The source field cannot be an array element, 'a.0.a' in doc with _id: \"test_object\" has an array field called 'a'"
    )
    with pytest.raises(MongoError) as e:
        apply_update({"a": [{"a": 1}, {"b": 2}]}, {"$rename": {"a.a": "b"}})
    assert e.value.code == 28
    assert e.value.errmsg == "cannot use the part (a of a.a) to traverse the element ({a: [ { a: 1 }, { b: 2 } ]})"
    with pytest.raises(MongoError) as e:
        apply_update({"_id": 1, "a": 1, "b": [1]}, {"$rename": {"a": "b.0"}})
    assert e.value.errmsg == "The destination field cannot be an array element, 'b.0' in doc with _id: 1 has an array field called 'b'"
    # equal values (1 and 1.0 compare equal): the destination is left as it is
    r = apply_update({"_id": 1, "a": 1.0, "b": 1}, {"$rename": {"a": "b"}})
    assert r.doc == {"_id": 1, "b": 1} and r.diff == {"d": {"a": False}}


def test_pull_on_non_viable_path():
    with pytest.raises(MongoError) as e:
        apply_update({"_id": 1, "a": 1}, {"$pull": {"a.b": 1}})
    assert e.value.code == 28
    assert e.value.errmsg == "Cannot use the part (b) of (a.b) to traverse the element ({a: 1})"
    assert apply_update({"_id": 1, "a": 1}, {"$unset": {"a.b": 1}}).diff is None


def _parse_outcome(fn, *args):
    try:
        fn(*args)
    except MongoError as err:
        return err.code, str(err)
    return None


def test_the_simple_updates_parse_check_refuses_what_the_compiler_refuses():
    """parse_update passes a plain $set/$inc of top-level fields without compiling it: for any such
    update (and the near misses around it) it refuses exactly what CompiledUpdate refuses."""
    from hypothesis import given
    from hypothesis import strategies as st

    from mongosim.shardsim.query.update import CompiledUpdate, parse_update
    from tests.query._settings import QUERY_SETTINGS

    names = st.sampled_from(["a", "b", "_id", "", "$x", "a.b", "0", "a.$", "é"])
    values = st.one_of(st.integers(-3, 3), st.floats(allow_nan=False), st.booleans(), st.none(), st.text(max_size=2),
                       st.just({}), st.just([1]), st.just(Int64(5)), st.just({"$x": 1}))
    specs = st.one_of(st.dictionaries(names, values, max_size=3), values)
    simple = st.dictionaries(st.sampled_from(["$set", "$inc"]),  # (mostly the shape parse_update passes)
                             st.dictionaries(st.sampled_from(["a", "b", "_id"]), st.integers(-3, 3), min_size=1),
                             min_size=1)
    updates = st.one_of(simple, st.dictionaries(st.sampled_from(["$set", "$inc", "$unset", "$mul", "$bad", "x"]), specs,
                                                max_size=3))
    filters = st.one_of(st.none(), st.just([]), st.just([{"x": 1}]))

    @QUERY_SETTINGS
    @given(update=updates, array_filters=filters)
    def check(update, array_filters):
        if classify_update(update) != "operators":
            return
        assert _parse_outcome(parse_update, update, array_filters) == \
            _parse_outcome(CompiledUpdate, update, array_filters), update

    check()
