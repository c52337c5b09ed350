"""The plan of a `$text` query (the server's TextStage::buildTextTree, TextOrStage, TextMatchStage).

    TEXT_MATCH                      TEXT_MATCH
      TEXT_OR (filter)       or       FETCH (filter)
        IXSCAN term 1                   OR
        IXSCAN term 2                     IXSCAN term 1 ...

For each search term (`terms_for_bounds`) an index scan reads the text index's keys of
that term - under the prefix fields' equality values, for a compound index - backward,
as the server does.  When the query wants the text score (a `{$meta: "textScore"}` in
its projection or sort, or any aggregation), TEXT_OR fetches each document once, sums
its scores over the terms and applies the rest of the filter; otherwise a plain OR and
FETCH do, without scores.  TEXT_MATCH then drops what the FTSMatcher rejects (negated
terms, phrases, case or diacritic sensitivity) and attaches the score as metadata
(`textScore`).  The documents come in the order the scans first met them (the server's
hash order is arbitrary): sort by the score to rank them.
"""

from __future__ import annotations

from typing import Any

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.fts.fts_matcher import FTSMatcher
from mongosim.shardsim.fts.fts_query import FTSQuery
from mongosim.shardsim.fts.fts_spec import FTSSpec
from mongosim.shardsim.fts.text_match_expression import resolve, text_index
from mongosim.shardsim.query.extensions_callback import TextParams
from mongosim.shardsim.plan_executor import ExecContext, Fetch, PlanStage, index_fields
from mongosim.shardsim.query.document_metadata import TEXT_SCORE, with_meta
from mongosim.shardsim.query.values import MISSING
from mongosim.shardsim.subplan import OrStage


class TextIndexScan(PlanStage):
    """IXSCAN of one term: (idk, score) of each key `prefix + (term, ...)`."""

    stage = "IXSCAN"

    def __init__(self, ix, prefix: tuple, term: str) -> None:
        super().__init__()
        self.ix = ix
        self.prefix = prefix
        self.term = term
        self.keys_examined = 0
        self.seeks = 0
        self.dups_tested = 0
        self.dups_dropped = 0

    def _fields(self, out: dict, stats: bool) -> None:
        index_fields(self.ix, out, multikey_paths=False)
        out["direction"] = "backward"
        out["indexBounds"] = {}
        if stats:
            out["keysExamined"] = self.keys_examined
            out["seeks"] = self.seeks
            out["dupsTested"] = self.dups_tested
            out["dupsDropped"] = self.dups_dropped

    def rows(self, ctx: ExecContext):
        ix = self.ix
        n = len(ix.paths)
        pos = len(self.prefix)  # the term's place in the key; the score follows it
        key = ix.encode(self.prefix + (self.term,)) if self.prefix else (ix.key_hash(self.term),)
        self.seeks = 1
        for entry in ix.scan(key, True, key, True, True):
            self.keys_examined += 1
            self.dups_tested += 1
            yield entry[n + 1], entry[pos + 1][-1]


class Or(OrStage):
    """OR over the term scans: each document once (the scans' rows are `(record, score)`)."""

    def _record(self, row):
        return row[0]

    def rows(self, ctx: ExecContext):
        for idk, _child in self.unique_records(ctx):
            yield idk


class TextFetch(Fetch):
    """FETCH over the OR (the filter beyond `$text` applied): the index FETCH's explain, rows that
    carry a (missing) score."""

    def rows(self, ctx: ExecContext):
        m = self.matcher.matches if self.matcher.filter else None
        for idk in _with_changed(self.child.run(ctx), ctx):
            doc = ctx.fetch(idk)
            self.docs_examined += 1
            if doc is None or (m is not None and not m(doc)):
                self.need_time += 1
                continue
            yield doc, None


