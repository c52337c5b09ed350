"""Evaluating matches (unified test format, "Evaluating Matches").

`Matcher.match(expected, actual)` walks the expected value:

- a document whose first and only key starts with `$$` is a special operator
  (`$$exists`, `$$type`, `$$unsetOrMatches`, `$$matchesEntity`,
  `$$matchesHexBytes`, `$$sessionLsid`, `$$lte`, `$$matchAsDocument`,
  `$$matchAsRoot`);
- a root-level document may have extra keys in the actual value, a nested one
  may not; key order is free;
- arrays have the same length and match element by element; the elements of
  an iterated result (`RootDocuments`: find, aggregate, list*, cursor
  commands) are root-level documents, those of any other array are not;
- scalars have the same type, except that int, long and double compare by
  value (flexible numerics; Decimal128 is not flexible).

A mismatch raises AssertionError naming the path; an operator the runner does
not know raises UnsupportedByRunner.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from bson import Binary, Code, DBRef, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp, json_util

from tests.spec.errors import UnsupportedByRunner

BSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "double": lambda v: isinstance(v, float),
    "string": lambda v: isinstance(v, str),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "binData": lambda v: isinstance(v, (Binary, bytes)),
    "objectId": lambda v: isinstance(v, ObjectId),
    "bool": lambda v: isinstance(v, bool),
    "date": lambda v: hasattr(v, "isoformat") and not isinstance(v, Timestamp),
    "null": lambda v: v is None,
    "regex": lambda v: isinstance(v, (Regex, re.Pattern)),
    "dbPointer": lambda v: isinstance(v, DBRef),
    "javascript": lambda v: isinstance(v, Code) and v.scope is None,
    "javascriptWithScope": lambda v: isinstance(v, Code) and v.scope is not None,
    "int": lambda v: type(v) is int and -(2**31) <= v < 2**31,
    "timestamp": lambda v: isinstance(v, Timestamp),
    "long": lambda v: isinstance(v, Int64) or (type(v) is int and not -(2**31) <= v < 2**31),
    "decimal": lambda v: isinstance(v, Decimal128),
    "minKey": lambda v: isinstance(v, MinKey),
    "maxKey": lambda v: isinstance(v, MaxKey),
}
BSON_TYPES["number"] = lambda v: any(BSON_TYPES[t](v) for t in ("int", "long", "double", "decimal"))


class RootDocuments(list):
    """An iterated result (find, aggregate, listCollections, ...): its elements are root-level documents."""


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def special_operator(value: Any) -> str | None:
    """The special operator of an expected value: a document whose first and only key starts with `$$`."""
    if isinstance(value, dict) and len(value) == 1:
        key = next(iter(value))
        if key.startswith("$$"):
            return key
    return None


class Matcher:
    """Matches expected values against actual ones; `$$matchesEntity` and `$$sessionLsid` read `entities`."""

    def __init__(self, entities: Any) -> None:
        self.entities = entities

    def match(self, expected: Any, actual: Any, *, root: bool = True, path: str = "") -> None:
        op = special_operator(expected)
        if op is not None:
            self._special(op, expected[op], actual, root=root, path=path)
            return
        if isinstance(expected, dict):
            self._match_document(expected, actual, root, path)
        elif isinstance(expected, list):
            if not isinstance(actual, list):
                self.fail(path, f"expected an array, got {actual!r}")
            if len(actual) != len(expected):
                self.fail(path, f"expected {len(expected)} elements, got {len(actual)}: {actual!r}")
            elements_root = isinstance(actual, RootDocuments)
            for i, (e, a) in enumerate(zip(expected, actual)):
                self.match(e, a, root=elements_root, path=f"{path}[{i}]")
        else:
            self.equal(expected, actual, path)

    def _match_document(self, expected: dict, actual: Any, root: bool, path: str) -> None:
        if not isinstance(actual, dict):
            self.fail(path, f"expected a document, got {actual!r}")
        for key, value in expected.items():
            sub = f"{path}.{key}" if path else key
            vop = special_operator(value)
            if vop == "$$exists":
                if bool(value[vop]) != (key in actual):
                    self.fail(sub, f"expected the key to {'exist' if value[vop] else 'be absent'} in {actual!r}")
                continue
            if vop == "$$unsetOrMatches":
                if key in actual:
                    self.match(value[vop], actual[key], root=False, path=sub)
                continue
            if key not in actual:
                self.fail(sub, f"missing in {actual!r}")
            self.match(value, actual[key], root=False, path=sub)
        if not root:
            extra = [k for k in actual if k not in expected]
            if extra:
                self.fail(path, f"unexpected extra keys {extra} in {actual!r}")

    def equal(self, expected: Any, actual: Any, path: str) -> None:
        if is_number(expected) and is_number(actual):
            if expected != actual:
                self.fail(path, f"expected {expected!r}, got {actual!r}")
            return
        if isinstance(expected, (bytes, Binary)) and isinstance(actual, (bytes, Binary)):
            if getattr(expected, "subtype", 0) != getattr(actual, "subtype", 0) or bytes(expected) != bytes(actual):
                self.fail(path, f"expected {expected!r}, got {actual!r}")
            return
        same_type = type(expected) is type(actual) or (isinstance(expected, str) and isinstance(actual, str))
        if not same_type:
            self.fail(path, f"expected {expected!r} ({type(expected).__name__}), "
                            f"got {actual!r} ({type(actual).__name__})")
        if expected != actual:
            self.fail(path, f"expected {expected!r}, got {actual!r}")

    def _special(self, op: str, arg: Any, actual: Any, *, root: bool, path: str) -> None:
        if op == "$$type":
            names = arg if isinstance(arg, list) else [arg]
            for name in names:
                if name not in BSON_TYPES:
                    raise UnsupportedByRunner(f"unknown $$type {name!r}")
            if not any(BSON_TYPES[n](actual) for n in names):
                self.fail(path, f"expected a value of type {names}, got {actual!r}")
        elif op == "$$unsetOrMatches":
            if actual is not None or not root:  # a root result of None is an operation that returned nothing
                self.match(arg, actual, root=root, path=path)
        elif op == "$$matchesEntity":
            self.match(self.entities.get(arg), actual, root=root, path=path)
        elif op == "$$sessionLsid":
            self.match(self.entities.lsid(arg), actual, root=False, path=path)
        elif op == "$$lte":
            if not (is_number(actual) and is_number(arg) and actual <= arg):
                self.fail(path, f"expected a number <= {arg!r}, got {actual!r}")
        elif op == "$$matchesHexBytes":
            if not isinstance(arg, str) or len(arg) % 2 or not re.fullmatch(r"[0-9a-fA-F]*", arg):
                raise UnsupportedByRunner(f"malformed $$matchesHexBytes {arg!r}")
            if not isinstance(actual, (bytes, Binary)) or bytes(actual) != bytes.fromhex(arg):
                self.fail(path, f"expected bytes {arg}, got {actual!r}")
        elif op == "$$matchAsDocument":
            if not isinstance(actual, str):
                self.fail(path, f"expected an Extended JSON string, got {actual!r}")
            self.match(arg, json_util.loads(actual), root=False, path=path)
        elif op == "$$matchAsRoot":
            self.match(arg, actual, root=True, path=path)
        elif op == "$$exists":  # reached for a value that is present (e.g. under $$unsetOrMatches)
            if not arg:
                self.fail(path, f"expected no value, got {actual!r}")
        else:
            raise UnsupportedByRunner(f"unknown special operator {op}")

    @staticmethod
    def fail(path: str, msg: str) -> None:
        raise AssertionError(f"{path or '<root>'}: {msg}")


def exactly_equal(expected: Any, actual: Any) -> bool:
    """Outcome comparison: the same values of the same BSON types, key order free (int and long differ)."""
    if isinstance(expected, dict):
        return (isinstance(actual, dict) and expected.keys() == actual.keys()
                and all(exactly_equal(v, actual[k]) for k, v in expected.items()))
    if isinstance(expected, list):
        return (isinstance(actual, list) and len(expected) == len(actual)
                and all(exactly_equal(e, a) for e, a in zip(expected, actual)))
    if is_number(expected) and is_number(actual):
        return _number_type(expected) == _number_type(actual) and expected == actual
    return type(expected) is type(actual) and expected == actual


def _number_type(v: Any) -> str:
    if isinstance(v, float):
        return "double"
    if isinstance(v, Int64) or not -(2**31) <= v < 2**31:
        return "long"
    return "int"
