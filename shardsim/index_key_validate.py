"""Index specifications: what createIndexes accepts, and the spec it stores (index_key_validate.cpp).

- The key pattern: numbers other than 0 and NaN, or one plugin name ("text",
  "2d", "2dsphere", "hashed"; `$**` for a wildcard index), no `$`-prefixed or
  empty path component, no field twice.
- `partialFilterExpression`: a document the matcher parses, built only of
  equality, `$lt/$lte/$gt/$gte`, `$exists: true`, `$type`, `$in`, `$and`,
  `$or` (IndexCatalogImpl::_checkValidFilterExpressions, the feature set of
  8.0), at most four levels deep, never together with `sparse`.
- A text index (FTSSpec::fixSpec): its text fields become `_fts: "text",
  _ftsx: 1` in the key, with `weights` (1 each unless given), `default_language`
  ("english"), `language_override` ("language") and `textIndexVersion: 3`, as
  listIndexes shows it.

Errors are the server's: CannotCreateIndex 67 (or the parser's), wrapped as
`Error in specification { ... } :: caused by :: <reason>`.
"""

from __future__ import annotations

import math
from typing import Any

from bson import Decimal128, Int64

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.index_keys import index_name
from mongosim.shardsim.query.matcher import Matcher, truthy_arg
from mongosim.shardsim.query.values import describe_type
from mongosim.shardsim.query.wildcard_key_generator import WildcardProjection, parse_projection

PLUGINS = ("2d", "2dsphere", "2dsphere_bucket", "text", "hashed", "wildcard")
TEXT_DEFAULTS = {"default_language": "english", "language_override": "language"}
MAX_PARTIAL_DEPTH = 4  # internalPartialFilterExpressionMaxDepth
MAX_WORD_WEIGHT = 1_000_000_000
_LANGUAGES = {"none", "danish", "dutch", "english", "finnish", "french", "german", "hungarian", "italian",
              "norwegian", "portuguese", "romanian", "russian", "spanish", "swedish", "turkish", "da", "nl", "en",
              "fi", "fr", "de", "hu", "it", "nb", "pt", "ro", "ru", "es", "sv", "tr"}


def _spec_error(spec: dict, reason: MongoError) -> MongoError:
    return MongoError(reason.code, f"Error in specification {bson_str(spec)} :: caused by :: {reason.errmsg}")


def plugin_name(key: dict) -> str:
    """IndexNames::findPluginName: the first string value, "wildcard" for `$**`, else "" (btree)."""
    for field, v in key.items():
        if isinstance(v, str):
            return v
        if field == "$**" or field.endswith(".$**"):
            return "wildcard"
    return ""


def validate_key_pattern(key: dict) -> None:
    plugin = plugin_name(key)
    if plugin and plugin not in PLUGINS:
        raise MongoError("CannotCreateIndex", f"Unknown index plugin '{plugin}'")
    for field, v in key.items():
        if isinstance(v, bool) or not isinstance(v, (int, float, Int64, Decimal128, str)):
            raise MongoError("CannotCreateIndex", f"Values in v:2 index key pattern cannot be of type {describe_type(v)}. "
                                                  "Only numbers > 0, numbers < 0, and strings are allowed.")
        if not isinstance(v, str):
            x = float(v.to_decimal()) if isinstance(v, Decimal128) else float(v)
            if math.isnan(x):
                raise MongoError("CannotCreateIndex", "Values in the index key pattern cannot be NaN.")
            if x == 0:
                raise MongoError("CannotCreateIndex", "Values in the index key pattern cannot be 0.")
        elif v != plugin:
            raise MongoError("CannotCreateIndex", "Can't use more than one index plugin for a single index.")
        if plugin == "wildcard" and sum(1 for f in key if f == "$**" or f.endswith(".$**")) > 1:
            raise MongoError("CannotCreateIndex", "A wildcard index can have only one wildcard field")
        if field == "$**" and (not isinstance(v, str) or v == "text"):
            continue
        if field == "_fts" and v != "text":
            raise MongoError("CannotCreateIndex", "Index key contains an illegal field name: '_fts'")
        parts = field.split(".")
        for i, part in enumerate(parts):
            if part == "":
                raise MongoError("CannotCreateIndex", "Index keys cannot contain an empty field.")
            if part.startswith("$") and not (i and part in ("$db", "$id", "$ref")) \
                    and not (i == len(parts) - 1 and part == "$**" and plugin == "wildcard"):
                raise MongoError("CannotCreateIndex", "Index key contains an illegal field name: field name starts "
                                                      "with '$'.")


