"""`$jsonSchema`: the server's JSONSchemaParser, translating a schema into match expression nodes.

The server does not validate JSON Schema directly: it translates each keyword
into a MatchExpression (json_schema_parser.cpp) and matches that.  The
translation matters beyond matching, because validation errors
(`shardsim.doc_validation_error`) walk the translated tree, so its shape and
order are the server's:

* a (sub)schema is an AND (`_subschema`) of its keywords, in the parser's fixed
  order: pattern, maxLength, minLength, multipleOf, maximum, minimum, minItems,
  maxItems, uniqueItems, items, additionalItems, encrypt, properties,
  patternProperties/additionalProperties, required, minProperties,
  maxProperties, dependencies, allOf, anyOf, oneOf, not, enum — then `type`;
* a keyword that only applies to one type (maximum: numbers) is a
  "restriction": `OR(NOT(type is number), <keyword>)`, or the keyword alone
  when the schema states that type, or always-true when it states another;
* a property's schema is parsed with the property name as its path and wrapped
  in `OR(NOT(exists), ...)` unless the property is required; a nested schema
  (items, additionalProperties, patternProperties) is parsed against the
  placeholder path `i` and matched against `{i: <value>}`;
* a schema at the top level that requires a type other than object matches
  nothing (only objects are stored).

Keywords: type, bsonType, properties, required, additionalProperties,
patternProperties, items, additionalItems, minItems, maxItems, uniqueItems,
minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf, minLength,
maxLength, pattern, enum, minProperties, maxProperties, dependencies, allOf,
anyOf, oneOf, not, title, description, encrypt (the BinData subtype only).
"""

from __future__ import annotations

import decimal
from typing import Any

from bson import Binary, Decimal128, Int64

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.match_expression import (
    DESCEND,
    IGNORE,
    MATCHERS,
    NO_TRAVERSAL,
    Node,
    ignore_tree,
    leaf,
    register_json_schema,
    value_at,
    values_at,
)
from mongosim.shardsim.query.matcher import TOP_LEVEL_EXTENSIONS
from mongosim.shardsim.query.regex import compile_regex
from mongosim.shardsim.query.values import MISSING, TYPE_ALIASES, bson_equal, hashable, type_number

PLACEHOLDER = "i"
NUMBER_TYPES = frozenset({1, 16, 18, 19})
_JSON_TYPES = {"array": 4, "boolean": 8, "null": 10, "object": 3, "string": 2}
_KEYWORDS = frozenset({
    "additionalItems", "additionalProperties", "allOf", "anyOf", "bsonType", "dependencies", "description",
    "encrypt", "encryptMetadata", "enum", "exclusiveMaximum", "exclusiveMinimum", "items", "maxItems",
    "maxLength", "maxProperties", "maximum", "minItems", "minLength", "minProperties", "minimum", "multipleOf",
    "not", "oneOf", "pattern", "patternProperties", "properties", "required", "title", "type", "uniqueItems",
})
_UNSUPPORTED = frozenset({"$ref", "$schema", "default", "definitions", "format", "id"})


def _fail(code: str, msg: str) -> MongoError:
    return MongoError(code, msg)


def _bson_type_name(v: Any) -> str:
    try:
        return {v2: k for k, v2 in TYPE_ALIASES.items()}[type_number(v)]
    except (KeyError, TypeError):
        return "unknown"


def _is_number(v: Any) -> bool:
    return type(v) in (int, float, Int64, Decimal128)


# -- the parser ----------------------------------------------------------------------------
def parse(schema: Any) -> Node:
    """JSONSchemaParser::parse: the tree for a `$jsonSchema` (its top node tagged `$jsonSchema`)."""
    if not isinstance(schema, dict):
        raise MongoError("TypeMismatch", "$jsonSchema must be an object")
    node = _parse("", schema)
    if node.kind == "and":
        node.tag, node.schema_ann = "$jsonSchema", _annotations(schema)
    return node


def _annotations(schema: dict) -> dict:
    out = {}
    for key in ("title", "description"):
        if isinstance(schema.get(key), str):
            out[key] = schema[key]
    return out


