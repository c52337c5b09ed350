"""The plan executor: a tree of stages that produces a query's documents and counts its work.

Each stage is the server's classic PlanStage of the same name, pulled from the
root: COLLSCAN reads the collection in natural order; IXSCAN walks the key
ranges of its bounds in index order (or backward), checks fields beyond the
ranges key by key, and drops RecordIds already seen (a multikey document has
several keys); FETCH turns a RecordId into its document and applies the
filter (always the whole filter: bounds are a superset); SORT, SKIP, LIMIT,
PROJECTION_*, RETURN_KEY, COUNT, COUNT_SCAN, SHARDING_FILTER and the 8.0
express stage EXPRESS_IXSCAN do what their names say.

Reads see documents through the command's *view* (a transaction or a snapshot,
`shardsim.snapshots`): indexes hold committed data, so an index plan reads the
documents the view sees through them, then the ones the view changed (the
planner does not let such a plan provide the sort order).

Every stage counts what explain reports: `nReturned`, `works`, `advanced`,
`needTime`, `isEOF`, and its own figures (`keysExamined`, `docsExamined`,
`dupsDropped`...), and serializes itself in the server's explain shape
(src/mongo/db/query/plan_explainer_impl.cpp, explain.cpp) — the planner's
fields, then with `executionStats` the counters.
"""

from __future__ import annotations

from typing import Any, Iterator

from bson import Int64

from mongosim.oplog import bsonutil
from mongosim.shardsim.canonical_query import parsed_query
from mongosim.shardsim.index_access_method import Desc, IndexAccessMethod
from mongosim.shardsim.query import index_bounds as B
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.index_keys import UNDEFINED
from mongosim.shardsim.query.values import hashable

SORT_MEM_LIMIT = 104857600  # internalQueryMaxBlockingSortMemoryUsageBytes


class ExecContext:
    """What a plan reads: the collection, through a view (None: committed data)."""

    __slots__ = ("coll", "view", "changed", "explain", "trial")

    def __init__(self, coll, view=None, explain: bool = False, trial: "Trial | None" = None) -> None:
        self.coll = coll
        self.view = view
        self.explain = explain
        self.trial = trial  # a multi-planner trial: its works are counted and bounded
        changed = getattr(view, "changed_ids", None) if view is not None else None
        self.changed = changed(coll) if (changed is not None and coll is not None) else ()

    def fetch(self, idk) -> dict | None:
        if self.view is None:
            return self.coll.docs.get(idk)
        return self.view.fetch(self.coll, idk)

    def scan(self) -> list[dict]:
        if self.view is None:
            return list(self.coll.docs.values())
        return list(self.view.scan(self.coll))


def view_changes(coll, view) -> bool:
    """Whether `view` sees documents of `coll` other than the committed ones."""
    if view is None or coll is None:
        return False
    changed = getattr(view, "changed_ids", None)
    return bool(changed(coll)) if changed is not None else False


class TrialOver(Exception):
    """A plan used up its trial period's works (`Trial`)."""


class Trial:
    """The works a candidate plan may do during the multi-planner's trial period, and those it did.

    A work is a unit of a plan's progress, as the server's `PlanStage::work`: one index key examined,
    or one document a blocking SORT returns.  The stages that do them pass them through `metered`,
    which counts each and raises `TrialOver` past the budget.
    """

    __slots__ = ("budget", "spent")

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.spent = 0

    def metered(self, items: Iterator[Any]) -> Iterator[Any]:
        for item in items:
            if self.spent >= self.budget:
                raise TrialOver
            self.spent += 1
            yield item


