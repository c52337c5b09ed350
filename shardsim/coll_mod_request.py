"""collMod's request as the server's IDL parser reads it (coll_mod.idl, before the command runs).

The command is strict: a field the IDL does not know is 40415 "BSON field 'collMod.<f>' is an unknown
field." — the create-only options (`capped`, `size`, `max`, `collation`, `clusteredIndex`,
`storageEngine`, `idIndex`, `temp`, ...) and `recordPreImages` (removed in 6.2, SERVER-60919) among
them.  8.0's fields:

    index, validator, validationLevel, validationAction, viewOn, pipeline,
    changeStreamPreAndPostImages, expireAfterSeconds, timeseries,
    timeseriesBucketsMayHaveMixedSchemaData, dryRun, collectionUUID, cappedSize, cappedMax

plus the generic arguments.  Each field is type-checked as met (TypeMismatch 14 "BSON field
'collMod.<f>' is the wrong type '<t>', expected type '<t>'"); a null is no value at all (the parser
skips a null of the wrong type); the IDL validators come next: `cappedSize` in [1, 1 PB] and
`cappedMax` < 2^31 (BadValue "BSON field 'cappedSize' value must be >= 1, actual value '0'"), enum
values ("Enumeration value 'x' for field 'collMod.validationLevel' is not a valid value."), the
nested structs (`index`, `timeseries`, `changeStreamPreAndPostImages`) strict in turn.  Numbers of a
`safeInt64` field are converted as BSONElement::safeNumberLong does (a double truncated, NaN 0,
saturating).  What the fields mean is coll_mod.py's business.
"""

from __future__ import annotations

import math
from typing import Any

from bson import Binary, Decimal128, Int64

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.document_validation import check_options
from mongosim.shardsim.generic_args import GENERIC_ARGUMENTS
from mongosim.shardsim.query.idl_errors import wrong_bindata_type, wrong_type

FIELDS = ("index", "validator", "validationLevel", "validationAction", "viewOn", "pipeline",
          "changeStreamPreAndPostImages", "expireAfterSeconds", "timeseries", "timeseriesBucketsMayHaveMixedSchemaData",
          "dryRun", "collectionUUID", "cappedSize", "cappedMax")
INDEX_FIELDS = ("name", "keyPattern", "expireAfterSeconds", "hidden", "unique", "prepareUnique", "forceNonUnique")
TIMESERIES_FIELDS = ("granularity", "bucketRoundingSeconds", "bucketMaxSpanSeconds")
GRANULARITIES = ("seconds", "minutes", "hours")
MAX_CAPPED_SIZE = 1 << 50  # 1 PB
_INT64 = ("long", "int", "decimal", "double")
_BOOL = ("bool", "long", "int", "decimal", "double")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, Decimal128)) and not isinstance(v, bool)


def safe_int(v: Any, bits: int) -> int:
    """safeNumberLong / safeNumberInt: a number as an integer of `bits` bits (saturating, NaN 0)."""
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if isinstance(v, Decimal128):
        v = v.to_decimal()
        if v.is_nan():
            return 0
        if v.is_infinite():
            return hi if v > 0 else lo
        return max(lo, min(hi, int(v)))
    if isinstance(v, float):
        if math.isnan(v):
            return 0
        if math.isinf(v):
            return hi if v > 0 else lo
    return max(lo, min(hi, int(v)))


def _int64(path: str, v: Any) -> int:
    if not _is_number(v):
        raise wrong_type(path, v, _INT64)
    return safe_int(v, 64)


def idl_safe_int(path: str, v: Any) -> int:
    """An IDL `safeInt` field: any number, as a 32-bit integer (TypeMismatch for anything else)."""
    if not _is_number(v):
        raise wrong_type(path, v, _INT64)
    return safe_int(v, 32)


