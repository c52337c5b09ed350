"""The canonical query: a find's filter split into leaf predicates, with its options (CanonicalQuery).

The filter's top-level conjunction (`{a: 1, b: {$gt: 2}}`, `$and` flattened)
becomes leaf predicates `(path, operator, value)` the planner can bound an
index with (a `$not` of a comparison or `$in` among them); clauses no index
serves (`$or`, `$nor`, `$expr`, `$where`, other `$not`s, paths with a numeric
component) stay in the residual filter.  Before that, the filter is optimized
as the server's is for planning (`or_to_in`, `rewrite_expr`).  An
`$elemMatch` object also gives leaves on its sub-paths (`derived`: they bound
an index, the `$elemMatch` itself stays a filter).  Also here: the hint's
parsing (IndexHint::parse), explain's `parsedQuery`, and the server's
"planner returned error" message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from bson import Regex

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.fts.text_match_expression import check_text
from mongosim.shardsim.geo.geo_expression import GeoNearExpression, find_near, parse_near
from mongosim.shardsim.query.extensions_callback import TextParams
from mongosim.shardsim.query.index_bounds import NEGATABLE
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query import or_to_in, rewrite_expr
from mongosim.shardsim.query.matcher import Matcher, truthy_arg
from mongosim.shardsim.query.paths import is_array_index, split
from mongosim.shardsim.query.regex import regex_from
from mongosim.shardsim.query.values import TYPE_ALIASES, bson_equal, sort_key


_NEAR_PARTS = frozenset({"$near", "$nearSphere", "$minDistance", "$maxDistance"})
_GEO_OPS = frozenset({"$geoWithin", "$within", "$geoIntersects"})


@dataclass
class Leaf:
    """One top-level predicate `{path: {op: value}}`; `derived` ones come from an $elemMatch object
    (they bound an index but never stand for the whole clause)."""

    path: str
    op: str
    value: Any
    derived: bool = False


def _is_operator_doc(v) -> bool:
    return isinstance(v, dict) and bool(v) and next(iter(v)).startswith("$")


def _indexable_path(path: str) -> bool:
    return not any(is_array_index(p) or p.startswith("$") or p == "" for p in split(path))


def extract_leaves(flt: dict, out: list[Leaf], residual: list[dict], derived: bool = False) -> None:
    for key, val in flt.items():
        if key == "$and" and isinstance(val, list):
            for sub in val:
                if isinstance(sub, dict):
                    extract_leaves(sub, out, residual, derived)
            continue
        if key == "$comment" or key == "$text":  # ($text: the text plan's, see shardsim/fts/text_stages.py)
            continue
        if key.startswith("$"):
            residual.append({key: val})
            continue
        if not _indexable_path(key):
            residual.append({key: val})
            continue
        if _is_operator_doc(val):
            for op, arg in val.items():
                if op == "$options" or op in _NEAR_PARTS:
                    continue  # (a $near is the GEO_NEAR plan's: shardsim/geo/geo_near.py)
                if op in _GEO_OPS:
                    residual.append({key: {op: arg}})
                    continue
                if op == "$regex":
                    try:
                        _c, pattern, flags = regex_from(arg) if not isinstance(arg, str) else (None, arg, "")
                    except Exception:
                        residual.append({key: val})
                        continue
                    opts = val.get("$options")
                    if isinstance(opts, str) and opts:
                        flags = "".join(sorted(set(flags + opts)))
                    out.append(Leaf(key, "$regex", (pattern, flags, Regex(pattern, flags)), derived))
                elif op == "$elemMatch" and isinstance(arg, dict) and not _is_operator_doc(arg):
                    sub: list[Leaf] = []
                    extract_leaves({f"{key}.{k}": v for k, v in arg.items() if not k.startswith("$")}, sub, [],
                                   True)
                    out.extend(sub)
                    residual.append({key: {op: arg}})
                elif op == "$not":
                    if isinstance(arg, dict) and len(arg) == 1 and next(iter(arg)) in NEGATABLE:
                        out.append(Leaf(key, op, arg, derived))  # (bounds: its child's, complemented)
                    else:
                        residual.append({key: {op: arg}})
                else:
                    out.append(Leaf(key, op, arg, derived))
        elif isinstance(val, (Regex, re.Pattern)):
            _c, pattern, flags = regex_from(val)
            out.append(Leaf(key, "$regex", (pattern, flags, val), derived))
        else:
            out.append(Leaf(key, "$eq", val, derived))


@dataclass
class CanonicalQuery:
    """A find (or the query part of count, distinct, update, delete, findAndModify, aggregate)."""

    ns: str
    filter: dict
    matcher: Matcher
    sort: dict | None = None
    projection: dict | None = None
    skip: int = 0
    limit: int | None = None
    hint: Any = None
    min: dict | None = None
    max: dict | None = None
    return_key: bool = False
    show_record_id: bool = False
    batch_size: int | None = None
    count: bool = False  # a count: no SORT, no projection, COUNT on top
    variables: dict | None = None  # the command's `let` variables, $$NOW, $$CLUSTER_TIME (projections use them)
    collator: Any = None  # the query's collation (None: simple); `matcher` was compiled with it
    leaves: list[Leaf] = field(default_factory=list)
    residual: list[dict] = field(default_factory=list)
    text: TextParams | None = None  # the filter's $text (shardsim.fts)
    text_shown: dict | None = None  # its parsed form, once the planner resolved it against the text index
    want_text_score: bool = False  # an aggregation's later stages may read the text score
    near: GeoNearExpression | None = None  # the filter's $near / $nearSphere (shardsim.geo)

    def __post_init__(self) -> None:
        # what the server plans and shows: its optimizer's $or -> $in, and RewriteExpr's index-boundable
        # comparisons beside an $expr (bounds only: the matcher keeps the filter as written)
        optimized = rewrite_expr.rewrite(or_to_in.rewrite(self.filter))
        if optimized is not self.filter:
            self.filter, self.matcher = optimized, self.matcher.shown_as(optimized)
        extract_leaves(self.filter, self.leaves, self.residual)
        f = self.filter
        if "$text" in f or "$and" in f or "$or" in f or "$nor" in f:
            self.text = check_text(f)
        nears, nested = find_near(f)
        if nears:
            if len(nears) > 1:
                raise MongoError("BadValue", "Too many geoNear expressions")
            if nested:
                raise MongoError("BadValue", "geoNear must be top-level expr")
            if self.text is not None:
                raise MongoError("BadValue", "text and geoNear not allowed in same query")
            self.near = parse_near(*nears[0])

    @property
    def has_sort(self) -> bool:
        return bool(self.sort) and "$natural" not in self.sort


def parsed_query(flt: dict, text: dict | None = None) -> dict:
    """explain's `parsedQuery`: leaf predicates in `{path: {$op: v}}` form, several under `$and` (`text`: the
    `$text` clause as resolved)."""
    leaves: list[Leaf] = []
    residual: list[dict] = []
    extract_leaves(flt, leaves, residual)
    return shown_filter(leaves, residual, [text] if text is not None else []) or {}


def shown_filter(leaves: list[Leaf], residual: list[dict], extra: list[dict] = ()) -> dict | None:
    """Predicates as explain shows them (a stage's `filter`, the `parsedQuery`): each leaf and residual
    clause serialized as the server serializes its match expression, several under one `$and` in the
    order of the server's sortTree; None when there are none."""
    parts = [shown for lf in leaves if not lf.derived for shown in _shown_leaf(lf)]
    parts.extend(_shown_clause(r) for r in residual)
    parts.extend(extra)
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    return {"$and": sorted(parts, key=_tree_key)}


# MatchExpression::MatchType, in the enum's order: the first key of sortTree's comparator
_MATCH_TYPE = {op: rank for rank, ops in enumerate([
    ("$and",), ("$or",), ("$elemMatch:object",), ("$elemMatch:value",), ("$size",),
    ("$eq",), ("$lte",), ("$lt",), ("$gt",), ("$gte",), ("$regex",), ("$mod",), ("$exists",), ("$in",),
    ("$bitsAllSet",), ("$bitsAllClear",), ("$bitsAnySet",), ("$bitsAnyClear",), ("$encryptedBetween",),
    ("$not",), ("$nor",), ("$type",), ("$geoWithin", "$within", "$geoIntersects"), ("$where",), ("$expr",),
    ("$alwaysFalse",), ("$alwaysTrue",), ("$near", "$nearSphere", "$geoNear"), ("$text",),
]) for op in ops}


def _tree_key(shown: dict) -> tuple:
    """sortTree's order of a shown clause (the server sorts the parsed query before it plans and shows it):
    by match type, then path, then the children's own order (fewer first when one list is a prefix of the
    other).  A NOT has no path of its own: its child decides."""
    key, val = next(iter(shown.items())) if shown else ("$and", [])
    if key in ("$and", "$or", "$nor"):
        children = val if isinstance(val, list) else []
        return (_MATCH_TYPE[key], "", tuple(_tree_key(c) for c in children if isinstance(c, dict)))
    if key.startswith("$"):
        return (_MATCH_TYPE.get(key, len(_MATCH_TYPE)), "", ())
    op = next(iter(val)) if isinstance(val, dict) and val else "$eq"
    if op == "$not":
        inner = val["$not"]
        return (_MATCH_TYPE["$not"], "", (_tree_key({key: inner if isinstance(inner, dict) else {"$regex": inner}}),))
    if op == "$elemMatch":
        arg = val[op]
        op = "$elemMatch:value" if isinstance(arg, dict) and arg and next(iter(arg)).startswith("$") else \
            "$elemMatch:object"
    return (_MATCH_TYPE.get(op, len(_MATCH_TYPE)), key, ())


def _shown_in(values: list) -> list:
    """An `$in`'s values as the server serializes them: in BSON order, each once, the regular expressions
    after them (InMatchExpression keeps its equalities sorted and distinct)."""
    plain = [v for v in values if not isinstance(v, (Regex, re.Pattern))]
    distinct: list = []
    for v in sorted(plain, key=sort_key):
        if not distinct or not bson_equal(distinct[-1], v):
            distinct.append(v)
    return distinct + [v for v in values if isinstance(v, (Regex, re.Pattern))]


def _shown_leaf(lf: Leaf) -> list[dict]:
    """A leaf as the server serializes its match expressions: the negative operators are a NOT over the
    positive one (`$ne` is `{$not: {$eq: v}}`, `$nin` `{$not: {$in: [...]}}`, `$exists: false`
    `{$not: {$exists: true}}`), and `$all` of values is an equality per value (an AND the query's own
    absorbs)."""
    path, op, v = lf.path, lf.op, lf.value
    if op == "$regex":
        return [{path: _shown_regex(v[0], v[1])}]
    if op == "$type":
        return [{path: {"$type": _shown_types(v)}}]
    if op in ("$in", "$nin") and isinstance(v, list):
        return [{path: {"$in": _shown_in(v)} if op == "$in" else {"$not": {"$in": _shown_in(v)}}}]
    if op == "$ne":
        return [{path: {"$not": {"$eq": v}}}]
    if op == "$exists":
        return [{path: {"$exists": True} if truthy_arg(v) else {"$not": {"$exists": True}}}]
    if op == "$all" and isinstance(v, list) and v and not any(
            isinstance(x, dict) and "$elemMatch" in x for x in v):
        return [{path: _shown_regex(*regex_from(x)[1:]) if isinstance(x, (Regex, re.Pattern)) else {"$eq": x}}
                for x in v]
    return [{path: {op: v}}]


def _shown_regex(pattern: str, flags: str) -> dict:
    """RegexMatchExpression's serialization: the pattern and the options as strings."""
    return {"$regex": pattern, "$options": flags} if flags else {"$regex": pattern}


def _shown_types(value: Any) -> Any:
    """A `$type` operand as MatcherTypeSet serializes it: "number" first when given, then the type codes,
    in order."""
    names = value if isinstance(value, list) else [value]
    codes: set = set()
    number = False
    for n in names:
        if n == "number":
            number = True
        elif isinstance(n, str) and n in TYPE_ALIASES:
            codes.add(TYPE_ALIASES[n])
        elif isinstance(n, (int, float)) and not isinstance(n, bool) and n == int(n):
            codes.add(int(n))
        else:
            return value  # (not a type set: shown as given)
    return (["number"] if number else []) + sorted(codes)


def _shown_clause(clause: dict) -> dict:
    """A residual clause: the branches of an `$or` / `$nor` each shown as a parsed query."""
    if len(clause) == 1:
        key, val = next(iter(clause.items()))
        if key in ("$or", "$nor") and isinstance(val, list) and all(isinstance(b, dict) for b in val):
            return {key: sorted((parsed_query(b) for b in val), key=_tree_key)}
    return clause


def bad_hint(cq: CanonicalQuery) -> MongoError:
    return planner_error(cq, "hint provided does not correspond to an existing index")


def planner_error(cq: CanonicalQuery, reason: str, code: str = "BadValue") -> MongoError:
    """The error the server's get_executor reports when the planner fails."""
    opts = (f" limit={cq.limit}" if cq.limit else "") + (f" skip={cq.skip}" if cq.skip else "")
    return MongoError(code, f"error processing query: ns={cq.ns}{opts}Tree: {_tree(cq.filter)}Sort: "
                            f"{_show(cq.sort or {})}\nProj: {_show(cq.projection or {})}\n planner returned "
                            f"error :: caused by :: {reason}")


def _show(d) -> str:
    return bson_str(d)


def _tree(flt: dict) -> str:
    leaves: list[Leaf] = []
    residual: list[dict] = []
    extract_leaves(flt, leaves, residual)
    parts = [f"{lf.path} {lf.op} {bson_str(lf.value if lf.op != '$regex' else lf.value[2])}" for lf in leaves]
    parts += [bson_str(r) for r in residual]
    if not parts:
        return "$and\n"
    if len(parts) == 1:
        return parts[0] + "\n"
    return "$and\n" + "".join(f"    {p}\n" for p in parts)


def check_hint(hint: Any) -> Any:
    """Parse a hint (IndexHint::parse): None, "$natural"-style dict, a name, or a key pattern."""
    if hint is None:
        return None
    if isinstance(hint, str):
        return hint or None
    if isinstance(hint, dict):
        if not hint:
            return None
        if "$natural" in hint:
            if len(hint) != 1:
                raise MongoError("FailedToParse", f"$natural hint may only accept one field{hint}")
            v = hint["$natural"]
            if v not in (1, -1) or isinstance(v, bool):
                raise MongoError("FailedToParse", f"$natural hint may only accept 1 or -1, not $natural: {v}")
        return hint
    raise MongoError("FailedToParse", "Hint must be a string or an object")
