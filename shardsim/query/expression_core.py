"""The expression compiler's core: constants, field paths, variables, the operator registry.

An expression is evaluated against a document and yields a value:

* `"$a.b"` – a field path on `$$CURRENT`; through arrays it *maps*
  (`{a: [{b: 1}, {b: 2}]}` gives `[1, 2]`) — unlike query paths.
* `"$$var"`, `"$$var.path"` – variables: ROOT, CURRENT, REMOVE (a missing
  value: a field set to it disappears), NOW, CLUSTER_TIME, DESCEND/PRUNE/KEEP
  ($redact), and those bound by `$let`, `$map`, `$filter`, `$reduce`.
* `{$op: args}` – an operator; `{a: <expr>, ...}` – an object built from
  expressions; `[...]` – an array; anything else is a constant.

Expressions compile once into closures `f(vars) -> value`.  Operators live in
modules that `register` a builder `build(arg) -> f(vars)` into `OPS`:
`expressions` (the general ones; importing it registers every family),
`expression_set`, `expression_date`, `expression_accumulator`...  Those modules
import this one only, so there is no cycle.  An unregistered name answers 168
`Unrecognized expression '$foo'` (InvalidPipelineOperator).
"""

from __future__ import annotations

import datetime
from typing import Any, Callable

from bson import DBRef, Decimal128, Int64
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.fmt import bson_str, query_error
from mongosim.shardsim.query.values import ALLOWED_DOLLAR_FIELDS, MISSING, dbref_doc
from mongosim.shardsim.query.document_metadata import MetaDoc

__all__ = [
    "compile_expression", "to_bool", "evaluate", "field_path_get", "KEEP", "PRUNE", "DESCEND",
    "OPS", "register", "compile_node", "fixed_args", "varargs", "nullish", "Fn",
]

Fn = Callable[[dict], Any]

KEEP = "$$KEEP"
PRUNE = "$$PRUNE"
DESCEND = "$$DESCEND"


class _Marker(str):
    pass


_KEEP = _Marker("KEEP")
_PRUNE = _Marker("PRUNE")
_DESCEND = _Marker("DESCEND")


def to_bool(v) -> bool:
    """Aggregation truthiness: false, null, missing and 0 are false; everything else true."""
    if v is None or v is MISSING or v is False:
        return False
    t = type(v)
    if t is int or t is float or t is Int64:
        return v != 0
    if t is Decimal128:
        return v.to_decimal() != 0
    return True


def compile_expression(expr, *, allow_markers: bool = False) -> Callable:
    """Compile an expression; returns `f(doc, variables=None) -> value` (MISSING if missing)."""
    fn = compile_node(expr)

    def run(doc, variables: dict | None = None):
        vs = {"ROOT": doc, "CURRENT": doc}
        if variables:
            vs.update(variables)
        return fn(vs)

    run.raw = fn  # type: ignore[attr-defined]
    return run


def evaluate(expr, doc, variables: dict | None = None):
    return compile_expression(expr)(doc, variables)


# ---------------------------------------------------------------------------------


def compile_node(expr) -> Fn:
    t = type(expr)
    if t is str:
        if expr.startswith("$$"):
            return _compile_var(expr[2:])
        if expr.startswith("$"):
            return _compile_field_path(expr[1:])
        return lambda vs: expr
    if t is dict:
        if not expr:
            return lambda vs: {}
        first = next(iter(expr))
        if first.startswith("$"):
            if len(expr) != 1:
                raise MongoError(
                    15983,
                    f"An object representing an expression must have exactly one field: {bson_str(expr)}",
                )
            return _compile_op(first, expr[first])
        return _compile_object(expr)
    if t is list:
        items = [compile_node(e) for e in expr]

        def arr(vs):
            out = []
            for f in items:
                v = f(vs)
                out.append(None if v is MISSING else v)
            return out

        return arr
    return lambda vs: expr


def _compile_object(spec: dict) -> Fn:
    items = []
    for k, v in spec.items():
        if k.startswith("$"):
            raise MongoError(16404, f"FieldPath field names may not start with '$'. Consider using $getField or $setField.")
        if "." in k:
            raise MongoError(16412, f"FieldPath field names may not contain '.'. Consider using $getField or $setField.")
        items.append((k, compile_node(v)))

    def obj(vs):
        out = {}
        for k, f in items:
            v = f(vs)
            if v is not MISSING:
                out[k] = v
        return out

    return obj


