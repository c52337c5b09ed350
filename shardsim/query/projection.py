"""Projections: which fields of a document a query or `$project` returns.

A projection is either an *inclusion* (`{a: 1, "b.c": 1}`: only those
fields, plus `_id` unless `_id: 0`) or an *exclusion* (`{a: 0}`: everything
but those); mixing the two is an error (31253/31254), `_id` excepted.  Dotted
paths apply through arrays element by element (an inclusion drops non-object
elements).  Computed fields (`{total: {$add: ["$a", "$b"]}}`, a field path
such as `{x: "$a.b"}`, or a constant such as `{x: "y"}`) make an inclusion
projection and are appended after the included fields.

Find projections also have three operators:
* `"a.$": 1` – only the array element the query matched (positional),
* `{a: {$slice: n}}` / `{$slice: [skip, limit]}` – part of the array (does not
  by itself make the projection an inclusion),
* `{a: {$elemMatch: {...}}}` – the first matching element, as a 1-element array.

`compile_projection(spec)` parses once and returns `project(doc,
match_position=None) -> dict`.

Source: src/mongo/db/query/projection_parser.cpp,
src/mongo/db/exec/projection_executor*.cpp, inclusion/exclusion_projection
_executor.cpp.  Hand-written: mongomock's projection is the test oracle only.
"""

from __future__ import annotations

from typing import Any, Callable

from bson import DBRef, Decimal128, Int64

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.document_metadata import meta_value, parse_meta
from mongosim.shardsim.query.values import MISSING, dbref_doc

__all__ = ["compile_projection"]

_INC, _EXC = "inc", "exc"


class _Node:
    __slots__ = ("children", "order")

    def __init__(self):
        self.children: dict[str, Any] = {}
        self.order: list[str] = []


def _is_bool_like(v) -> bool:
    return isinstance(v, (bool, int, float, Int64, Decimal128))


def _truthy(v) -> bool:
    if isinstance(v, Decimal128):
        return v.to_decimal() != 0
    return bool(v)


