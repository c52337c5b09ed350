"""The TypeMismatch (14) errors of the server's IDL parser, for a field of the wrong BSON type.

Every command, stage or option the server parses with generated IDL code reports a wrongly typed
field the same way (idl_parser.cpp, IDLParserContext):

* checkAndAssertType, one expected type:
  "BSON field 'find.cursor' is the wrong type 'int', expected type 'object'";
* throwBadType, several (a variant, or a field that takes any number):
  "BSON field 'renameCollection.dropTarget' is the wrong type 'int', expected types '[bool, binData]'";
* checkAndAssertBinDataType, binData of the wrong subtype:
  "BSON field 'OperationSessionInfo.lsid.id' is the wrong binData type 'general', expected type 'UUID'".

The path is the dotted path of the field from the IDL struct's name ("<struct>.<field>[.<sub>...]",
the struct often named as the command), and the type names are the server's typeName(), as `$type`
spells them (`values.describe_type`).  (Older servers closed the list with "']"; 8.0 prints "]'".)
It lives in `query`, beside `values`, because the stages under `query` raise it too: from shardsim's
top level, importing `values` would import the `query` package, and with it those stages (a cycle).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bson import Binary

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.values import describe_type

__all__ = ["wrong_type", "wrong_bindata_type"]

# typeName(BinDataType): the subtypes' names in "is the wrong binData type" messages.
_BINDATA_NAMES = {0: "general", 1: "function", 2: "binary(old)", 3: "UUID(old)", 4: "UUID", 5: "MD5",
                  6: "encrypt", 7: "column", 8: "sensitive", 9: "vector", 128: "user"}


def wrong_type(path: str, value: Any, expected: str | Sequence[str]) -> MongoError:
    """TypeMismatch for `value` at the field `path`: `expected` one type name ("object") for the
    "expected type 'object'" form, or a sequence of them (("bool", "binData")) for the
    "expected types '[bool, binData]'" form, listed in the IDL's order."""
    wanted = f"type '{expected}'" if isinstance(expected, str) else f"types '[{', '.join(expected)}]'"
    return MongoError("TypeMismatch", f"BSON field '{path}' is the wrong type '{describe_type(value)}', "
                                      f"expected {wanted}")


def wrong_bindata_type(path: str, value: Binary, expected: str = "UUID") -> MongoError:
    """TypeMismatch for a binData `value` of the wrong subtype at `path` (the IDL's uuid fields)."""
    return MongoError("TypeMismatch", f"BSON field '{path}' is the wrong binData type "
                                      f"'{_BINDATA_NAMES.get(value.subtype, 'user')}', expected type '{expected}'")