class _TypeSet:
    """MatcherTypeSet: BSON type codes, and 'number' (every numeric type)."""

    def __init__(self, codes: frozenset, all_numbers: bool) -> None:
        self.codes, self.all_numbers = codes, all_numbers

    @property
    def single(self) -> bool:
        return (self.all_numbers and not self.codes) or (not self.all_numbers and len(self.codes) == 1)

    def has(self, code: int) -> bool:
        return (self.all_numbers and code in NUMBER_TYPES) or code in self.codes

    def matches(self, v: Any) -> bool:
        if v is MISSING:
            return False
        try:
            return self.has(type_number(v))
        except TypeError:
            return False


def _type_set(keyword: str, value: Any, aliases: dict[str, int]) -> _TypeSet:
    if not isinstance(value, (str, list)):
        raise _fail("TypeMismatch", f"$jsonSchema keyword '{keyword}' must be either a string or an array of strings")
    names = [value] if isinstance(value, str) else value
    seen: set[str] = set()
    for name in names:
        if not isinstance(name, str):
            raise _fail("TypeMismatch", f"$jsonSchema keyword '{keyword}' array elements must be strings")
        if name == "integer":
            raise _fail("FailedToParse", "$jsonSchema type 'integer' is not currently supported.")
        if name in seen:
            raise _fail("FailedToParse", f"$jsonSchema keyword '{keyword}' has duplicate value: {name}")
        seen.add(name)
    codes, numbers = set(), False
    for name in names:
        if name == "number":
            numbers = True
        elif name in aliases:
            codes.add(aliases[name])
        else:
            raise _fail("BadValue", f"Unknown type name alias: {name}")
    if not codes and not numbers:
        raise _fail("FailedToParse", f"$jsonSchema keyword '{keyword}' must name at least one type")
    return _TypeSet(frozenset(codes), numbers)


def _type_node(path: str, types: _TypeSet, tag: str = "", spec: dict | None = None, mode: str = "generate") -> Node:
    return Node("schema_type", tag, spec, mode=mode, path=path, arg=types)


def _restriction(path: str, restriction: _TypeSet, expr: Node, stated: Node | None) -> Node:
    """makeRestriction: `expr` applies only to values of `restriction`'s type."""
    if stated is not None and stated.arg.single:
        code = 16 if stated.arg.all_numbers else next(iter(stated.arg.codes))
        return expr if restriction.has(code) else Node("true", mode=IGNORE)
    not_type = Node("not", mode=IGNORE, children=[_type_node(path, restriction, mode=IGNORE)])
    return Node("or", mode=DESCEND, children=[not_type, expr])


_NUMBERS = _TypeSet(frozenset(), True)
_STRING, _OBJECT, _ARRAY = (_TypeSet(frozenset({c}), False) for c in (2, 3, 4))


def _non_negative(keyword: str, v: Any) -> int:
    """parseIntegerElementToNonNegativeLong."""
    if not _is_number(v):
        raise _fail("TypeMismatch", f"Expected a number in: {keyword}: {v!r}")
    d = v.to_decimal() if isinstance(v, Decimal128) else decimal.Decimal(v if not isinstance(v, float) else repr(v))
    if d != d.to_integral_value():
        raise _fail("FailedToParse", f"Expected an integer: {keyword}: {v!r}")
    if d < 0:
        raise _fail("FailedToParse", f"Expected a positive number in: {keyword}: {v!r}")
    return int(d)


def _object_match(path: str, inner: Node, stated: Node | None) -> Node:
    if not path:
        return inner
    om = Node("object_match", mode=DESCEND, path=path, children=[inner])
    return _restriction(path, _OBJECT, om, stated)


