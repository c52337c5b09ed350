"""An index's identity: when may two indexes on one key pattern coexist (the server's
IndexDescriptor::compareIndexOptions, index_descriptor.cpp), and the createIndexes checks built on it.

Two specs compare as

- DIFFERENT when any option that names an index differs: the key pattern (as BSON), the
  `wildcardProjection`, `unique` (an `_id` index is unique), `sparse`, the collation, or the
  `partialFilterExpression` — such indexes coexist, under different names;
- IDENTICAL when besides those every other option is equal (the index version fields, `background`
  and `dropDups` aside): creating it again is a no-op;
- EQUIVALENT otherwise (e.g. another `expireAfterSeconds` or `hidden`): the two cannot coexist.

The catalog (IndexCatalogImpl::_doesSpecConflictWithExisting) then refuses, for an index with the name
of an existing one, DIFFERENT with IndexKeySpecsConflict (86) and EQUIVALENT with IndexOptionsConflict
(85); and for an index on the key pattern of an existing one under another name, EQUIVALENT or
IDENTICAL with IndexOptionsConflict.  Messages quote specs as the server prints BSON (`query.fmt`).
"""

from __future__ import annotations

import enum
import math
from typing import Any

from bson import Decimal128, Int64

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.values import hashable

# options compared apart, or not at all (populateOptionsMapForEqualityCheck)
_NOT_COMPARED = frozenset({"key", "ns", "name", "v", "textIndexVersion", "2dsphereIndexVersion", "background",
                           "dropDups", "collation", "partialFilterExpression", "unique", "sparse",
                           "wildcardProjection"})
_INT32_MAX = 2**31 - 1


class Comparison(enum.Enum):
    DIFFERENT = "different"
    EQUIVALENT = "equivalent"
    IDENTICAL = "identical"


def is_unique(spec: dict) -> bool:
    return list(spec["key"]) == ["_id"] or bool(spec.get("unique"))


def _bson_equal(a: Any, b: Any) -> bool:
    """Equal as the server's simple BSON comparison (numbers by value: 1 == 1.0)."""
    return hashable(a) == hashable(b)


def same_key(a: dict, b: dict) -> bool:
    """Key patterns equal as BSON: the same fields in the same order, equal values (1 == 1.0)."""
    return list(a) == list(b) and all(_bson_equal(a[k], b[k]) for k in a)


def compare(candidate: dict, existing: dict) -> Comparison:
    """How `candidate` compares with `existing` (both stored specs, see the module doc)."""
    if not same_key(candidate["key"], existing["key"]):
        return Comparison.DIFFERENT
    if candidate.get("wildcardProjection", {}) != existing.get("wildcardProjection", {}):
        return Comparison.DIFFERENT  # (field order aside, as the server compares the normalized projections)
    if is_unique(candidate) != is_unique(existing) or bool(candidate.get("sparse")) != bool(existing.get("sparse")):
        return Comparison.DIFFERENT
    if (candidate.get("collation") or None) != (existing.get("collation") or None):
        return Comparison.DIFFERENT
    if ("partialFilterExpression" in candidate) != ("partialFilterExpression" in existing):
        return Comparison.DIFFERENT
    if "partialFilterExpression" in existing and \
            not _bson_equal(candidate["partialFilterExpression"], existing["partialFilterExpression"]):
        return Comparison.DIFFERENT
    mine = {k: v for k, v in candidate.items() if k not in _NOT_COMPARED}
    theirs = {k: v for k, v in existing.items() if k not in _NOT_COMPARED}
    if mine.keys() == theirs.keys() and all(_bson_equal(v, theirs[k]) for k, v in mine.items()):
        return Comparison.IDENTICAL
    return Comparison.EQUIVALENT