class PlanStage:
    """A stage: `rows(ctx)` yields its output; `explain(stats)` describes it (and its counters)."""

    stage = "?"
    passes_eof = False  # a stage whose isEOF is its child's (FETCH, SKIP, a projection...)

    def __init__(self, child: "PlanStage | None" = None) -> None:
        self.child = child
        self.advanced = 0
        self.need_time = 0
        self.eof = False

    def rows(self, ctx: ExecContext) -> Iterator[Any]:
        raise NotImplementedError

    def eof_with_last(self) -> bool:
        """Whether, having returned its last row, the stage reports isEOF before it is worked again.
        A scan, a SORT, an OR... learn they are at the end only by trying to go past it (False); a
        LIMIT that returned its n, an express lookup, an EOF stage are at EOF at once."""
        return self.passes_eof and self.child is not None and self.child.eof_with_last()

    def run(self, ctx: ExecContext) -> Iterator[Any]:
        """`rows` with the counters kept (advanced per row, EOF at the end)."""
        for row in self.rows(ctx):
            self.advanced += 1
            yield row
        self.eof = True

    # -- explain -----------------------------------------------------------------------------
    def _before_stats(self, out: dict) -> None:
        pass

    def _fields(self, out: dict, stats: bool) -> None:
        pass

    def explain(self, stats: bool = False) -> dict:
        out: dict[str, Any] = {"stage": self.stage}
        self._before_stats(out)
        if stats:
            out["nReturned"] = self.advanced
            out["executionTimeMillisEstimate"] = 0
            out["works"] = self.advanced + self.need_time + (1 if self.eof else 0)
            out["advanced"] = self.advanced
            out["needTime"] = self.need_time
            out["needYield"] = 0
            out["saveState"] = 0
            out["restoreState"] = 0
            out["isEOF"] = 1 if self.eof else 0
        self._fields(out, stats)
        if self.child is not None:
            out["inputStage"] = self.child.explain(stats)
        return out

    def walk(self) -> Iterator["PlanStage"]:
        yield self
        if self.child is not None:
            yield from self.child.walk()


def winning_plan(root: PlanStage, stats: bool = False) -> dict:
    """The root's explain with `isCached: false` first, as the server writes winningPlan."""
    out = root.explain(stats)
    return {"isCached": False, **out}


def summary(root: PlanStage) -> dict:
    keys = docs = 0
    for st in root.walk():
        keys += getattr(st, "keys_examined", 0)
        docs += getattr(st, "docs_examined", 0)
    return {"nReturned": root.advanced, "totalKeysExamined": keys, "totalDocsExamined": docs}


# -- access stages ------------------------------------------------------------------------------
class EOFStage(PlanStage):
    stage = "EOF"

    def eof_with_last(self) -> bool:
        return True

    def rows(self, ctx):
        return iter(())


class CollScan(PlanStage):
    stage = "COLLSCAN"

    def __init__(self, matcher, direction: int = 1) -> None:
        super().__init__()
        self.matcher = matcher
        self.direction = direction
        self.docs_examined = 0

    def _before_stats(self, out: dict) -> None:
        if self.matcher.filter:
            out["filter"] = parsed_query(self.matcher.filter)

    def _fields(self, out: dict, stats: bool) -> None:
        out["direction"] = "forward" if self.direction > 0 else "backward"
        if stats:
            out["docsExamined"] = self.docs_examined

    def rows(self, ctx):
        docs = ctx.scan()
        if self.direction < 0:
            docs.reverse()
        self.docs_examined = len(docs)
        if not self.matcher.filter:
            return iter(docs)
        m = self.matcher.matches
        out = [d for d in docs if m(d)]
        self.need_time += len(docs) - len(out)
        return iter(out)


def index_fields(ix: IndexAccessMethod, out: dict, multikey_paths: bool = True) -> None:
    """An index scan's description of its index (text indexes show no multiKeyPaths)."""
    out["keyPattern"] = dict(ix.key_pattern)
    out["indexName"] = ix.name
    if ix.collator is not None:
        out["collation"] = dict(ix.collator.spec)  # (only a non-simple one is shown)
    out["isMultiKey"] = ix.is_multikey
    if multikey_paths:
        out["multiKeyPaths"] = ix.multikey_path_names()
    out["isUnique"] = ix.unique
    out["isSparse"] = ix.sparse
    out["isPartial"] = ix.partial is not None
    out["indexVersion"] = int(ix.spec.get("v", 2))


def bounds_doc(ix: IndexAccessMethod, bounds: list[list[B.Interval]], direction: int) -> dict:
    """explain's `indexBounds`: per field, the intervals as strings in scan order."""
    out: dict = {}
    for i, (path, oil) in enumerate(zip(ix.paths, bounds)):
        reverse = ix.descending[i] != (direction < 0)
        out.setdefault(path, B.oil_strings(oil, reverse))  # (a generic wildcard expansion names `$_path` twice)
    return out