class TextOr(PlanStage):
    """TEXT_OR: every document holding a term, with the sum of its terms' scores (blocking)."""

    stage = "TEXT_OR"

    def __init__(self, scans: list[TextIndexScan], matcher, shown_filter: dict | None, fts: FTSSpec) -> None:
        super().__init__()
        self.scans = scans
        self.matcher = matcher
        self.shown_filter = shown_filter
        self.fts = fts
        self.docs_examined = 0

    def _before_stats(self, out: dict) -> None:
        if self.shown_filter:
            out["filter"] = self.shown_filter

    def _fields(self, out: dict, stats: bool) -> None:
        if stats:
            out["docsExamined"] = self.docs_examined

    def explain(self, stats: bool = False) -> dict:
        out = super().explain(stats)
        out["inputStages"] = [s.explain(stats) for s in self.scans]
        return out

    def walk(self):
        yield self
        for s in self.scans:
            yield from s.walk()

    def rows(self, ctx: ExecContext):
        scores: dict[Any, float] = {}
        for scan in self.scans:
            for idk, score in scan.run(ctx):
                scores[idk] = scores.get(idk, 0.0) + score
        for idk in ctx.changed:  # documents the view changed: scored from what it sees
            doc = ctx.fetch(idk)
            if doc is None:
                scores.pop(idk, None)
                continue
            mine = self.fts.score_document(doc)
            total = sum(mine.get(t, 0.0) for t in self._terms)
            if total > 0:
                scores[idk] = total
            else:
                scores.pop(idk, None)
        m = self.matcher.matches if self.matcher.filter else None
        for idk, score in scores.items():
            doc = ctx.fetch(idk)
            self.docs_examined += 1
            if doc is None or (m is not None and not m(doc)):
                self.need_time += 1
                continue
            yield doc, score

    @property
    def _terms(self) -> list[str]:
        return [s.term for s in self.scans]


class TextMatch(PlanStage):
    """TEXT_MATCH: the documents the FTSMatcher accepts, with their text score as metadata."""

    stage = "TEXT_MATCH"

    def __init__(self, child: PlanStage, ix, prefix: dict, query: FTSQuery, fts: FTSSpec) -> None:
        super().__init__(child)
        self.ix = ix
        self.prefix = prefix
        self.query = query
        self.fts = fts
        self.ftsm = FTSMatcher(query, fts)
        self.docs_rejected = 0

    def _fields(self, out: dict, stats: bool) -> None:
        out["indexPrefix"] = dict(self.prefix)
        out["indexName"] = self.ix.name
        out["parsedTextQuery"] = self.query.to_bson()
        out["textIndexVersion"] = self.fts.version
        if stats:
            out["docsRejected"] = self.docs_rejected

    def rows(self, ctx: ExecContext):
        found_by_index = not ctx.changed
        for doc, score in self.child.run(ctx):
            if not self.ftsm.matches(doc, found_by_index=found_by_index):
                self.docs_rejected += 1
                self.need_time += 1
                continue
            yield with_meta(doc, **{TEXT_SCORE: score}) if score is not None else doc


def _with_changed(idks, ctx: ExecContext):
    seen = set()
    for idk in idks:
        seen.add(idk)
        yield idk
    for idk in ctx.changed:
        if idk not in seen:
            yield idk


def _equality(flt: dict, path: str) -> Any:
    """The value of an equality predicate on `path` at the top of the filter (or in a top-level $and)."""
    for k, v in flt.items():
        if k == path:
            if isinstance(v, dict) and v and next(iter(v)).startswith("$"):
                return v["$eq"] if list(v) == ["$eq"] else MISSING
            return v
        if k == "$and" and isinstance(v, list):
            for sub in v:
                if isinstance(sub, dict):
                    found = _equality(sub, path)
                    if found is not MISSING:
                        return found
    return MISSING


def build_text_plan(coll, cq, params: TextParams, want_score: bool, shown_filter: dict | None) -> PlanStage:
    """TEXT_MATCH over TEXT_OR (or FETCH + OR) for the query's `$text`, on the collection's text index."""
    spec = text_index(coll, cq.ns)
    fts, query = resolve(params, spec)
    ix = coll.index_access(spec["name"])
    prefix: dict = {}
    for path in fts.extra_before:
        v = _equality(cq.filter, path)
        if v is MISSING or isinstance(v, dict) and v and next(iter(v)).startswith("$"):
            raise MongoError("NoQueryExecutionPlans", "error processing query: planner returned error :: caused by "
                                                      ":: failed to use text index to satisfy $text query (if text "
                                                      "index is compound, are equality predicates given for all "
                                                      "prefix fields?)")
        prefix[path] = v
    scans = [TextIndexScan(ix, tuple(prefix.values()), term) for term in query.terms_for_bounds]
    if want_score:
        child: PlanStage = TextOr(scans, cq.matcher, shown_filter, fts)
    else:
        child = TextFetch(Or(scans), cq.matcher, shown_filter)
    return TextMatch(child, ix, prefix, query, fts)
