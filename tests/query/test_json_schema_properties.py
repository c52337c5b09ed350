"""$jsonSchema against a reference: the server's translation into match expressions
(shardsim.json_schema) accepts exactly the documents a direct JSON Schema
(draft 4) validator accepts, for the keywords both know."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mongosim.shardsim import json_schema  # noqa: F401  (registers $jsonSchema)
from mongosim.shardsim.doc_validation_error import generate_error
from mongosim.shardsim.match_expression import parse_validator
from mongosim.shardsim.query.matcher import compile_filter

KEYS = ("a", "b", "c")


def _is_num(v):
    return type(v) in (int, float)


def _json_type(v):
    if v is None:
        return "null"
    return {bool: "boolean", int: "number", float: "number", str: "string", list: "array", dict: "object"}[type(v)]


def _same(x, y):
    if _json_type(x) != _json_type(y):
        return False
    if type(x) is list:
        return len(x) == len(y) and all(_same(a, b) for a, b in zip(x, y))
    if type(x) is dict:
        return x.keys() == y.keys() and all(_same(x[k], y[k]) for k in x)
    return x == y


def valid(s: dict, v, top: bool = False) -> bool:
    """A direct JSON Schema validator: the reference."""
    t = _json_type(v)
    if "type" in s and t != s["type"]:
        return False
    if _is_num(v) and not top:
        if "minimum" in s and not (v > s["minimum"] if s.get("exclusiveMinimum") else v >= s["minimum"]):
            return False
        if "maximum" in s and not (v < s["maximum"] if s.get("exclusiveMaximum") else v <= s["maximum"]):
            return False
    if t == "string" and not top:
        if "minLength" in s and len(v) < s["minLength"] or "maxLength" in s and len(v) > s["maxLength"]:
            return False
    if t == "array" and not top:
        if "minItems" in s and len(v) < s["minItems"] or "maxItems" in s and len(v) > s["maxItems"]:
            return False
        if s.get("uniqueItems") and any(_same(v[i], v[j]) for i in range(len(v)) for j in range(i)):
            return False
        if "items" in s and not all(valid(s["items"], e) for e in v):
            return False
    if t == "object":
        if any(k not in v for k in s.get("required", ())):
            return False
        for k, sub in s.get("properties", {}).items():
            if k in v and not valid(sub, v[k]):
                return False
        if s.get("additionalProperties") is False and any(k not in s.get("properties", {}) for k in v):
            return False
        if "minProperties" in s and len(v) < s["minProperties"] or "maxProperties" in s and len(v) > s["maxProperties"]:
            return False
    if "enum" in s and not any(_same(v, e) for e in s["enum"]):
        return False
    if "allOf" in s and not all(valid(x, v, top) for x in s["allOf"]):
        return False
    if "anyOf" in s and not any(valid(x, v, top) for x in s["anyOf"]):
        return False
    if "oneOf" in s and sum(valid(x, v, top) for x in s["oneOf"]) != 1:
        return False
    if "not" in s and valid(s["not"], v, top):
        return False
    return True


scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(-3, 3, allow_nan=False).map(lambda f: round(f, 1)),
                    st.sampled_from(["", "x", "xy", "xyz"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.sampled_from(KEYS), inner, max_size=3)),
                      max_leaves=6)


def _unique(xs):
    out = []
    for x in xs:
        if not any(_same(x, y) for y in out):
            out.append(x)
    return out


def schemas(depth: int = 2):
    sub = schemas(depth - 1) if depth else st.just({})
    keyword = st.one_of(
        st.tuples(st.just("type"), st.sampled_from(["object", "array", "string", "number", "boolean", "null"])),
        st.tuples(st.just("minimum"), st.integers(-2, 2)), st.tuples(st.just("maximum"), st.integers(-2, 2)),
        st.tuples(st.just("exclusiveMinimum"), st.booleans()), st.tuples(st.just("exclusiveMaximum"), st.booleans()),
        st.tuples(st.just("minLength"), st.integers(0, 3)), st.tuples(st.just("maxLength"), st.integers(0, 3)),
        st.tuples(st.just("minItems"), st.integers(0, 3)), st.tuples(st.just("maxItems"), st.integers(0, 3)),
        st.tuples(st.just("uniqueItems"), st.booleans()), st.tuples(st.just("items"), sub),
        st.tuples(st.just("required"), st.lists(st.sampled_from(KEYS), min_size=1, max_size=3, unique=True)),
        st.tuples(st.just("properties"), st.dictionaries(st.sampled_from(KEYS), sub, max_size=2)),
        st.tuples(st.just("additionalProperties"), st.booleans()),
        st.tuples(st.just("minProperties"), st.integers(0, 3)), st.tuples(st.just("maxProperties"), st.integers(0, 4)),
        st.tuples(st.just("enum"), st.lists(values, min_size=1, max_size=3).map(_unique)),
        st.tuples(st.just("allOf"), st.lists(sub, min_size=1, max_size=2)),
        st.tuples(st.just("anyOf"), st.lists(sub, min_size=1, max_size=2)),
        st.tuples(st.just("oneOf"), st.lists(sub, min_size=1, max_size=2)),
        st.tuples(st.just("not"), sub),
    )

    def build(pairs):
        s = dict(pairs)
        if s.get("exclusiveMinimum") is not None and "minimum" not in s:
            s.pop("exclusiveMinimum")
        if s.get("exclusiveMaximum") is not None and "maximum" not in s:
            s.pop("exclusiveMaximum")
        return s

    return st.lists(keyword, max_size=4).map(build)


@settings(max_examples=400, deadline=None)
@given(schema=schemas(), doc=st.dictionaries(st.sampled_from(KEYS), values, max_size=3))
def test_json_schema_matches_like_a_json_schema_validator(schema, doc):
    doc = {"_id": 1, **doc}
    schema = {"properties": {"_id": {}}, **schema} if schema.get("additionalProperties") is False else schema
    if "properties" in schema and schema.get("additionalProperties") is False:
        schema["properties"] = {"_id": {}, **schema["properties"]}
    expected = valid(schema, doc, top=True)
    query = {"$jsonSchema": schema}
    assert compile_filter(query)(doc, None) is expected, (schema, doc)
    if not expected:
        err = generate_error(parse_validator(query), doc)  # every failure can be explained
        assert err["failingDocumentId"] == 1 and isinstance(err["details"], dict)