class IndexScan(PlanStage):
    stage = "IXSCAN"

    def __init__(self, ix: IndexAccessMethod, bounds, direction: int, ranges, pinned: int, *,
                 min_max=None, min_doc=None, max_doc=None, key_filter: dict | None = None, key_matcher=None) -> None:
        super().__init__()
        self.key_filter = key_filter  # (explain's `filter`: what the scan checks on each key in bounds)
        self.key_matcher = key_matcher
        self.ix = ix
        self.bounds = bounds
        self.direction = direction
        self.ranges = ranges
        self.pinned = pinned
        self.min_max = min_max
        self.min_doc, self.max_doc = min_doc, max_doc
        self.keys_examined = 0
        self.seeks = 0
        self.dups_tested = 0
        self.dups_dropped = 0

    def _before_stats(self, out: dict) -> None:
        if self.key_filter:
            out["filter"] = self.key_filter

    def _fields(self, out: dict, stats: bool) -> None:
        index_fields(self.ix, out)
        out["direction"] = "forward" if self.direction > 0 else "backward"
        if self.min_max is not None:
            out["indexBounds"] = {}
            if self.min_doc:
                out["startKey"] = dict(self.min_doc)
            if self.max_doc:
                out["endKey"] = dict(self.max_doc)
        else:
            out["indexBounds"] = bounds_doc(self.ix, self.bounds, self.direction)
        if stats:
            out["keysExamined"] = self.keys_examined
            out["seeks"] = self.seeks
            out["dupsTested"] = self.dups_tested
            out["dupsDropped"] = self.dups_dropped

    def _checks(self) -> list[tuple[int, list[tuple]]]:
        """Fields beyond the scanned ranges whose bounds restrict keys (checked key by key)."""
        out = []
        for j in range(self.pinned, len(self.ix.paths)):
            oil = self.bounds[j]
            if B.is_all(oil):
                continue
            out.append((j, [(iv.lo, iv.start_incl, iv.hi, iv.end_incl) for iv in oil]))
        return out

    def rows(self, ctx) -> Iterator[Any]:
        """The id keys of the entries in bounds, in index order, each RecordId once."""
        ix = self.ix
        n = len(ix.paths)
        reverse = self.direction < 0
        if self.min_max is not None:
            lo, hi = self.min_max
            ranges = [(lo if lo is not None else (), True, hi if hi is not None else (_TOP(),), False)]
            checks: list = []
        else:
            ranges = self.ranges
            checks = self._checks()
        if reverse:
            ranges = list(reversed(ranges))
        multikey = ix.is_multikey or ix.should_dedup
        seen: set = set()
        trial = ctx.trial
        key_matches = self.key_matcher.matches if self.key_matcher is not None else None
        for lo, lo_incl, hi, hi_incl in ranges:
            self.seeks += 1
            entries = ix.scan(lo, lo_incl, hi, hi_incl, reverse)
            for entry in (entries if trial is None else trial.metered(entries)):
                self.keys_examined += 1
                if checks and not in_checks(entry, checks):
                    self.need_time += 1
                    continue
                if multikey:
                    self.dups_tested += 1
                    rid = entry[n]
                    if rid in seen:
                        self.dups_dropped += 1
                        self.need_time += 1
                        continue
                    seen.add(rid)
                if key_matches is not None:
                    # the key decides (a field that is not multikey holds one value: the key's), read here
                    # from the document, which holds the same value
                    doc = ctx.fetch(entry[n + 1])
                    if doc is None or not key_matches(doc):
                        self.need_time += 1
                        continue
                yield entry[n + 1]


def _TOP():
    from mongosim.shardsim.index_access_method import TOP

    return TOP


def in_checks(entry: tuple, checks) -> bool:
    """Whether the entry's key is within the bounds of each checked field (`IndexScan._checks`)."""
    for j, ivs in checks:
        k = entry[j]
        if type(k) is Desc:
            k = k.k
        for lo, lo_incl, hi, hi_incl in ivs:
            if (lo < k or (lo == k and lo_incl)) and (k < hi or (k == hi and hi_incl)):
                break
        else:
            return False
    return True


