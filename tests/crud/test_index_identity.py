"""Which indexes may coexist on one key pattern, both topologies (IndexDescriptor::compareIndexOptions):
`unique`, `sparse`, the collation, the partial filter and a wildcard projection name an index; other
options (a TTL, `hidden`) do not, so an index that differs only in those conflicts with the existing
one.  Plus createIndexes' TTL checks, and a unique index on a sharded collection, which must lead with
the shard key.  Messages quote specs as the server prints BSON."""

from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure


@pytest.fixture
def coll(client, request):
    db = client[f"ixid_{request.node.name.split('[')[0][-20:]}"]
    client.drop_database(db.name)
    db.c.insert_many([{"_id": i, "a": i, "b": i % 3} for i in range(5)])
    return db.c


def refused(coll, keys, **kw) -> tuple[int, str]:
    with pytest.raises(OperationFailure) as e:
        coll.create_index(keys, **kw)
    return e.value.code, e.value.details["errmsg"]


def names(coll) -> list[str]:
    return sorted(ix["name"] for ix in coll.list_indexes())


def test_unique_and_sparse_name_an_index(coll):
    coll.create_index("a")
    # the same (generated) name, a uniquely-identifying option changed: IndexKeySpecsConflict
    code, msg = refused(coll, "a", unique=True)
    assert code == 86 and msg == (
        "An existing index has the same name as the requested index. When index names are not specified, they are "
        "auto generated and can cause conflicts. Please refer to our documentation. Requested index: "
        '{ v: 2, unique: true, key: { a: 1 }, name: "a_1" }, existing index: { v: 2, key: { a: 1 }, name: "a_1" }')
    assert refused(coll, "a", sparse=True)[0] == 86
    # under other names they coexist with the plain index
    assert coll.create_index("a", unique=True, name="a_unique") == "a_unique"
    assert coll.create_index("a", sparse=True, name="a_sparse") == "a_sparse"
    assert coll.create_index("a", collation={"locale": "fr"}, name="a_fr") == "a_fr"
    assert coll.create_index("a", partialFilterExpression={"b": {"$gt": 0}}, name="a_part") == "a_part"
    assert names(coll) == ["_id_", "a_1", "a_fr", "a_part", "a_sparse", "a_unique"]


def test_other_options_do_not(coll):
    coll.create_index("a", expireAfterSeconds=100)
    # same name, another TTL: equivalent, not identical
    code, msg = refused(coll, "a", expireAfterSeconds=200)
    assert code == 85 and msg == (
        "An equivalent index already exists with the same name but different options. Requested index: "
        '{ v: 2, key: { a: 1 }, name: "a_1", expireAfterSeconds: 200 }, existing index: '
        '{ v: 2, key: { a: 1 }, name: "a_1", expireAfterSeconds: 100 }')
    # another name: equivalent, or identical
    code, msg = refused(coll, "a", name="a_hidden", hidden=True, expireAfterSeconds=100)
    assert code == 85 and msg.startswith("An equivalent index already exists with a different name and options. "
                                         'Requested index: { v: 2, hidden: true, key: { a: 1 }, name: "a_hidden"')
    assert refused(coll, "a", name="again", expireAfterSeconds=100) == (
        85, "Index already exists with a different name: a_1")
    # identical, same name: nothing to do (100.0 equals 100 as BSON)
    assert coll.create_index("a", expireAfterSeconds=100.0) == "a_1"
    assert names(coll) == ["_id_", "a_1"]


def test_the_id_index_is_unique(coll):
    assert refused(coll, "_id", name="by_id") == (85, "Index already exists with a different name: _id_")
    assert coll.create_index("_id", name="_id_") == "_id_"  # (the very same: nothing to do)


@pytest.mark.parametrize("option", [{"unique": True}, {"sparse": True}, {"expireAfterSeconds": 10}, {"hidden": False}])
def test_an_id_index_spec_takes_few_fields(coll, option):
    """parseAndValidateIndexSpecs: key, name, v, collation only (the spec quoted as sent, `v` appended)."""
    (field, value), = option.items()
    code, msg = refused(coll, "_id", **option)
    assert code == 197 and msg == (f"The field '{field}' is not valid for an _id index specification. Specification: "
                                   f"{{ {field}: {str(value).lower()}, name: \"_id_1\", key: {{ _id: 1 }}, v: 2 }}")


