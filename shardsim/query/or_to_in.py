"""The `$or` -> `$in` rewrite of the server's match-expression optimizer (8.0).

An `$or` of equalities on one path is an `$in` over their values:
`{$or: [{a: 1}, {b: 2}, {a: 3}]}` selects what `{$or: [{b: 2}, {a: {$in: [1, 3]}}]}`
does, and the second is one index scan with two point intervals where the
first is a SUBPLAN joining one scan per branch.  The server rewrites the
parsed query before it plans (explain's `parsedQuery` shows the rewritten
form), and so does the canonical query here (`canonical_query`).  The rules,
as the server's jstests/core/query/or/or_to_in.js pins them down:

- a child takes part when it is one path's equality (`{a: v}`,
  `{a: {$eq: v}}`) or regular expression (`{a: /x/}`,
  `{a: {$regex: "x", $options: "i"}}`); `{a: {$eq: /x/}}` compares with a
  regex *value*, which an `$in` would apply as a pattern, so it stays;
  ranges, `$in`, `$exists`, documents of several fields stay as they are;
- two or more children on one path become `{path: {$in: [...]}}` (a value
  given twice is listed once), placed after the children that stay;
- an `$or` left with one child is that child; an `$in` of one value is its
  equality (or its regex).

It runs bottom-up: the children of every `$and`, `$or` and `$nor` first, so
an inner `$or` that became an `$in` is a child like any other of the outer
one (and, being an `$in`, is not merged with its siblings).  Matching is
unchanged: `$in` matches a document exactly when one of the equalities
(or patterns) would, arrays and null included.
"""

from __future__ import annotations

import re
from typing import Any

from bson import Regex

from mongosim.shardsim.query.regex import regex_from
from mongosim.shardsim.query.values import bson_equal


def _is_regex(v: Any) -> bool:
    return isinstance(v, (Regex, re.Pattern))


def _operand(clause: Any) -> tuple[str, Any] | None:
    """(path, the `$in` element it stands for) when `clause` takes part in the rewrite, else None."""
    if not isinstance(clause, dict) or len(clause) != 1:
        return None
    path, val = next(iter(clause.items()))
    if not isinstance(path, str) or path.startswith("$"):
        return None
    if not isinstance(val, dict) or not val or not next(iter(val)).startswith("$"):
        return path, val  # {a: v}: an equality, or a regex literal
    if len(val) == 1 and "$eq" in val:
        return None if _is_regex(val["$eq"]) else (path, val["$eq"])
    if "$regex" in val and set(val) <= {"$regex", "$options"}:
        pattern, options = val["$regex"], val.get("$options", "")
        if _is_regex(pattern) and not options:
            return path, pattern
        if isinstance(pattern, str) and isinstance(options, str):
            return path, Regex(pattern, options)
    return None


def _same(a: Any, b: Any) -> bool:
    """Whether two `$in` elements are one: equal values, or the same pattern and options."""
    if _is_regex(a) or _is_regex(b):
        return _is_regex(a) and _is_regex(b) and regex_from(a)[1:] == regex_from(b)[1:]
    return bson_equal(a, b)


def _in_clause(path: str, values: list) -> dict:
    distinct: list = []
    for v in values:
        if not any(_same(v, d) for d in distinct):
            distinct.append(v)
    if len(distinct) == 1:
        v = distinct[0]
        return {path: v} if _is_regex(v) else {path: {"$eq": v}}
    return {path: {"$in": distinct}}


def _rewrite_or(children: list) -> list:
    groups: dict[str, list] = {}
    for child in children:
        op = _operand(child)
        if op is not None:
            groups.setdefault(op[0], []).append(op[1])
    merged = {path for path, values in groups.items() if len(values) > 1}
    if not merged:
        return children
    kept = [c for c in children if (op := _operand(c)) is None or op[0] not in merged]
    return kept + [_in_clause(path, groups[path]) for path in groups if path in merged]


def _rewrite_list(key: str, clauses: list) -> tuple[list, bool]:
    out = [rewrite(c) if isinstance(c, dict) else c for c in clauses]
    changed = any(a is not b for a, b in zip(out, clauses))
    if key == "$or":
        merged = _rewrite_or(out)
        changed = changed or merged is not out
        out = merged
    return out, changed


def rewrite(flt: dict) -> dict:
    """`flt` with every `$or` of equalities on one path rewritten as an `$in` (`flt` itself when none is)."""
    if "$or" not in flt and "$and" not in flt and "$nor" not in flt:
        return flt
    out: dict = {}
    extra: list[dict] = []  # an $or that became a single clause joins the conjunction
    changed = False
    for key, val in flt.items():
        if key in ("$or", "$and", "$nor") and isinstance(val, list) and val:
            new, did = _rewrite_list(key, val)
            changed = changed or did
            if key == "$or" and len(new) == 1 and isinstance(new[0], dict):
                extra.append(new[0])
                continue
            out[key] = new
        else:
            out[key] = val
    if not changed:
        return flt
    if not out and len(extra) == 1:  # the filter was that $or
        return extra[0]
    if extra:
        out["$and"] = [*out.get("$and", []), *extra] if isinstance(out.get("$and"), list) else extra
    return out
