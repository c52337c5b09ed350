"""The query planner: which index (if any) answers a query, with which bounds, and the plan around it.

The steps follow the server's QueryPlanner::plan, simplified to what mongosim's
indexes do:

1. A *canonical query* (`CanonicalQuery`): the filter's top-level conjunction
   split into leaf predicates `(path, operator, value)`; clauses an index can
   never serve (`$or`, `$expr`, `$nor`, `$not`, positional paths) stay in the
   residual filter only.
2. Fast paths first, as the server's express executor: `{_id: <value>}` is one
   lookup in the `_id` index; a single-field equality with `limit: 1` (what
   `find_one` sends) on a plain index is one seek (`EXPRESS_IXSCAN`).
3. A `hint` (a name or a key pattern; `{$natural: 1}` asks for a collection
   scan) picks the index — a whole-index scan if no predicate bounds it; an
   unknown hint is BadValue, as the server says it.
4. Otherwise each *relevant* index — one whose first field has a predicate —
   gets bounds for every field (`query.index_bounds`): predicates on one field
   intersect, except on a multikey path (two predicates may hold for two
   different elements); fields sharing a multikey array prefix do not compound.
   A sparse index is eligible only when the query cannot match a document
   missing its fields; a partial index only when the query implies its filter.
   If no relevant index provides the requested sort, every index that can
   (non-sparse, not multikey on the sort fields) is a candidate for a full scan.
   A wildcard index is expanded into one candidate per queried path it covers
   (`planner_wildcard_helpers`: key pattern `{$_path: 1, <path>: 1}`).
   A rooted `$or` (the whole filter) is planned branch by branch instead
   (`subplan`): each branch's best index plan under an OR stage, FETCH and
   SUBPLAN above; a branch without an index makes it a collection scan.
5. Candidates are ranked by the number of keys they would examine (counted on
   the index, O(log n) per interval), then by whether they avoid a blocking
   SORT and a residual filter.  With more than one, the multi-planner's trial
   (`multi_plan`, as the server's MultiPlanStage) then runs them and picks the
   most productive: the plan whose index gives the sort wins a sort + limit
   even when it examines more keys in all.  (Equal scores keep the ranking by
   keys; a count keeps the ranking alone.  An `$or` beside other clauses
   races as one more candidate, its OR of the branches' scans; each branch
   of a subplanned `$or` is multi-planned as a query of its own.)
6. No candidate: a collection scan.

The plan is a tree of stages (`plan_executor`): IXSCAN under FETCH, or
COLLSCAN, then SHARDING_FILTER (sharded collections), SORT (unless the index
provides the order), SKIP, a projection, LIMIT — the server's
QueryPlannerAnalysis::analyzeDataAccess order.  Each predicate the bounds do
not answer exactly is checked by the IXSCAN on its keys where the keys decide
it (a regex, `$mod`...: its `filter`), else by the FETCH on the documents; with
no FETCH filter left, a count or a projection of index fields needs no FETCH
at all (COUNT / PROJECTION_COVERED over the IXSCAN: a covered plan).

Source: src/mongo/db/query/query_planner.cpp, planner_ixselect.cpp,
planner_analysis.cpp, planner_wildcard_helpers.cpp, query_utils.h (express eligibility),
src/mongo/db/exec/subplan.cpp.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable

from bson import Regex

from mongosim.oplog.errors import MongoError
from mongosim.shardsim import multi_plan
from mongosim.shardsim.index_access_method import IndexAccessMethod
from mongosim.shardsim.plan_executor import (
    CollScan,
    Count,
    CountScan,
    CoveredFetch,
    EOFStage,
    ExpressIxscan,
    Fetch,
    IndexScan,
    Limit,
    PlanStage,
    Projection,
    ReturnKey,
    ShardingFilter,
    Skip,
    Sort,
    SortKeyGenerator,
)
from mongosim.shardsim.canonical_query import (
    CanonicalQuery,
    Leaf,
    bad_hint,
    check_hint,
    extract_leaves,
    planner_error,
    shown_filter,
)
from mongosim.shardsim.fts.text_stages import build_text_plan
from mongosim.shardsim.query.matcher import Matcher
from mongosim.shardsim.subplan import BranchFetch, OrFetch, OrStage, SubplanStage
from mongosim.shardsim import planner_wildcard_helpers as W
from mongosim.shardsim.query import index_bounds as B
from mongosim.shardsim.geo.geo_near import GeoNear, find_geo_index
from mongosim.shardsim.query.document_metadata import GEO_NEAR_DISTANCE, GEO_NEAR_POINT, TEXT_SCORE, unavailable
from mongosim.shardsim.query.collation.comparison_keys import collatable, compare_for
from mongosim.shardsim.query.paths import split
from mongosim.shardsim.query.sorting import meta_sorts, parse_sort
from mongosim.shardsim.query.values import TYPE_ALIASES, canonical_rank, hashable

# The seeks an index scan plans: one key range per combination of the leading fields' point intervals
# and the next field's intervals, as the server's IndexBoundsChecker seeks from interval to interval
# (an `$in` of 500 values is 500 seeks, not a walk of the whole index with every key checked against
# 500 intervals).  Past this many, the rest of the fields are checked key by key (memory, not speed).
MAX_SEEK_RANGES = 100_000


def hinted_index(coll, cq: CanonicalQuery) -> IndexAccessMethod | str | None:
    """The hinted index, "natural" for {$natural: ±1}, None without a hint."""
    hint = check_hint(cq.hint)
    if hint is None:
        return None
    if isinstance(hint, dict) and "$natural" in hint:
        return "natural"
    spec = None
    if isinstance(hint, str):
        spec = coll.index(hint) if coll is not None else None
    elif coll is not None:
        matches = [s for s in coll.indexes if _same_pattern(s["key"], hint)]
        if len(matches) > 1:
            raise MongoError("IndexNotFound", f"Hint matched multiple indexes, must hint by index name. Matched: "
                                              f"{matches[0]} and {matches[1]}")
        spec = matches[0] if matches else None
    if spec is None or spec.get("hidden"):
        raise bad_hint(cq)
    ix = coll.index_access(spec["name"])
    if ix is None or not (ix.usable or ix.wildcard is not None):
        raise bad_hint(cq)
    return ix


def _same_pattern(a: dict, b: dict) -> bool:
    """Key patterns equal as BSON (field order counts; 1 == 1.0)."""
    if list(a) != list(b):
        return False
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, str) or isinstance(y, str):
            if x != y:
                return False
        elif hashable(x) != hashable(y):
            return False
    return True


# -- bounds for one index ---------------------------------------------------------------------------
@dataclass
class IndexPlan:
    ix: IndexAccessMethod
    bounds: list[list[B.Interval]]
    exact: list[Leaf]  # predicates the bounds answer exactly
    direction: int = 1
    provides_sort: bool = False
    whole: bool = False  # a whole-index scan (hint, or sort only)
    keys: int = 0  # keys it would examine
    position: int = 0
    min_max: tuple | None = None  # (min key, max key) of a min/max scan

def _field_leaves(cq: CanonicalQuery, path: str) -> list[Leaf]:
    return [lf for lf in cq.leaves if lf.path == path]


_NOT_COMPARED = frozenset({"$exists", "$type", "$size", "$mod", "$bitsAllSet", "$bitsAnySet", "$bitsAllClear",
                           "$bitsAnyClear"})


def _collation_allows(ix: IndexAccessMethod, lf: Leaf, collator) -> bool:
    """Whether `ix` may bound `lf` (planner_ixselect's collation check): a string (or an object or array,
    which may hold strings) compares in the index's order only under the index's own collation; a regex
    bounds only an index without one (its prefix bounds are code-point ranges)."""
    if lf.op == "$regex":
        return ix.collator is None
    if ix.collator == collator or lf.op in _NOT_COMPARED:
        return True
    if lf.op in ("$in", "$nin", "$all") and isinstance(lf.value, list):
        return not any(collatable(v) for v in lf.value)
    return not collatable(lf.value)


def _bounds_of(ix: IndexAccessMethod, i: int, lf: Leaf, collator=None):
    if not _collation_allows(ix, lf, collator):
        return None
    if lf.op == "$exists" and lf.value and ix.sparse and len(ix.paths) == 1 and ix.type == "btree":
        return B.ALL(), True  # (a single-field sparse index holds exactly the documents with the field)
    if lf.op == "$type" and ix.collator is not None and {"string", "object"} & set(B.type_names(lf.value)):
        b = B.predicate_bounds(lf.op, lf.value)
        return None if b is None else (b[0], False)  # (collation keys: the documents decide)
    hashed = ix._hash64 if ix.hashed_pos == i else None
    if B.is_null_negation(lf) and ix.multikey_paths[i] and lf.op != "$elemMatch":
        return None  # (notEqualsNullCanUseIndex: see index_bounds.is_null_negation)
    if lf.op.startswith("$_internalExpr") and ix.multikey_paths[i]:
        return None  # (an $expr compares an array whole, the keys are its elements: rewrite_expr)
    return B.predicate_bounds(lf.op, lf.value, hashed=hashed)


def _multikey_prefixes(ix: IndexAccessMethod, i: int) -> set[str]:
    parts = split(ix.paths[i])
    return {".".join(parts[: c + 1]) for c in ix.multikey_paths[i]}


def _plan_bounds(ix: IndexAccessMethod, cq: CanonicalQuery, ok=None
                 ) -> tuple[list[list[B.Interval]], list[Leaf], bool]:
    """Bounds for every field of `ix`, the leaves they answer exactly, whether field 0 is bounded.

    `ok` keeps the leaves the index may use (a wildcard index's rules); an expanded wildcard index's
    `$_path` field is left None for `planner_wildcard_helpers.finalize`."""
    bounds: list = []
    exact: list[Leaf] = []
    used_prefixes: set[str] = set()
    first_bounded = False
    for i, path in enumerate(ix.paths):
        if path == W.PATH:
            bounds.append(None)
            continue
        oil = None
        mk = _multikey_prefixes(ix, i)
        if not (mk & used_prefixes):
            for lf in _field_leaves(cq, path):
                if ok is not None and not ok(lf):
                    continue
                b = _bounds_of(ix, i, lf, cq.collator)
                if b is None:
                    continue
                if oil is None:
                    oil = b[0]
                    if b[1] and not lf.derived and not (mk and lf.op in ("$ne", "$nin")):
                        exact.append(lf)
                elif not mk or lf.op == "$elemMatch":
                    oil = B.intersect(oil, b[0])
                    if b[1] and not lf.derived:
                        exact.append(lf)
        if oil is None:
            bounds.append(B.ALL())
        else:
            bounds.append(oil)
            used_prefixes |= mk
            if i == 0:
                first_bounded = True
    return bounds, exact, first_bounded


def _can_match_missing(ix: IndexAccessMethod, cq: CanonicalQuery) -> bool:
    """Whether the query may match a document missing every field of a sparse index: no predicate
    on an indexed field excludes the key a missing field would have (null)."""
    for path in ix.paths:
        for lf in _field_leaves(cq, path):
            if _excludes_missing(lf):
                return False
    return True


def _excludes_missing(lf: Leaf) -> bool:
    if lf.op == "$exists":
        return lf.value not in (False, 0, None)
    b = B.predicate_bounds(lf.op, lf.value)
    return b is not None and not B.contains_null(b[0])


# -- partial indexes: does the query imply the filter? ---------------------------------------------
_CMP = frozenset({"$eq", "$lt", "$lte", "$gt", "$gte"})
_LE = frozenset({"$lt", "$lte"})
_GE = frozenset({"$gt", "$gte"})
_EQUALITY_LIKE = frozenset({"$lte", "$eq", "$gte"})  # (supportsEquality: what NaN may be a subset of)
# query leaves a matched document always holds a value at the path for (_isSubsetOf(..., ExistsMatchExpression))
_EXISTS_IMPLIED = frozenset({"$elemMatch", "$geoWithin", "$within", "$geoIntersects", "$mod", "$regex", "$size",
                             "$type"})


def _implies(cq: CanonicalQuery, partial: dict, index_collator=None) -> bool:
    """Whether the query implies a partial index's filter: expression::isSubsetOf(query, filter)
    (expression_algo.cpp) over the query's top-level conjuncts.

    The filter's `$and` needs every clause, its `$or` one branch; a filter leaf needs one query
    conjunct that is a subset of it (`_leaf_subset`), and a query `$or` is one when each of its
    branches is (isSubsetOf's OR on the query side: every child a subset)."""
    conj = _subset_conjuncts(cq.leaves, cq.residual)
    return _filter_implied(conj, partial, cq.collator, index_collator)


def _subset_conjuncts(leaves: list[Leaf], residual: list[dict]) -> list[Leaf]:
    """The query's conjuncts as isSubsetOf sees them once optimized: its leaves, `$all` as its
    equalities (an AND of them), the `$not`, object `$elemMatch` and geo clauses kept residual, and
    each `$or` as a Leaf `("", "$or", [each branch's conjuncts])`."""
    out: list[Leaf] = []
    for lf in leaves:
        if lf.derived:
            continue
        if lf.op == "$all" and isinstance(lf.value, list):
            for v in lf.value:
                if isinstance(v, dict) and len(v) == 1 and "$elemMatch" in v:
                    out.append(Leaf(lf.path, "$elemMatch", v["$elemMatch"]))
                else:
                    out.append(Leaf(lf.path, "$eq", v))
            continue
        out.append(lf)
    for r in residual:
        if len(r) != 1:
            continue
        path, val = next(iter(r.items()))
        if path == "$or" and isinstance(val, list) and val and all(isinstance(b, dict) for b in val):
            branches = []
            for b in val:
                b_leaves: list[Leaf] = []
                b_residual: list[dict] = []
                extract_leaves(b, b_leaves, b_residual)
                branches.append(_subset_conjuncts(b_leaves, b_residual))
            out.append(Leaf("", "$or", branches))
            continue
        if path.startswith("$") or not isinstance(val, dict) or len(val) != 1:
            continue
        op, arg = next(iter(val.items()))
        if op in ("$not", "$elemMatch", "$geoWithin", "$within", "$geoIntersects"):
            out.append(Leaf(path, op, arg))
    return out


def _filter_implied(conj: list[Leaf], flt: dict, qcoll, icoll) -> bool:
    for key, val in flt.items():
        if key == "$and":
            if not all(_filter_implied(conj, sub, qcoll, icoll) for sub in val):
                return False
        elif key == "$or":
            if not any(_filter_implied(conj, sub, qcoll, icoll) for sub in val):
                return False
        elif key.startswith("$"):
            return False
        else:
            leaves: list[Leaf] = []
            residual: list[dict] = []
            extract_leaves({key: val}, leaves, residual)
            if residual or not all(any(_leaf_subset(q, p, qcoll, icoll) for q in conj) for p in leaves):
                return False
    return True


def _type_set(arg) -> frozenset:
    names = arg if isinstance(arg, list) else [arg]
    return frozenset(next((k for k, c in TYPE_ALIASES.items() if c == n), n)
                     if isinstance(n, (int, float)) and not isinstance(n, bool) else n for n in names)


def _equivalent(q: Leaf, p: Leaf) -> bool:
    """MatchExpression::equivalent of two leaves on one path."""
    if q.op != p.op:
        return False
    try:
        if q.op == "$type":
            return _type_set(q.value) == _type_set(p.value)
        if q.op == "$in":
            return isinstance(q.value, list) and isinstance(p.value, list) and \
                sorted(set(map(hashable, q.value))) == sorted(set(map(hashable, p.value)))
        if q.op == "$regex":
            return q.value[:2] == p.value[:2]
        return hashable(q.value) == hashable(p.value)
    except TypeError:
        return False


def _leaf_subset(q: Leaf, p: Leaf, qcoll, icoll) -> bool:
    """expression::isSubsetOf(q, p) for a query conjunct `q` and a filter leaf `p`: only on the same
    path (a dotted one included: paths are compared as strings, arrays along them are not considered);
    a query `$or` when each branch has a conjunct that is."""
    if q.op == "$or" and not q.path:
        return all(any(_leaf_subset(bq, p, qcoll, icoll) for bq in branch) for branch in q.value)
    if q.path != p.path:
        return False
    if _equivalent(q, p):
        return True
    if p.op in _CMP:
        return _subset_of_comparison(q, p.op, p.value, qcoll, icoll)
    if p.op == "$in":
        vals = p.value if isinstance(p.value, list) else []
        if any(isinstance(v, (Regex, re.Pattern)) for v in vals):
            return False
        return any(_subset_of_comparison(q, "$eq", v, qcoll, icoll) for v in vals)
    if p.op == "$exists" and p.value not in (False, 0, None):
        return _subset_of_exists(q)
    if p.op.startswith("$_internalExpr") and q.op == p.op:
        # (_isSubsetOfInternalExpr: the same operator with a narrower value; either collation)
        if qcoll != icoll and collatable(q.value):
            return False
        c = compare_for(icoll)(q.value, p.value)
        return c < 0 if p.op in ("$_internalExprLt", "$_internalExprLte") else \
            c > 0 if p.op in ("$_internalExprGt", "$_internalExprGte") else False
    return False


def _subset_of_comparison(q: Leaf, rop: str, rv, qcoll, icoll) -> bool:
    """_isSubsetOf(q, ComparisonMatchExpression): q a comparison (or an `$in` of equalities, each
    one) of the same canonical type, ordered inside the filter's range."""
    if q.op in _CMP:
        return _cmp_subset(q.op, q.value, rop, rv, qcoll, icoll)
    if q.op == "$in" and isinstance(q.value, list):
        vals = q.value
        if not vals or any(isinstance(v, (Regex, re.Pattern)) for v in vals):
            return False  # (an empty $in is $alwaysFalse once optimized)
        return all(_cmp_subset("$eq", v, rop, rv, qcoll, icoll) for v in vals)
    return False


def _cmp_subset(lop: str, lv, rop: str, rv, qcoll, icoll) -> bool:
    if canonical_rank(lv) != canonical_rank(rv):
        return False
    if B._is_nan(lv) or B._is_nan(rv):  # NaN compares equal only to itself
        return lop in _EQUALITY_LIKE and rop in _EQUALITY_LIKE and B._is_nan(lv) and B._is_nan(rv)
    if qcoll != icoll and collatable(lv):
        return False
    c = compare_for(icoll)(lv, rv)
    if lop == rop and c == 0:
        return True
    if rop in _LE and lop in (_LE | {"$eq"}):
        return c <= 0 if rop == "$lte" else c < 0
    if rop in _GE and lop in (_GE | {"$eq"}):
        return c >= 0 if rop == "$gte" else c > 0
    return False


def _subset_of_exists(q: Leaf) -> bool:
    """_isSubsetOf(q, {path: {$exists: true}}): a comparison to anything but null; `$in` without null;
    `$ne: null`, `$nin` with null, `$not: {$eq: null}` / `$not: {$in: [.., null]}`; `$exists: true`,
    `$elemMatch`, `$type` (even "null"), `$size`, `$mod`, `$regex`, geo.  Not the bit tests, `$ne`/`$nin`
    of non-null values, `$exists: false`, `$eq: null`.

    Deliberately stricter than the server in one case: a null negation on a dotted path.  {b: []} (or
    {b: [1]}) matches {"b.a": {$ne: null}} but not {"b.a": {$exists: true}}, so the partial index never
    holds it; the server claims the subset anyway (paths compared as strings) and its index scan misses
    such documents.  mongosim keeps results the same with and without an index: no subset there."""
    op, v = q.op, q.value
    if "." in q.path and _is_null_negation(op, v):
        return False
    if op in _CMP:
        return v is not None
    if op == "$exists":
        return v not in (False, 0, None)
    if op in _EXISTS_IMPLIED:
        return True
    if op == "$in":
        return isinstance(v, list) and bool(v) and not any(x is None for x in v)
    return _is_null_negation(op, v)


def _is_null_negation(op: str, v) -> bool:
    """`$ne: null`, `$nin` with null, `$not: {$eq: null}` or `$not: {$in: [.., null]}`."""
    if op == "$ne":
        return v is None
    if op == "$nin":
        return isinstance(v, list) and any(x is None for x in v)
    if op == "$not" and isinstance(v, dict) and len(v) == 1:
        (nop, arg), = v.items()
        if nop == "$eq":
            return arg is None
        if nop == "$in":
            return isinstance(arg, list) and any(x is None for x in arg)
    return False


def _eligible(ix: IndexAccessMethod, cq: CanonicalQuery) -> bool:
    if not ix.usable or ix.hidden:
        return False
    if ix.sparse and _can_match_missing(ix, cq):
        return False
    if ix.partial is not None and not _implies(cq, ix.partial.filter, ix.collator):
        return False
    return True


def _sort_fields(cq: CanonicalQuery) -> list[tuple[str, int]]:
    try:
        return [(f, d) for f, d in parse_sort(cq.sort)] if cq.has_sort else []
    except MongoError:
        return []


def _provides_sort(ix: IndexAccessMethod, bounds: list[list[B.Interval]], sort: list[tuple[str, int]],
                   collator=None) -> int:
    """1 or -1 when scanning `ix` forward / backward yields the requested order, else 0.

    Equality (single point) fields may be skipped; a multikey or hashed field never gives order; strings
    come in the order of the index's collation, so only a query of that collation may take it."""
    if not sort or any(d == 0 for _f, d in sort) or ix.collator != collator:
        return 0
    paths = ix.paths
    j = 0
    direction = 0
    for f, d in sort:
        while j < len(paths) and paths[j] != f and len(bounds[j]) == 1 and bounds[j][0].is_point:
            j += 1
        if j >= len(paths) or paths[j] != f or ix.hashed_pos == j or ix.field_multikey(j):
            return 0
        ix_dir = -1 if ix.descending[j] else 1
        want = 1 if d * ix_dir > 0 else -1
        if direction == 0:
            direction = want
        elif direction != want:
            return 0
        j += 1
    return direction


# -- ranges: the contiguous key ranges an index scan visits ----------------------------------------
def scan_ranges(ix: IndexAccessMethod, bounds: list[list[B.Interval]]) -> tuple[list[tuple], int]:
    """The key ranges (lo, lo_incl, hi, hi_incl) covering `bounds`, in index order, and how many
    leading fields they pin (the rest is checked key by key)."""
    prefixes: list[tuple] = [()]
    k = 0
    n = len(ix.paths)
    while k < n and B.is_point_oil(bounds[k]) and len(prefixes) * len(bounds[k]) <= MAX_SEEK_RANGES:
        prefixes = [p + (_enc(ix, k, iv.start),) for p in prefixes for iv in _ordered(ix, k, bounds[k])]
        k += 1
    ranges = []
    if k < n:
        ivs = _ordered(ix, k, bounds[k])
        if len(prefixes) * len(ivs) <= MAX_SEEK_RANGES:
            for p in prefixes:
                for iv in ivs:
                    if ix.descending[k]:
                        lo, lo_i, hi, hi_i = _enc(ix, k, iv.end), iv.end_incl, _enc(ix, k, iv.start), iv.start_incl
                    else:
                        lo, lo_i, hi, hi_i = _enc(ix, k, iv.start), iv.start_incl, _enc(ix, k, iv.end), iv.end_incl
                    ranges.append((p + (lo,), lo_i, p + (hi,), hi_i))
            return ranges, k + 1
    for p in prefixes:
        ranges.append((p, True, p, True))
    return ranges, k


def _ordered(ix: IndexAccessMethod, k: int, oil: list[B.Interval]) -> list[B.Interval]:
    return list(reversed(oil)) if ix.descending[k] else oil


def _enc(ix: IndexAccessMethod, k: int, v):
    from mongosim.shardsim.index_access_method import Desc

    kv = ix.key_hash_at(k)(v)
    return Desc(kv) if ix.descending[k] else kv


def count_keys(ix: IndexAccessMethod, bounds: list[list[B.Interval]]) -> int:
    ranges, _k = scan_ranges(ix, bounds)
    return sum(ix.count(lo, li, hi, hi_i) for lo, li, hi, hi_i in ranges)


# -- choosing ---------------------------------------------------------------------------------------
@dataclass
class Solution:
    """The winning plan and the rejected ones (for explain)."""

    root: PlanStage
    rejected: list[PlanStage] = field(default_factory=list)
    express: bool = False
    index_plan: IndexPlan | None = None
    or_plans: list[IndexPlan] = field(default_factory=list)  # a subplanned $or's branch plans
    trial: Callable[[], list[tuple[PlanStage, float]]] | None = None  # the candidates as the trial left them
    trial_eof: bool = False  # the winner reached EOF in the multi-planner's trial (its results buffered)


def _express_id(cq: CanonicalQuery) -> Any:
    """isIdHackEligibleQuery: the `_id` value of `{_id: <scalar>}` (or `{_id: {$eq: <scalar>}}`)."""
    f = cq.filter
    if len(f) != 1 or "_id" not in f:
        return _NO
    v = f["_id"]
    if isinstance(v, dict):
        if len(v) == 1 and "$eq" in v:
            v = v["$eq"]
        else:
            return _NO
        if isinstance(v, dict):
            return _NO
    if isinstance(v, (list, Regex, re.Pattern)):
        return _NO
    if cq.collator is not None and collatable(v):
        return _NO  # (the lookup compares `_id` values as they are)
    if cq.hint is not None and check_hint(cq.hint) is not None:
        return _NO
    if cq.skip or cq.min or cq.max or cq.show_record_id or cq.return_key or cq.batch_size:
        return _NO
    if cq.projection and not _simple_projection(cq.projection):
        return _NO
    return v


_NO = object()


def _simple_projection(p: dict) -> bool:
    return all(not isinstance(v, dict) and not isinstance(v, str) and "$" not in k for k, v in p.items())


def _express_equality(coll, cq: CanonicalQuery) -> IndexAccessMethod | None:
    """isEqualityExpressEligibleQuery + getIndexForExpressEquality: `{a: <scalar>}` with limit 1 (or
    a unique single-field index) on a plain index answers with one seek."""
    f = cq.filter
    if len(f) != 1 or len(cq.leaves) != 1 or cq.residual:
        return None
    lf = cq.leaves[0]
    if lf.op != "$eq" or lf.derived or not B._exact_value(lf.value) or isinstance(lf.value, (dict, Regex, re.Pattern)):
        return None
    if cq.sort or cq.skip or cq.min or cq.max or cq.show_record_id or cq.return_key or cq.batch_size or cq.count:
        return None
    if (cq.hint is not None and check_hint(cq.hint) is not None) or \
            (cq.projection and not _simple_projection(cq.projection)):
        return None
    best = None
    for ix in coll.secondary_access():
        if ix.paths[0] != lf.path or not ix.usable or ix.hidden or ix.sparse or ix.partial is not None \
                or ix.hashed_pos is not None or not _collation_allows(ix, lf, cq.collator):
            continue
        if not (cq.limit == 1 or (ix.unique and len(ix.paths) == 1)):
            continue
        mat = coll.index_access(ix.name)
        if mat.field_multikey(0):
            continue
        if best is None or len(ix.paths) < len(best.paths):
            best = mat
    return best


def _metadata_needed(cq: CanonicalQuery) -> list[str]:
    """The metadata the query's projection and sort read (`{$meta: ...}`)."""
    names = [v["$meta"] for v in (cq.projection or {}).values() if isinstance(v, dict) and "$meta" in v]
    return names + meta_sorts(cq.sort) if cq.sort else names


def _check_metadata(cq: CanonicalQuery) -> None:
    """A text score needs a `$text` query, a distance a `$near` (40218), as the server's find validates it."""
    if cq.projection is None and cq.sort is None:
        return
    for name in _metadata_needed(cq):
        if name == TEXT_SCORE and cq.text is None or name in (GEO_NEAR_DISTANCE, GEO_NEAR_POINT) and cq.near is None:
            raise unavailable(name)


def _text_solution(coll, cq: CanonicalQuery, sharded: bool) -> Solution:
    """The plan of a `$text` query (shardsim.fts.text_stages)."""
    if cq.hint is not None and check_hint(cq.hint) is not None:
        raise MongoError("BadValue", "text and hint not allowed in same query")
    if cq.sort and "$natural" in cq.sort:
        raise MongoError("BadValue", "text expression not allowed with $natural sort order")
    shown = shown_filter(cq.leaves, cq.residual)
    want_score = cq.want_text_score or TEXT_SCORE in _metadata_needed(cq)
    root = build_text_plan(coll, cq, cq.text, want_score, shown)
    cq.text_shown = cq.text.to_bson(root.query.language.name)
    return Solution(_finish(root, cq, False, sharded))


def _near_solution(coll, cq: CanonicalQuery, sharded: bool) -> Solution:
    """The plan of a `$near` / `$nearSphere` query (shardsim.geo.geo_near)."""
    natural_hint = isinstance(cq.hint, dict) and "$natural" in cq.hint
    if cq.sort and "$natural" in cq.sort:
        raise MongoError("BadValue", "geoNear expression not allowed with $natural sort order")
    if natural_hint:
        raise MongoError("BadValue", "geoNear expression not allowed with $natural hint")
    spec = find_geo_index(coll, cq.near)
    if spec is None:
        raise planner_error(cq, "unable to find index for $geoNear query", "NoQueryExecutionPlans")
    shown = shown_filter(cq.leaves, cq.residual)
    root = GeoNear(spec, cq.near, cq.matcher, shown)
    if cq.has_sort:  # (a sort given with $near orders the documents instead of the distance)
        return Solution(_finish(root, cq, False, sharded))
    return Solution(_finish(root, cq, True, sharded))


def plan_query(coll, cq: CanonicalQuery, *, view_changed: bool = False, sharded: bool = False) -> Solution:
    """The winning plan for `cq` on `coll` (None: the collection does not exist).  On a sharded
    collection, `sharded` is carried down as its shard key pattern (truthy: the SHARDING_FILTER reads it)."""
    _check_metadata(cq)
    if sharded and coll is not None and coll.shard_key:
        sharded = coll.shard_key
    if cq.text is not None:
        return _text_solution(coll, cq, sharded)
    if cq.near is not None:
        if coll is None:
            return Solution(_finish(EOFStage(), cq, False, sharded))
        return _near_solution(coll, cq, sharded)
    hinted = hinted_index(coll, cq) if (coll is not None and cq.hint is not None) else None  # (no collection: EOF)
    if cq.min or cq.max:
        if not isinstance(hinted, IndexAccessMethod):
            if coll is None:
                return Solution(_finish(EOFStage(), cq, False, sharded))
            raise MongoError(51173, "When using min()/max() a hint of which index to use must be provided")
    if coll is None:
        return Solution(_finish(EOFStage(), cq, False, sharded))
    if hinted == "natural" or hinted is None and cq.sort and "$natural" in cq.sort:
        # a $natural hint, or a $natural sort without a hint, is a collection scan in that direction (a hint
        # wins over the sort: query_planner.cpp, planner_access.cpp makeCollectionScan)
        natural = check_hint(cq.hint)["$natural"] if hinted == "natural" else cq.sort["$natural"]
        return Solution(_finish(CollScan(cq.matcher, 1 if natural >= 0 else -1), cq, False, sharded))
    if hinted is None and not cq.count:
        idv = _express_id(cq)
        if idv is not _NO:
            return Solution(ExpressIxscan(None, idv, cq.projection, variables=cq.variables), express=True)
        ex = _express_equality(coll, cq) if not view_changed else None
        if ex is not None:
            return Solution(ExpressIxscan(ex, cq.leaves[0].value, cq.projection, limit=cq.limit,
                                          variables=cq.variables), express=True)
    sort = _sort_fields(cq)
    if isinstance(hinted, IndexAccessMethod):
        if hinted.wildcard is not None and not (cq.min or cq.max):
            plans = _wildcard_candidates(hinted, cq, sort, view_changed, 0, hinted=True)
            if not plans:
                raise planner_error(cq, "No query solutions", "NoQueryExecutionPlans")
            return _choose(coll, plans, cq, sort, sharded, view_changed)
        if cq.min or cq.max:
            plan = _min_max_plan(hinted, cq)
        else:
            bounds, exact, _first = _plan_bounds(hinted, cq)
            plan = IndexPlan(hinted, bounds, exact)
            d = _provides_sort(hinted, bounds, sort, cq.collator) if not view_changed else 0
            if d:
                plan.direction, plan.provides_sort = d, True
        return Solution(_build(plan, cq, sharded, view_changed), index_plan=plan)
    branches = _rooted_or(cq) if hinted is None and not (cq.min or cq.max) else None
    if branches is not None:
        return _subplan_solution(coll, cq, branches, sharded, view_changed)
    ranked = _ranked(_index_candidates(coll, cq, sort, view_changed), cq, sort)
    contained = _contained_or(coll, cq, view_changed) if hinted is None and not (cq.min or cq.max) else None
    if not ranked and contained is None:
        return Solution(_finish(CollScan(cq.matcher, 1), cq, False, sharded))
    return _chosen(coll, ranked, cq, sharded, view_changed, contained)


def _index_candidates(coll, cq: CanonicalQuery, sort, view_changed: bool) -> list[IndexPlan]:
    """Every index plan for `cq`: the relevant indexes (one whose first field the query bounds, each
    expansion of a wildcard index), or, when none provides the sort, the indexes that scan in its order."""
    candidates: list[IndexPlan] = []
    order = 0
    access = list(coll.secondary_access())
    if any(lf.path == "_id" for lf in cq.leaves) or any(f == "_id" for f, _d in sort):
        access.insert(0, coll.index_access("_id_"))
    for ix0 in access:
        order += 1
        if ix0.wildcard is not None:
            if _eligible_wildcard(ix0, cq):
                candidates += _wildcard_candidates(coll.index_access(ix0.name), cq, sort, view_changed, order)
            continue
        if not _eligible(ix0, cq):
            continue
        if not any(lf.path == ix0.paths[0] for lf in cq.leaves):
            continue
        ix = coll.index_access(ix0.name)
        bounds, exact, first = _plan_bounds(ix, cq)
        if not first:
            continue
        plan = IndexPlan(ix, bounds, exact, position=order)
        d = _provides_sort(ix, bounds, sort, cq.collator) if not view_changed else 0
        if d:
            plan.direction, plan.provides_sort = d, True
        candidates.append(plan)
    if sort and not view_changed and not any(p.provides_sort for p in candidates):
        order = 0
        for ix0 in access:
            order += 1
            if not ix0.usable or ix0.hidden or ix0.sparse or ix0.hashed_pos == 0:
                continue
            if ix0.partial is not None and not _implies(cq, ix0.partial.filter, ix0.collator):
                continue
            ix = coll.index_access(ix0.name)
            whole = [B.ALL() for _ in ix.paths]
            d = _provides_sort(ix, whole, sort, cq.collator)
            if d:
                plan = IndexPlan(ix, whole, [], direction=d, provides_sort=True, whole=True, position=100 + order)
                candidates.append(plan)
    return candidates


# -- a rooted $or: SUBPLAN (shardsim.subplan) --------------------------------------------------------
def _merge_branches(chosen: list[tuple[IndexPlan, CanonicalQuery]]) -> list[tuple[IndexPlan, CanonicalQuery]]:
    """Branches that are one predicate answered exactly by the first field of the same index become one
    scan whose bounds are the union of theirs (the access planner merges the leaves of an OR on one index)."""
    out: list[tuple[IndexPlan, CanonicalQuery]] = []
    merged: dict[str, int] = {}
    for plan, bcq in chosen:
        simple = (isinstance(plan.ix, IndexAccessMethod) and len(bcq.leaves) == 1 and not bcq.residual
                  and plan.exact and all(B.is_all(b) for b in plan.bounds[1:]))
        at = merged.get(plan.ix.name) if simple else None
        if at is None:
            if simple:
                merged[plan.ix.name] = len(out)
            out.append((plan, bcq))
            continue
        first, first_q = out[at]
        bounds = [B.union(first.bounds[0] + plan.bounds[0])] + first.bounds[1:]
        out[at] = (IndexPlan(first.ix, bounds, first.exact + plan.exact, direction=first.direction), first_q)
    return out


def _rooted_or(cq: CanonicalQuery) -> list[dict] | None:
    """SubplanStage::canUseSubplanning: the whole filter is one `$or` of at least one clause."""
    f = cq.filter
    if len(f) != 1 or "$or" not in f:
        return None
    branches = f["$or"]
    if not isinstance(branches, list) or not branches or not all(isinstance(b, dict) for b in branches):
        return None
    return branches


def _subplan_solution(coll, cq: CanonicalQuery, branches: list[dict], sharded: bool,
                      view_changed: bool) -> Solution:
    """Each branch planned as a query of its own (its best index plan); an OR of them under a FETCH of
    the whole filter, or — when a branch has no index — a collection scan; SUBPLAN on top."""
    chosen = _branch_plans(coll, cq, branches, view_changed) or []
    plans = [p for p, _q in chosen]
    if not chosen:
        root = _finish(CollScan(cq.matcher, 1), cq, False, sharded)
    else:
        children = _or_children(chosen)
        if len(children) == 1 and not isinstance(children[0], Fetch):
            root = Fetch(children[0], cq.matcher, None)  # (an OR of one scan is that scan)
        else:
            # a count needs no document above the OR: its branches filtered what their bounds do not answer
            hidden = cq.count or all(isinstance(c, Fetch) for c in children)
            root = OrFetch(OrStage(children), cq.matcher, hidden=hidden)
        root = _finish(root, cq, False, sharded)
    if isinstance(root, Count):
        root.child = SubplanStage(root.child)
    else:
        root = SubplanStage(root)
    return Solution(root, or_plans=plans)


def _branch_plans(coll, cq: CanonicalQuery, branches: list[dict], view_changed: bool
                  ) -> list[tuple[IndexPlan, CanonicalQuery]] | None:
    """Each `$or` branch planned as a query of its own: its cheapest index plan (None: a branch has none)."""
    chosen: list[tuple[IndexPlan, CanonicalQuery]] = []
    for br in branches:
        bcq = CanonicalQuery(cq.ns, br, Matcher(br, cq.variables, cq.collator), variables=cq.variables,
                             collator=cq.collator)
        candidates = _index_candidates(coll, bcq, [], view_changed)
        if not candidates:
            return None
        ranked = _ranked(candidates, bcq, [])
        if len(ranked) > 1:  # (SubplanStage multi-plans each branch as a query of its own)
            order = multi_plan.ranked([_build(p, bcq, False, view_changed) for p in ranked], coll, None)
            ranked = [ranked[order[0][0]]]
        chosen.append((ranked[0], bcq))
    return chosen


def _contained_or(coll, cq: CanonicalQuery, view_changed: bool):
    """An `$or` beside other clauses of the filter (`{a: {$gt: 4}, $or: [{b: 1}, {c: 2}]}`) whose every
    branch can scan an index: the planner may answer the AND through that OR (an indexed OR under an
    AND: its access planner's OR of the branches' scans, the AND's other clauses filtered above it).
    Returns (the branches' plans, the keys they examine in all, the `$or` clause), the cheapest such
    `$or`; None when there is none."""
    best = None
    for clause in cq.residual:
        branches = clause.get("$or") if len(clause) == 1 else None
        if not isinstance(branches, list) or not branches or not all(isinstance(b, dict) for b in branches):
            continue
        chosen = _branch_plans(coll, cq, branches, view_changed)
        if chosen is None:
            continue
        keys = sum(p.keys for p, _q in chosen)
        if best is None or keys < best[1]:
            best = (chosen, keys, clause)
    return best


def _or_children(chosen: list[tuple[IndexPlan, CanonicalQuery]]) -> list[PlanStage]:
    """The OR's inputs: each (merged) branch's index scan, under a FETCH of its own filter where its bounds
    do not answer it exactly."""
    children: list[PlanStage] = []
    for best, bcq in _merge_branches(chosen):
        scan = IndexScan(best.ix, best.bounds, best.direction, *scan_ranges(best.ix, best.bounds))
        shown = _shown_filter(best, bcq)
        children.append(BranchFetch(scan, bcq.matcher, shown) if shown else scan)
    return children


def _contained_or_root(cq: CanonicalQuery, contained, sharded: bool) -> PlanStage:
    """FETCH (the whole filter applied; shown: the AND's other clauses) over the OR of the branches' scans."""
    chosen, _keys, clause = contained
    rest = shown_filter(cq.leaves, [r for r in cq.residual if r is not clause])
    return _finish(OrFetch(OrStage(_or_children(chosen)), cq.matcher, hidden=False, shown_filter=rest), cq, False,
                   sharded)


def _ranked(candidates: list[IndexPlan], cq: CanonicalQuery, sort) -> list[IndexPlan]:
    """Cheapest first: keys examined, then no blocking SORT, no residual filter, index order."""
    for p in candidates:
        p.keys = count_keys(p.ix, p.bounds)
    needs_filter = bool(cq.residual) or bool(cq.leaves)

    def rank(p: IndexPlan):
        residual = needs_filter and len(p.exact) < len([lf for lf in cq.leaves if not lf.derived]) + len(cq.residual)
        return (p.keys, not p.provides_sort if sort else False, residual, p.position)

    return sorted(candidates, key=rank)


def _choose(coll, candidates: list[IndexPlan], cq: CanonicalQuery, sort, sharded: bool, view_changed: bool
            ) -> Solution:
    """The best candidate wins; the others are the rejected plans."""
    return _chosen(coll, _ranked(candidates, cq, sort), cq, sharded, view_changed)


def _chosen(coll, ranked: list[IndexPlan], cq: CanonicalQuery, sharded: bool, view_changed: bool,
            contained=None) -> Solution:
    """The winner of the ranked candidates, and of a contained `$or`'s plan beside them, the others rejected.

    With more than one, the multi-planner's trial decides.  A count keeps the ranking by keys (the `$or`
    plan wins when it examines fewer keys than the best single index)."""
    or_plans = [p for p, _q in contained[0]] if contained is not None else []

    def build() -> list[PlanStage]:
        roots = [_build(p, cq, sharded, view_changed) for p in ranked]
        if contained is not None:
            roots.append(_contained_or_root(cq, contained, sharded))
        return roots

    if cq.count or len(ranked) + (contained is not None) < 2:
        if contained is not None and (not ranked or contained[1] < ranked[0].keys):
            root = _contained_or_root(cq, contained, sharded)
            return Solution(root, [_build(p, cq, sharded, view_changed) for p in ranked], or_plans=or_plans)
        roots = [_build(p, cq, sharded, view_changed) for p in ranked]
        return Solution(roots[0], roots[1:], index_plan=ranked[0])
    order, ended = multi_plan.race(build(), coll, cq.limit)
    roots = build()  # (the trial ran the others)
    best = order[0][0]
    trial = partial(multi_plan.trial_plans, build, coll, cq.limit)
    ordered = [roots[i] for i, _score in order]
    if best == len(ranked):  # the contained `$or`'s plan
        return Solution(ordered[0], ordered[1:], or_plans=or_plans, trial=trial, trial_eof=ended)
    return Solution(ordered[0], ordered[1:], index_plan=ranked[best], trial=trial, trial_eof=ended)


def _eligible_wildcard(ix: IndexAccessMethod, cq: CanonicalQuery) -> bool:
    if ix.hidden:
        return False
    return ix.partial is None or _implies(cq, ix.partial.filter, ix.collator)


def _wildcard_candidates(ix: IndexAccessMethod, cq: CanonicalQuery, sort, view_changed: bool, order: int,
                         hinted: bool = False) -> list[IndexPlan]:
    """One plan per expansion of a wildcard index (planner_wildcard_helpers), bounded as a btree index on
    its path; a compound index's regular prefix must be queried for any of them."""
    out = []
    for exp in W.expansions(ix, cq.leaves, hinted):
        bounds, exact, first = _plan_bounds(exp, cq, W.supports)
        if exp.path_pos > 0 and not first and not hinted:
            continue
        exact = W.finalize(exp, bounds, exact)
        plan = IndexPlan(exp, bounds, exact, position=order)
        d = _provides_sort(exp, bounds, sort, cq.collator) if not view_changed else 0
        if d:
            plan.direction, plan.provides_sort = d, True
        out.append(plan)
    return out


def _min_max_plan(ix: IndexAccessMethod, cq: CanonicalQuery) -> IndexPlan:
    """min/max: the scan from `min` (inclusive) to `max` (exclusive) over the hinted index."""
    for bound in (cq.min, cq.max):
        if bound and (list(bound) != ix.paths[: len(bound)] or len(bound) != len(ix.paths)):
            raise MongoError(51174, "The index chosen is not compatible with min/max")
    plan = IndexPlan(ix, [B.ALL() for _ in ix.paths], [], whole=True)
    lo = tuple(_enc(ix, i, v) for i, v in enumerate(cq.min.values())) if cq.min else None
    hi = tuple(_enc(ix, i, v) for i, v in enumerate(cq.max.values())) if cq.max else None
    if lo is not None and hi is not None and not lo < hi:
        raise MongoError(51175, "The value provided for min() does not come before the value provided for max() "
                                "in the hinted index")
    plan.min_max = (lo, hi)
    return plan


def _shown_filter(plan: IndexPlan, cq: CanonicalQuery) -> dict | None:
    """The FETCH's filter as explain shows it: the predicates the bounds do not answer exactly."""
    exact_ids = {id(lf) for lf in plan.exact}
    return shown_filter([lf for lf in cq.leaves if id(lf) not in exact_ids], cq.residual)


def _build(plan: IndexPlan, cq: CanonicalQuery, sharded: bool, view_changed: bool = False) -> PlanStage:
    """IXSCAN (+ FETCH) for an index plan, then the rest of the plan."""
    mm = plan.min_max
    ranges, pinned = scan_ranges(plan.ix, plan.bounds) if mm is None else (None, 0)
    on_keys, rest = _key_filters(plan, cq)
    exact = not (on_keys or rest or cq.residual)
    if cq.count and exact and mm is None and not sharded and not view_changed and not plan.ix.is_multikey \
            and not plan.ix.should_dedup and ranges is not None \
            and len(ranges) == 1 and all(B.is_all(b) for b in plan.bounds[pinned:]):
        return Count(CountScan(plan.ix, plan.bounds, ranges, pinned), cq)
    key_filter = shown_filter(on_keys, [])
    scan = IndexScan(plan.ix, plan.bounds, plan.direction, ranges, pinned, min_max=mm, min_doc=cq.min,
                     max_doc=cq.max, key_filter=key_filter,
                     key_matcher=Matcher(key_filter, cq.variables, cq.collator) if key_filter else None)
    fetch_filter = shown_filter(rest, cq.residual)
    if not fetch_filter and not view_changed and (not sharded or shard_key_covered(plan.ix, sharded)) \
            and (cq.count or _covers(plan, cq)):
        return _finish(CoveredFetch(scan, cq.matcher, None), cq, plan.provides_sort, sharded, covered=True)
    fetch = Fetch(scan, cq.matcher, fetch_filter)
    return _finish(fetch, cq, plan.provides_sort, sharded)


# Predicates whose bounds are a superset of their matches but which the index keys can decide
# (IndexBoundsBuilder's INEXACT_COVERED): the IXSCAN applies them to each key in bounds.
_ON_KEYS = frozenset({"$regex", "$mod", "$bitsAllSet", "$bitsAnySet", "$bitsAllClear", "$bitsAnyClear"})


def _key_filters(plan: IndexPlan, cq: CanonicalQuery) -> tuple[list[Leaf], list[Leaf]]:
    """The predicates the bounds do not answer exactly, split into those the IXSCAN checks on the keys
    (its `filter`: an INEXACT_COVERED predicate on a field of the index that is not multikey, hashed or
    collated) and those the FETCH checks on the documents.  A whole-index scan (for a sort, a hint, min/max)
    checks nothing on the keys."""
    exact_ids = {id(lf) for lf in plan.exact}
    loose = [lf for lf in cq.leaves if id(lf) not in exact_ids and not lf.derived]
    ix = plan.ix
    if plan.whole or plan.min_max is not None or not _keys_hold_values(ix):
        return [], loose
    on_keys, rest = [], []
    for lf in loose:
        (on_keys if value_field(ix, lf.path) is not None and _decided_by_keys(lf) else rest).append(lf)
    return on_keys, rest


def _keys_hold_values(ix) -> bool:
    """Whether the index's keys are its fields' values (a plain index without a collation: not a wildcard
    expansion, text or geo index, nor collation keys)."""
    return (isinstance(ix, IndexAccessMethod) and ix.wildcard is None and ix.type in ("btree", "hashed")
            and ix.collator is None)


def value_field(ix: IndexAccessMethod, path: str) -> int | None:
    """The position of `path` in the index when its key is the path's one value (not hashed, not multikey);
    None otherwise."""
    if path not in ix.paths:
        return None
    i = ix.paths.index(path)
    return None if i == ix.hashed_pos or ix.multikey_paths[i] else i


def _decided_by_keys(lf: Leaf) -> bool:
    """INEXACT_COVERED: a regex, `$mod`, a bit test, a `$type` of some number types, or an `$in` of values
    and regexes (no null, array or document: those need the documents)."""
    if lf.op in _ON_KEYS:
        return True
    if lf.op == "$type":
        return B.type_tightness(lf.value) == "keys"
    if lf.op == "$in" and isinstance(lf.value, list):
        return all(v is not None and not isinstance(v, (list, dict)) for v in lf.value)
    return False


def shard_key_covered(ix, shard_key) -> bool:
    """Whether a SHARDING_FILTER can read the shard key from the index's keys (no FETCH for it): every
    shard-key field is a field of the index that is not multikey, and not hashed unless the shard key
    hashes it too (a hash cannot be undone; a value can be hashed)."""
    if not isinstance(shard_key, dict) or not isinstance(ix, IndexAccessMethod) or ix.wildcard is not None:
        return False
    for f, kind in shard_key.items():
        if value_field(ix, f) is None and not (kind == "hashed" and _hashed_field(ix, f)):
            return False
    return True


def _hashed_field(ix: IndexAccessMethod, path: str) -> bool:
    """Whether `path` is the index's hashed field, not multikey (its key is the value's hash)."""
    i = ix.hashed_pos
    return i is not None and ix.paths[i] == path and not ix.multikey_paths[i]


def _covers(plan: IndexPlan, cq: CanonicalQuery) -> bool:
    """Whether the index answers the query without its documents (a covered plan: PROJECTION_COVERED over
    the IXSCAN, no FETCH), as QueryPlannerAnalysis decides: the bounds answer every predicate (the caller
    checks), the projection includes only fields the index holds (`_id` too unless excluded), none of them
    hashed or an array in some document (multikey), and a blocking sort's fields are in the index.  Not
    with a collated index (its strings are collation keys), a wildcard index, returnKey or showRecordId."""
    spec = cq.projection
    ix = plan.ix
    if not spec or cq.count or cq.return_key or cq.show_record_id or not _keys_hold_values(ix):
        return False
    fields = []
    for k, v in spec.items():
        if isinstance(v, (dict, str, list)) or "$" in k:
            return False
        if not v:
            if k != "_id":
                return False  # (an exclusion projection keeps fields the index does not hold)
            continue
        fields.append(k)
    if not fields:
        return False  # (`{_id: 0}` alone excludes: every other field is returned)
    if spec.get("_id", True) and "_id" not in fields:
        fields.append("_id")
    if cq.has_sort and not plan.provides_sort:
        fields += [f for f, _d in _sort_fields(cq)]
    return all(value_field(ix, f) is not None for f in fields)


def _finish(root: PlanStage, cq: CanonicalQuery, sorted_by_index: bool, sharded: bool, covered: bool = False
            ) -> PlanStage:
    if sharded and not isinstance(root, EOFStage):
        root = ShardingFilter(root)
    if cq.count:
        return Count(root, cq)
    if cq.has_sort and not sorted_by_index:
        limit = (cq.limit + cq.skip) if cq.limit else None
        root = Sort(root, cq.sort, limit, cq.collator)
    if cq.skip:
        root = Skip(root, cq.skip)
    if cq.projection and cq.has_sort and cq.projection.get("$sortKey") == {"$meta": "sortKey"}:
        root = SortKeyGenerator(root, cq.sort, cq.collator)
    if cq.return_key:
        root = ReturnKey(root, cq.show_record_id)
    elif cq.projection or cq.show_record_id:
        root = Projection(root, cq.projection, cq.matcher, cq.show_record_id, cq.variables, covered=covered)
    if cq.limit and not (cq.has_sort and not sorted_by_index):
        root = Limit(root, cq.limit)
    return root