def _parse(path: str, schema: dict) -> Node:
    kw: dict[str, Any] = {}
    for key, value in schema.items():
        if key not in _KEYWORDS:
            if key in _UNSUPPORTED:
                raise _fail("FailedToParse", f"$jsonSchema keyword '{key}' is not currently supported")
            raise _fail("FailedToParse", f"Unknown $jsonSchema keyword: {key}")
        if key in kw:
            raise _fail("FailedToParse", f"Duplicate $jsonSchema keyword: {key}")
        kw[key] = value
    for key in ("description", "title"):
        if key in kw and not isinstance(kw[key], str):
            raise _fail("TypeMismatch", f"$jsonSchema keyword '{key}' must be of type string")
    if "type" in kw and "bsonType" in kw:
        raise _fail("FailedToParse", "Cannot specify both $jsonSchema keywords 'type' and 'bsonType'")
    for other in ("type", "bsonType"):
        if other in kw and "encrypt" in kw:
            raise _fail("FailedToParse", f"$jsonSchema keyword 'encrypt' cannot be used in conjunction with '{other}', "
                                         "'encrypt' implies type 'bsonType::BinData'")
    stated = None
    if "type" in kw:
        stated = _type_node(path, _type_set("type", kw["type"], _JSON_TYPES), "type", {"type": kw["type"]})
    elif "bsonType" in kw:
        stated = _type_node(path, _type_set("bsonType", kw["bsonType"], TYPE_ALIASES), "bsonType",
                            {"bsonType": kw["bsonType"]})
    elif "encrypt" in kw:
        stated = _type_node(path, _TypeSet(frozenset({5}), False), mode=IGNORE)
    node = Node("and", "_subschema", {})
    node.schema_ann = _annotations(schema)
    out = node.children
    _scalar_keywords(path, kw, stated, out)
    _array_keywords(path, kw, stated, out)
    _encrypt_keywords(path, kw, out)
    _object_keywords(path, kw, stated, out)
    _logical_keywords(path, kw, out)
    if not path and stated is not None and not stated.arg.has(3):
        return Node("false", "$jsonSchema", {"$jsonSchema": schema})
    if path and stated is not None:
        out.append(stated)
    return node


def _top_level(tag: str, spec: dict) -> Node:
    """A keyword that means nothing at the top level (only objects are stored): always true."""
    return Node("true", tag, spec)


def _count_keyword(path: str, kw: dict, key: str, is_min: bool, kind: str, restriction: _TypeSet,
                   stated: Node | None, out: list) -> None:
    """minLength/maxLength, minItems/maxItems: a bound on a count, for one type of value."""
    if key in kw:
        n = _non_negative(key, kw[key])
        spec = {key: kw[key]}
        out.append(_restriction(path, restriction, Node(kind, key, spec, path=path, arg=(n, is_min)), stated)
                   if path else _top_level(key, spec))


def _scalar_keywords(path: str, kw: dict, stated: Node | None, out: list) -> None:
    if "pattern" in kw:
        p = kw["pattern"]
        if not isinstance(p, str):
            raise _fail("TypeMismatch", "$jsonSchema keyword 'pattern' must be a string")
        compile_regex(p, "")
        spec = {"pattern": p}
        out.append(_restriction(path, _STRING, leaf("regex", "pattern", path, spec, {path: {"$regex": p}}), stated)
                   if path else _top_level("pattern", spec))
    for key, is_min in (("maxLength", False), ("minLength", True)):
        _count_keyword(path, kw, key, is_min, "str_len", _STRING, stated, out)
    if "multipleOf" in kw:
        m = kw["multipleOf"]
        if not _is_number(m):
            raise _fail("TypeMismatch", "$jsonSchema keyword 'multipleOf' must be a number")
        divisor = _to_decimal(m)
        if divisor <= 0:
            raise _fail("FailedToParse", "$jsonSchema keyword 'multipleOf' must have a positive value")
        spec = {"multipleOf": m}
        out.append(_restriction(path, _NUMBERS, Node("fmod", "multipleOf", spec, path=path, arg=divisor), stated)
                   if path else _top_level("multipleOf", spec))
    for key, excl, ops in (("maximum", "exclusiveMaximum", ("$lte", "$lt")), ("minimum", "exclusiveMinimum", ("$gte", "$gt"))):
        if key not in kw:
            if excl in kw:
                raise _fail("FailedToParse", f"$jsonSchema keyword '{key}' must be a present if {excl} is present")
            continue
        exclusive = False
        if excl in kw:
            if not isinstance(kw[excl], bool):
                raise _fail("TypeMismatch", f"$jsonSchema keyword '{excl}' must be a boolean")
            exclusive = kw[excl]
        bound = kw[key]
        if not _is_number(bound):
            raise _fail("TypeMismatch", f"$jsonSchema keyword '{key}' must be a number")
        spec = {key: bound, excl: True} if exclusive else {key: bound}
        if not path:
            out.append(_top_level(key, spec))
            continue
        op = ops[1] if exclusive else ops[0]
        out.append(_restriction(path, _NUMBERS, leaf("cmp", key, path, spec, {path: {op: bound}}), stated))


