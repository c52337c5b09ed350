"""$facet: several pipelines over the same input, one document of their results (document_source_facet.cpp).

`{$facet: {name: [stages], ...}}` reads every input document once and feeds each
named pipeline the same documents; the stage outputs one document
`{name: [results], ...}` — even for an empty input, each facet then an empty array
(or what its stages make of nothing).  Parse errors: the spec must be a non-empty
object (40169), each facet an array (40170) of objects (40171), its name a valid
field name; a stage that cannot run inside a facet ($out, $merge, $facet, $collStats,
$indexStats, ...) is 40600.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.fmt import element_str
from mongosim.shardsim.query.pipeline_context import PipelineContext
from mongosim.shardsim.query.stage_registry import register
from mongosim.shardsim.query.stages import compile_pipeline
from mongosim.shardsim.query.values import type_name

__all__ = ["parse_facet"]

_NAME_RULES = "$facet pipeline names must follow the naming rules of field path expressions."


def _check_name(name: str) -> None:
    if name == "":
        raise MongoError(15998, f"{_NAME_RULES} :: caused by :: FieldPath field names may not be empty strings.")
    if name.startswith("$"):
        raise MongoError(16410, f"{_NAME_RULES} :: caused by :: FieldPath field names may not start with '$'. "
                                "Consider using $getField or $setField.")
    if "." in name:
        raise MongoError(16412, f"{_NAME_RULES} :: caused by :: FieldPath field names may not contain '.'. "
                                "Consider using $getField or $setField.")


@register("$facet", in_facet=False)
def parse_facet(spec: Any, pctx: PipelineContext) -> Callable[[Iterable[dict]], Iterator[dict]]:
    if not isinstance(spec, dict) or not spec:
        raise MongoError(40169, f"the $facet specification must be a non-empty object, but found: "
                                f"{element_str('$facet', spec)}")
    facets = []
    for name, pipeline in spec.items():
        _check_name(name)
        if not isinstance(pipeline, list):
            raise MongoError(40170, f"arguments to $facet must be arrays, {name} is type {type_name(pipeline)}")
        for i, st in enumerate(pipeline):
            if not isinstance(st, dict):
                raise MongoError(40171, f"elements of arrays in $facet spec must be non-empty objects, {name} "
                                        f"argument contained an element of type {type_name(st)}: "
                                        f"{element_str(str(i), st)}")
        facets.append((name, compile_pipeline(pipeline, pctx.sub("$facet"))))

    def run(stream: Iterable[dict]) -> Iterator[dict]:
        docs = list(stream)
        yield {name: list(sub(iter(docs))) for name, sub in facets}

    return run