# -- partial filter expressions -------------------------------------------------------------------
def debug_string(flt: dict, level: int = 0) -> str:
    """MatchExpression::debugString of a filter (the form the server quotes in errors)."""
    items = list(flt.items())
    if len(items) != 1:
        return _indent(level) + "$and\n" + "".join(debug_string({k: v}, level + 1) for k, v in items)
    key, val = items[0]
    pad = _indent(level)
    if key in ("$and", "$or", "$nor"):
        return pad + key + "\n" + "".join(debug_string(sub, level + 1) for sub in val if isinstance(sub, dict))
    if key.startswith("$"):
        return pad + key + "\n"
    if isinstance(val, dict) and val and next(iter(val)).startswith("$"):
        ops = [(op, arg) for op, arg in val.items() if op != "$options"]
        if len(ops) > 1:
            return pad + "$and\n" + "".join(debug_string({key: {op: arg}}, level + 1) for op, arg in ops)
        op, arg = ops[0]
        return _leaf_debug(key, op, arg, val, level)
    if hasattr(val, "pattern"):
        return pad + f"{key} regex /{val.pattern}/\n"
    return pad + f"{key} $eq {bson_str(val)}\n"


def _indent(level: int) -> str:
    return "    " * level


def _leaf_debug(path: str, op: str, arg: Any, ops: dict, level: int) -> str:
    pad = _indent(level)
    if op in ("$eq", "$lt", "$lte", "$gt", "$gte"):
        return pad + f"{path} {op} {bson_str(arg)}\n"
    if op == "$ne":
        return pad + "$not\n" + _indent(level + 1) + f"{path} $eq {bson_str(arg)}\n"
    if op in ("$in", "$nin"):
        body = f"{path} $in [ " + "".join(bson_str(x) + " " for x in (arg if isinstance(arg, list) else [])) + "]\n"
        return pad + body if op == "$in" else pad + "$not\n" + _indent(level + 1) + body
    if op == "$exists":
        truthy = arg not in (False, 0, None)
        return pad + f"{path} exists\n" if truthy else pad + "$not\n" + _indent(level + 1) + f"{path} exists\n"
    if op == "$regex":
        return pad + f"{path} regex /{arg if isinstance(arg, str) else arg.pattern}/{ops.get('$options', '')}\n"
    if op == "$not":
        inner = arg if isinstance(arg, dict) else {"$regex": arg}
        return pad + "$not\n" + _leaf_debug(path, next(iter(inner)), next(iter(inner.values())), inner, level + 1)
    if op == "$elemMatch":
        kind = "(value)" if isinstance(arg, dict) and arg and next(iter(arg)).startswith("$") else "(obj)"
        return pad + f"{path} $elemMatch {kind}\n"
    if op == "$mod":
        d, r = (arg + [0, 0])[:2] if isinstance(arg, list) else (arg, 0)
        return pad + f"{path} mod {bson_str(d)} % x == {bson_str(r)}\n"
    if op == "$size":
        return pad + f"{path} $size : {bson_str(arg)}\n"
    return pad + f"{path} {op} {bson_str(arg)}\n"


_ALLOWED_OPS = {"$eq", "$lt", "$lte", "$gt", "$gte", "$type", "$in", "$_internalExprEq", "$_internalExprLt",
                "$_internalExprLte", "$_internalExprGt", "$_internalExprGte"}  # (the latter: time-series buckets')


def _check_partial(flt: dict, level: int) -> None:
    if level + 1 > MAX_PARTIAL_DEPTH:
        raise MongoError("CannotCreateIndex", f"partialFilterExpression depth may not exceed {MAX_PARTIAL_DEPTH}")
    items = list(flt.items())
    if len(items) > 1:  # an implicit $and
        for k, v in items:
            _check_partial({k: v}, level + 1)
        return
    if not items:
        return
    key, val = items[0]
    if key in ("$and", "$or"):
        for sub in val:
            _check_partial(sub, level + 1)
        return
    if key.startswith("$"):
        raise MongoError("CannotCreateIndex", "Expression not supported in partial index: " + debug_string(flt))
    if isinstance(val, dict) and val and next(iter(val)).startswith("$"):
        ops = [op for op in val if op != "$options"]
        if len(ops) > 1:
            for op in ops:
                _check_partial({key: {op: val[op]}}, level + 1)
            return
        op = ops[0]
        if op in _ALLOWED_OPS or (op == "$exists" and val[op] not in (False, 0, None)):
            return
        raise MongoError("CannotCreateIndex", "Expression not supported in partial index: " + debug_string(flt))
    if hasattr(val, "pattern"):
        raise MongoError("CannotCreateIndex", "Expression not supported in partial index: " + debug_string(flt))


def validate_partial_filter(pfe: Any) -> None:
    if not isinstance(pfe, dict):
        raise MongoError("TypeMismatch", "The field 'partialFilterExpression' must be an object, but got "
                                         f"{describe_type(pfe)}")
    for banned, code in (("$expr", "QueryFeatureNotAllowed"), ("$where", "BadValue"), ("$text", "BadValue"),
                         ("$jsonSchema", "QueryFeatureNotAllowed")):
        if _mentions(pfe, banned):
            raise MongoError(code, f"{banned} is not allowed in this context")
    Matcher(pfe)  # (the parser's own errors first)
    _check_partial(pfe, 0)


