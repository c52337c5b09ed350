"""The user's stages after $changeStream, evaluated on each event as the server does."""

from __future__ import annotations

import pytest
from bson import Decimal128, Int64

from mongosim.shardsim.query.projection import compile_projection
from mongosim.testing import CommandError
from tests.changestream.conftest import drain


def test_project_values_are_expression_operands():
    # projection_parser: a value that is not a number/bool/object is parsed with
    # Expression::parseOperand: "$a" is a field path, other strings are constants.
    proj = compile_projection({"x": "$a.b", "y": "lit", "z": ["$a.b", 1]}, find=False)
    assert proj({"_id": 1, "a": {"b": 5}}) == {"_id": 1, "x": 5, "y": "lit", "z": [5, 1]}
    nested = compile_projection({"ns": {"db": "$ns.db", "viewOn": "db.coll"}}, find=False)
    assert nested({"_id": 1, "ns": {"db": "d", "coll": "c"}}) == {"_id": 1, "ns": {"db": "d", "viewOn": "db.coll"}}


async def test_change_stream_project_evaluates_field_paths(replset):
    # the spec's "Test projection in change stream returns expected fields" and
    # "Test modified structure in ns document MUST NOT err"
    core, c = replset
    await c.insert("db", "c", [{"_id": 0}])
    cs1 = c.watch("db", "c", [{"$project": {"optype": "$operationType", "ns": 1, "newField": "value"}}])
    cs2 = c.watch("db", "c", [{"$project": {"operationType": "insert",
                                            "ns": {"db": "$ns.db", "coll": "$ns.coll", "viewOn": "db.coll"}}}])
    await cs1.open()
    await cs2.open()
    await c.insert("db", "c", [{"_id": 1, "a": 1}])
    (ev1,) = await drain(cs1, 1)
    (ev2,) = await drain(cs2, 1)
    assert {k: v for k, v in ev1.items() if k != "_id"} == {"ns": {"db": "db", "coll": "c"}, "optype": "insert",
                                                             "newField": "value"}
    assert ev2["operationType"] == "insert" and ev2["ns"] == {"db": "db", "coll": "c", "viewOn": "db.coll"}


async def test_user_stages_keep_a_token_with_type_bits_intact(replset):
    """A document key that is a long, a double or a decimal gives a token with `_typeBits`: a `$match` or
    a projection that keeps `_id` leaves it byte for byte (the server's binaryEqual), so the stream goes
    on; an `_id` rebuilt with its fields in another order is a modified one (ChangeStreamFatalError)."""
    await _type_bits_kept(*replset)


async def test_user_stages_keep_a_token_with_type_bits_intact_through_mongos(sharded):
    await _type_bits_kept(*sharded)


async def _type_bits_kept(core, c) -> None:
    await c.insert("db", "c", [{"_id": 0}])
    keys = [Int64(7), 1.5, Decimal128("2.25"), 3]
    kept = {}
    for name, stage in (("match", {"$match": {"operationType": "insert"}}), ("project", {"$project": {"_id": 1}}),
                        ("set", {"$set": {"seen": True}})):
        kept[name] = c.watch("db", "c", [stage])
        await kept[name].open()
    reordered = c.watch("db", "c", [{"$project": {"_id": {"_typeBits": "$_id._typeBits", "_data": "$_id._data"}}}])
    await reordered.open()
    await c.insert("db", "c", [{"_id": k} for k in keys])
    for name, cs in kept.items():
        events = await drain(cs, len(keys))
        assert [e["_id"]["_data"] for e in events] == sorted(e["_id"]["_data"] for e in events), name
        assert ["_typeBits" in e["_id"] for e in events] == [True, True, True, False], name
    with pytest.raises(CommandError) as ei:
        await drain(reordered, 1)
    assert ei.value.code == 280 and "NonResumableChangeStreamError" in ei.value.labels
