"""The aggregation stages implemented outside stages.py (the server's REGISTER_DOCUMENT_SOURCE).

Each stage module in `shardsim.query.document_sources` registers its parser here:
`parse(spec, pctx) -> run`, where `run(stream) -> stream` maps the iterable of input
documents to the stage's output.  Parsing happens when the pipeline compiles, before
any document is read (a bad spec fails even on an empty collection, as on the server);
`run` may be called many times (a sub-pipeline runs once per input document).

Each registration also states the stage's constraints (the server's StageConstraints)
that mongosim checks: whether it may stand inside a `$facet` (40600), a `$lookup`
sub-pipeline (51047) or a `$unionWith` sub-pipeline (31441).

`stages.py` reads this registry; the stage modules import `stages.py` (to compile
their sub-pipelines) and register here, so neither imports the other in a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

__all__ = ["StageSpec", "STAGES", "register", "NOT_IN_FACET", "NOT_IN_LOOKUP", "NOT_IN_UNION"]

Run = Callable[[Iterable[dict]], Iterable[dict]]


@dataclass(frozen=True)
class StageSpec:
    name: str
    parse: Callable[[Any, Any], Run]
    in_facet: bool = True
    in_lookup: bool = True
    in_union: bool = True


STAGES: dict[str, StageSpec] = {}

# stages implemented elsewhere (stages.py, the command's own code) that a sub-pipeline refuses
NOT_IN_FACET = frozenset({"$collStats", "$currentOp", "$facet", "$indexStats", "$out", "$merge", "$planCacheStats",
                          "$changeStream", "$listSessions", "$listLocalSessions", "$geoNear", "$documents",
                          "$search", "$searchMeta", "$vectorSearch", "$changeStreamSplitLargeEvent"})
NOT_IN_LOOKUP = frozenset({"$out", "$merge", "$changeStream", "$changeStreamSplitLargeEvent"})
NOT_IN_UNION = frozenset({"$out", "$merge", "$changeStream", "$changeStreamSplitLargeEvent"})


def register(name: str, *, in_facet: bool = True, in_lookup: bool = True, in_union: bool = True):
    """Decorator: register `parse(spec, pctx) -> run` as the stage `name`."""

    def deco(parse):
        STAGES[name] = StageSpec(name, parse, in_facet, in_lookup, in_union)
        return parse

    return deco