def _mentions(v: Any, op: str) -> bool:
    if isinstance(v, dict):
        return any(k == op or _mentions(x, op) for k, x in v.items())
    if isinstance(v, list):
        return any(_mentions(x, op) for x in v)
    return False


# -- text indexes ---------------------------------------------------------------------------------
def fix_text_spec(spec: dict) -> dict:
    """FTSSpec::fixSpec: the stored form of a text index spec."""
    weights: dict[str, int] = {}
    key: dict[str, Any] = {}
    added = False
    for field, v in spec["key"].items():
        if field == "_fts":
            if v != "text":
                raise MongoError("CannotCreateIndex", 'expecting _fts:"text"')
            key[field], added = v, True
        elif field == "_ftsx":
            if v != 1:
                raise MongoError("CannotCreateIndex", "expecting _ftsx:1")
            key[field] = v
        elif v == "text":
            if not added:
                key["_fts"], key["_ftsx"] = "text", 1
                added = True
            weights[field] = 1
        else:
            if v not in (1, -1):
                raise MongoError("CannotCreateIndex", "expected value 1 or -1 for non-text key in compound index")
            key[field] = v
    fields = list(spec["key"].items())
    i = 0
    while i < len(fields) and not isinstance(fields[i][1], str):
        if fields[i][0] in ("_fts", "_ftsx"):
            raise MongoError("CannotCreateIndex", "text index with reserved fields _fts/_ftsx not allowed")
        i += 1
    if i < len(fields) and fields[i][0] != "_fts":
        while i < len(fields) and isinstance(fields[i][1], str):
            i += 1
        for f, v in fields[i:]:
            if isinstance(v, str):
                raise MongoError("CannotCreateIndex", "'text' fields in index must all be adjacent")
    w = spec.get("weights")
    if isinstance(w, dict):
        for f, x in w.items():
            if isinstance(x, bool) or not isinstance(x, (int, float, Int64)):
                raise MongoError("CannotCreateIndex", "weight for text index needs numeric type")
            weights[f] = int(x)
    elif w == "$**":
        weights["$**"] = 1
    elif w is not None:
        raise MongoError("CannotCreateIndex", "text index option 'weights' must be an object")
    if not weights:
        raise MongoError("CannotCreateIndex", "text index option 'weights' must specify fields or the wildcard")
    for f, x in weights.items():
        if x <= 0 or x >= MAX_WORD_WEIGHT:
            raise MongoError("CannotCreateIndex", "text index weight must be in the exclusive interval (0,"
                                                  f"{MAX_WORD_WEIGHT}) but found: {x}")
        if f != "$**":
            for part in f.split("."):
                if not part:
                    raise MongoError("CannotCreateIndex", "weight cannot have empty path component")
                if part.startswith("$"):
                    raise MongoError("CannotCreateIndex", "weight cannot have path component with $ prefix")
    lang = spec.get("default_language", TEXT_DEFAULTS["default_language"])
    if not isinstance(lang, str):
        raise MongoError("CannotCreateIndex", "default_language needs a string type")
    if lang not in _LANGUAGES:
        raise MongoError("CannotCreateIndex", "default_language is not valid")
    override = spec.get("language_override", TEXT_DEFAULTS["language_override"])
    if not isinstance(override, str):
        raise MongoError("CannotCreateIndex", "language_override must be a string")
    version = spec.get("textIndexVersion", 3)
    if isinstance(version, bool) or not isinstance(version, (int, float, Int64)):
        raise MongoError("CannotCreateIndex", "text index option 'textIndexVersion' must be a number")
    if int(version) not in (2, 3):
        raise MongoError("CannotCreateIndex", f"bad textIndexVersion: {int(version)}")
    out: dict[str, Any] = {}
    for k, v in spec.items():
        if k == "key":
            out["key"] = key
        elif k == "weights":
            out["weights"] = dict(sorted(weights.items()))
        elif k == "default_language":
            out["default_language"] = lang
        elif k == "language_override":
            out["language_override"] = override
        elif k != "textIndexVersion":
            out[k] = v
    out.setdefault("weights", dict(sorted(weights.items())))
    out.setdefault("default_language", lang)
    out.setdefault("language_override", override)
    out["textIndexVersion"] = int(version)
    return out


