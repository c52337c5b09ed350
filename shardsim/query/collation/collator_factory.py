"""CollatorFactoryICU::makeFromBSON: a collation document in, a collator (or None: simple) out.

The document is parsed as the server's IDL struct `Collation` (basic_types.idl: strict,
typed fields, `strength` any number in 0..5), then:

* `locale: "simple"` is the simple (binary) collation: no collator;
* the locale must be one ICU knows verbatim (`locales.LOCALES`), else BadValue
  "Field 'locale' is invalid in: {...}" with ". Did you mean '<fallback>'?";
* every attribute the document leaves out takes the locale's default, and the result
  is the normalised document every listing echoes (`listCollections`, `listIndexes`,
  explain): locale, caseLevel, caseFirst, strength, numericOrdering, alternate,
  maxVariable, normalization, backwards, version "57.1";
* combinations ICU ignores are refused (validateCollationSpec): `backwards` at strength
  1, `caseFirst` without caseLevel below strength 3.

Collators are cached by their normalised document, so equal collations share one
comparison-key cache.  Source: src/mongo/db/query/collation/collator_factory_icu.cpp.
"""

from __future__ import annotations

from typing import Any

from bson import Decimal128, Int64

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.collation.collator_interface import CollatorInterface
from mongosim.shardsim.query.collation.locales import LOCALES, fallback_of, locale_defaults
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.idl_errors import wrong_type

__all__ = ["make_collator", "ICU_VERSION"]

ICU_VERSION = "57.1"
_FIELDS = ("locale", "caseLevel", "caseFirst", "strength", "numericOrdering", "alternate", "maxVariable",
           "normalization", "backwards", "version")
_ENUMS = {"caseFirst": ("upper", "lower", "off"), "alternate": ("non-ignorable", "shifted"),
          "maxVariable": ("punct", "space")}
_BOOLS = ("caseLevel", "numericOrdering", "normalization", "backwards")
_CACHE: dict[Any, CollatorInterface] = {}


def _strength(ctx: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float, Int64, Decimal128)):
        raise wrong_type(f"{ctx}.strength", v, ("long", "int", "decimal", "double"))
    f = float(v.to_decimal()) if isinstance(v, Decimal128) else float(v)
    if f != f or not -(2**31) <= f < 2**31:
        raise MongoError("BadValue", f"Expected an integer: strength: {bson_str(v)}")
    n = int(f)
    if n < 0:
        raise MongoError(51024, f"BSON field 'strength' value must be >= 0, actual value '{n}'")
    if n > 5:
        raise MongoError(51024, f"BSON field 'strength' value must be <= 5, actual value '{n}'")
    return n


def _parse(spec: Any, ctx: str) -> dict:
    """The IDL parse: known fields, their types and enumerations."""
    if not isinstance(spec, dict):
        raise wrong_type(ctx, spec, "object")
    for field in spec:
        if field not in _FIELDS:
            raise MongoError("IDLUnknownField", f"BSON field '{ctx}.{field}' is an unknown field.")
    if "locale" not in spec:
        raise MongoError("IDLFailedToParse", f"BSON field '{ctx}.locale' is missing but a required field")
    out: dict[str, Any] = {}
    for field, v in spec.items():
        if field in ("locale", "version") or field in _ENUMS:
            if not isinstance(v, str):
                raise wrong_type(f"{ctx}.{field}", v, "string")
            if field in _ENUMS and v not in _ENUMS[field]:
                raise MongoError("BadValue", f"Enumeration value '{v}' for field '{ctx}.{field}' is not a valid value.")
        elif field in _BOOLS:
            if not isinstance(v, bool):
                raise wrong_type(f"{ctx}.{field}", v, "bool")
        elif field == "strength":
            v = _strength(ctx, v)
            if v == 0:
                raise MongoError("BadValue", f"Enumeration value '0' for field '{ctx}.strength' is not a valid value.")
        out[field] = v
    return out


def make_collator(spec: Any, ctx: str = "collation") -> CollatorInterface | None:
    """The collator of a collation document (None for the simple collation); the server's errors."""
    parsed = _parse(spec, ctx)
    locale = parsed["locale"]
    if "\0" in locale:
        raise MongoError("BadValue", f"Field 'locale' cannot contain null byte. Collation spec: {bson_str(spec)}")
    if locale == "simple":
        return None
    if not locale:
        raise MongoError("BadValue", f"Field 'locale' cannot be the empty string in: {bson_str(spec)}")
    if locale not in LOCALES:
        msg = f"Field 'locale' is invalid in: {bson_str(spec)}"
        hint = fallback_of(locale)
        if hint:
            msg += f". Did you mean '{hint}'?"
        raise MongoError("BadValue", msg)
    normalised = {"locale": locale, **locale_defaults(locale)}
    for field in _FIELDS[1:-1]:
        if field in parsed:
            normalised[field] = parsed[field]
    version = parsed.get("version", ICU_VERSION)
    if version != ICU_VERSION:
        raise MongoError("IncompatibleCollationVersion",
                         f"Requested collation version {version} but the only available collator version was "
                         f"{ICU_VERSION}. Requested collation spec: {bson_str(spec)}")
    normalised["version"] = ICU_VERSION
    if normalised["backwards"] and normalised["strength"] == 1:
        raise MongoError("BadValue", f"'backwards' is invalid with 'strength' of 1 in: {bson_str(spec)}")
    if normalised["caseFirst"] != "off" and not normalised["caseLevel"] and normalised["strength"] <= 2:
        raise MongoError("BadValue", "'caseFirst' is invalid unless 'caseLevel' is on or 'strength' is greater "
                                     f"than 2 in: {bson_str(spec)}")
    frozen = tuple(normalised.items())
    coll = _CACHE.get(frozen)
    if coll is None:
        coll = _CACHE[frozen] = CollatorInterface(normalised)
    return coll