def _array_keywords(path: str, kw: dict, stated: Node | None, out: list) -> None:
    for key, is_min in (("minItems", True), ("maxItems", False)):
        _count_keyword(path, kw, key, is_min, "num_items", _ARRAY, stated, out)
    if "uniqueItems" in kw:
        u = kw["uniqueItems"]
        if not isinstance(u, bool):
            raise _fail("TypeMismatch", "$jsonSchema keyword 'uniqueItems' must be a boolean")
        spec = {"uniqueItems": u}
        if path and u:
            out.append(_restriction(path, _ARRAY, Node("unique_items", "uniqueItems", spec, path=path), stated))
        else:
            out.append(Node("true", "uniqueItems", spec))
    start = None
    if "items" in kw:
        items = kw["items"]
        spec = {"items": items}
        if isinstance(items, list):
            per_index = Node("and", "items", spec)
            for i, sub in enumerate(items):
                if not isinstance(sub, dict):
                    raise _fail("TypeMismatch", "$jsonSchema keyword 'items' requires that each element of the array "
                                                f"is an object, but found a {_bson_type_name(sub)}")
                per_index.children.append(Node("match_array_index", "", {}, path=path, arg=i,
                                               children=[_parse(PLACEHOLDER, sub)]))
            start = len(items)
            out.append(_restriction(path, _ARRAY, per_index, stated) if path else Node("true", "items", spec))
        elif isinstance(items, dict):
            sub = _parse(PLACEHOLDER, items)
            out.append(_restriction(path, _ARRAY, Node("all_elem_from", "items", spec, path=path, arg=0, children=[sub]),
                                    stated) if path else Node("true", "items", spec))
        else:
            raise _fail("TypeMismatch", f"$jsonSchema keyword 'items' must be an array or an object, not "
                                        f"{_bson_type_name(items)}")
    if "additionalItems" in kw:
        extra = kw["additionalItems"]
        otherwise = _otherwise(extra, "$jsonSchema keyword 'additionalItems' must be either an object or a boolean, "
                                      f"but got a {_bson_type_name(extra)}")
        if start is not None:
            spec = {"additionalItems": extra}
            out.append(_restriction(path, _ARRAY, Node("all_elem_from", "additionalItems", spec, path=path, arg=start,
                                                       children=[otherwise]), stated)
                       if path else Node("true", "additionalItems", spec))


def _otherwise(extra: Any, error: str) -> Node:
    """additionalItems / additionalProperties: what the other items or fields must match (true, false, a schema)."""
    if isinstance(extra, bool):
        return Node("true" if extra else "false", mode=IGNORE)
    if isinstance(extra, dict):
        return _parse(PLACEHOLDER, extra)
    raise _fail("TypeMismatch", error)


def _encrypt_keywords(path: str, kw: dict, out: list) -> None:
    if "encrypt" in kw and "encryptMetadata" in kw:
        raise _fail("FailedToParse", "Cannot specify both $jsonSchema keywords 'encrypt' and 'encryptMetadata'")
    if "encryptMetadata" in kw:
        meta = kw["encryptMetadata"]
        if not isinstance(meta, dict):
            raise _fail("TypeMismatch", "$jsonSchema keyword 'encryptMetadata' must be an object ")
        if not meta:
            raise _fail("FailedToParse", "$jsonSchema keyword 'encryptMetadata' cannot be an empty object ")
    if "encrypt" in kw:
        if not isinstance(kw["encrypt"], dict):
            raise _fail("TypeMismatch", "$jsonSchema keyword 'encrypt' must be an object ")
        out.append(Node("bindata_subtype", "encrypt", {}, path=path, arg=6))


