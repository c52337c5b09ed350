"""The user's stages after $changeStream, evaluated on each event as the server does."""

from __future__ import annotations

from mongosim.shardsim.query.projection import compile_projection
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