def test_reserved_index_names(coll):
    assert refused(coll, [("_id", -1)], name="_id_") == (
        2, "The index name '_id_' is reserved for the _id index, which must have key pattern {_id: 1}, found { _id: -1 }")
    assert refused(coll, "a", name="*") == (2, "The index name '*' is not valid.")
    assert names(coll) == ["_id_"]


def test_the_stored_spec_is_the_catalogs(coll):
    """v, then unique/hidden when true (false ones dropped), key, name, the rest as given."""
    coll.create_index("a", sparse=True, unique=1, hidden=True, name="a1")
    coll.create_index("b", unique=False, hidden=False)
    specs = {ix["name"]: ix for ix in coll.list_indexes()}
    assert list(specs["a1"].items()) == [("v", 2), ("unique", True), ("hidden", True), ("key", {"a": 1}),
                                         ("name", "a1"), ("sparse", True)]
    assert list(specs["b_1"].items()) == [("v", 2), ("key", {"b": 1}), ("name", "b_1")]


@pytest.mark.parametrize("value, reason", [
    ("10", "TTL index 'expireAfterSeconds' option must be numeric, but received a type of 'string"),
    (float("nan"), "TTL index 'expireAfterSeconds' option must not be NaN"),
    (2**31, "TTL index 'expireAfterSeconds' must be within the range of a 32-bit integer"),
    (-1, "TTL index 'expireAfterSeconds' option cannot be less than 0"),
])
def test_ttl_values(coll, value, reason):
    code, msg = refused(coll, "a", expireAfterSeconds=value)
    # (the spec as pymongo sent it, `v` appended: IndexModel puts the options first)
    assert code == 67 and msg.startswith(". Index spec: { expireAfterSeconds: ")
    assert ', name: "a_1", key: { a: 1 }, v: 2 } :: caused by :: ' in msg
    assert msg.endswith(f" :: caused by :: {reason}")


def test_a_ttl_index_has_one_field(coll):
    code, msg = refused(coll, [("a", 1), ("b", 1)], expireAfterSeconds=10)
    assert code == 67 and msg == ("TTL indexes are single-field indexes, compound indexes do not support TTL. Index "
                                  'spec: { expireAfterSeconds: 10, name: "a_1_b_1", key: { a: 1, b: 1 }, v: 2 }')
    assert names(coll) == ["_id_"]


def test_a_unique_index_on_a_sharded_collection_leads_with_the_shard_key(sharded_client):
    client = sharded_client
    client.drop_database("ixid_sharded")
    db = client.ixid_sharded
    client.admin.command("shardCollection", "ixid_sharded.h", key={"_id": "hashed"})
    client.admin.command("shardCollection", "ixid_sharded.r", key={"a": 1, "b": 1})
    db.h.insert_many([{"_id": i, "name": "same"} for i in range(6)])  # on both shards (hashed _id)
    with pytest.raises(OperationFailure) as e:
        db.h.create_index("name", unique=True)
    assert e.value.code == 67 and e.value.details["errmsg"] == \
        'cannot create unique index over { name: 1 } with shard key pattern { _id: "hashed" }'
    with pytest.raises(OperationFailure) as e:
        db.r.create_index([("b", 1), ("a", 1)], unique=True)
    assert e.value.code == 67 and "with shard key pattern { a: 1, b: 1 }" in e.value.details["errmsg"]
    with pytest.raises(OperationFailure):
        db.r.create_index("a", unique=True)  # a prefix of the shard key is not enough
    # the shard key's fields first (any order of values), or `_id` first: allowed
    assert db.r.create_index([("a", 1), ("b", -1), ("c", 1)], unique=True) == "a_1_b_-1_c_1"
    assert db.h.create_index([("_id", 1), ("name", 1)], unique=True) == "_id_1_name_1"
    assert db.h.create_index("name") == "name_1"  # not unique: fine
    assert sorted(ix["name"] for ix in db.r.list_indexes()) == ["_id_", "a_1_b_-1_c_1", "a_1_b_1"]


def test_sharding_again_with_another_key(sharded_client):
    sharded_client.drop_database("ixid_again")
    sharded_client.admin.command("shardCollection", "ixid_again.c", key={"k": 1})
    assert sharded_client.admin.command("shardCollection", "ixid_again.c", key={"k": 1})["ok"] == 1
    with pytest.raises(OperationFailure) as e:
        sharded_client.admin.command("shardCollection", "ixid_again.c", key={"v": 1})
    assert e.value.code == 23 and e.value.details["codeName"] == "AlreadyInitialized"
    assert e.value.details["errmsg"] == "sharding already enabled for collection ixid_again.c"
