"""A collection validator's match expression: the server's MatchExpression tree with ErrorAnnotations.

A query filter is compiled to closures (`shardsim.query.matcher`); a validator
needs more, because when a document fails it the server explains why
(`shardsim.doc_validation_error`), and the explanation follows the tree the
server's MatchExpressionParser builds with `isParsingCollectionValidator`:

* every node carries an ErrorAnnotation: a `tag` (the operator name the error
  reports: `$eq`, `$and`, `properties`, ... or an internal `_subschema`,
  `_property`), the `spec` it reports as `specifiedAs`, a `mode`
  (GENERATE, IGNORE: never reported, DESCEND: not reported itself but its
  children may be) and the JSON Schema `title`/`description` in scope;
* a document's fields become the children of one `$and`, which is replaced by
  its only child when it has one (`{a: 1}` is an `$eq`, `{a: {$gt: 0, $lt: 9}}`
  an `$and` of two);
* `$ne`, `$nin` and `$exists: false` are a NOT (mode DESCEND) over the
  positive operator tagged with the negative one's name.

Leaves match with the query engine (each compiles its own one-field filter);
the JSON Schema nodes (`shardsim.json_schema`) bring their own `matches`.
`values_at` enumerates a path's values as the server's ElementPath iterator
does for each LeafArrayBehavior (kTraverse, kTraverseOmitArray, kNoTraversal).
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterator

from bson import Regex

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.matcher import compile_filter
from mongosim.shardsim.query.values import MISSING

GENERATE, IGNORE, DESCEND = "generate", "ignore", "descend"  # ErrorAnnotation::Mode
TRAVERSE, OMIT_ARRAY, NO_TRAVERSAL = "traverse", "omit", "none"  # ElementPath::LeafArrayBehavior


class Node:
    """One MatchExpression: `kind` names its class, `matches(doc)` evaluates it on a (sub)document."""

    __slots__ = ("kind", "tag", "spec", "mode", "schema_ann", "children", "path", "arg", "_fn")

    def __init__(self, kind: str, tag: str = "", spec: dict | None = None, *, mode: str = GENERATE,
                 children: list[Node] | None = None, path: str = "", arg: Any = None,
                 fn: Callable[[dict], bool] | None = None) -> None:
        self.kind = kind
        self.tag = tag
        self.spec = spec if spec is not None else {}
        self.mode = mode
        self.schema_ann: dict = {}
        self.children = children if children is not None else []
        self.path = path
        self.arg = arg
        self._fn = fn

    def matches(self, doc: dict) -> bool:
        return MATCHERS[self.kind](self, doc)

    def __repr__(self) -> str:
        return f"Node({self.kind}, {self.tag!r}, {self.children!r})"


def ignore_tree(node: Node) -> Node:
    """annotateTreeToIgnoreForErrorDetails: nothing below `node` reports."""
    node.mode = IGNORE
    for child in node.children:
        ignore_tree(child)
    return node


# -- matching ------------------------------------------------------------------------------
def _leaf(node: Node, doc: dict) -> bool:
    return node._fn(doc, None)


def _xor(node: Node, doc: dict) -> bool:
    return sum(1 for c in node.children if c.matches(doc)) == 1


def _cond(node: Node, doc: dict) -> bool:
    first, then, otherwise = node.children
    return then.matches(doc) if first.matches(doc) else otherwise.matches(doc)


MATCHERS: dict[str, Callable[[Node, dict], bool]] = {
    "and": lambda n, d: all(c.matches(d) for c in n.children),
    "or": lambda n, d: any(c.matches(d) for c in n.children),
    "nor": lambda n, d: not any(c.matches(d) for c in n.children),
    "not": lambda n, d: not n.children[0].matches(d),
    "xor": _xor,
    "cond": _cond,
    "true": lambda n, d: True,
    "false": lambda n, d: False,
}
# query leaves: each keeps the compiled filter of its own operator
for _kind in ("eq", "cmp", "in", "exists", "type", "mod", "regex", "bits", "size", "elemMatch", "all", "expr"):
    MATCHERS[_kind] = _leaf


# -- path values ---------------------------------------------------------------------------
def values_at(doc: Any, path: str, leaf: str) -> Iterator[Any]:
    """The values at `path` as the server's BSONElementIterator yields them (MISSING for a gap)."""
    parts = path.split(".")
    return _walk(doc, parts, 0, leaf)


def _walk(container: Any, parts: list[str], i: int, leaf: str) -> Iterator[Any]:
    x = container.get(parts[i], MISSING) if type(container) is dict else MISSING
    j = i + 1
    n = len(parts)
    while j < n and type(x) is dict:
        x = x.get(parts[j], MISSING)
        j += 1
    if type(x) is not list:
        yield x if j == n else MISSING
        return
    if j == n:
        if leaf == NO_TRAVERSAL:
            yield x
            return
        yield from x
        if leaf == TRAVERSE:
            yield x
        return
    nxt = parts[j]
    for k, e in enumerate(x):
        if type(e) is dict:
            yield from _walk(e, parts, j, leaf)
        elif nxt.isdigit() and str(k) == nxt and j + 1 == n:
            yield e