def _exists(name: str, tag: str = "_propertyExists") -> Node:
    return leaf("exists", tag, name, {}, {name: {"$exists": True}})


def _object_keywords(path: str, kw: dict, stated: Node | None, out: list) -> None:
    required: list[str] = []
    if "required" in kw:
        req = kw["required"]
        if not isinstance(req, list):
            raise _fail("TypeMismatch", "$jsonSchema keyword 'required' must be an array, but found an element of type "
                                        f"{type_number(req)}")
        for name in req:
            if not isinstance(name, str):
                raise _fail("TypeMismatch", "$jsonSchema keyword 'required' must be an array of strings, but found an "
                                            f"element of type: {type_number(name)}")
            if name in required:
                raise _fail("FailedToParse", "$jsonSchema keyword 'required' array cannot contain duplicate values")
            required.append(name)
        if not required:
            raise _fail("FailedToParse", "$jsonSchema keyword 'required' cannot be an empty array")
    props = kw.get("properties")
    if "properties" in kw:
        if not isinstance(props, dict):
            raise _fail("TypeMismatch", "$jsonSchema keyword 'properties' must be an object")
        all_props = Node("and", "properties", {})
        for name, sub in props.items():
            if not isinstance(sub, dict):
                raise _fail("TypeMismatch", f"Nested schema for $jsonSchema property '{name}' must be an object")
            node = _parse(name, sub)
            node.tag, node.spec, node.schema_ann = "_property", {"propertyName": name}, _annotations(sub)
            if name in required:
                all_props.children.append(node)
            else:
                absent = Node("not", mode=IGNORE, children=[ignore_tree(_exists(name))])
                all_props.children.append(Node("or", mode=DESCEND, children=[absent, node]))
        out.append(_object_match(path, all_props, stated))
    if "patternProperties" in kw or "additionalProperties" in kw:
        out.append(_object_match(path, _allowed_properties(kw), stated))
    if required:
        req_node = Node("and", "required", {"required": kw["required"]},
                        children=[_exists(name) for name in sorted(required)])
        out.append(_object_match(path, req_node, stated))
    for key, is_min in (("minProperties", True), ("maxProperties", False)):
        if key in kw:
            n = _non_negative(key, kw[key])
            out.append(_object_match(path, Node("num_props", key, {key: kw[key]}, arg=(n, is_min)), stated))
    if "dependencies" in kw:
        out.append(_dependencies(path, kw["dependencies"]))


def _allowed_properties(kw: dict) -> Node:
    names = frozenset(kw["properties"]) if isinstance(kw.get("properties"), dict) else frozenset()
    patterns = []
    subs = []
    pp = kw.get("patternProperties", {})
    if not isinstance(pp, dict):
        raise _fail("TypeMismatch", "$jsonSchema keyword 'patternProperties' must be an object")
    for regex, sub in pp.items():
        if not isinstance(sub, dict):
            raise _fail("TypeMismatch", f"$jsonSchema keyword 'patternProperties' has property '{regex}' which is not "
                                        "an object")
        patterns.append((regex, compile_regex(regex, "")))
        subs.append(_parse(PLACEHOLDER, sub))
    if "additionalProperties" in kw:
        extra = kw["additionalProperties"]
        otherwise = _otherwise(extra, "$jsonSchema keyword 'additionalProperties' must be an object or a boolean")
        spec = {"additionalProperties": extra}
    else:
        otherwise, spec = Node("true", mode=IGNORE), {}
    return Node("allowed_props", "", spec, arg=(names, patterns), children=[otherwise, *subs])