def _safe_bool(path: str, v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if not _is_number(v):
        raise wrong_type(path, v, _BOOL)
    return (v.to_decimal() if isinstance(v, Decimal128) else v) != 0  # (trueValue: NaN is true)


def _object(path: str, v: Any) -> dict:
    if not isinstance(v, dict):
        raise wrong_type(path, v, "object")
    return v


def _strict(path: str, v: dict, known: tuple[str, ...]) -> dict:
    """The non-null fields of the sub-document `v` of a strict struct."""
    out = {}
    for k, x in v.items():
        if k not in known:
            raise MongoError(40415, f"BSON field '{path}.{k}' is an unknown field.")
        if x is not None:
            out[k] = x
    return out


def _enum(path: str, v: Any, values: tuple[str, ...]) -> str:
    if not isinstance(v, str):
        raise wrong_type(path, v, "string")
    if v not in values:
        raise MongoError("BadValue", f"Enumeration value '{v}' for field '{path}' is not a valid value.")
    return v


def _index(v: Any) -> dict:
    spec = _strict("collMod.index", _object("collMod.index", v), INDEX_FIELDS)
    out: dict[str, Any] = {}
    for k, x in spec.items():
        path = f"collMod.index.{k}"
        if k == "name":
            if not isinstance(x, str):
                raise wrong_type(path, x, "string")
            out[k] = x
        elif k == "keyPattern":
            out[k] = _object(path, x)
        elif k == "expireAfterSeconds":
            out[k] = idl_safe_int(path, x)
        else:
            out[k] = _safe_bool(path, x)
    return out


def _timeseries(v: Any) -> dict:
    spec = _strict("collMod.timeseries", _object("collMod.timeseries", v), TIMESERIES_FIELDS)
    out: dict[str, Any] = {}
    for k in TIMESERIES_FIELDS:  # (serialized in the struct's order)
        if k not in spec:
            continue
        if k == "granularity":
            out[k] = _enum("collMod.timeseries.granularity", spec[k], GRANULARITIES)
        else:
            n = idl_safe_int(f"collMod.timeseries.{k}", spec[k])
            if n < 1:
                raise MongoError("BadValue", f"BSON field '{k}' value must be >= 1, actual value '{n}'")
            out[k] = n
    return out


def _pre_and_post_images(v: Any) -> dict:
    spec = _strict("collMod.changeStreamPreAndPostImages", _object("collMod.changeStreamPreAndPostImages", v),
                   ("enabled",))
    if "enabled" not in spec:
        raise MongoError(40414, "BSON field 'collMod.changeStreamPreAndPostImages.enabled' is missing but a required "
                                "field")
    return {"enabled": _safe_bool("collMod.changeStreamPreAndPostImages.enabled", spec["enabled"])}


def _expire_after_seconds(v: Any) -> str | int:
    if isinstance(v, str):
        return v
    if not _is_number(v):
        raise wrong_type("collMod.expireAfterSeconds", v, ("string", *_INT64))
    return safe_int(v, 64)


def _uuid(v: Any) -> Binary:
    if not isinstance(v, Binary):
        raise wrong_type("collMod.collectionUUID", v, "binData")
    if v.subtype != 4:
        raise wrong_bindata_type("collMod.collectionUUID", v)
    return v


def parse(cmd: dict, db: str, name: str) -> dict:
    """The request's fields (in the command's order, nulls left out), each parsed; the IDL's errors."""
    out: dict[str, Any] = {}
    for k, v in cmd.items():
        if k == "collMod" or k in GENERIC_ARGUMENTS:
            continue
        if k not in FIELDS:
            raise MongoError(40415, f"BSON field 'collMod.{k}' is an unknown field.")
        if v is None:
            continue
        if k == "index":
            out[k] = _index(v)
        elif k == "validator":
            out[k] = _object("collMod.validator", v)
        elif k in ("validationLevel", "validationAction", "viewOn"):
            if not isinstance(v, str):
                raise wrong_type(f"collMod.{k}", v, "string")
            out[k] = v
        elif k == "pipeline":
            if not isinstance(v, list):
                raise wrong_type("collMod.pipeline", v, "array")
            for i, stage in enumerate(v):
                if not isinstance(stage, dict):
                    raise wrong_type(f"collMod.pipeline.{i}", stage, "object")
            out[k] = v
        elif k == "changeStreamPreAndPostImages":
            out[k] = _pre_and_post_images(v)
        elif k == "expireAfterSeconds":
            out[k] = _expire_after_seconds(v)
        elif k == "timeseries":
            out[k] = _timeseries(v)
        elif k in ("timeseriesBucketsMayHaveMixedSchemaData", "dryRun"):
            out[k] = _safe_bool(f"collMod.{k}", v)
        elif k == "collectionUUID":
            out[k] = _uuid(v)
        elif k == "cappedSize":
            size = _int64("collMod.cappedSize", v)
            if size < 1:
                raise MongoError("BadValue", f"BSON field 'cappedSize' value must be >= 1, actual value '{size}'")
            if size > MAX_CAPPED_SIZE:
                raise MongoError("BadValue", f"BSON field 'cappedSize' value must be <= {MAX_CAPPED_SIZE}, actual "
                                             f"value '{size}'")
            out[k] = size
        else:  # cappedMax
            n = _int64("collMod.cappedMax", v)
            if n >= 1 << 31:
                raise MongoError("BadValue", f"BSON field 'cappedMax' value must be < 2147483648, actual value '{n}'")
            out[k] = n
    check_options("collMod", db, name, {k: out[k] for k in ("validationLevel", "validationAction") if k in out})
    return out


def as_int64(n: int) -> Int64:
    """How the server appends a `long long` (NumberLong)."""
    return Int64(n)
