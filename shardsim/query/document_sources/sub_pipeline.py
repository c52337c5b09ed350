"""What the stages with a sub-pipeline or a path argument check alike.

- `pipeline_array(value)`: a sub-pipeline is an array of objects (the server's
  parsePipelineFromBSON: TypeMismatch otherwise);
- `field_path(value)`: a path argument (`as`, `localField`, `depthField`, ...) is a valid
  FieldPath — not empty (40352), no empty component (15998), no component starting
  with `$` (16410) — returned split into its components;
- `idl_fields(struct, spec, allowed, required)`: a specification read as the server's IDL
  parser reads a struct: an unknown field is 40415, a missing required one 40414.
"""

from __future__ import annotations

from typing import Any

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.values import ALLOWED_DOLLAR_FIELDS

__all__ = ["pipeline_array", "field_path", "idl_fields"]


def pipeline_array(value: Any) -> list[dict]:
    if not isinstance(value, list):
        raise MongoError("TypeMismatch", "'pipeline' option must be specified as an array")
    for st in value:
        if not isinstance(st, dict):
            raise MongoError("TypeMismatch", "Each element of the 'pipeline' array must be an object")
    return value


def field_path(value: str) -> tuple[str, ...]:
    if value == "":
        raise MongoError(40352, "FieldPath cannot be constructed with empty string")
    parts = tuple(value.split("."))
    for p in parts:
        if p == "":
            raise MongoError(15998, "FieldPath field names may not be empty strings.")
        if p.startswith("$") and p not in ALLOWED_DOLLAR_FIELDS:  # (a DBRef's $id, $ref, $db...)
            raise MongoError(16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
    return parts


def idl_fields(struct: str, spec: dict, allowed: tuple[str, ...], required: tuple[str, ...] = ()) -> None:
    for k in spec:
        if k not in allowed:
            raise MongoError("IDLUnknownField", f"BSON field '{struct}.{k}' is an unknown field.")
    for k in required:
        if k not in spec:
            raise MongoError("IDLFailedToParse", f"BSON field '{struct}.{k}' is missing but a required field")
