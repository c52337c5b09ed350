"""Planning with wildcard indexes: one expanded index per queried path (the server's planner_wildcard_helpers).

A wildcard index holds keys `(..., path, value, ...)` for every leaf of every
document (`query.wildcard_key_generator`).  The planner never scans it as such:
for each field of the query the index covers (its projection), it *expands*
the index into a regular-looking one whose key pattern is `{$_path: 1,
<field>: 1}` (with a compound index's regular fields around them), bounds it
like a btree index on that field, and adds the `$_path` bounds:

- `["field", "field"]`, the keys of that path;
- plus `["field.", "field/")` — every path under it — when the value bounds
  reach into non-empty documents (`{$exists: true}`, `{$type: "object"}`,
  `{$ne: null}`): a wildcard index keeps an object's leaves, not the object, so
  such bounds widen to `[MinKey, MaxKey]` and the scan must drop duplicate
  records (one document, several leaves);
- a compound index queried on its regular prefix only gets the *generic*
  expansion: `$_path` bounds `[MinKey, MinKey]` (documents without wildcard
  fields) and `["", {})` (every path), the wildcard value unbounded.

The expanded entry is multikey only when an array lies along its own path
(the index records which paths held arrays).  A wildcard index is sparse
(it has no key for a missing field): a predicate a missing field could satisfy
(`{$eq: null}`, `{$exists: false}`, `$ne`/`$nin` other than `{$ne: null}`,
`$not`) cannot use it, nor can a comparison to a non-empty object or array
(`nodeIsSupportedByWildcardIndex`); equality to `{}` or `[]` can.

Source: src/mongo/db/query/planner_wildcard_helpers.cpp, planner_ixselect.cpp
(canUseWildcardIndex, nodeIsSupportedBySparseIndex); expected bounds from
jstests/core/index/wildcard/wildcard_index_basic_index_bounds.js.
"""

from __future__ import annotations

from bson import MinKey

from mongosim.shardsim.canonical_query import Leaf
from mongosim.shardsim.index_access_method import IndexAccessMethod
from mongosim.shardsim.query import index_bounds as B
from mongosim.shardsim.query.index_keys import key_hash
from mongosim.shardsim.query.paths import split

PATH = "$_path"
_OBJ_LO, _ARR_LO = key_hash({}), key_hash([])


class ExpandedWildcardIndex:
    """A wildcard index seen as a btree index on one path (IndexEntry after expandWildcardIndexEntry and
    finalizeWildcardIndexScanConfiguration): what IXSCAN, explain and the planner read of an index."""

    hashed_pos = None
    is_id = False
    unique = False
    sparse = False  # (explain shows isSparse: false for a wildcard index)
    usable = True

    def __init__(self, base: IndexAccessMethod, path: str) -> None:
        self.base = base
        self.query_path = path  # PATH: the generic expansion (a compound index's regular prefix)
        w = base.wildcard_pos
        items = list(base.key_pattern.items())
        self.paths = [f for f, _ in items[:w]] + [PATH, path] + [f for f, _ in items[w + 1:]]
        kp: dict = {}
        for f, d in items[:w]:
            kp[f] = d
        kp.setdefault(PATH, 1)
        kp.setdefault(path, items[w][1])
        for f, d in items[w + 1:]:
            kp[f] = d
        self.key_pattern = kp
        self.descending = base.component_desc
        comps = set() if path == PATH else multikey_components(base, path)
        self.multikey_paths = base.multikey_paths[:w] + [set(), comps] + base.multikey_paths[w + 1:]
        self.path_pos = w
        self.should_dedup = False
        self.name, self.spec, self.collator = base.name, base.spec, base.collator
        self.key_hash, self.partial, self.hidden = base.key_hash, base.partial, base.hidden
        self.encode, self.key_hash_at, self.keys = base.encode, base.key_hash_at, base.keys
        self.scan, self.count = base.scan, base.count

    @property
    def entries(self):
        return self.base.entries

    @property
    def is_multikey(self) -> bool:
        return any(self.multikey_paths)

    def field_multikey(self, i: int) -> bool:
        return bool(self.multikey_paths[i])

    def multikey_path_names(self) -> dict:
        out: dict = {}
        for path, comps in zip(self.paths, self.multikey_paths):
            parts = split(path)
            out.setdefault(path, [".".join(parts[: c + 1]) for c in sorted(comps)])
        return out