# -- the whole spec -------------------------------------------------------------------------------
def validate_index_spec(spec: Any) -> dict:
    """The spec createIndexes stores: `{v: 2, key, name, ...options}`, checked as the server does."""
    if not isinstance(spec, dict):
        raise MongoError("TypeMismatch", "The field 'indexes' must be an array of objects")
    key = spec.get("key")
    try:
        if key is None:
            raise MongoError("FailedToParse", "The 'key' field is a required property of an index specification")
        if not isinstance(key, dict):
            raise MongoError("TypeMismatch", f"The field 'key' must be an object, but got {describe_type(key)}")
        if not key:
            raise MongoError("CannotCreateIndex", "Index keys cannot be empty.")
        validate_key_pattern(key)
        name = spec.get("name")
        if name is not None and not isinstance(name, str):
            raise MongoError("TypeMismatch", f"The field 'name' must be a string, but got {describe_type(name)}")
        if name == "":
            raise MongoError("CannotCreateIndex", "index name cannot be empty")
    except MongoError as err:
        raise _spec_error(spec, err) from None
    # the catalog's form (IndexCatalogImpl::_fixIndexSpec): v, then `unique`/`hidden` as `true` when set
    # (dropped when false), key, name, then the other fields as given (`ns`, `dropDups` and `_id` dropped)
    out: dict[str, Any] = {"v": 2}
    for flag in ("unique", "hidden"):
        if truthy_arg(spec.get(flag)):  # (BSONElement::trueValue)
            out[flag] = True
    out["key"] = dict(key)
    out["name"] = name or index_name(key)
    for k, v in spec.items():
        if k not in ("v", "key", "name", "ns", "unique", "hidden", "dropDups", "_id"):
            out[k] = v
    plugin = plugin_name(key)
    original = {**{k: v for k, v in spec.items() if k != "v"}, "v": 2}
    try:
        if "partialFilterExpression" in spec:
            if spec.get("sparse"):
                raise MongoError("CannotCreateIndex", 'cannot mix "partialFilterExpression" and "sparse" options')
            validate_partial_filter(spec["partialFilterExpression"])
        if plugin == "hashed" and spec.get("unique"):
            raise MongoError("CannotCreateIndex", "Currently hashed indexes cannot guarantee uniqueness. Use a "
                                                  "regular index.")
        if plugin == "text":
            out = fix_text_spec(out)
        if plugin == "2dsphere":
            out.setdefault("2dsphereIndexVersion", 3)  # (S2IndexingParams: the version new indexes get)
        if spec.get("hidden") and list(key) == ["_id"]:
            raise MongoError("BadValue", "can't hide _id index")
        if plugin == "wildcard" or "wildcardProjection" in spec:
            validate_wildcard_spec(key, spec, plugin)
    except MongoError as err:
        raise _spec_error(original, err) from None
    return out


def validate_wildcard_spec(key: dict, spec: dict, plugin: str) -> None:
    """A wildcard index's options (index_key_validate.cpp, IndexCatalogImpl::_isSpecOk): no sparse, unique or
    TTL; `wildcardProjection` only on `{$**: ±1}` (a compound `$**` index needs one, excluding its regular
    fields), a non-empty document the projection parser accepts."""
    proj = spec.get("wildcardProjection")
    if "wildcardProjection" in spec:
        if plugin != "wildcard":
            raise MongoError("BadValue", "The field 'wildcardProjection' is only allowed in 'wildcard' indexes")
        if not isinstance(proj, dict):
            raise MongoError("TypeMismatch", "The field 'wildcardProjection' must be a non-empty object, but got "
                                             f"{describe_type(proj)}")
        if "$**" not in key:
            raise MongoError("FailedToParse", "The field 'wildcardProjection' is only allowed when 'key' is "
                                              '{"$**": ±1} or {"$**": "columnstore"}')
        if not proj:
            raise MongoError("FailedToParse", "The 'wildcardProjection' field can't be an empty object")
        try:
            parse_projection(proj)
        except MongoError as err:
            raise MongoError(err.code, f"Failed to parse projection: wildcardProjection :: caused by :: "
                                       f"{err.errmsg}") from None
    if "$**" in key and len(key) > 1 and proj is None:
        raise MongoError("CannotCreateIndex", "Compound wildcard indexes on all fields must also specify "
                                              "'wildcardProjection' option")
    if spec.get("sparse"):
        raise MongoError("CannotCreateIndex", "Index type 'wildcard' does not support the sparse option")
    if spec.get("unique"):
        raise MongoError("CannotCreateIndex", "Index type 'wildcard' does not support the unique option")
    if "expireAfterSeconds" in spec:
        raise MongoError("CannotCreateIndex", "Index type 'wildcard' cannot be a TTL index")
    if len(key) > 1:
        projection = WildcardProjection(key, proj)
        for field in key:
            if field == "$**" or field.endswith(".$**"):
                continue
            if projection.reaches(field):
                raise MongoError("CannotCreateIndex", "Compound wildcard index field overlaps with the wildcard "
                                                      f"field: '{field}'")