def compile_projection(spec: dict | None, *, find: bool = True, variables: dict | None = None) -> Callable:
    """Compile a projection; returns `project(doc, match_position=None) -> dict`.
    `variables`: the command's variables, which computed fields may use."""
    if spec is None or (find and not spec):
        return lambda doc, match_position=None: doc
    if not isinstance(spec, dict):
        raise MongoError(2, "projection must be an object")
    if not spec:
        raise MongoError(51272, "Invalid $project :: caused by :: projection specification must have at least one field")
    from mongosim.shardsim.query.expressions import compile_expression

    def computed(expr):
        f = compile_expression(expr)
        if variables is None:
            return f
        from mongosim.shardsim.query.variables import check_references

        check_references(expr, variables)
        return lambda doc: f(doc, variables)

    root = _Node()
    mode = None
    id_mode = None
    positional = None
    metas: list[tuple[str, str]] = []  # {path: {$meta: name}}: neither inclusion nor exclusion

    def set_mode(m, path):
        nonlocal mode
        if mode is None:
            mode = m
        elif mode != m:
            if m == _EXC:
                raise MongoError(31254, f"Cannot do exclusion on field {path} in inclusion projection")
            raise MongoError(31253, f"Cannot do inclusion on field {path} in exclusion projection")

    def insert(path: str, value):
        parts = path.split(".")
        node = root
        for i, p in enumerate(parts[:-1]):
            child = node.children.get(p)
            if child is None:
                child = node.children[p] = _Node()
                node.order.append(p)
            elif not isinstance(child, _Node):
                raise MongoError(31249, f"Path collision at {path} remaining portion {'.'.join(parts[i + 1:])}")
            node = child
        last = parts[-1]
        if last in node.children:
            raise MongoError(31250, f"Path collision at {path}")
        node.children[last] = value
        node.order.append(last)

    for path, v in _flatten(spec):
        if path == "" or any(p == "" for p in path.split(".")):
            raise MongoError(31249 if False else 40352, "FieldPath cannot be constructed with empty string")
        if path.endswith(".$"):
            if not find:
                raise MongoError(31324, "Cannot use positional projection in aggregation projection")
            if positional is not None:
                raise MongoError(31276, "Cannot specify more than one positional projection per query.")
            base = path[:-2]
            positional = base
            set_mode(_INC, path)
            insert(base, ("positional",))
            continue
        if path == "$sortKey" and isinstance(v, dict) and list(v) == ["$meta"]:
            metas.append((path, parse_meta(v["$meta"])))  # (what mongos asks of a shard to merge by)
            continue
        if path.startswith("$"):
            raise MongoError(16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
        if isinstance(v, dict) and v and next(iter(v)).startswith("$"):
            op = next(iter(v))
            if op == "$meta" and len(v) == 1:
                metas.append((path, parse_meta(v[op])))
                continue
            if find and op == "$slice" and len(v) == 1:
                arg = v["$slice"]
                if isinstance(arg, list):
                    if len(arg) != 2:
                        raise MongoError(28724, "Invalid $slice syntax")
                    skip, limit = int(arg[0]), int(arg[1])
                    if limit <= 0:
                        raise MongoError(28724, "$slice limit must be positive")
                    data = (skip, limit)
                elif _is_bool_like(arg) and not isinstance(arg, bool):
                    data = (int(arg),)
                else:
                    raise MongoError(28724, "$slice only supports numbers and [skip, limit] arrays")
                insert(path, ("slice", data))
                continue
            if find and op == "$elemMatch" and len(v) == 1:
                if "." in path:
                    raise MongoError(31275, "Cannot use $elemMatch projection on a nested field.")
                from mongosim.shardsim.query.matcher import Matcher

                if not isinstance(v["$elemMatch"], dict):
                    raise MongoError(31274, "elemMatch: Invalid argument, object required.")
                m = Matcher({path: v})
                set_mode(_INC, path)
                insert(path, ("elemMatch", m))
                continue
            set_mode(_INC, path)
            insert(path, ("expr", computed(v)))
            continue
        if _is_bool_like(v):
            if path == "_id":
                id_mode = _truthy(v)
                continue
            set_mode(_INC if _truthy(v) else _EXC, path)
            insert(path, _truthy(v))
            continue
        if isinstance(v, dict):
            raise MongoError(51270, "An empty sub-projection is not a valid value. Found empty object at path")
        # any other value is an expression operand (projection_parser: Expression::parseOperand):
        # "$a.b" is a field path, an array is evaluated element-wise, other values are constants
        set_mode(_INC, path)
        insert(path, ("expr", computed(v)))

    if mode is None:
        mode = _INC if (id_mode is True and not _has_slice(root)) else _EXC
    include_id = id_mode is not False
    if metas:
        return _with_metas(_project_fn(root, mode, id_mode, include_id), metas)
    return _project_fn(root, mode, id_mode, include_id)


def _with_metas(project: Callable, metas: list[tuple[str, str]]) -> Callable:
    """The projection, then each `{$meta: name}` field set from the document's metadata (when it has it)."""

    def with_metas(doc, match_position=None):
        out = project(doc, match_position)
        if out is doc:
            out = dict(doc)
        for path, name in metas:
            v = meta_value(doc, name)
            if v is MISSING:
                continue
            *parents, last = path.split(".")
            cur = out
            for p in parents:
                nxt = cur.get(p)
                if type(nxt) is not dict:
                    nxt = cur[p] = {}
                cur = nxt
            cur[last] = v
        return out

    with_metas.metas = metas  # type: ignore[attr-defined]
    return with_metas


def _project_fn(root: _Node, mode: str, id_mode, include_id: bool) -> Callable:
    if not root.children and mode == _EXC and id_mode is not False:
        return lambda doc, match_position=None: doc

    if mode == _INC:
        if include_id and "_id" not in root.children:
            root.children["_id"] = True
            root.order.insert(0, "_id")

        def project(doc, match_position=None):
            return _inc_doc(doc, root, doc, match_position)

    else:
        if id_mode is False:
            root.children["_id"] = False
            root.order.append("_id")

        def project(doc, match_position=None):
            return _exc_doc(doc, root, doc)

    return project


def _flatten(spec: dict, prefix: str = ""):
    """{a: {b: 1}} -> ("a.b", 1): nested sub-projections are dotted paths."""
    for k, v in spec.items():
        path = prefix + k
        if isinstance(v, dict) and v and not next(iter(v)).startswith("$"):
            yield from _flatten(v, path + ".")
        else:
            yield path, v


def _has_slice(node: _Node) -> bool:
    for c in node.children.values():
        if isinstance(c, tuple) and c[0] == "slice":
            return True
        if isinstance(c, _Node) and _has_slice(c):
            return True
    return False


def _slice(v, data):
    if type(v) is not list:
        return v
    if len(data) == 1:
        n = data[0]
        return v[:n] if n >= 0 else v[max(len(v) + n, 0):]
    skip, limit = data
    if skip < 0:
        skip = max(len(v) + skip, 0)
    return v[skip:skip + limit]


def _inc_doc(doc: dict, node: _Node, root, pos) -> dict:
    out = {}
    for k, v in doc.items():
        c = node.children.get(k)
        if c is None:
            continue
        if c is True:
            out[k] = v
        elif isinstance(c, _Node):
            if type(v) is DBRef:  # (the embedded document {$ref, $id, ...} it stands for)
                v = dbref_doc(v)
            if type(v) is dict:
                out[k] = _inc_doc(v, c, root, pos)
            elif type(v) is list:
                out[k] = _inc_array(v, c, root, pos)
        elif c is False:
            continue
        else:
            kind = c[0]
            if kind == "slice":
                out[k] = _slice(v, c[1])
            elif kind == "positional":
                if pos is None or type(v) is not list or pos >= len(v):
                    raise MongoError(
                        51246,
                        "Executor error during find command :: caused by :: positional operator '.$' couldn't find a matching element in the array",
                    )
                out[k] = [v[pos]]
            elif kind == "elemMatch":
                m = c[1]
                ok, p = m.match_position({k: v})
                if ok and p is not None:
                    out[k] = [v[p]]
    # computed fields (and sub-projections holding computed fields) in spec order
    for k in node.order:
        c = node.children[k]
        if isinstance(c, tuple) and c[0] == "expr":
            val = c[1](root)
            if val is not MISSING:
                out[k] = val
        elif isinstance(c, _Node) and k not in out and _has_expr(c):
            sub = _inc_doc({}, c, root, pos)
            if sub:
                out[k] = sub
    return out


def _has_expr(node: _Node) -> bool:
    for c in node.children.values():
        if isinstance(c, tuple) and c[0] == "expr":
            return True
        if isinstance(c, _Node) and _has_expr(c):
            return True
    return False


def _inc_array(arr: list, node: _Node, root, pos) -> list:
    out = []
    for e in arr:
        if type(e) is DBRef:
            e = dbref_doc(e)
        if type(e) is dict:
            out.append(_inc_doc(e, node, root, pos))
        elif type(e) is list:
            out.append(_inc_array(e, node, root, pos))
        elif _has_expr(node):
            out.append(_inc_doc({}, node, root, pos))
    return out


def _exc_doc(doc: dict, node: _Node, root) -> dict:
    out = {}
    for k, v in doc.items():
        c = node.children.get(k)
        if c is None:
            out[k] = v
        elif c is False:
            continue
        elif c is True:
            out[k] = v
        elif isinstance(c, _Node):
            if type(v) is DBRef:
                v = dbref_doc(v)
            if type(v) is dict:
                out[k] = _exc_doc(v, c, root)
            elif type(v) is list:
                out[k] = _exc_array(v, c, root)
            else:
                out[k] = v
        elif c[0] == "slice":
            out[k] = _slice(v, c[1])
        else:
            out[k] = v
    return out


def _exc_array(arr, node, root):
    out = []
    for e in arr:
        if type(e) is DBRef:
            e = dbref_doc(e)
        if type(e) is dict:
            out.append(_exc_doc(e, node, root))
        elif type(e) is list:
            out.append(_exc_array(e, node, root))
        else:
            out.append(e)
    return out