def multikey_components(base: IndexAccessMethod, path: str) -> set[int]:
    """The components of `path` whose prefix held an array (buildMultiKeyPathsForExpandedWildcardIndexEntry)."""
    mk = base.wildcard_multikey
    if not mk:
        return set()
    parts = split(path)
    return {i for i in range(len(parts)) if ".".join(parts[: i + 1]) in mk}


def _value_ok(v, op: str) -> bool:
    """canUseWildcardIndex: a wildcard index keeps leaves, so only the empty object (`$eq`/`$lte`) and the
    empty array (`$eq`) compare as wholes."""
    if isinstance(v, dict):
        return not v and op in ("$eq", "$lte")
    if isinstance(v, list):
        return not v and op == "$eq"
    return True


def supports(lf: Leaf) -> bool:
    """Whether a wildcard index can bound `lf` (nodeIsSupportedByWildcardIndex and the sparse index rules)."""
    op, v = lf.op, lf.value
    if op in ("$eq", "$lt", "$lte", "$gt", "$gte"):
        return v is not None and _value_ok(v, op)
    if op == "$in":
        return isinstance(v, list) and all(x is not None and _value_ok(x, "$eq") for x in v)
    if op == "$exists":
        return v not in (False, 0, None)
    if op == "$ne":
        return v is None
    if op in ("$regex", "$type", "$mod"):
        return True
    if op == "$all":
        return isinstance(v, list) and bool(v) and v[0] is not None and _value_ok(v[0], "$eq")
    if op == "$elemMatch":
        return isinstance(v, dict) and all(supports(Leaf(lf.path, o, x)) for o, x in v.items())
    return False


def covered_paths(base: IndexAccessMethod, leaves: list[Leaf], hinted: bool) -> list[str]:
    """The query's paths the index expands for, in query order: covered by its projection, and (unless
    hinted) bounded by at least one predicate it supports."""
    out: list[str] = []
    for lf in leaves:
        p = lf.path
        if p in out or p in base.regular_paths or not base.wildcard.covers(p):
            continue
        if hinted or (supports(lf) and not (B.is_null_negation(lf) and multikey_components(base, p))):
            out.append(p)
    return out


def expansions(base: IndexAccessMethod, leaves: list[Leaf], hinted: bool = False) -> list[ExpandedWildcardIndex]:
    """expandWildcardIndexEntry: one entry per covered queried path; for a compound index whose first
    regular field is queried, also the generic entry."""
    out = [ExpandedWildcardIndex(base, p) for p in covered_paths(base, leaves, hinted)]
    if base.wildcard_pos > 0:
        first = base.paths[0]
        if any(lf.path == first for lf in leaves):
            out.append(ExpandedWildcardIndex(base, PATH))
    return out


def overlaps_objects(oil: list[B.Interval]) -> bool:
    """boundsOverlapObjectTypeBracket: whether the bounds reach non-empty documents, ({}, [])."""
    return any(iv.lo < _ARR_LO and iv.hi > _OBJ_LO for iv in oil)


def finalize(exp: ExpandedWildcardIndex, bounds: list, exact: list[Leaf]) -> list[Leaf]:
    """finalizeWildcardIndexScanConfiguration: the `$_path` bounds (and the value bounds widened when they
    reach objects); returns the leaves still answered exactly."""
    w = exp.path_pos
    if exp.query_path == PATH:
        bounds[w] = [B.point(MinKey()), B.Interval("", {}, True, False)]
        bounds[w + 1] = B.ALL()
        exp.should_dedup = True
        return [lf for lf in exact if lf.path in exp.paths[:w]]
    value = bounds[w + 1]
    path = exp.query_path
    subpaths = value is None or overlaps_objects(value)
    if subpaths:
        bounds[w + 1] = B.ALL()
        exact = [lf for lf in exact if lf.path != path]
        exp.should_dedup = True
    oil = [B.point(path)]
    if subpaths:
        oil.append(B.Interval(path + ".", path + "/", True, False))
    bounds[w] = oil
    return exact
