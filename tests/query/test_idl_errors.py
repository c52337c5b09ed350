"""The IDL parser's TypeMismatch messages (idl_errors.py): the server's type names, both expected forms."""

from __future__ import annotations

import datetime
import re
import uuid

import pytest
from bson import Binary, Code, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp

from mongosim.shardsim.query.idl_errors import wrong_bindata_type, wrong_type
from mongosim.shardsim.query.values import MISSING


@pytest.mark.parametrize(("value", "name"), [
    ("x", "string"), (1, "int"), (-(2**31), "int"), (2**31, "long"), (Int64(1), "long"), (1.5, "double"),
    (Decimal128("1"), "decimal"), (True, "bool"), ({}, "object"), ([], "array"), ((), "array"), (None, "null"),
    (ObjectId(), "objectId"), (datetime.datetime(2024, 1, 1), "date"), (Timestamp(1, 1), "timestamp"),
    (Binary(b"x", 0), "binData"), (uuid.uuid4(), "binData"), (Regex("a"), "regex"), (re.compile("a"), "regex"),
    (Code("f"), "javascript"), (Code("f", {}), "javascriptWithScope"), (MinKey(), "minKey"),
    (MaxKey(), "maxKey"), (MISSING, "missing"),
])
def test_the_actual_type_is_the_servers_type_name(value, name):
    err = wrong_type("find.filter", value, "object")
    assert err.code == 14 and err.code_name == "TypeMismatch"
    assert err.errmsg == f"BSON field 'find.filter' is the wrong type '{name}', expected type 'object'"


def test_one_expected_type_and_a_list_of_them():
    assert wrong_type("collMod.index.name", 5, "string").errmsg == (
        "BSON field 'collMod.index.name' is the wrong type 'int', expected type 'string'")
    assert wrong_type("renameCollection.dropTarget", "x", ("bool", "binData")).errmsg == (
        "BSON field 'renameCollection.dropTarget' is the wrong type 'string', expected types '[bool, binData]'")
    # (8.0 closes the list with "]'"; older servers printed "']")
    assert wrong_type("$fill.partitionBy", 1, ["string", "object"]).errmsg.endswith("expected types '[string, object]'")


def test_a_value_that_is_not_bson_is_named_by_its_class():
    assert "is the wrong type 'set'," in wrong_type("x.y", {1}, "array").errmsg


@pytest.mark.parametrize(("subtype", "name"), [(0, "general"), (3, "UUID(old)"), (5, "MD5"), (128, "user")])
def test_the_wrong_bindata_subtype(subtype, name):
    err = wrong_bindata_type("OperationSessionInfo.lsid.id", Binary(b"0" * 16, subtype))
    assert err.code == 14
    assert err.errmsg == (f"BSON field 'OperationSessionInfo.lsid.id' is the wrong binData type '{name}', "
                          "expected type 'UUID'")
