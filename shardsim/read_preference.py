"""A command's `$readPreference`, parsed as the server parses it (ReadPreferenceSetting::fromInnerBSON).

mongod and mongos both parse the generic argument before the command runs, so a bad one fails
the command wherever it is sent.  In the server's order:

- `mode`: required (NoSuchKey), a string (TypeMismatch), one of the five modes (BadValue, with
  the IDL's enumeration error as the cause);
- `hedge`: an object when present (TypeMismatch); enabled (its default) with mode primary is
  InvalidOptions;
- `tags`: an array when present (TypeMismatch); a non-empty tag set with mode primary is BadValue
  (`[]` and `[{}]` are the default, allowed with any mode);
- `maxStalenessSeconds`: a number (TypeMismatch) holding an integer (BadValue); when set, not
  negative (BadValue), at least 90 seconds (MaxStalenessOutOfRange, kMinimalMaxStalenessValue) and
  not with mode primary (BadValue).
"""

from __future__ import annotations

from typing import Any

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.values import describe_type

__all__ = ["MODES", "MIN_MAX_STALENESS_S", "check"]

MODES = ("primary", "primaryPreferred", "secondary", "secondaryPreferred", "nearest")
MIN_MAX_STALENESS_S = 90


def _wrong_type(field: str, v: Any, expected: str) -> MongoError:
    """bsonExtractTypedField's error for a field of another type."""
    return MongoError("TypeMismatch", f'"{field}" had the wrong type. Expected {expected}, found {describe_type(v)}')


def _integer(v: Any) -> int:
    """bsonExtractIntegerField: a number that is exactly a 64-bit integer."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise MongoError("TypeMismatch", 'Expected field "maxStalenessSeconds" to have numeric type, but found '
                                         f"{describe_type(v)}")
    if isinstance(v, float) and (not v.is_integer() or abs(v) >= 2.0 ** 63):
        raise MongoError("BadValue", 'Expected field "maxStalenessSeconds" to have a value exactly representable '
                                     f"as a 64-bit integer, but found maxStalenessSeconds: {bson_str(v)}")
    return int(v)


def check(rp: dict) -> None:
    """Raise the server's error for an invalid `$readPreference` document."""
    if "mode" not in rp:
        raise MongoError("NoSuchKey", 'Missing expected field "mode"')
    mode = rp["mode"]
    if not isinstance(mode, str):
        raise _wrong_type("mode", mode, "string")
    if mode not in MODES:
        raise MongoError("BadValue", f"Could not parse $readPreference mode '{mode}'. Only the modes 'primary', "
                                     "'primaryPreferred', 'secondary', 'secondaryPreferred', and 'nearest' are "
                                     f"supported. :: caused by :: Enumeration value '{mode}' for field 'mode' is "
                                     "not a valid value.")
    if "hedge" in rp:
        hedge = rp["hedge"]
        if not isinstance(hedge, dict):
            raise MongoError("TypeMismatch", "hedge field must be of type object if provided; found "
                                             f"hedge: {bson_str(hedge)}")
        if hedge.get("enabled", True) is not False and mode == "primary":
            raise MongoError("InvalidOptions", 'cannot enable hedging for $readPreference mode "primaryOnly"')
    if "tags" in rp:
        tags = rp["tags"]
        if not isinstance(tags, list):
            raise _wrong_type("tags", tags, "array")
        if mode == "primary" and tags not in ([], [{}]):
            raise MongoError("BadValue", "Only empty tags are allowed with primary read preference")
    stale = _integer(rp["maxStalenessSeconds"]) if "maxStalenessSeconds" in rp else 0
    if stale < 0:
        raise MongoError("BadValue", "maxStalenessSeconds must be a non-negative integer")
    if 0 < stale < MIN_MAX_STALENESS_S:
        raise MongoError("MaxStalenessOutOfRange", f"maxStalenessSeconds value can not be less than "
                                                   f"{MIN_MAX_STALENESS_S}")
    if stale and mode == "primary":
        raise MongoError("BadValue", "maxStalenessSeconds can not be set for the primary mode")