class Fetch(PlanStage):
    stage = "FETCH"
    passes_eof = True
    already_has_obj = 0  # (documents that came fetched: the FETCH above a subplanned OR counts them)

    def __init__(self, child: IndexScan, matcher, shown_filter: dict | None) -> None:
        super().__init__(child)
        self.matcher = matcher
        self.shown_filter = shown_filter
        self.docs_examined = 0

    def _before_stats(self, out: dict) -> None:
        if self.shown_filter:
            out["filter"] = self.shown_filter

    def _fields(self, out: dict, stats: bool) -> None:
        if stats:
            out["docsExamined"] = self.docs_examined
            out["alreadyHasObj"] = self.already_has_obj

    def rows(self, ctx):
        m = self.matcher.matches if self.matcher.filter else None
        changed = ctx.changed
        fetch = ctx.fetch
        if not changed:
            for idk in self.child.run(ctx):
                doc = fetch(idk)
                self.docs_examined += 1
                if doc is None or (m is not None and not m(doc)):
                    self.need_time += 1
                    continue
                yield doc
            return
        # the view changed documents the committed index does not know about: read them too, then
        # put everything in the order the index would give as the view sees it
        out = []
        seen = set()
        for idk in [*self.child.run(ctx), *changed]:
            if idk in seen:
                continue
            seen.add(idk)
            doc = fetch(idk)
            if doc is None:
                continue
            self.docs_examined += 1
            if m is not None and not m(doc):
                self.need_time += 1
                continue
            out.append(doc)
        scan = self.child if isinstance(self.child, IndexScan) else None
        if scan is not None:
            out.sort(key=lambda d: _order_key(scan, d, ctx), reverse=scan.direction < 0)
        yield from out


class ExpressIxscan(PlanStage):
    """8.0's express path: a point lookup by `_id` (ix None) or one seek of a single-field index."""

    stage = "EXPRESS_IXSCAN"

    def __init__(self, ix: IndexAccessMethod | None, value, projection: dict | None, limit: int | None = None,
                 variables: dict | None = None):
        super().__init__()
        self.ix = ix
        self.value = value
        self.projection = projection
        self.limit = limit
        self.variables = variables
        self.keys_examined = 0
        self.docs_examined = 0

    def eof_with_last(self) -> bool:
        return True  # (PlanExecutorExpress: its one lookup done, the plan is exhausted)

    def explain(self, stats: bool = False) -> dict:
        kp = self.ix.key_pattern if self.ix is not None else {"_id": 1}
        out: dict[str, Any] = {"stage": self.stage, "keyPattern": bson_str(kp),
                               "indexName": self.ix.name if self.ix is not None else "_id_"}
        if stats:
            out["nReturned"] = self.advanced
            out["executionTimeMillisEstimate"] = 0
            out["keysExamined"] = self.keys_examined
            out["docsExamined"] = self.docs_examined
        return out

    def rows(self, ctx):
        from mongosim.shardsim.query.projection import compile_projection

        project = compile_projection(self.projection, variables=self.variables) if self.projection else None
        if self.ix is None:
            idk = hashable(self.value)
            self.keys_examined = 1
            doc = ctx.fetch(idk)
            if doc is not None:
                self.docs_examined = 1
                yield project(doc) if project else doc
            return
        ix = self.ix
        n = len(ix.paths)
        prefix = (ix.encode((self.value,) + (None,) * (n - 1))[0],)
        for entry in ix.scan(prefix, True, prefix, True):
            self.keys_examined += 1
            doc = ctx.fetch(entry[n + 1])
            self.docs_examined += 1
            if doc is not None:
                yield project(doc) if project else doc
                if self.limit == 1 or (ix.unique and n == 1):
                    return


class CountScan(PlanStage):
    """COUNT_SCAN: the number of keys in one range of an index (no document is read)."""

    stage = "COUNT_SCAN"

    def __init__(self, ix: IndexAccessMethod, bounds, ranges, pinned: int) -> None:
        super().__init__()
        self.ix = ix
        self.bounds = bounds
        self.ranges = ranges
        self.pinned = pinned
        self.keys_examined = 0
        self.n = 0

    def _fields(self, out: dict, stats: bool) -> None:
        index_fields(self.ix, out)
        lo, lo_incl, hi, hi_incl = self._bound_docs()
        out["indexBounds"] = {"startKey": lo, "startKeyInclusive": lo_incl, "endKey": hi, "endKeyInclusive": hi_incl}
        if stats:
            out["keysExamined"] = self.keys_examined

    def _bound_docs(self):
        lo: dict = {}
        hi: dict = {}
        lo_incl = hi_incl = True
        for i, path in enumerate(self.ix.paths):
            oil = self.bounds[i]
            iv = oil[0] if oil else B.Interval(B.MIN_KEY, B.MAX_KEY)
            a, b, ai, bi = iv.start, iv.end, iv.start_incl, iv.end_incl
            if self.ix.descending[i]:
                a, b, ai, bi = b, a, bi, ai
            lo[path] = None if a is UNDEFINED else a
            hi[path] = None if b is UNDEFINED else b
            if not iv.is_point:
                lo_incl, hi_incl = lo_incl and ai, hi_incl and bi
        return lo, lo_incl, hi, hi_incl

    def count(self) -> int:
        lo, li, hi, hi_i = self.ranges[0]
        self.n = self.ix.count(lo, li, hi, hi_i)
        self.keys_examined = self.n + 1
        self.advanced = self.n
        self.eof = True
        return self.n

    def rows(self, ctx):
        for _ in range(self.count()):
            yield None


