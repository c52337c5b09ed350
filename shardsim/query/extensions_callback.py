"""What the query layer leaves to other layers (the server's ExtensionsCallback): the `$text` operator's
parameters, and the path operators other packages provide (geo: `$geoWithin`, `$near`, ...), which
register here so the matcher can compile them without importing them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.values import describe_type

# operator name -> compile(op, arg) -> (test(value) -> bool, expand_leaf_arrays)
PATH_OPERATORS: dict[str, Callable[[str, Any], tuple[Callable[[Any], bool], bool]]] = {}


def register_path_operator(name: str, compile_fn: Callable[[str, Any], tuple[Callable[[Any], bool], bool]]) -> None:
    PATH_OPERATORS[name] = compile_fn


def mentions(flt: Any, ops: frozenset | set) -> bool:
    """Whether a filter uses one of these operators anywhere."""
    if type(flt) is dict:
        return any(k in ops or mentions(v, ops) for k, v in flt.items())
    if type(flt) is list:
        return any(mentions(v, ops) for v in flt)
    return False


TEXT_OPS = frozenset({"$text"})
WHERE_OPS = frozenset({"$where"})
FUNCTION_OPS = frozenset({"$function"})


def where_not_allowed() -> MongoError:
    """A pipeline's matcher has no JavaScript feature (Pipeline::kAllowedMatcherFeatures), nor a validator's."""
    return MongoError("BadValue", "$where is not allowed in this context")
NEAR_OPS = frozenset({"$near", "$nearSphere", "$geoNear"})


def near_not_allowed() -> MongoError:
    return MongoError("BadValue", "$geoNear, $near, and $nearSphere are not allowed in this context")


def check_match_stage(spec: dict) -> None:
    """A `$match` that is not a pipeline's first (or one of a change stream): no `$text`, no `$near`."""
    if mentions(spec, TEXT_OPS):
        raise MongoError(17313, "$match with $text is only allowed as the first pipeline stage")
    if mentions(spec, NEAR_OPS):
        raise near_not_allowed()
    if mentions(spec, WHERE_OPS):
        raise where_not_allowed()


def check_pipeline(pipeline: list) -> None:
    """A `$text` may only be in a pipeline's first `$match` (17313), a `$near` in none."""
    for i, st in enumerate(pipeline):
        if isinstance(st, dict) and len(st) == 1 and "$match" in st:
            if i and mentions(st["$match"], TEXT_OPS):
                raise MongoError(17313, "$match with $text is only allowed as the first pipeline stage")
            if mentions(st["$match"], NEAR_OPS):
                raise near_not_allowed()
            if mentions(st["$match"], WHERE_OPS):
                raise where_not_allowed()


@dataclass(frozen=True)
class TextParams:
    query: str
    language: str = ""  # "" : the index's default language
    case_sensitive: bool = False
    diacritic_sensitive: bool = False

    def to_bson(self, language: str) -> dict:
        """The `$text` clause as explain's parsedQuery shows it."""
        return {"$text": {"$search": self.query, "$language": language, "$caseSensitive": self.case_sensitive,
                          "$diacriticSensitive": self.diacritic_sensitive}}


def _typed(obj: dict, name: str, kind: type, kind_name: str) -> Any:
    v = obj[name]
    if kind is bool and type(v) is not bool or kind is str and type(v) is not str:
        raise MongoError("TypeMismatch", f'"{name}" had the wrong type. Expected {kind_name}, found {describe_type(v)}')
    return v


def parse_text(arg: Any) -> TextParams:
    """extractTextMatchExpressionParams: the `$text` object's fields, checked."""
    if type(arg) is not dict:
        raise MongoError("BadValue", "$text expects an object")
    if "$search" not in arg:
        raise MongoError("NoSuchKey", 'Missing expected field "$search"')
    query = _typed(arg, "$search", str, "string")
    expected = 1
    language = ""
    case_sensitive = diacritic_sensitive = False
    if "$language" in arg:
        language = _typed(arg, "$language", str, "string")
        expected += 1
    if "$caseSensitive" in arg:
        case_sensitive = _typed(arg, "$caseSensitive", bool, "bool")
        expected += 1
    if "$diacriticSensitive" in arg:
        diacritic_sensitive = _typed(arg, "$diacriticSensitive", bool, "bool")
        expected += 1
    if len(arg) != expected:
        raise MongoError("BadValue", "extra fields in $text")
    return TextParams(query, language, case_sensitive, diacritic_sensitive)
