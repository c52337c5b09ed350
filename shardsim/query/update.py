"""Applying updates exactly as the server does, and logging the `$v:2` diff.

Three kinds of update (:func:`classify_update`):

* **replacement** `{a: 1}` – the new document is the given one (keeping
  `_id`); logged as the whole document.
* **operators** `{$set: {...}, $inc: {...}}` – parsed into a tree of paths
  (the server's UpdateObjectNode/UpdateArrayNode): two operators touching the
  same path or a path and its prefix (`a` and `a.b`) are a conflict
  (ConflictingUpdateOperators 40).  The tree is applied with children in
  field-name order (numeric names in numeric order), which is why
  `{$set: {b: 1, a: 1}}` appends `a` before `b`.  Each leaf ("modifier")
  either changes nothing (a no-op), updates an existing value, or creates a
  path; every change is reported to a log builder that assembles the diff
  (`v2_log_builder.cpp`): an update is `u`, a created field `i` (with any
  created parent documents nested inside it), a removed field `d`, changes
  below an existing object or array a sub-diff `s<field>`.  `$push`/
  `$addToSet` that only append log one `u<idx>` per new element.
* **pipeline** `[{$set: ...}, ...]` – the stages compute the new document;
  the diff is `diff.compute_diff(pre, post)` and falls back to a replacement
  entry when that is smaller.

`apply_update` never mutates its input; a no-op update has `diff=None`
(the server writes no oplog entry for it).  The new document is built
copy-on-write: containers on the paths the update touches are copied, the
rest is shared with the input (documents are treated as immutable values).

Sources: src/mongo/db/update/*.cpp (update_object_node, update_array_node,
modifier_node, set_node, unset_node, arithmetic_node, compare_node,
current_date_node, push_node, addtoset_node, pull_node, pullall_node,
pop_node, rename_node, v2_log_builder, object_replace_executor,
pipeline_executor, produce_document_for_upsert) and
src/mongo/db/ops/parsed_update.cpp.  Hand-written: mongomock's update code
(the test oracle) diverges from the server (field order, numeric overflow,
diffs, several error cases) and produces no oplog diff at all.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime
import functools
import re
from decimal import Context, Decimal
from typing import Any, Iterator

from bson import DBRef, Decimal128, Int64, ObjectId, Regex, Timestamp

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.diff import DELTA_METADATA_PADDING, binary_equal, compute_diff
from mongosim.shardsim.query.fmt import bson_str, element_str, query_error
from mongosim.shardsim.query.paths import array_index, split
from mongosim.shardsim.query.values import MISSING, compare, is_number, sort_key, type_name

__all__ = ["apply_update", "classify_update", "UpdateResult", "compile_update", "parse_update", "upsert_seed", "deep_copy"]

_DEC_CTX = Context(prec=34)

# Whether `_id` is immutable (the update driver's immutable paths): true but for a time-series
# collection's measurements, whose `_id` an update may change (TimeseriesModifyStage passes none).
_ID_IMMUTABLE: contextvars.ContextVar[bool] = contextvars.ContextVar("id_immutable", default=True)


@contextlib.contextmanager
def mutable_id() -> Iterator[None]:
    """Updates applied inside may change `_id` (a measurement's)."""
    token = _ID_IMMUTABLE.set(False)
    try:
        yield
    finally:
        _ID_IMMUTABLE.reset(token)


class UpdateResult:
    __slots__ = ("doc", "diff", "is_replacement")

    def __init__(self, doc: dict, diff: dict | None, is_replacement: bool):
        self.doc = doc
        self.diff = diff
        self.is_replacement = is_replacement

    @property
    def noop(self) -> bool:
        return self.diff is None

    def oplog_o(self) -> dict | None:
        """The oplog entry's `o`: `{$v: 2, diff}` or the replacement document (None for a no-op)."""
        if self.diff is None:
            return None
        if self.is_replacement:
            return self.doc
        return {"$v": 2, "diff": self.diff}

    def __repr__(self) -> str:
        return f"UpdateResult(doc={self.doc!r}, diff={self.diff!r}, is_replacement={self.is_replacement})"


def deep_copy(v):
    t = type(v)
    if t is dict:
        return {k: deep_copy(x) if type(x) in (dict, list) else x for k, x in v.items()}
    if t is list:
        return [deep_copy(x) if type(x) in (dict, list) else x for x in v]
    return v


def classify_update(update) -> str:
    if isinstance(update, list):
        return "pipeline"
    if not isinstance(update, dict):
        raise MongoError("FailedToParse", "Update argument must be either an object or an array")
    if update and next(iter(update)).startswith("$"):
        return "operators"
    return "replacement"


# ---------------------------------------------------------------------------------
# path ordering: UpdateObjectNode children are ordered by pathsupport::cmpPathsAndArrayIndexes


def _cmp_field(a: str, b: str) -> int:
    if a.isdigit() and b.isdigit() and a.isascii() and b.isascii():
        ia, ib = int(a), int(b)
        if ia != ib:
            return -1 if ia < ib else 1
    return -1 if a < b else (1 if a > b else 0)


_field_key = functools.cmp_to_key(_cmp_field)

# ---------------------------------------------------------------------------------
# the update tree


class _Leaf:
    __slots__ = ("op", "arg", "path", "data")

    def __init__(self, op, arg, path, data=None):
        self.op = op
        self.arg = arg
        self.path = path
        self.data = data


class _Obj:
    __slots__ = ("children", "positional")

    def __init__(self):
        self.children: dict[str, Any] = {}
        self.positional = None


class _Arr:
    __slots__ = ("children",)

    def __init__(self):
        self.children: dict[str, Any] = {}  # identifier ("" for $[]) -> node


_MODIFIERS = {
    "$set", "$unset", "$inc", "$mul", "$min", "$max", "$rename", "$currentDate", "$setOnInsert",
    "$push", "$addToSet", "$pull", "$pullAll", "$pop", "$bit",
}


def _conflict(path: str, at: str):
    return MongoError("ConflictingUpdateOperators", f"Updating the path '{path}' would create a conflict at '{at}'")


def _parse_component(part: str):
    """('field', name) | ('pos',) | ('all',) | ('filter', id)."""
    if part == "$":
        return ("pos", None)
    if part == "$[]":
        return ("all", "")
    if part.startswith("$[") and part.endswith("]"):
        ident = part[2:-1]
        return ("filter", ident)
    return ("field", part)


class CompiledUpdate:
    """A parsed operator update (reusable across documents)."""

    __slots__ = ("root", "update", "identifiers_used", "array_filters", "has_positional", "fast")

    def __init__(self, update: dict, array_filters=None):
        self.update = update
        self.root = _Obj()
        self.identifiers_used: set[str] = set()
        self.has_positional = False
        self.array_filters = _compile_array_filters(array_filters)
        fast = []
        for op, spec in update.items():
            if op not in _MODIFIERS:
                raise MongoError(
                    "FailedToParse",
                    f"Unknown modifier: {op}. Expected a valid update modifier or pipeline-style update specified as an array",
                )
            if not isinstance(spec, dict):
                raise MongoError(
                    "FailedToParse",
                    f"Modifiers operate on fields but we found type {type_name(spec)} instead. For example: "
                    f"{{$mod: {{<field>: ...}}}} not {{{op}: {bson_str(spec)}}}",
                )
            for path, arg in spec.items():
                _validate_path(path, op)
                data = _parse_leaf(op, path, arg)
                if op == "$rename":
                    self._insert(path, _Leaf("$renameSource", None, path))
                    self._insert(arg, _Leaf("$rename", path, arg, data))
                else:
                    self._insert(path, _Leaf(op, arg, path, data))
                if fast is not None:
                    if op in ("$set", "$inc") and "." not in path and not path.startswith("$") and type(arg) not in (dict, list):
                        fast.append((op, path, arg))
                    else:
                        fast = None
        unused = set(self.array_filters) - self.identifiers_used
        if unused:
            ident = sorted(unused)[0]
            raise MongoError(
                "FailedToParse",
                f"The array filter for identifier '{ident}' was not used in the update {bson_str(update)}",
            )
        # a fast path for {$set/$inc: {top_level_field: scalar}}: no tree walk, no deep copy
        if fast and len(fast) > 1:
            fast.sort(key=lambda f: _field_key(f[1]))
        self.fast = tuple(fast) if fast else None

    def _insert(self, path: str, leaf: _Leaf):
        parts = split(path)
        node = self.root
        npos = sum(1 for p in parts if p == "$")
        if npos > 1:
            raise MongoError("BadValue", f"Too many positional (i.e. '$') elements found in path '{path}'")
        if parts[0] == "$":
            raise MongoError("BadValue", f"Cannot have positional (i.e. '$') element in the first position in path '{path}'")
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            kind, name = _parse_component(part)
            if kind == "filter":
                if not name or not (name[0].islower() and name.isalnum()):
                    raise MongoError(
                        "BadValue",
                        f"The top-level field name must be an alphanumeric string beginning with a lowercase letter, found '{name}'",
                    )
                if name not in self.array_filters:
                    raise MongoError("BadValue", f"No array filter found for identifier '{name}' in path '{path}'")
                self.identifiers_used.add(name)
            if kind == "pos":
                self.has_positional = True
            if isinstance(node, _Leaf):
                raise _conflict(path, ".".join(parts[:i]))
            if last:
                new = leaf
            else:
                nk = _parse_component(parts[i + 1])[0]
                new = _Arr() if nk in ("all", "filter") else _Obj()
            if kind in ("all", "filter"):
                if not isinstance(node, _Arr):
                    raise _conflict(path, ".".join(parts[:i]))
                existing = node.children.get(name)
                if existing is None:
                    node.children[name] = new
                    node = new
                    continue
            elif kind == "pos":
                if not isinstance(node, _Obj):
                    raise _conflict(path, ".".join(parts[:i]))
                existing = node.positional
                if existing is None:
                    node.positional = new
                    node = new
                    continue
            else:
                if not isinstance(node, _Obj):
                    raise _conflict(path, ".".join(parts[:i]))
                existing = node.children.get(name)
                if existing is None:
                    node.children[name] = new
                    node = new
                    continue
            if last or isinstance(existing, _Leaf) or type(existing) is not type(new):
                raise _conflict(path, ".".join(parts[: i + 1]))
            node = existing


def _validate_path(path: str, op: str):
    if path == "":
        raise query_error("EmptyFieldName", "An empty update path is not valid.")
    parts = path.split(".")
    for i, p in enumerate(parts):
        if p == "":
            raise query_error("EmptyFieldName", f"The update path '{path}' contains an empty field name, which is not allowed.")
        if p.startswith("$") and not (p == "$" or (p.startswith("$[") and p.endswith("]"))):
            if i == 0:
                raise MongoError(
                    "DollarPrefixedFieldName",
                    f"The dollar ($) prefixed field '{p}' in '{path}' is not valid for storage.",
                )


def _codes():
    from mongosim.oplog.error_codes import CODES

    return CODES


def _compile_array_filters(array_filters) -> dict:
    out: dict[str, Any] = {}
    if not array_filters:
        return out
    from mongosim.shardsim.query.matcher import Matcher

    for flt in array_filters:
        if not isinstance(flt, dict):
            raise MongoError("TypeMismatch", "arrayFilters entries must be objects")
        if not flt:
            raise MongoError("FailedToParse", "Cannot use an expression without a top-level field name in arrayFilters")
        ident = None
        for k in flt:
            top = k.split(".")[0]
            if top.startswith("$"):
                raise MongoError("FailedToParse", "Cannot use an expression without a top-level field name in arrayFilters")
            if ident is None:
                ident = top
            elif ident != top:
                raise MongoError(
                    "FailedToParse",
                    f"Error parsing array filter :: caused by :: Expected a single top-level field name, found '{ident}' and '{top}'",
                )
        if not (ident[0].islower() and ident.isalnum()):
            raise MongoError(
                "BadValue",
                f"Error parsing array filter :: caused by :: The top-level field name must be an alphanumeric string beginning with a lowercase letter, found '{ident}'",
            )
        if ident in out:
            raise MongoError("FailedToParse", f"Found multiple array filters with the same top-level field name {ident}")
        out[ident] = (Matcher(flt), ident)
    return out


# ---------------------------------------------------------------------------------
# per-operator argument parsing


def _parse_leaf(op: str, path: str, arg):
    if op in ("$inc", "$mul"):
        if not is_number(arg):
            verb = "increment" if op == "$inc" else "multiply"
            raise MongoError("TypeMismatch", f"Cannot {verb} with non-numeric argument: {{{element_str(path, arg)}}}")
    elif op == "$rename":
        if not isinstance(arg, str):
            raise MongoError("BadValue", f"The 'to' field for $rename must be a string: {element_str(path, arg)}")
        if arg == path:
            raise MongoError("BadValue", f"The source and target field for $rename must differ: {element_str(path, arg)}")
        if path.startswith(arg + ".") or arg.startswith(path + "."):
            raise MongoError("BadValue", f"The source and target field for $rename must not be on the same path: {element_str(path, arg)}")
        for p in split(path):
            if p.startswith("$"):
                raise MongoError("BadValue", f"The source field for $rename may not be dynamic: {path}")
        _validate_path(arg, op)
        for p in split(arg):
            if p.startswith("$"):
                raise MongoError("BadValue", f"The destination field for $rename may not be dynamic: {arg}")
    elif op == "$pop":
        if not is_number(arg):
            raise MongoError("FailedToParse", f"Expected a number in: {element_str(path, arg)}")
        v = float(arg.to_decimal()) if isinstance(arg, Decimal128) else float(arg)
        if v not in (1.0, -1.0):
            raise MongoError("FailedToParse", f"$pop expects 1 or -1, found: {bson_str(arg)}")
        return int(v)
    elif op == "$pullAll":
        if not isinstance(arg, list):
            raise MongoError("BadValue", f"$pullAll requires an array argument but was given a {type_name(arg)}")
    elif op == "$currentDate":
        if isinstance(arg, bool):
            return "date"
        if isinstance(arg, dict):
            t = arg.get("$type", MISSING)
            if len(arg) != 1 or t is MISSING:
                raise MongoError("BadValue", "The '$type' string field is required to be 'date' or 'timestamp': {$currentDate: {field : {$type: 'date'}}}")
            if t not in ("date", "timestamp"):
                raise MongoError("BadValue", "The '$type' string field is required to be 'date' or 'timestamp': {$currentDate: {field : {$type: 'date'}}}")
            return t
        raise MongoError("BadValue", f"{type_name(arg)} is not valid type for $currentDate. Please use a boolean ('true') or a $type expression ({{$type: 'timestamp/date'}}).")
    elif op == "$push":
        return _parse_push(arg)
    elif op == "$addToSet":
        if isinstance(arg, dict) and arg and next(iter(arg)) == "$each":
            each = arg["$each"]
            if not isinstance(each, list):
                raise MongoError("TypeMismatch", f"The argument to $each in $addToSet must be an array but it was of type {type_name(each)}")
            if len(arg) > 1:
                raise MongoError("BadValue", f"Found unexpected fields after $each in $addToSet: {bson_str(arg)}")
            vals = each
        else:
            vals = [arg]
        out, seen = [], set()
        for v in vals:
            k = sort_key(v)
            if k not in seen:
                seen.add(k)
                out.append(v)
        return out
    elif op == "$pull":
        return _parse_pull(arg)
    elif op == "$bit":
        if not isinstance(arg, dict) or not arg:
            raise MongoError("BadValue", f"The $bit modifier is not compatible with a {type_name(arg)}. You must pass in an embedded document: {{$bit: {{field: {{and/or/xor: #}}}}")
        ops = []
        for k, v in arg.items():
            if k not in ("and", "or", "xor"):
                raise MongoError("BadValue", f"The $bit modifier only supports 'and', 'or', and 'xor', not '{k}' which is an unknown operator: {{{element_str(k, v)}}}")
            if type(v) not in (int, Int64):
                raise MongoError("BadValue", f"The $bit modifier field must be an Integer(32/64 bit); a '{type_name(v)}' is not supported here: {{{element_str(k, v)}}}")
            ops.append((k, v))
        return ops
    return None


def _parse_push(arg):
    if isinstance(arg, dict) and "$each" in arg:
        each = arg["$each"]
        if not isinstance(each, list):
            raise MongoError("BadValue", f"The argument to $each in $push must be an array but it was of type: {type_name(each)}")
        slice_ = None
        sort = None
        position = None
        for k, v in arg.items():
            if k == "$each":
                continue
            if k == "$slice":
                if not is_number(v) or (isinstance(v, float) and v != int(v)):
                    raise MongoError("BadValue", f"The value for $slice must be an integer value but was given type: {type_name(v)}")
                slice_ = int(v if not isinstance(v, Decimal128) else v.to_decimal())
            elif k == "$sort":
                if isinstance(v, dict):
                    if not v:
                        raise MongoError("BadValue", "The $sort pattern is empty when it should be a set of fields.")
                    for sk, sv in v.items():
                        if sv not in (1, -1) or isinstance(sv, bool):
                            raise MongoError("BadValue", "The $sort element value must be either 1 or -1")
                        if sk == "" or any(p == "" for p in sk.split(".")):
                            raise MongoError("BadValue", "The $sort field is a dotted field but has an empty part: " + sk)
                        if sk.startswith("$"):
                            raise MongoError("BadValue", f"The $sort field cannot start with $")
                    sort = [(sk, int(sv)) for sk, sv in v.items()]
                elif is_number(v) and not isinstance(v, bool):
                    if v not in (1, -1):
                        raise MongoError("BadValue", "The $sort element value must be either 1 or -1")
                    sort = int(v)
                else:
                    raise MongoError("BadValue", "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded fields")
            elif k == "$position":
                if not is_number(v) or (isinstance(v, float) and v != int(v)):
                    raise MongoError("BadValue", f"The value for $position must be an integer value, not of type: {type_name(v)}")
                position = int(v if not isinstance(v, Decimal128) else v.to_decimal())
            else:
                raise MongoError("BadValue", f"Unrecognized clause in $push: {k}")
        return (list(each), slice_, sort, position)
    return ([arg], None, None, None)


def _parse_pull(arg):
    from mongosim.shardsim.query.matcher import compile_filter

    if isinstance(arg, dict):
        first = next(iter(arg), "")
        if first.startswith("$") and first not in ("$and", "$or", "$nor", "$expr"):
            pred = compile_filter({"x": arg})
            return ("value", lambda e: pred({"x": e}, None))
        if arg:
            pred = compile_filter(arg)
            return ("object", lambda e: type(e) is dict and pred(e, None))
        return ("object", lambda e: type(e) is dict)
    key = sort_key(arg)
    return ("eq", lambda e: sort_key(e) == key)


# ---------------------------------------------------------------------------------
# log builder (v2_log_builder.cpp)

_FIELD, _INDEX = 0, 1


class _LDoc:
    __slots__ = ("children", "inserting")

    def __init__(self, inserting=False):
        self.children: dict[str, Any] = {}
        self.inserting = inserting


class _LArr:
    __slots__ = ("children",)

    def __init__(self):
        self.children: dict[int, Any] = {}


class _LogBuilder:
    __slots__ = ("root", "count")

    def __init__(self):
        self.root = _LDoc()
        self.count = 0

    def _add(self, path: list, leaf, first_new: int | None):
        self.count += 1
        node = self.root
        n = len(path)
        for i in range(n - 1):
            name, _t = path[i]
            key = int(name) if isinstance(node, _LArr) else name
            child = node.children.get(key)
            if child is None:
                if path[i + 1][1] == _INDEX:
                    child = _LArr()
                elif first_new is not None and i >= first_new:
                    child = _LDoc(inserting=True)
                else:
                    child = _LDoc()
                node.children[key] = child
            node = child
        name = path[-1][0]
        key = int(name) if isinstance(node, _LArr) else name
        node.children[key] = leaf

    def updated(self, path, value):
        self._add(path, ("u", value), None)

    def created(self, path, first_new, value):
        self._add(path, ("i", value), first_new)

    def deleted(self, path):
        self._add(path, ("d", None), None)

    def serialize(self) -> dict | None:
        if not self.count:
            return None
        return _ser_doc(self.root)


def _ser_insert_doc(node: _LDoc) -> dict:
    out = {}
    for k, c in node.children.items():
        out[k] = _ser_insert_doc(c) if isinstance(c, _LDoc) else c[1]
    return out


def _ser_doc(node: _LDoc) -> dict:
    d, u, i, subs = {}, {}, {}, []
    for k, c in node.children.items():
        if type(c) is tuple:
            kind = c[0]
            if kind == "d":
                d[k] = False
            elif kind == "u":
                u[k] = c[1]
            else:
                i[k] = c[1]
        elif isinstance(c, _LDoc) and c.inserting:
            i[k] = _ser_insert_doc(c)
        else:
            subs.append((k, c))
    out: dict = {}
    if d:
        out["d"] = d
    if u:
        out["u"] = u
    if i:
        out["i"] = i
    for k, c in subs:
        out["s" + k] = _ser_doc(c) if isinstance(c, _LDoc) else _ser_arr(c)
    return out


def _ser_arr(node: _LArr) -> dict:
    out: dict = {"a": True}
    for idx in sorted(node.children):
        c = node.children[idx]
        if type(c) is tuple:
            out["u" + str(idx)] = c[1]
        elif isinstance(c, _LDoc) and c.inserting:
            out["u" + str(idx)] = _ser_insert_doc(c)
        else:
            out["s" + str(idx)] = _ser_doc(c) if isinstance(c, _LDoc) else _ser_arr(c)
    return out


# ---------------------------------------------------------------------------------
# application


class _Ctx:
    __slots__ = ("is_insert", "now", "matched", "log", "doc_id", "filters", "root", "owned")

    def __init__(self, is_insert, now, matched, log, doc_id, filters, root):
        self.owned = {id(root)}  # containers of the working document that are private copies
        self.is_insert = is_insert
        self.now = now
        self.matched = matched
        self.log = log
        self.doc_id = doc_id
        self.filters = filters
        self.root = root


def _dotted(path) -> str:
    return ".".join(p[0] for p in path)


def _get_child(container, name):
    t = type(container)
    if t is dict:
        return container.get(name, MISSING)
    if t is list:
        i = array_index(name)
        if i is not None and i < len(container):
            return container[i]
    return MISSING


def _own(parent, name, ctx):
    """The child container at parent[name], replaced by a private shallow copy on first use
    (copy-on-write: the input document is never modified, untouched subtrees are shared)."""
    v = _get_child(parent, name)
    t = type(v)
    if (t is dict or t is list) and id(v) not in ctx.owned:
        v = dict(v) if t is dict else list(v)
        _set_value(parent, name, v)
        ctx.owned.add(id(v))
    return v


def _apply_obj(node: _Obj, container, taken: list, to_create: list, ctx: _Ctx):
    children = node.children
    names = sorted(children, key=_field_key) if len(children) > 1 else list(children)
    pos_node = node.positional
    matched = None
    if pos_node is not None:
        if ctx.matched is None:
            raise MongoError("BadValue", "The positional operator did not find the match needed from the query.")
        matched = str(ctx.matched)
        if matched in children:
            merged = _merge(children[matched], pos_node, _dotted(taken) + "." + matched if taken else matched)
            children = dict(children)
            children[matched] = merged
        else:
            names.append(matched)
            names.sort(key=_field_key)
            children = dict(children)
            children[matched] = pos_node
    for name in names:
        child = children[name]
        if to_create:
            _apply_node(child, container, name, taken, to_create + [name], ctx)
        else:
            v = _get_child(container, name)
            if v is MISSING:
                _apply_node(child, container, name, taken, [name], ctx)
            else:
                t = _INDEX if type(container) is list else _FIELD
                _apply_node(child, container, name, taken + [(name, t)], [], ctx)


def _merge(a, b, path):
    if isinstance(a, _Leaf) or isinstance(b, _Leaf):
        raise MongoError("ConflictingUpdateOperators", f"Update created a conflict at '{path}'")
    if type(a) is not type(b):
        raise MongoError("ConflictingUpdateOperators", f"Update created a conflict at '{path}'")
    if isinstance(a, _Obj):
        out = _Obj()
        out.children = dict(a.children)
        for k, v in b.children.items():
            out.children[k] = _merge(out.children[k], v, path + "." + k) if k in out.children else v
        if a.positional and b.positional:
            out.positional = _merge(a.positional, b.positional, path + ".$")
        else:
            out.positional = a.positional or b.positional
        return out
    out = _Arr()
    out.children = dict(a.children)
    for k, v in b.children.items():
        out.children[k] = _merge(out.children[k], v, path) if k in out.children else v
    return out


def _apply_node(node, parent, name, taken, to_create, ctx):
    """Apply `node` to parent[name]; `to_create` non-empty means the path is missing from there."""
    if isinstance(node, _Leaf):
        _apply_leaf(node, parent, name, taken, to_create, ctx)
    elif isinstance(node, _Obj):
        if to_create:
            _apply_obj(node, None, taken, to_create, ctx)
        else:
            _apply_obj(node, _own(parent, name, ctx), taken, to_create, ctx)
    else:
        _apply_arr(node, parent, name, taken, to_create, ctx)


def _apply_arr(node: _Arr, parent, name, taken, to_create, ctx):
    if to_create:
        path = ".".join([p[0] for p in taken] + to_create)
        raise MongoError("BadValue", f"The path '{path}' must exist in the document in order to apply array updates.")
    arr = _own(parent, name, ctx)
    if type(arr) is not list:
        raise MongoError("BadValue", f"Cannot apply array updates to non-array element {element_str(taken[-1][0], arr)}")
    matching: dict[int, list] = {}
    for i, e in enumerate(arr):
        for ident, child in node.children.items():
            if ident == "":
                matching.setdefault(i, []).append(child)
            else:
                m, fname = ctx.filters[ident]
                if m.matches({fname: e}):
                    matching.setdefault(i, []).append(child)
    self_log = len(matching) <= 1
    outer_log = ctx.log
    if not self_log:
        ctx.log = _LogBuilder()  # children do not log; we log the array afterwards
    n_modified = 0
    modified_idx = None
    try:
        for i in sorted(matching):
            updates = matching[i]
            merged = updates[0]
            for other in updates[1:]:
                merged = _merge(merged, other, _dotted(taken) + "." + str(i))
            before = ctx.log.count
            _apply_node(merged, arr, str(i), taken + [(str(i), _INDEX)], [], ctx)
            changed = ctx.log.count != before
            if changed:
                n_modified += 1
                modified_idx = i
    finally:
        ctx.log = outer_log
    if not self_log:
        if n_modified > 1:
            outer_log.updated(taken, arr)
        elif n_modified == 1:
            outer_log.updated(taken + [(str(modified_idx), _INDEX)], arr[modified_idx])


# --- leaves -----------------------------------------------------------------------


def _check_immutable_existing(leaf: _Leaf, taken, new_value, old_value):
    if taken[0][0] != "_id" or leaf.op == "$renameSource" or not _ID_IMMUTABLE.get():
        return
    path = _dotted(taken)
    if leaf.op in ("$set", "$setOnInsert", "$rename") and len(taken) == 1:
        raise MongoError(
            "ImmutableField",
            f"Updating the path '{path}' to {element_str(taken[-1][0], new_value)} would modify the immutable field '_id'",
        )
    raise MongoError("ImmutableField", f"Performing an update on the path '{path}' would modify the immutable field '_id'")


def _set_value(parent, name, value):
    if type(parent) is list:
        parent[int(name)] = value
    else:
        parent[name] = value


def _create_path(parent, taken, to_create, value, ctx: _Ctx, leaf: _Leaf):
    """pathsupport::createPathAt from `parent` (the deepest element that existed when the
    traversal started; earlier sibling updates may have created part of `to_create` since)."""
    types = [p[1] for p in taken]
    names = [p[0] for p in taken]
    first_new = len(taken)
    i = 0
    # descend through components created by earlier siblings of this update
    while i < len(to_create) - 1:
        part = to_create[i]
        if type(parent) is dict and type(parent.get(part, MISSING)) in (dict, list):
            nxt = parent[part]
            types.append(_FIELD)
        elif type(parent) is list and array_index(part) is not None and array_index(part) < len(parent) and type(parent[array_index(part)]) in (dict, list):
            nxt = parent[array_index(part)]
            types.append(_INDEX)
        else:
            break
        names.append(part)
        parent = nxt
        i += 1
    rest = to_create[i:]
    first = rest[0]
    if type(value) is dict or type(value) is list:
        ctx.owned.add(id(value))
    nested = value
    for part in reversed(rest[1:]):
        nested = {part: nested}
        ctx.owned.add(id(nested))
    if type(parent) is list:
        idx = array_index(first)
        if idx is None:
            raise MongoError("PathNotViable", f"Cannot create field '{first}' in element {{{element_str(names[-1], parent)}}}")
        while len(parent) < idx:
            parent.append(None)
        if idx < len(parent):
            parent[idx] = nested
        else:
            parent.append(nested)
        types.append(_INDEX)
    elif type(parent) is dict:
        parent[first] = nested
        types.append(_FIELD)
    else:
        name = names[-1] if names else ""
        raise MongoError("PathNotViable", f"Cannot create field '{first}' in element {{{element_str(name, parent)}}}")
    types.extend([_FIELD] * (len(rest) - 1))
    full = list(zip(names + list(rest), types))
    if full[0][0] == "_id" and not ctx.is_insert:
        raise MongoError(
            "ImmutableField",
            f"Updating the path '{_dotted(full)}' to {element_str(full[-1][0], value)} would modify the immutable field '_id'",
        )
    ctx.log.created(full, first_new, value)


def _resolve_parent(ctx: _Ctx, taken, to_create):
    """The existing element at which `to_create` starts (the last element of `taken`)."""
    cur = ctx.root
    for name, _t in taken:
        cur = _own(cur, name, ctx)
    return cur


def _apply_leaf(leaf: _Leaf, parent, name, taken, to_create, ctx: _Ctx):
    op = leaf.op
    if op == "$setOnInsert" and not ctx.is_insert:
        return
    if op == "$renameSource":
        return
    if op == "$rename":
        return _apply_rename(leaf, taken, to_create, ctx)
    if to_create:
        spec = _CREATORS.get(op)
        if spec is None:
            # no creation: $unset, $pull, $pullAll, $pop are no-ops on missing paths
            if op != "$unset":
                base = _resolve_parent(ctx, taken, to_create)
                if type(base) not in (dict, list) or (type(base) is list and array_index(to_create[0]) is None):
                    bname = taken[-1][0] if taken else ""
                    raise MongoError(
                        "PathNotViable",
                        f"Cannot use the part ({to_create[0]}) of ({_dotted(taken)}.{'.'.join(to_create)}) "
                        f"to traverse the element ({{{element_str(bname, base)}}})",
                    )
            return
        value = spec(leaf, ctx)
        base = _resolve_parent(ctx, taken, to_create)
        _create_path(base, taken, to_create, value, ctx, leaf)
        return
    old = _own(parent, name, ctx) if op in ("$push", "$addToSet") else _get_child(parent, name)
    fn = _UPDATERS[op]
    res = fn(leaf, old, taken, ctx)
    if res is None:
        return  # no-op
    kind, new = res
    if taken[0][0] == "_id":
        if op == "$unset" or not (binary_equal(new, old) if kind != "delete" else False):
            _check_immutable_existing(leaf, taken, new, old)
    if kind == "update":
        _set_value(parent, name, new)
        ctx.log.updated(taken, new)
    elif kind == "delete":
        if type(parent) is list:
            parent[int(name)] = None
            ctx.log.updated(taken, None)
        else:
            del parent[name]
            ctx.log.deleted(taken)
    elif kind == "append":
        n_added = new
        arr = old
        start = len(arr) - n_added
        for k in range(start, len(arr)):
            ctx.log.created(taken + [(str(k), _INDEX)], len(taken), arr[k])


# creators: value for a newly created element


def _create_set(leaf, ctx):
    return deep_copy(leaf.arg)


def _create_inc(leaf, ctx):
    return leaf.arg


def _create_mul(leaf, ctx):
    # SafeNum: the operand times int32 0 (keeps the operand's type; -1.5 gives -0.0)
    return _arith("$mul", leaf.arg, 0)


def _create_current_date(leaf, ctx):
    return _now_value(leaf.data, ctx)


def _now_value(kind, ctx):
    now = ctx.now or datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    if kind == "timestamp":
        if isinstance(now, Timestamp):
            return now
        return Timestamp(int((now - datetime.datetime(1970, 1, 1)).total_seconds()), 1)
    if isinstance(now, Timestamp):
        return now.as_datetime().replace(tzinfo=None)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def _create_push(leaf, ctx):
    each, slice_, sort, position = leaf.data
    arr = [deep_copy(x) for x in each]
    if sort is not None:
        _sort_array(arr, sort)
    if slice_ is not None:
        arr = _slice(arr, slice_)
    return arr


def _create_add_to_set(leaf, ctx):
    return [deep_copy(x) for x in leaf.data]


def _create_bit(leaf, ctx):
    v = 0
    for k, x in leaf.data:
        v = _bitop(k, v, x)
    # the server creates with the operand type of the last op
    return v


_CREATORS = {
    "$set": _create_set,
    "$setOnInsert": _create_set,
    "$inc": _create_inc,
    "$mul": _create_mul,
    "$min": _create_set,
    "$max": _create_set,
    "$currentDate": _create_current_date,
    "$push": _create_push,
    "$addToSet": _create_add_to_set,
    "$bit": _create_bit,
}


# updaters: (leaf, old value, path taken, ctx) -> None (no-op) | (kind, value)


def _upd_set(leaf, old, taken, ctx):
    new = leaf.arg
    if binary_equal(old, new):
        return None
    return ("update", deep_copy(new))


def _upd_unset(leaf, old, taken, ctx):
    return ("delete", None)


def _num_kind(v) -> str:
    t = type(v)
    if t is Decimal128:
        return "decimal"
    if t is float:
        return "double"
    if t is Int64:
        return "long"
    return "int" if -(2**31) <= v < 2**31 else "long"


def _to_dec(v) -> Decimal:
    if type(v) is Decimal128:
        return v.to_decimal()
    if type(v) is float:
        return _DEC_CTX.create_decimal_from_float(v) if v == v else Decimal("NaN")
    return Decimal(int(v))


def _arith(op: str, a, b):
    """SafeNum arithmetic: int32 overflows to int64; int64 overflow is invalid (None)."""
    ka, kb = _num_kind(a), _num_kind(b)
    if "decimal" in (ka, kb):
        da, db = _to_dec(a), _to_dec(b)
        r = _DEC_CTX.add(da, db) if op == "$inc" else _DEC_CTX.multiply(da, db)
        return Decimal128(r)
    if "double" in (ka, kb):
        return float(a) + float(b) if op == "$inc" else float(a) * float(b)
    r = int(a) + int(b) if op == "$inc" else int(a) * int(b)
    if ka == "int" and kb == "int":
        if -(2**31) <= r < 2**31:
            return r
        return Int64(r)
    if -(2**63) <= r < 2**63:
        return Int64(r)
    return None


def _upd_arith(leaf, old, taken, ctx):
    op = leaf.op
    if not is_number(old):
        id_part = element_str("_id", ctx.doc_id) if ctx.doc_id is not MISSING else ""
        raise MongoError(
            "TypeMismatch",
            f"Cannot apply {op} to a value of non-numeric type. {{{id_part}}} has the field '{taken[-1][0]}' of non-numeric type {type_name(old)}",
        )
    new = _arith(op, old, leaf.arg)
    if new is None:
        id_part = element_str("_id", ctx.doc_id) if ctx.doc_id is not MISSING else ""
        raise MongoError(
            "BadValue",
            f"Failed to apply {op} operations to current value ({_typed(old)}) for document {{{id_part}}}",
        )
    if binary_equal(old, new):
        return None
    return ("update", new)


def _typed(v) -> str:
    k = _num_kind(v)
    name = {"int": "NumberInt", "long": "NumberLong", "double": "NumberDouble", "decimal": "NumberDecimal"}[k]
    return f"({name}){bson_str(v)}"


def _upd_minmax(leaf, old, taken, ctx):
    c = compare(leaf.arg, old)
    if (leaf.op == "$min" and c < 0) or (leaf.op == "$max" and c > 0):
        return ("update", deep_copy(leaf.arg))
    return None


def _upd_current_date(leaf, old, taken, ctx):
    new = _now_value(leaf.data, ctx)
    if binary_equal(old, new):
        return None
    return ("update", new)


def _not_array_push(old, taken, ctx):
    id_part = element_str("_id", ctx.doc_id) if ctx.doc_id is not MISSING else "no id"
    return MongoError(
        "BadValue",
        f"The field '{_dotted(taken)}' must be an array but is of type {type_name(old)} in document {{{id_part}}}",
    )


def _upd_push(leaf, old, taken, ctx):
    if type(old) is not list:
        raise _not_array_push(old, taken, ctx)
    each, slice_, sort, position = leaf.data
    arr = list(old)
    vals = [deep_copy(x) for x in each]
    n = len(arr)
    result = None
    if vals:
        pos = (2**63 - 1) if position is None else position
        if n == 0:
            arr.extend(vals)
            result = "update"
        elif pos > n:
            arr.extend(vals)
            result = "append"
        elif pos > 0:
            arr[pos:pos] = vals
            result = "update"
        elif pos < 0 and -pos < n:
            at = n + pos
            arr[at:at] = vals
            result = "update"
        else:
            arr[0:0] = vals
            result = "update"
    if sort is not None:
        result = "update"
        _sort_array(arr, sort)
    if slice_ is not None:
        lim = abs(slice_)
        if len(arr) > lim:
            result = "update"
            arr = _slice(arr, slice_)
    if result is None:
        return None
    if result == "append":
        old.extend(vals)  # old is already a private copy inside the working document
        return ("append", len(vals))
    return ("update", arr)


def _slice(arr, s):
    if s >= 0:
        return arr[:s]
    return arr[len(arr) + s:] if -s < len(arr) else arr


def _sort_array(arr, sort):
    if isinstance(sort, int):
        arr.sort(key=sort_key, reverse=sort < 0)
        return
    from mongosim.shardsim.query.paths import get_path

    def cmp(x, y):
        for path, direction in sort:
            vx = get_path(x, path) if type(x) is dict else MISSING
            vy = get_path(y, path) if type(y) is dict else MISSING
            vx = None if vx is MISSING else vx
            vy = None if vy is MISSING else vy
            c = compare(vx, vy)
            if c:
                return c * direction
        return 0

    arr.sort(key=functools.cmp_to_key(cmp))


def _upd_add_to_set(leaf, old, taken, ctx):
    if type(old) is not list:
        raise MongoError(
            "BadValue",
            f"Cannot apply $addToSet to non-array field. Field named '{taken[-1][0]}' has non-array type {type_name(old)}",
        )
    present = {sort_key(x) for x in old}
    add = [deep_copy(v) for v in leaf.data if sort_key(v) not in present]
    if not add:
        return None
    old.extend(add)
    return ("append", len(add))


def _upd_pull(leaf, old, taken, ctx):
    if type(old) is not list:
        raise MongoError("BadValue", "Cannot apply $pull to a non-array value")
    _kind, pred = leaf.data
    kept = [e for e in old if not pred(e)]
    if len(kept) == len(old):
        return None
    return ("update", kept)


def _upd_pull_all(leaf, old, taken, ctx):
    if type(old) is not list:
        raise MongoError("BadValue", "Cannot apply $pull to a non-array value")
    keys = {sort_key(v) for v in leaf.arg}
    kept = [e for e in old if sort_key(e) not in keys]
    if len(kept) == len(old):
        return None
    return ("update", kept)


def _upd_pop(leaf, old, taken, ctx):
    if type(old) is not list:
        raise MongoError("TypeMismatch", f"Path '{_dotted(taken)}' contains an element of non-array type '{type_name(old)}'")
    if not old:
        return None
    return ("update", old[1:] if leaf.data < 0 else old[:-1])


def _bitop(k, a, b):
    if k == "and":
        r = int(a) & int(b)
    elif k == "or":
        r = int(a) | int(b)
    else:
        r = int(a) ^ int(b)
    if type(a) is Int64 or type(b) is Int64 or not (-(2**31) <= r < 2**31):
        r &= (1 << 64) - 1
        if r >= 1 << 63:
            r -= 1 << 64
        return Int64(r)
    return r


def _upd_bit(leaf, old, taken, ctx):
    if type(old) not in (int, Int64):
        id_part = element_str("_id", ctx.doc_id) if ctx.doc_id is not MISSING else ""
        raise MongoError(
            "BadValue",
            f"Cannot apply $bit to a value of non-integral type.{{{id_part}}} has the field {taken[-1][0]} of non-integer type {type_name(old)}",
        )
    v = old
    for k, x in leaf.data:
        v = _bitop(k, v, x)
    if binary_equal(v, old):
        return None
    return ("update", v)


_UPDATERS = {
    "$set": _upd_set,
    "$setOnInsert": _upd_set,
    "$unset": _upd_unset,
    "$inc": _upd_arith,
    "$mul": _upd_arith,
    "$min": _upd_minmax,
    "$max": _upd_minmax,
    "$currentDate": _upd_current_date,
    "$push": _upd_push,
    "$addToSet": _upd_add_to_set,
    "$pull": _upd_pull,
    "$pullAll": _upd_pull_all,
    "$pop": _upd_pop,
    "$bit": _upd_bit,
}


def _find_longest_prefix(root, parts):
    """pathsupport::findLongestPrefix: (number of parts found, element reached)."""
    curr = root
    i = 0
    dotted = ".".join(parts)
    while i < len(parts):
        part = parts[i]
        t = type(curr)
        if t is dict:
            nxt = curr.get(part, MISSING)
        elif t is list and array_index(part) is not None:
            idx = array_index(part)
            nxt = curr[idx] if idx < len(curr) else MISSING
        else:
            raise MongoError(
                "PathNotViable",
                f"cannot use the part ({parts[i - 1]} of {dotted}) to traverse the element ({{{element_str(parts[i - 1], curr)}}})",
            )
        if nxt is MISSING:
            break
        curr = nxt
        i += 1
    return i, curr


def _array_ancestor(root, names) -> str | None:
    """The field name of the innermost array among the elements at names[:1], names[:2], ..."""
    found = None
    cur = root
    for name in names:
        cur = _get_child(cur, name)
        if cur is MISSING:
            break
        if type(cur) is list:
            found = name
    return found


def _apply_rename(leaf: _Leaf, taken, to_create, ctx: _Ctx):
    """RenameNode::apply: set the destination to the source's value, then unset the source."""
    src = leaf.arg
    src_parts = split(src)
    n_found, value = _find_longest_prefix(ctx.root, src_parts)
    if n_found != len(src_parts):
        return  # no source: a no-op
    id_str = element_str("_id", ctx.doc_id) if ctx.doc_id is not MISSING else "no id"
    arr = _array_ancestor(ctx.root, src_parts[:-1])
    if arr is not None:
        raise MongoError(
            "BadValue",
            f"The source field cannot be an array element, '{src}' in doc with {id_str} has an array field called '{arr}'",
        )
    dest_names = [p[0] for p in taken] if not to_create else [p[0] for p in taken]
    check = dest_names[:-1] if not to_create else dest_names
    arr = _array_ancestor(ctx.root, check)
    if arr is not None:
        raise MongoError(
            "BadValue",
            f"The destination field cannot be an array element, '{leaf.path}' in doc with {id_str} has an array field called '{arr}'",
        )
    value = deep_copy(value)
    if to_create:
        base = _resolve_parent(ctx, taken, to_create)
        _create_path(base, taken, to_create, value, ctx, leaf)
    else:
        parent = _resolve_parent(ctx, taken[:-1], [])
        old = _get_child(parent, taken[-1][0])
        if compare(old, value) != 0:
            if taken[0][0] == "_id":
                _check_immutable_existing(leaf, taken, value, old)
            _set_value(parent, taken[-1][0], value)
            ctx.log.updated(taken, value)
    parent = ctx.root
    for p in src_parts[:-1]:
        parent = _own(parent, p, ctx)
    del parent[src_parts[-1]]
    if src_parts[0] == "_id" and _ID_IMMUTABLE.get():
        raise MongoError(
            "ImmutableField", f"Unsetting the path '{src}' using $rename would modify the immutable field '_id'"
        )
    ctx.log.deleted([(p, _FIELD) for p in src_parts])


# ---------------------------------------------------------------------------------
# entry points


def compile_update(update: dict, array_filters=None) -> CompiledUpdate:
    return CompiledUpdate(update, array_filters)


def parse_update(update, array_filters=None) -> None:
    """Check an update before any document is read, as the server parses an UpdateRequest first:
    an unknown modifier, a bad path or an unused array filter fails even when nothing matches."""
    kind = classify_update(update)
    if kind == "operators":
        if not array_filters and type(update) is dict and _fast_shape(update):
            return  # $set/$inc of distinct top-level fields to scalars (numbers for $inc): nothing to refuse
        CompiledUpdate(update, array_filters)
    elif kind == "pipeline":
        from mongosim.shardsim.query.stages import compile_update_pipeline

        compile_update_pipeline(update)


def _fast_shape(update: dict):
    """((op, field, arg), ...) when `update` only $set/$inc's top-level fields to scalars."""
    out = []
    seen = set()
    for op, spec in update.items():
        if (op != "$set" and op != "$inc") or type(spec) is not dict:
            return None
        for path, arg in spec.items():
            ta = type(arg)
            if ta is dict or ta is list or not path or "." in path or path[0] == "$" or path in seen:
                return None
            if op == "$inc" and not is_number(arg):
                return None
            seen.add(path)
            out.append((op, path, arg))
    if len(out) > 1:
        out.sort(key=lambda f: _field_key(f[1]))
    return out


def _apply_fast(doc: dict, fast, ctx_id) -> UpdateResult:
    new = dict(doc)
    updates = {}
    inserts = {}
    for op, path, arg in fast:
        if path == "_id":
            return None  # let the general path produce the exact error or no-op
        old = new.get(path, MISSING)
        if old is MISSING:
            new[path] = arg
            inserts[path] = arg
            continue
        if op == "$set":
            if binary_equal(old, arg):
                continue
            nv = arg
        else:
            if not is_number(old):
                return None
            nv = _arith("$inc", old, arg)
            if nv is None:
                return None
            if binary_equal(old, nv):
                continue
        new[path] = nv
        updates[path] = nv
    if not updates and not inserts:
        return UpdateResult(new, None, False)
    diff: dict = {}
    if updates:
        diff["u"] = updates
    if inserts:
        diff["i"] = inserts
    return UpdateResult(new, diff, False)


def apply_update(
    doc: dict,
    update,
    *,
    array_filters=None,
    upsert_query=None,
    is_insert: bool = False,
    now=None,
    match_position: int | None = None,
    variables: dict | None = None,
) -> UpdateResult:
    """Apply `update` to `doc` (never mutated) -> UpdateResult(doc, diff, is_replacement).

    * `diff` is None for a no-op (no oplog entry).  For an operator or pipeline
      update logged as a delta it is the `$v:2` diff (oplog `o = {$v: 2, diff}`);
      when the entry is a full document (replacement-style, or a pipeline whose
      diff would be larger than the document) `is_replacement` is True and
      `diff` is that document (the oplog `o`).  `UpdateResult.oplog_o()` gives `o`.
    * `upsert_query` is the update's query: it locates the array element for a
      positional `$` (unless `match_position` is given) and, with
      `is_insert=True`, seeds the inserted document with the query's equality
      fields (`doc` is then usually `{}`); the result of an insert gets an
      ObjectId `_id` when it has none, `_id` first, and `diff` = the document.
    * `array_filters` are the `arrayFilters` of the update command; `now` the
      value of `$currentDate` / `$$NOW` (a naive UTC datetime); `variables` the command's
      variables (`let`, the statement's constants `c`, $$NOW, $$CLUSTER_TIME) a pipeline uses.
    """
    kind = classify_update(update) if not isinstance(update, CompiledUpdate) else "operators"
    if kind == "operators" and not is_insert and not array_filters and type(update) is dict:
        fast = _fast_shape(update)
        if fast is not None:
            r = _apply_fast(doc, fast, None)
            if r is not None:
                return r
    if is_insert and upsert_query is not None:
        # an upsert that inserts: start from the query's equality fields
        seed = upsert_seed(upsert_query, None if isinstance(update, CompiledUpdate) else update)
        doc = {**deep_copy(doc), **seed} if doc else seed
    if kind == "replacement":
        if array_filters:
            raise MongoError("FailedToParse", "Cannot use array filters with a replacement-style update")
        res = _apply_replacement(doc, update, is_insert)
    elif kind == "pipeline":
        if array_filters:
            raise MongoError("FailedToParse", "arrayFilters may not be specified for pipeline-style updates")
        res = _apply_pipeline(doc, update, is_insert, now, variables)
    else:
        compiled = update if isinstance(update, CompiledUpdate) else CompiledUpdate(update, array_filters)
        res = apply_compiled(compiled, doc, is_insert=is_insert, now=now, match_position=match_position, upsert_query=upsert_query)
    if is_insert:
        new = finish_upsert(res.doc)
        return UpdateResult(new, new, True)
    return res


def apply_compiled(compiled: CompiledUpdate, doc: dict, *, is_insert=False, now=None, match_position=None, upsert_query=None) -> UpdateResult:
    if compiled.fast is not None and not is_insert:
        r = _apply_fast(doc, compiled.fast, doc.get("_id", MISSING))
        if r is not None:
            return r
    if compiled.has_positional and match_position is None and upsert_query is not None and not is_insert:
        from mongosim.shardsim.query.matcher import Matcher

        _ok, match_position = Matcher(upsert_query).match_position(doc)
    work = dict(doc)  # copy-on-write: containers are copied as the update descends into them
    log = _LogBuilder()
    ctx = _Ctx(is_insert, now, match_position, log, work.get("_id", MISSING), compiled.array_filters, work)
    if compiled.has_positional and is_insert:
        raise MongoError("BadValue", "The positional operator did not find the match needed from the query.")
    _apply_obj(compiled.root, work, [], [], ctx)
    diff = log.serialize()
    if diff is not None:
        _validate_stored(work)
    return UpdateResult(work, diff, False)


def check_id_value(idv: Any) -> None:
    """The server's storage validation of `_id` (storageValidIdField): never an array, a regex or
    undefined (InvalidIdField); an embedded document holds no `$`-prefixed field at any depth, but
    for a leading DBRef (`$ref`, `$id`, optional `$db`) (DollarPrefixedFieldName)."""
    if type(idv) is list:
        raise MongoError("InvalidIdField", "The '_id' value cannot be of type array")
    if isinstance(idv, (Regex, re.Pattern)):
        raise MongoError("InvalidIdField", "The '_id' value cannot be of type regex")
    if type(idv).__name__ == "Undefined":
        raise MongoError("InvalidIdField", "The '_id' value cannot be of type undefined")
    if isinstance(idv, (dict, DBRef)):
        bad = _dollar_field_not_valid_for_storage(idv)
        if bad is not None:
            raise MongoError("DollarPrefixedFieldName",
                             f"_id fields may not contain '$'-prefixed fields: {bad} is not valid for storage.")


def _dollar_field_not_valid_for_storage(value: Any) -> str | None:
    """The first `$`-prefixed field name BSONObj::storageValidEmbedded refuses in `value`, or None."""
    if isinstance(value, list):
        return next((b for b in map(_dollar_field_not_valid_for_storage, value) if b is not None), None)
    if isinstance(value, DBRef):  # (bson decodes a leading $ref/$id pair as a DBRef; extra fields follow $id)
        value = value.as_doc().to_dict()
    if not isinstance(value, dict):
        return None
    names = list(value)
    skip = 0
    if names[:2] == ["$ref", "$id"] and isinstance(value["$ref"], str):  # a DBRef
        skip = 3 if len(names) > 2 and names[2] == "$db" and isinstance(value["$db"], str) else 2
    for name in names[skip:]:
        if name.startswith("$"):
            return name
    return next((b for b in map(_dollar_field_not_valid_for_storage, value.values()) if b is not None), None)


def _validate_stored(doc: dict):
    idv = doc.get("_id", MISSING)
    if idv is not MISSING:
        check_id_value(idv)


def _apply_replacement(doc: dict, replacement: dict, is_insert: bool) -> UpdateResult:
    for k in replacement:
        if k.startswith("$"):
            raise MongoError(
                "DollarPrefixedFieldName",
                f"The dollar ($) prefixed field '{k}' in '{k}' is not allowed in the context of an update's replacement document. "
                "Consider using an aggregation pipeline with $replaceWith.",
            )
    return _replace_with(doc, deep_copy(replacement), is_insert, pipeline=False)


def _replace_with(doc: dict, new: dict, is_insert: bool, *, pipeline: bool, now=None) -> UpdateResult:
    old_id = doc.get("_id", MISSING)
    new_id = new.get("_id", MISSING)
    if new_id is MISSING and old_id is not MISSING:
        new = {"_id": old_id, **new}
    elif new_id is not MISSING and old_id is not MISSING and not is_insert and _ID_IMMUTABLE.get():
        if not binary_equal(old_id, new_id):
            raise MongoError(
                "ImmutableField",
                f"After applying the update, the (immutable) field '_id' was found to have been altered to {element_str('_id', new_id)}",
            )
    if "_id" in new:
        check_id_value(new["_id"])
    if binary_equal(doc, new) and not is_insert:
        return UpdateResult(new, None, not pipeline)
    if pipeline and not is_insert:
        diff = compute_diff(doc, new, padding=DELTA_METADATA_PADDING)
        if diff is not None:
            return UpdateResult(new, diff, False)
    return UpdateResult(new, new, True)


def _apply_pipeline(doc: dict, pipeline: list, is_insert: bool, now, variables: dict | None = None) -> UpdateResult:
    from mongosim.shardsim.query.stages import run_update_pipeline

    new = run_update_pipeline(doc, pipeline, now=now, variables=variables)
    return _replace_with(doc, new, is_insert, pipeline=True)


# ---------------------------------------------------------------------------------
# upserts (produce_document_for_upsert.cpp, update_driver.cpp)


def _equalities(flt: dict, out: dict):
    for k, v in flt.items():
        if k == "$and":
            for sub in v:
                _equalities(sub, out)
            continue
        if k.startswith("$"):
            continue
        if type(v) is dict and v and next(iter(v)).startswith("$"):
            if "$eq" in v:
                val = v["$eq"]
            elif "$in" in v and isinstance(v["$in"], list) and len(v["$in"]) == 1 and type(v["$in"][0]) not in (dict,):
                val = v["$in"][0]
                import re as _re

                from bson import Regex as _Regex

                if isinstance(val, (_re.Pattern, _Regex)):
                    continue
            else:
                continue
        else:
            import re as _re

            from bson import Regex as _Regex

            if isinstance(v, (_re.Pattern, _Regex)):
                continue
            val = v
        if k in out:
            raise query_error("NotSingleValueField", f"cannot infer query fields to set, path '{k}' is matched twice")
        out[k] = val


def upsert_seed(query: dict | None, update=None) -> dict:
    """The document an upsert starts from: the query's equality fields (then the update applies).

    For a replacement update only `_id` is taken from the query.
    """
    query = query or {}
    eqs: dict = {}
    _equalities(query, eqs)
    kind = classify_update(update) if update is not None else "operators"
    if kind == "replacement":
        return {"_id": deep_copy(eqs["_id"])} if "_id" in eqs else {}
    paths = sorted(eqs)
    for i, a in enumerate(paths):
        for b in paths[i + 1:]:
            if b.startswith(a + "."):
                raise query_error("NotSingleValueField", f"cannot infer query fields to set, both paths '{a}' and '{b}' are matched")
    seed: dict = {}
    from mongosim.shardsim.query.paths import set_path

    for p in paths:
        parts = split(p)
        if any(x.startswith("$") for x in parts):
            continue
        set_path(seed, parts, deep_copy(eqs[p]))
    if "_id" in seed:
        seed = {"_id": seed.pop("_id"), **seed}
    return seed


def finish_upsert(doc: dict) -> dict:
    """Ensure `_id` exists (a new ObjectId) and comes first."""
    if "_id" not in doc:
        return {"_id": ObjectId(), **doc}
    if next(iter(doc)) != "_id":
        return {"_id": doc["_id"], **{k: v for k, v in doc.items() if k != "_id"}}
    return doc