# -- stages above the access -------------------------------------------------------------------
class ShardingFilter(PlanStage):
    stage = "SHARDING_FILTER"
    passes_eof = True

    def _fields(self, out: dict, stats: bool) -> None:
        if stats:
            out["chunkSkips"] = 0

    def rows(self, ctx):
        return self.child.run(ctx)


class Sort(PlanStage):
    stage = "SORT"

    def __init__(self, child: PlanStage, pattern: dict, limit: int | None, collator=None) -> None:
        super().__init__(child)
        self.pattern = pattern
        self.limit = limit
        self.collator = collator
        self.data_size = 0

    def _fields(self, out: dict, stats: bool) -> None:
        out["sortPattern"] = dict(self.pattern)
        out["memLimit"] = SORT_MEM_LIMIT
        if self.limit:
            out["limitAmount"] = self.limit
        out["type"] = "simple"
        if stats:
            out["totalDataSizeSorted"] = self.data_size
            out["usedDisk"] = False
            out["spills"] = 0
            out["spilledDataStorageSize"] = 0

    def rows(self, ctx):
        from mongosim.shardsim.query.sorting import sort_key_fn

        docs = list(self.child.run(ctx))
        self.need_time += len(docs)
        if ctx.explain:
            self.data_size = sum(len(bsonutil.encode(d)) for d in docs)
        docs.sort(key=sort_key_fn(self.pattern, self.collator))
        if self.limit:
            docs = docs[: self.limit]
        return iter(docs) if ctx.trial is None else ctx.trial.metered(iter(docs))


class SortKeyGenerator(PlanStage):
    """Attaches each document's sort key as metadata (`$sortKey` for mongos's merge); not shown by explain."""

    stage = "SORT_KEY_GENERATOR"
    passes_eof = True

    def __init__(self, child: PlanStage, pattern: dict, collator=None) -> None:
        super().__init__(child)
        self.pattern = pattern
        self.collator = collator

    def explain(self, stats: bool = False) -> dict:
        return self.child.explain(stats)

    def rows(self, ctx):
        from mongosim.shardsim.query.document_metadata import SORT_KEY, with_meta
        from mongosim.shardsim.query.sorting import sort_key_values

        for doc in self.child.run(ctx):
            yield with_meta(doc, **{SORT_KEY: sort_key_values(doc, self.pattern, self.collator)})


class Skip(PlanStage):
    stage = "SKIP"
    passes_eof = True

    def __init__(self, child: PlanStage, n: int) -> None:
        super().__init__(child)
        self.n = n

    def _fields(self, out: dict, stats: bool) -> None:
        out["skipAmount"] = self.n

    def rows(self, ctx):
        left = self.n
        for row in self.child.run(ctx):
            if left:
                left -= 1
                self.need_time += 1
                continue
            yield row


class Limit(PlanStage):
    stage = "LIMIT"

    def __init__(self, child: PlanStage, n: int) -> None:
        super().__init__(child)
        self.n = n

    def eof_with_last(self) -> bool:
        return self.advanced >= self.n or self.child.eof_with_last()  # (LimitStage: nothing left to return)

    def _fields(self, out: dict, stats: bool) -> None:
        out["limitAmount"] = self.n

    def rows(self, ctx):
        if self.n <= 0:
            return
        left = self.n
        for row in self.child.run(ctx):
            yield row
            left -= 1
            if left == 0:
                return


def projection_stage_name(spec: dict) -> str:
    simple = all(not isinstance(v, (dict, str, list)) and "$" not in k and "." not in k for k, v in spec.items())
    return "PROJECTION_SIMPLE" if simple else "PROJECTION_DEFAULT"


class CoveredFetch(Fetch):
    """The documents of a covered plan's index scan (`query_planner._covers`): the server builds the
    projection from the index keys and reads no document; mongosim reads them to build it (the values are
    the documents', key for key), and shows no FETCH and no documents examined."""

    stage = "FETCH_COVERED"  # (never shown: not a FETCH for the multi-planner's no-FETCH bonus)

    @property
    def docs_examined(self) -> int:
        return 0

    @docs_examined.setter
    def docs_examined(self, _n: int) -> None:
        pass

    def explain(self, stats: bool = False) -> dict:
        return self.child.explain(stats)