def _dependencies(path: str, deps: Any) -> Node:
    if not isinstance(deps, dict):
        raise _fail("TypeMismatch", "$jsonSchema keyword 'dependencies' must be an object")
    node = Node("and", "dependencies", {})
    node.schema_ann = _annotations(deps)
    for name, dep in deps.items():
        if not isinstance(dep, (dict, list)):
            if isinstance(dep, str) and name in ("title", "description"):
                continue
            raise _fail("TypeMismatch", f"property '{name}' in $jsonSchema keyword 'dependencies' must be either an "
                                        "object or an array")
        condition = ignore_tree(_exists_in(path, name))
        if isinstance(dep, dict):
            then, tag = _parse(path, dep), "_schemaDependency"
        else:
            if not dep:
                raise _fail("FailedToParse", f"property '{name}' in $jsonSchema keyword 'dependencies' cannot be an "
                                             "empty array")
            then, tag = Node("and", "_propertiesExistList", {name: dep}), "_propertyDependency"
            seen: set[str] = set()
            for other in dep:
                if not isinstance(other, str):
                    raise _fail("TypeMismatch", f"array '{name}' in $jsonSchema keyword 'dependencies' can only contain "
                                                f"strings, but found element of type: {_bson_type_name(other)}")
                if other in seen:
                    raise _fail("FailedToParse", f"array '{name}' in $jsonSchema keyword 'dependencies' contains "
                                                 f"duplicate element: {other}")
                seen.add(other)
                then.children.append(_exists_in(path, other))
        node.children.append(Node("cond", tag, {name: dep},
                                  children=[condition, then, Node("true", mode=IGNORE)]))
    return node


def _exists_in(path: str, name: str) -> Node:
    exists = _exists(name)
    return Node("object_match", mode=DESCEND, path=path, children=[exists]) if path else exists


def _logical_keywords(path: str, kw: dict, out: list) -> None:
    for key, kind in (("allOf", "and"), ("anyOf", "or"), ("oneOf", "xor")):
        if key not in kw:
            continue
        subs = kw[key]
        if not isinstance(subs, list):
            raise _fail("TypeMismatch", f"$jsonSchema keyword '{key}' must be an array")
        if not subs:
            raise _fail("BadValue", f"$jsonSchema keyword '{key}' must be a non-empty array")
        node = Node(kind, key, {})
        for sub in subs:
            if not isinstance(sub, dict):
                raise _fail("TypeMismatch", f"$jsonSchema keyword '{key}' must be an array of objects, but found an "
                                            f"element of type {type_number(sub)}")
            node.children.append(_parse(path, sub))
        out.append(node)
    if "not" in kw:
        sub = kw["not"]
        if not isinstance(sub, dict):
            raise _fail("TypeMismatch", "$jsonSchema keyword 'not' must be an object, but found an element of type "
                                        f"{type_number(sub)}")
        out.append(Node("not", "not", {}, children=[_parse(path, sub)]))
    if "enum" in kw:
        out.append(_enum(path, kw["enum"]))


def _enum(path: str, values: Any) -> Node:
    if not isinstance(values, list):
        raise _fail("TypeMismatch", "$jsonSchema keyword 'enum' must be an array, but found an element of type "
                                    f"{type_number(values)}")
    if not values:
        raise _fail("FailedToParse", "$jsonSchema keyword 'enum' cannot be an empty array")
    spec = {"enum": values}
    node = Node("or", "enum", spec)
    for i, v in enumerate(values):
        if any(_equal_unordered(v, w) for w in values[:i]):
            raise _fail("FailedToParse", "$jsonSchema keyword 'enum' array cannot contain duplicate values.")
        if not path:
            if isinstance(v, dict):
                node.children.append(Node("root_doc_eq", mode=IGNORE, arg=v))
        else:
            node.children.append(Node("schema_eq", mode=IGNORE, path=path, arg=v))
    if not node.children:
        return Node("false", "enum", spec)
    return node


# -- matching the schema nodes ------------------------------------------------------------
def _equal_unordered(a: Any, b: Any) -> bool:
    """UnorderedFieldsBSONElementComparator: objects equal whatever their field order."""
    if type(a) is dict and type(b) is dict:
        return a.keys() == b.keys() and all(_equal_unordered(a[k], b[k]) for k in a)
    if type(a) is list and type(b) is list:
        return len(a) == len(b) and all(_equal_unordered(x, y) for x, y in zip(a, b))
    if type(a) is dict or type(b) is dict or type(a) is list or type(b) is list:
        return False
    try:
        return bson_equal(a, b)
    except TypeError:
        return False