def check_against(spec: dict, indexes: list[dict]) -> bool:
    """Refuse `spec` if it conflicts with an existing index (see the module doc); True if an identical
    index of that name exists already (nothing to build)."""
    for existing in indexes:
        if existing["name"] != spec["name"]:
            continue
        how = compare(spec, existing)
        if how is Comparison.DIFFERENT:
            raise MongoError("IndexKeySpecsConflict", "An existing index has the same name as the requested index. "
                             "When index names are not specified, they are auto generated and can cause conflicts. "
                             f"Please refer to our documentation. Requested index: {bson_str(spec)}, existing index: "
                             f"{bson_str(existing)}")
        if how is Comparison.EQUIVALENT:
            raise MongoError("IndexOptionsConflict", "An equivalent index already exists with the same name but "
                             f"different options. Requested index: {bson_str(spec)}, existing index: "
                             f"{bson_str(existing)}")
        return True
    for existing in indexes:
        if not same_key(spec["key"], existing["key"]):
            continue
        how = compare(spec, existing)
        if how is Comparison.EQUIVALENT:
            raise MongoError("IndexOptionsConflict", "An equivalent index already exists with a different name and "
                             f"options. Requested index: {bson_str(spec)}, existing index: {bson_str(existing)}")
        if how is Comparison.IDENTICAL:
            raise MongoError("IndexOptionsConflict", f"Index already exists with a different name: {existing['name']}")
    return False


# the fields an `_id` index spec may have (index_key_validate.cpp allowedIdIndexFieldNames)
_ID_INDEX_FIELDS = frozenset({"collation", "name", "v", "key", "ns", "_id"})


def is_id_pattern(key: dict) -> bool:
    """IndexDescriptor::isIdIndexPattern: `{_id: 1}` exactly (1.0 too)."""
    return list(key) == ["_id"] and _bson_equal(key["_id"], 1)


def validate_as_given(raw: dict, spec: dict) -> None:
    """createIndexes' checks of each spec after the field checks (parseAndValidateIndexSpecs, then
    validateIndexSpecTTL), which quote the spec as the client sent it with `v` appended: an `_id` index
    takes only a few fields (InvalidIndexSpecificationOption 197); no other index is named `_id_` or `*`
    (BadValue); a TTL index's `expireAfterSeconds` is a number, not NaN, a 32-bit integer in
    [0, 2^31 - 1], on a single-field key (CannotCreateIndex 67)."""
    as_given = {k: v for k, v in raw.items() if k != "v"} if "v" not in raw else dict(raw)
    as_given.setdefault("v", 2)
    key = spec["key"]
    if is_id_pattern(key):
        for field in as_given:
            if field not in _ID_INDEX_FIELDS:
                raise MongoError("InvalidIndexSpecificationOption", f"The field '{field}' is not valid for an _id index "
                                                                    f"specification. Specification: {bson_str(as_given)}")
    elif spec["name"] == "_id_":
        raise MongoError("BadValue", "The index name '_id_' is reserved for the _id index, which must have key pattern "
                                     f"{{_id: 1}}, found {bson_str(key)}")
    elif spec["name"] == "*":
        raise MongoError("BadValue", "The index name '*' is not valid.")
    if "expireAfterSeconds" not in spec:
        return
    reason = _ttl_value_error(spec["expireAfterSeconds"])
    if reason is not None:
        raise MongoError("CannotCreateIndex", f". Index spec: {bson_str(as_given)} :: caused by :: {reason}")
    if len(key) != 1:
        raise MongoError("CannotCreateIndex", "TTL indexes are single-field indexes, compound indexes do not support "
                                              f"TTL. Index spec: {bson_str(as_given)}")


def _ttl_value_error(value: Any) -> str | None:
    from mongosim.shardsim.query.values import type_name

    if isinstance(value, bool) or not isinstance(value, (int, Int64, float, Decimal128)):
        return f"TTL index 'expireAfterSeconds' option must be numeric, but received a type of '{type_name(value)}"
    number = value.to_decimal() if isinstance(value, Decimal128) else value
    if number != number:
        return "TTL index 'expireAfterSeconds' option must not be NaN"
    as_long = _safe_long(number)
    if not -_INT32_MAX - 1 <= as_long <= _INT32_MAX:
        return "TTL index 'expireAfterSeconds' must be within the range of a 32-bit integer"
    if as_long < 0:
        return "TTL index 'expireAfterSeconds' option cannot be less than 0"
    return None


def _safe_long(number: Any) -> int:
    """BSONElement::safeNumberLong: truncated toward zero, saturated at the int64 bounds (inf too)."""
    if isinstance(number, float) and math.isinf(number) or getattr(number, "is_infinite", lambda: False)():
        return 2**63 - 1 if number > 0 else -2**63
    return max(-2**63, min(2**63 - 1, int(number)))
