"""The aggregation stages implemented outside stages.py (the server's REGISTER_DOCUMENT_SOURCE).

Each stage module in `shardsim.query.document_sources` registers its parser here:
`parse(spec, pctx) -> run`, where `run(stream) -> stream` maps the iterable of input
documents to the stage's output.  Parsing happens when the pipeline compiles, before
any document is read (a bad spec fails even on an empty collection, as on the server);
`run` may be called many times (a sub-pipeline runs once per input document).

Each registration also states the stage's constraints (the server's StageConstraints)
that mongosim checks: whether it may stand inside a `$facet` (40600), a `$lookup`
sub-pipeline (51047) or a `$unionWith` sub-pipeline (31441).  A stage the server desugars into
others (`$setWindowFields` -> `$sort` + `$_internalSetWindowFields`, `$densify`, `$fill`) registers
`desugar(spec) -> [stages]`: explain shows those stages (`desugared`).

`stages.py` reads this registry; the stage modules import `stages.py` (to compile
their sub-pipelines) and register here, so neither imports the other in a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

__all__ = ["StageSpec", "STAGES", "register", "desugared", "NOT_IN_FACET", "NOT_IN_LOOKUP", "NOT_IN_UNION"]

Run = Callable[[Iterable[dict]], Iterable[dict]]


@dataclass(frozen=True)
class StageSpec:
    name: str
    parse: Callable[[Any, Any], Run]
    in_facet: bool = True
    in_lookup: bool = True
    in_union: bool = True
    desugar: Callable[[Any], list] | None = None


STAGES: dict[str, StageSpec] = {}

# stages implemented elsewhere (stages.py, the command's own code) that a sub-pipeline refuses
NOT_IN_FACET = frozenset({"$collStats", "$currentOp", "$facet", "$indexStats", "$out", "$merge", "$planCacheStats",
                          "$changeStream", "$listSessions", "$listLocalSessions", "$geoNear", "$documents",
                          "$search", "$searchMeta", "$vectorSearch", "$changeStreamSplitLargeEvent"})
NOT_IN_LOOKUP = frozenset({"$out", "$merge", "$changeStream", "$changeStreamSplitLargeEvent"})
NOT_IN_UNION = frozenset({"$out", "$merge", "$changeStream", "$changeStreamSplitLargeEvent"})


def register(name: str, *, in_facet: bool = True, in_lookup: bool = True, in_union: bool = True,
             desugar: Callable[[Any], list] | None = None):
    """Decorator: register `parse(spec, pctx) -> run` as the stage `name`."""

    def deco(parse):
        STAGES[name] = StageSpec(name, parse, in_facet, in_lookup, in_union, desugar)
        return parse

    return deco


def desugared(stages: list) -> list:
    """`stages` with each stage the server desugars replaced by the stages it becomes (explain's view)."""
    out: list = []
    for st in stages:
        name = next(iter(st)) if isinstance(st, dict) and len(st) == 1 else None
        reg = STAGES.get(name) if name is not None else None
        if reg is not None and reg.desugar is not None:
            out.extend(reg.desugar(st[name]))
        else:
            out.append(st)
    return out
