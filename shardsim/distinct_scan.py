"""The fast distinct: `distinct` answered by skipping through an index, one key per value (DISTINCT_SCAN).

With an empty query and no sort, the server looks for an index whose key
pattern starts with the distinct field (getDistinctNodeIndex): ascending or
descending (not a hashed, text, geo or wildcard first field), no partial
filter, the query's collation, not multikey when the field is dotted; the one
with the fewest fields wins; a hint restricts the choice to the hinted index.
The DISTINCT_SCAN reads the first key of a value, then seeks past every other
key with that value: one key examined per distinct value, however many
documents share it.  Above it, the distinct's projection `{_id: 0, <field>:
1}` is covered by the index (PROJECTION_COVERED); an index with a collation
needs the documents (FETCH), since its keys are collation keys.

What the index holds is what `distinct` answers: a document missing the field
has a null key in a non-sparse index, so `distinct` then includes null, where a
collection scan skips such a document.  (The server does the same: the answer
depends on the index.)  Each value is taken from the document of the first key
of its group: index order among equal values is RecordId order, so it is the
value a collection scan would keep too.

Source: src/mongo/db/query/get_executor.cpp (getExecutorForSimpleDistinct,
getDistinctNodeIndex), src/mongo/db/exec/distinct_scan.cpp,
parsed_distinct_command.cpp (getDistinctProjection).
"""

from __future__ import annotations

from typing import Any, Iterator

from bson import DBRef

from mongosim.shardsim.index_access_method import Desc, IndexAccessMethod
from mongosim.shardsim.plan_executor import (ExecContext, Fetch, IndexScan, PlanStage, ShardingFilter, bounds_doc,
                                             in_checks, index_fields)
from mongosim.shardsim.query import index_bounds as B
from mongosim.shardsim.query_planner import shard_key_covered, value_field
from mongosim.shardsim.query.index_keys import UNDEFINED
from mongosim.shardsim.query.values import dbref_doc


def field_values(value: Any, parts: list[str]) -> Iterator[Any]:
    """The values `distinct` collects at a dotted path: arrays along the way and at the end are expanded."""
    if not parts:
        if isinstance(value, list):
            yield from value
        else:
            yield value
        return
    head, rest = parts[0], parts[1:]
    if type(value) is DBRef:  # (the embedded document {$ref, $id, ...} it stands for)
        value = dbref_doc(value)
    if isinstance(value, dict):
        if head in value:
            yield from field_values(value[head], rest)
    elif isinstance(value, list):
        if head.isdigit() and int(head) < len(value):
            yield from field_values(value[int(head)], rest)
        for elem in value:
            if isinstance(elem, (dict, DBRef)):
                yield from field_values(elem, parts)


def distinct_index(coll, key: str, collator, hinted: IndexAccessMethod | None = None) -> IndexAccessMethod | None:
    """getDistinctNodeIndex: the index a DISTINCT_SCAN of `key` reads (None: there is none)."""
    parts = key.split(".")
    if any(p.isdigit() for p in parts[1:]):
        return None  # (a positional path: the distinct projects its prefix, which the index does not hold)
    if hinted is not None:
        candidates = [hinted]
    else:
        candidates = [coll.index_access("_id_")] if key == "_id" else []
        candidates += coll.secondary_access()
    best = None
    for ix0 in (c for c in candidates if c is not None):  # (an index is falsy while it holds no entries)
        if (ix0.type not in ("btree", "hashed") or ix0.hashed_pos == 0 or ix0.partial is not None
                or ix0.paths[0] != key or ix0.collator != collator or ix0.hidden or not ix0.usable):
            continue
        if best is not None and len(ix0.paths) >= len(best.paths):
            continue
        ix = coll.index_access(ix0.name)  # (materialized: its multikey paths are known)
        if len(parts) > 1 and ix.multikey_paths[0]:
            continue  # (multikey on a dotted field: the projection could not be covered)
        best = ix
    return best


class DistinctScan(PlanStage):
    """The first in-bounds entry of each value of the field at `field_no` within each scanned range, in
    index order: (that value's key, its document's id key).  After such an entry the scan seeks past
    every key with the same prefix up to that field (DistinctScan's skip); an entry that a later field's
    bounds refuse is stepped over one at a time."""

    stage = "DISTINCT_SCAN"

    def __init__(self, ix: IndexAccessMethod, bounds=None, ranges=None, pinned: int = 0, field_no: int = 0) -> None:
        super().__init__()
        self.ix = ix
        self.bounds = bounds if bounds is not None else [B.ALL() for _ in ix.paths]
        self.ranges = ranges if ranges is not None else [((), True, (), True)]
        self.pinned = pinned
        self.field_no = field_no
        self.keys_examined = 0

    def _fields(self, out: dict, stats: bool) -> None:
        index_fields(self.ix, out)
        out["direction"] = "forward"
        out["indexBounds"] = bounds_doc(self.ix, self.bounds, 1)
        if stats:
            out["keysExamined"] = self.keys_examined

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        ix = self.ix
        n = len(ix.paths)
        upto = self.field_no + 1
        checks = [(j, [(iv.lo, iv.start_incl, iv.hi, iv.end_incl) for iv in self.bounds[j]])
                  for j in range(self.pinned, n) if not B.is_all(self.bounds[j])]
        for lo, lo_incl, hi, hi_incl in self.ranges:
            while True:
                entry = next(ix.scan(lo, lo_incl, hi, hi_incl), None)
                if entry is None:
                    break
                self.keys_examined += 1
                if checks and not in_checks(entry, checks):
                    lo, lo_incl = entry, False  # (the next key)
                    continue
                yield entry[self.field_no], entry[n + 1]
                lo, lo_incl = entry[:upto], False  # past every key with this value


