"""What the stages with a sub-pipeline or a path argument check alike.

- `pipeline_array(value)`: a sub-pipeline is an array of objects (the server's
  parsePipelineFromBSON: TypeMismatch otherwise);
- `field_path(value)`: a path argument (`as`, `localField`, `depthField`, ...) is a valid
  FieldPath — not empty (40352), no empty component (15998), no component starting
  with `$` (16410) — returned split into its components.
"""

from __future__ import annotations

from typing import Any

from mongosim.oplog.errors import MongoError

__all__ = ["pipeline_array", "field_path"]


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
        if p.startswith("$"):
            raise MongoError(16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
    return parts
