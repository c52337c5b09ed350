"""`$expr` comparisons an index can bound: the server's RewriteExpr (rewrite_expr.cpp), for the planner.

`{$expr: {$eq: ["$a", 77]}}` compares whole values in the aggregation order; no
query operator means the same, but `{a: {$_internalExprEq: 77}}` (the comparison
in the full BSON order, `internal_expr_comparison`) selects a superset on a path
without arrays, and bounds an index.  The server's optimizer adds it beside the
`$expr` (`{$and: [{$expr: ...}, {a: {$_internalExprEq: 77}}]}`, as explain's
`parsedQuery` shows), and the `$expr` still decides each document.  So does the
canonical query here: the added clauses only bound index scans (the planner
leaves them off an index whose path is multikey, where an array's elements are
not its whole value); documents are matched by the filter as written.

Rewritten: `$eq`, `$gt`, `$gte` (either operand order; `$lt`/`$lte` with the field
second) between a field path of the document (`"$a.b"`, no numeric component)
and a constant that is not an array, a document, a regex or undefined, and each
such comparison of a top-level `$and` inside the `$expr`.  `$lt`/`$lte` with the
field first are not: a missing field is less than every value to `$expr`, which
no index key range below the constant can promise.
"""

from __future__ import annotations

import re
from typing import Any

from bson import MaxKey, MinKey, Regex

_OPS = {"$eq": "$_internalExprEq", "$gt": "$_internalExprGt", "$gte": "$_internalExprGte"}
_FLIPPED = {"$eq": "$_internalExprEq", "$lt": "$_internalExprGt", "$lte": "$_internalExprGte"}  # const op "$f"


def _field(arg: Any) -> str | None:
    if not (isinstance(arg, str) and arg.startswith("$") and not arg.startswith("$$")):
        return None
    parts = arg[1:].split(".")
    if any(not p or p.startswith("$") or p.isdigit() for p in parts):
        return None
    return arg[1:]


_NO_CONSTANT = object()


def _constant(arg: Any) -> Any:
    if isinstance(arg, dict):
        if len(arg) == 1 and "$literal" in arg:
            arg = arg["$literal"]
        else:
            return _NO_CONSTANT
    elif isinstance(arg, str) and arg.startswith("$"):
        return _NO_CONSTANT
    if isinstance(arg, (dict, list, Regex, re.Pattern, MinKey, MaxKey)):
        return _NO_CONSTANT
    return arg


def _comparisons(expr: Any) -> list[dict]:
    """The `{path: {$_internalExpr..: constant}}` clauses an `$expr` value stands above."""
    if not isinstance(expr, dict) or len(expr) != 1:
        return []
    op, args = next(iter(expr.items()))
    if op == "$and" and isinstance(args, list):
        return [c for a in args for c in _comparisons(a)]
    if not (isinstance(args, list) and len(args) == 2):
        return []
    left, right = args
    path, const = _field(left), _constant(right)
    if path is not None and const is not _NO_CONSTANT and op in _OPS:
        return [{path: {_OPS[op]: const}}]
    path, const = _field(right), _constant(left)
    if path is not None and const is not _NO_CONSTANT and op in _FLIPPED:
        return [{path: {_FLIPPED[op]: const}}]
    return []


def rewrite(flt: dict) -> dict:
    """`flt` with the index-boundable comparisons of its top-level `$expr` (and of the `$expr`s among its
    `$and`'s clauses) added to its conjunction; `flt` itself when there are none."""
    added = _comparisons(flt["$expr"]) if "$expr" in flt else []
    conj = flt.get("$and")
    if isinstance(conj, list):
        for clause in conj:
            if isinstance(clause, dict) and "$expr" in clause:
                added += _comparisons(clause["$expr"])
    if not added:
        return flt
    out = dict(flt)
    out["$and"] = [*conj, *added] if isinstance(conj, list) else added
    return out