class DistinctProjection(PlanStage):
    """The distinct's projection `{_id: 0, <field>: 1}` (`{_id: 1}` for `_id`): the value of each group,
    read from its first document; None where the document lacks the field (its null key).

    Shown as PROJECTION_COVERED when the index covers it, PROJECTION_SIMPLE over a FETCH for a collated
    index (its keys are collation keys), or as the FETCH itself when a query's plan fetched
    (turnIxscanIntoDistinctIxscan drops the projection above a FETCH)."""

    def __init__(self, child: PlanStage, key: str, stage: str) -> None:
        super().__init__(child)
        self.stage = stage
        self.key = key
        self.parts = key.split(".")
        self.scan = next(s for s in child.walk() if isinstance(s, DistinctScan))
        self.docs_examined = 0

    def _fields(self, out: dict, stats: bool) -> None:
        if self.stage == "FETCH":
            if stats:
                out["docsExamined"] = self.docs_examined
                out["alreadyHasObj"] = 0
            return
        out["transformBy"] = {"_id": 1} if self.key == "_id" else {"_id": 0, self.key: 1}

    def rows(self, ctx: ExecContext) -> Iterator[Any]:
        ix = self.scan.ix
        key_hash = ix.key_hash
        undefined = key_hash(UNDEFINED)
        for k, idk in self.child.run(ctx):
            k = k.k if type(k) is Desc else k
            if k == undefined:
                continue  # (an empty array's key: a collection scan's distinct has no value for it)
            doc = ctx.fetch(idk)
            if doc is None:
                continue
            if self.stage == "FETCH":
                self.docs_examined += 1  # (a covered projection reads the key; mongosim reads the value's type)
            values = list(field_values(doc, self.parts))
            if not values:
                yield None  # (the field is missing: its key is null)
                continue
            yield next((v for v in values if key_hash(v) == k), values[0])


class DistinctFetch(PlanStage):
    """FETCH between a collated index's DISTINCT_SCAN and the projection (explain: docsExamined)."""

    stage = "FETCH"

    def __init__(self, child: PlanStage) -> None:
        super().__init__(child)
        self.docs_examined = 0

    def _fields(self, out: dict, stats: bool) -> None:
        if stats:
            out["docsExamined"] = self.docs_examined
            out["alreadyHasObj"] = 0

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        for row in self.child.run(ctx):
            self.docs_examined += 1
            yield row


def distinct_plan(coll, key: str, collator, hinted: IndexAccessMethod | None = None) -> PlanStage | None:
    """The fast distinct's plan for `key` (None: no index serves it): PROJECTION over DISTINCT_SCAN, with
    a SHARDING_FILTER on a sharded collection, and a FETCH for a collated index or a shard key the index
    does not hold."""
    ix = distinct_index(coll, key, collator, hinted)
    if ix is None:
        return None
    sharded = bool(coll.shard_key)
    node: PlanStage = DistinctScan(ix)
    fetched = ix.collator is not None or (sharded and not shard_key_covered(ix, coll.shard_key))
    if fetched:
        node = DistinctFetch(node)
    if sharded:
        node = ShardingFilter(node)
    return DistinctProjection(node, key, "PROJECTION_SIMPLE" if fetched else "PROJECTION_COVERED")


def from_query_plan(root: PlanStage, key: str, shard_key: dict | None = None) -> PlanStage | None:
    """turnIxscanIntoDistinctIxscan: a query's plan FETCH (no filter: its bounds answer the query) over an
    IXSCAN of an index holding `key` becomes the same scan as a DISTINCT_SCAN on that field (None: it
    cannot).  Not over a field the index is multikey on, a hashed or wildcard key, a min/max scan or a
    backward scan, nor on a sharded collection whose shard key the index does not hold; the projection is
    covered unless the index has a collation (then the FETCH stays)."""
    sharding = isinstance(root, ShardingFilter)
    node = root.child if sharding else root
    if sharding and not shard_key_covered(getattr(node.child, "ix", None), shard_key):
        return None  # (the SHARDING_FILTER would need the documents: the query plan reads them)
    if type(node) is not Fetch or node.shown_filter or type(node.child) is not IndexScan:
        return None
    scan = node.child
    ix = scan.ix
    if (key not in ix.paths or scan.min_max is not None or scan.direction != 1 or scan.key_filter is not None
            or ix.wildcard is not None
            or ix.type not in ("btree", "hashed")):
        return None
    field_no = value_field(ix, key)
    if field_no is None or any(p.isdigit() for p in key.split(".")[1:]):
        return None
    out: PlanStage = DistinctScan(ix, scan.bounds, scan.ranges, scan.pinned, field_no)
    if sharding:
        out = ShardingFilter(out)
    return DistinctProjection(out, key, "FETCH" if ix.collator is not None else "PROJECTION_COVERED")