def value_at(doc: Any, path: str) -> Any:
    """The one value at `path` without any array traversal (kNoTraversal both ways)."""
    x = doc
    for part in path.split("."):
        if type(x) is not dict:
            return MISSING
        x = x.get(part, MISSING)
    return x


# -- the validator parser (MatchExpressionParser with isParsingCollectionValidator) --------------
_SCHEMA_PARSER: list[Callable[[Any], Node]] = []  # shardsim.json_schema registers its parser


def register_json_schema(parse: Callable[[Any], Node]) -> None:
    _SCHEMA_PARSER[:] = [parse]


def parse_validator(validator: dict) -> Node:
    """The annotated tree of `validator` (already checked by the query engine's compiler)."""
    return parse_document(validator)


def parse_document(obj: dict) -> Node:
    root = Node("and", "$and")
    for key, val in obj.items():
        if key.startswith("$"):
            node = _top_level(key, val)
            if node is not None:
                root.children.append(node)
        else:
            _path(key, val, root.children)
    return root.children[0] if len(root.children) == 1 else root


def _top_level(key: str, val: Any) -> Node | None:
    if key in ("$and", "$or", "$nor"):
        return Node(key[1:], key, {}, children=[parse_document(c) for c in val])
    if key == "$expr":
        return Node("expr", "$expr", {key: val}, fn=compile_filter({key: val}))
    if key == "$jsonSchema":
        return _SCHEMA_PARSER[0](val)
    if key in ("$alwaysTrue", "$alwaysFalse"):
        return Node("true" if key == "$alwaysTrue" else "false", key, {key: val})
    if key == "$comment":
        return None
    return Node("expr", key, {key: val}, fn=compile_filter({key: val}))


def _is_operator_doc(val: Any) -> bool:
    if type(val) is not dict or not val:
        return False
    first = next(iter(val))
    return first.startswith("$") and first not in ("$ref", "$id", "$db")


def _path(path: str, val: Any, out: list[Node]) -> None:
    if not _is_operator_doc(val):
        kind, tag = ("regex", "$regex") if isinstance(val, (Regex, re.Pattern)) else ("eq", "$eq")
        out.append(leaf(kind, tag, path, {path: val}, {path: val}))
        return
    for op, arg in val.items():
        if op == "$options":
            continue
        if op == "$regex":
            spec = {"$regex": arg, "$options": val["$options"]} if "$options" in val else {"$regex": arg}
            out.append(leaf("regex", "$regex", path, {path: spec}, {path: spec}))
        elif op == "$not":
            out.append(Node("not", "$not", {}, children=[_not_child(path, arg)]))
        elif op in ("$ne", "$nin") or (op == "$exists" and not _truthy(arg)):
            positive = {"$ne": "$eq", "$nin": "$in", "$exists": "$exists"}[op]
            inner = leaf(_KIND[positive], op, path, {path: {op: arg}}, {path: {positive: arg if op != "$exists" else True}})
            out.append(Node("not", "", mode=DESCEND, children=[inner]))
        elif op == "$all" and isinstance(arg, list) and not arg:
            out.append(Node("false", "$all", {path: {op: arg}}))
        else:
            out.append(leaf(_KIND.get(op, "cmp"), op, path, {path: {op: arg}}, {path: {op: arg}}))


def _not_child(path: str, arg: Any) -> Node:
    if isinstance(arg, (Regex, re.Pattern)):
        return leaf("regex", "$regex", path, {path: arg}, {path: arg})
    inner: list[Node] = []
    _path(path, arg, inner)
    return inner[0] if len(inner) == 1 else Node("and", "$and", {}, children=inner)


def leaf(kind: str, tag: str, path: str, spec: dict, flt: dict) -> Node:
    return Node(kind, tag, spec, path=path, fn=compile_filter(flt))


def _truthy(arg: Any) -> bool:
    return not (arg is None or arg is False or (isinstance(arg, (int, float)) and not isinstance(arg, bool) and arg == 0))


_KIND = {
    "$eq": "eq", "$gt": "cmp", "$gte": "cmp", "$lt": "cmp", "$lte": "cmp", "$in": "in", "$exists": "exists",
    "$type": "type", "$mod": "mod", "$regex": "regex", "$size": "size", "$elemMatch": "elemMatch", "$all": "all",
    "$bitsAllSet": "bits", "$bitsAllClear": "bits", "$bitsAnySet": "bits", "$bitsAnyClear": "bits",
    "$geoWithin": "cmp", "$geoIntersects": "cmp",
}


def check_parses(validator: dict) -> None:
    """Raise the query engine's parse error for a malformed validator."""
    compile_filter(validator)
    if not isinstance(validator, dict):
        raise MongoError("TypeMismatch", "validator must be an object")
