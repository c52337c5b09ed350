"""A rooted `$or` planned branch by branch: the SUBPLAN and OR stages (the server's subplan.cpp, or.cpp).

A query whose whole filter is `{$or: [b1, b2, ...]}` (no hint, no min/max) is
*subplanned*: each branch is planned on its own, as if it were the query
(`query_planner`), and must get an index scan — then the plans are joined by an
OR stage, which reads its children one after the other and drops a record it
has already passed on (a document may match several branches), and a FETCH
above reads the documents and applies the whole filter.  A branch whose index
bounds answer it exactly is a bare IXSCAN; one that needs its own filter is a
FETCH of that branch's filter above its IXSCAN (such a document arrives
fetched: the top FETCH counts it in `alreadyHasObj`, and when every branch is
fetched the top FETCH is not part of the plan the server shows).  If any
branch has no index, the whole query is planned as one: a collection scan.
Either way the plan's root is SUBPLAN.

The rows an OR stage passes up are `(record, fetched)` pairs; the top FETCH
turns them into documents (reading, through a transaction's or snapshot's
view, the documents it changed as well, as `plan_executor.Fetch` does).
"""

from __future__ import annotations

from typing import Iterator

from mongosim.shardsim.plan_executor import Fetch, PlanStage


class SubplanStage(PlanStage):
    """SUBPLAN: the root of a subplanned query; its child is the composite plan (or the whole-query one)."""

    stage = "SUBPLAN"
    passes_eof = True

    def rows(self, ctx):
        return self.child.run(ctx)


class OrStage(PlanStage):
    """OR: its children's records in turn, each record once (dupsTested / dupsDropped)."""

    stage = "OR"

    def __init__(self, children: list[PlanStage]) -> None:
        super().__init__()
        self.children = children
        self.dups_tested = 0
        self.dups_dropped = 0

    def _fields(self, out: dict, stats: bool) -> None:
        if stats:
            out["dupsTested"] = self.dups_tested
            out["dupsDropped"] = self.dups_dropped
        out["inputStages"] = [c.explain(stats) for c in self.children]

    def walk(self) -> Iterator[PlanStage]:
        yield self
        for c in self.children:
            yield from c.walk()

    def _record(self, row):
        """The record a child's row stands for."""
        return row

    def unique_records(self, ctx):
        """(record, the child that gave it), each record once."""
        seen: set = set()
        record = self._record
        for child in self.children:
            for row in child.run(ctx):
                idk = record(row)
                self.dups_tested += 1
                if idk in seen:
                    self.dups_dropped += 1
                    self.need_time += 1
                    continue
                seen.add(idk)
                yield idk, child

    def rows(self, ctx):
        for idk, child in self.unique_records(ctx):
            yield idk, isinstance(child, Fetch)


class BranchFetch(Fetch):
    """A branch's FETCH: its documents checked against the branch's own filter, passed on as records."""

    def rows(self, ctx):
        m = self.matcher.matches if self.matcher.filter else None
        fetch = ctx.fetch
        for idk in self.child.run(ctx):
            doc = fetch(idk)
            self.docs_examined += 1
            if doc is None or (m is not None and not m(doc)):
                self.need_time += 1
                continue
            yield idk


class OrFetch(Fetch):
    """The FETCH above an OR: documents of its records, the whole filter applied; `hidden` when every branch
    fetched already (the server's plan then has no FETCH here); `shown_filter`: what it shows it applies
    (an OR under an AND: the AND's other clauses)."""

    def __init__(self, child: OrStage, matcher, hidden: bool, shown_filter: dict | None = None) -> None:
        super().__init__(child, matcher, shown_filter)
        self.hidden = hidden

    def explain(self, stats: bool = False) -> dict:
        if self.hidden:
            return self.child.explain(stats)
        return super().explain(stats)

    def rows(self, ctx):
        m = self.matcher.matches if self.matcher.filter else None
        fetch = ctx.fetch
        changed = ctx.changed
        seen: set = set()
        pairs = list(self.child.run(ctx)) if changed else self.child.run(ctx)
        if changed:  # (documents the view changed, which the committed indexes do not know about)
            pairs = [*pairs, *((idk, False) for idk in changed)]
        for idk, fetched in pairs:
            if changed:
                if idk in seen:
                    continue
                seen.add(idk)
            doc = fetch(idk)
            if fetched:
                self.already_has_obj += 1
            elif not self.hidden:
                self.docs_examined += 1
            if doc is None or (m is not None and not m(doc)):
                self.need_time += 1
                continue
            yield doc