def _to_decimal(v: Any) -> decimal.Decimal:
    if isinstance(v, Decimal128):
        return v.to_decimal()
    if isinstance(v, float):
        return decimal.Decimal("%.15g" % v)  # Decimal128(double): rounded to 15 significant digits
    return decimal.Decimal(int(v))


def _fmod(node: Node, doc: dict) -> bool:
    v = value_at(doc, node.path)
    if not _is_number(v) or isinstance(v, bool):
        return False
    with decimal.localcontext() as ctx:
        ctx.prec = 34
        try:
            return _to_decimal(v) % node.arg == 0
        except decimal.InvalidOperation:
            return False


def _str_len(node: Node, doc: dict) -> bool:
    v = value_at(doc, node.path)
    n, is_min = node.arg
    return type(v) is str and (len(v) >= n if is_min else len(v) <= n)


def _num_items(node: Node, doc: dict) -> bool:
    v = value_at(doc, node.path)
    n, is_min = node.arg
    return type(v) is list and (len(v) >= n if is_min else len(v) <= n)


def first_duplicate(values: list) -> Any:
    """The first item that equals an earlier one (MISSING if none)."""
    seen: set = set()
    for v in values:
        key = hashable(v)
        if key in seen:
            return v
        seen.add(key)
    return MISSING


def _all_elem_from(node: Node, doc: dict) -> bool:
    v = value_at(doc, node.path)
    return type(v) is list and all(node.children[0].matches({PLACEHOLDER: e}) for e in v[node.arg:])


def first_mismatch(node: Node, values: list) -> int | None:
    """The index of the first item from the node's start that its schema rejects."""
    for i in range(node.arg, len(values)):
        if not node.children[0].matches({PLACEHOLDER: values[i]}):
            return i
    return None


def _match_array_index(node: Node, doc: dict) -> bool:
    v = value_at(doc, node.path)
    if type(v) is not list:
        return False
    return node.arg >= len(v) or node.children[0].matches({PLACEHOLDER: v[node.arg]})


def _match_object(node: Node, doc: dict) -> bool:
    found = [v for v in values_at(doc, node.path, NO_TRAVERSAL) if v is not MISSING]
    return any(type(v) is dict and node.children[0].matches(v) for v in found)


def matching_patterns(node: Node, field: str) -> list[int]:
    return [i for i, (_raw, rx) in enumerate(node.arg[1]) if rx.search(field)]


def _allowed_props(node: Node, doc: dict) -> bool:
    names, _patterns = node.arg
    otherwise = node.children[0]
    for field, value in doc.items():
        hits = matching_patterns(node, field)
        for i in hits:
            if not node.children[1 + i].matches({PLACEHOLDER: value}):
                return False
        if not hits and field not in names and not otherwise.matches({PLACEHOLDER: value}):
            return False
    return True


def additional_properties(node: Node, doc: dict) -> list[str]:
    """Fields neither named in `properties` nor matched by a pattern."""
    names = node.arg[0]
    return [f for f in doc if f not in names and not matching_patterns(node, f)]


MATCHERS.update({
    "schema_type": lambda n, d: n.arg.matches(value_at(d, n.path)),
    "str_len": _str_len,
    "fmod": _fmod,
    "num_items": _num_items,
    "unique_items": lambda n, d: type(value_at(d, n.path)) is list and first_duplicate(value_at(d, n.path)) is MISSING,
    "all_elem_from": _all_elem_from,
    "match_array_index": _match_array_index,
    "object_match": _match_object,
    "allowed_props": _allowed_props,
    "num_props": lambda n, d: len(d) >= n.arg[0] if n.arg[1] else len(d) <= n.arg[0],
    "schema_eq": lambda n, d: (v := value_at(d, n.path)) is not MISSING and _equal_unordered(v, n.arg),
    "root_doc_eq": lambda n, d: _equal_unordered(d, n.arg),
    "bindata_subtype": lambda n, d: isinstance(v := value_at(d, n.path), Binary) and v.subtype == n.arg,
})


def _compile(schema: Any):
    node = parse(schema)
    return lambda doc, details: node.matches(doc)


register_json_schema(parse)
TOP_LEVEL_EXTENSIONS["$jsonSchema"] = _compile