def _validate_field_path(path: str):
    if path == "":
        raise MongoError(16872, "'$' by itself is not a valid FieldPath")
    for p in path.split("."):
        if p == "":
            raise MongoError(15998, "FieldPath field names may not be empty strings.")
        if p.startswith("$") and p not in ALLOWED_DOLLAR_FIELDS:
            raise MongoError(16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")


def field_path_get(v, parts, i=0):
    """Aggregation field-path lookup: maps through arrays, MISSING when absent."""
    n = len(parts)
    while i < n:
        t = type(v)
        if t is dict:
            v = v.get(parts[i], MISSING)
            i += 1
        elif t is list:
            out = []
            for e in v:
                if type(e) in (dict, list, DBRef):
                    r = field_path_get(e, parts, i)
                    if r is not MISSING:
                        out.append(r)
            return out
        elif t is MetaDoc:  # (a document with metadata: a text score, a distance)
            v = v.get(parts[i], MISSING)
            i += 1
        elif t is DBRef:  # (the embedded document {$ref, $id, ...} it stands for)
            v = dbref_doc(v).get(parts[i], MISSING)
            i += 1
        else:
            return MISSING
    return v


def _compile_field_path(path: str) -> Fn:
    _validate_field_path(path)
    parts = tuple(path.split("."))
    if len(parts) == 1:
        p = parts[0]

        def get1(vs):
            cur = vs["CURRENT"]
            t = type(cur)
            return cur.get(p, MISSING) if t is dict or t is MetaDoc else MISSING

        return get1
    return lambda vs: field_path_get(vs["CURRENT"], parts)


def _compile_var(spec: str) -> Fn:
    name, _, rest = spec.partition(".")
    if name == "":
        raise MongoError(16869, "empty variable name")
    parts = tuple(rest.split(".")) if rest else ()
    if name == "REMOVE":
        return lambda vs: MISSING
    if name == "KEEP":
        return lambda vs: _KEEP
    if name == "PRUNE":
        return lambda vs: _PRUNE
    if name == "DESCEND":
        return lambda vs: _DESCEND
    if name == "NOW":
        return lambda vs: vs.get("NOW") or datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None, microsecond=0)
    if not (name[0].islower() or name[0] == "_" or name in ("ROOT", "CURRENT", "CLUSTER_TIME", "SEARCH_META", "USER_ROLES")) and not name[0].isalpha():
        raise MongoError(31070 if False else 16870, f"'{name}' starts with an invalid character for a user variable name")

    def var(vs):
        if name not in vs:
            if name == "CLUSTER_TIME":
                raise MongoError(51144, "Builtin variable '$$CLUSTER_TIME' is not available")
            raise MongoError(17276, f"Use of undefined variable: {name}")
        v = vs[name]
        return field_path_get(v, parts) if parts else v

    return var


# ---------------------------------------------------------------------------------
# operators

OPS: dict[str, Callable[[Any], Fn]] = {}


def register(name):
    """Decorator: `build(arg) -> f(vars)` compiles operator `name`."""
    def deco(f):
        OPS[name] = f
        return f

    return deco


def _compile_op(name: str, arg) -> Fn:
    f = OPS.get(name)
    if f is None:
        raise query_error("InvalidPipelineOperator", f"Unrecognized expression '{name}'")
    return f(arg)


def fixed_args(name, arg, lo, hi=None) -> list[Fn]:
    """Compile an operator's positional arguments, `lo..hi` of them (16020 otherwise)."""
    items = arg if isinstance(arg, list) else [arg]
    n = len(items)
    if hi is None:
        hi = lo
    if not (lo <= n <= hi):
        if lo == hi:
            raise MongoError(16020, f"Expression {name} takes exactly {lo} arguments. {n} were passed in.")
        if n < lo:
            raise MongoError(16020, f"Expression {name} takes at least {lo} arguments, and at most {hi}. {n} were passed in.")
        raise MongoError(16020, f"Expression {name} takes at most {hi} arguments. {n} were passed in.")
    return [compile_node(a) for a in items]


def varargs(arg) -> list[Fn]:
    """Compile any number of arguments (a non-array argument is one)."""
    items = arg if isinstance(arg, list) else [arg]
    return [compile_node(a) for a in items]



def nullish(v) -> bool:
    """Null or missing: most operators answer null for either."""
    return v is None or v is MISSING