class Projection(PlanStage):
    passes_eof = True

    def __init__(self, child: PlanStage, spec: dict | None, matcher=None, show_record_id: bool = False,
                 variables: dict | None = None, covered: bool = False) -> None:
        super().__init__(child)
        self.spec = spec
        self.matcher = matcher
        self.show_record_id = show_record_id
        self.variables = variables
        self.stage = "PROJECTION_COVERED" if covered else projection_stage_name(spec) if spec else "PROJECTION_SIMPLE"

    def explain(self, stats: bool = False) -> dict:
        if not self.spec:  # (only tags $recordId: no stage in the server's plan)
            return self.child.explain(stats)
        return super().explain(stats)

    def _fields(self, out: dict, stats: bool) -> None:
        out["transformBy"] = dict(self.spec)

    def rows(self, ctx):
        from mongosim.shardsim.query.projection import compile_projection

        project = compile_projection(self.spec, variables=self.variables) if self.spec else None
        positional = bool(self.spec) and any(k.endswith(".$") or k == "$" for k in self.spec)
        rids = ctx.coll.ensure_rids() if (self.show_record_id and ctx.coll is not None) else None
        for doc in self.child.run(ctx):
            if project is None:
                out = dict(doc)
            elif positional and self.matcher is not None:
                out = project(doc, self.matcher.match_position(doc)[1])
            else:
                out = project(doc)
            if rids is not None:
                rid = rids.get(hashable(doc["_id"]))
                if rid is not None:
                    out["$recordId"] = Int64(rid)
            yield out


class ReturnKey(PlanStage):
    """returnKey: each result is the index key that found it ({} for a collection scan)."""

    stage = "RETURN_KEY"
    passes_eof = True

    def __init__(self, child: PlanStage, show_record_id: bool = False) -> None:
        super().__init__(child)
        self.show_record_id = show_record_id
        self.scan = next((s for s in child.walk() if isinstance(s, IndexScan)), None)

    def rows(self, ctx):
        scan = self.scan
        rids = ctx.coll.ensure_rids() if (self.show_record_id and ctx.coll is not None) else None
        for doc in self.child.run(ctx):
            out: dict = {}
            if scan is not None:
                key = _key_in_bounds(scan, doc)
                for path, v in zip(scan.ix.paths, key):
                    out[path] = None if v is UNDEFINED else v
            if rids is not None:
                rid = rids.get(hashable(doc["_id"]))
                if rid is not None:
                    out["$recordId"] = Int64(rid)
            yield out


def _order_key(scan: IndexScan, doc: dict, ctx: ExecContext) -> tuple:
    """Where the index scan would meet `doc`: its key in bounds, then its RecordId."""
    rids = ctx.coll.rids or {}
    return scan.ix.encode(_key_in_bounds(scan, doc)) + (rids.get(hashable(doc["_id"]), 1 << 62),)


def _key_in_bounds(scan: IndexScan, doc: dict) -> tuple:
    keys = scan.ix.keys(doc)
    checks = [(j, [(iv.lo, iv.start_incl, iv.hi, iv.end_incl) for iv in oil]) for j, oil in enumerate(scan.bounds)]
    ordered = sorted(keys, key=scan.ix.encode, reverse=scan.direction < 0)
    for key in ordered:
        if in_checks(scan.ix.encode(key), checks):
            return key
    return ordered[0] if ordered else ()


class Count(PlanStage):
    """COUNT: the number of results of its input (after `skip`, up to `limit`)."""

    stage = "COUNT"

    def __init__(self, child: PlanStage, cq) -> None:
        super().__init__(child)
        self.skip = cq.skip or 0
        self.limit = cq.limit
        self.n_counted = 0
        self.n_skipped = 0

    def _fields(self, out: dict, stats: bool) -> None:
        if stats:
            out["nCounted"] = self.n_counted
            out["nSkipped"] = self.n_skipped

    def count(self, ctx) -> int:
        child = self.child
        if isinstance(child, CountScan) and not ctx.changed:
            n = child.count()
        else:
            n = sum(1 for _ in child.run(ctx))
        self.n_skipped = min(n, self.skip)
        n = max(n - self.skip, 0)
        if self.limit:
            n = min(n, abs(self.limit))
        self.n_counted = n
        self.eof = True
        self.need_time = n + self.n_skipped
        return n

    def rows(self, ctx):
        return iter(())
