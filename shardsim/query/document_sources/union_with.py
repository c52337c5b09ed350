"""$unionWith: the input documents, then those of another collection's pipeline (document_source_union_with.cpp).

`{$unionWith: "coll"}` or `{$unionWith: {coll, pipeline}}`: every input document
passes through first; then the sub-pipeline runs over the named collection (a view
through its own pipeline first) and its results follow.  Without `coll` the
pipeline must start with `$documents`.  The spec is an IDL struct: an unknown field
is IDLUnknownField, a wrong type TypeMismatch; a sub-pipeline refuses `$out` and
`$merge` (31441).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.document_sources.sub_pipeline import pipeline_array
from mongosim.shardsim.query.idl_errors import wrong_type
from mongosim.shardsim.query.pipeline_context import PipelineContext
from mongosim.shardsim.query.stage_registry import register
from mongosim.shardsim.query.stages import compile_pipeline
from mongosim.shardsim.query.values import type_name

__all__ = ["parse_union_with"]

_COLLECTIONLESS = "$unionWith stage without explicit collection must have a pipeline with $documents as first stage"


@register("$unionWith")
def parse_union_with(spec: Any, pctx: PipelineContext) -> Callable[[Iterable[dict]], Iterator[dict]]:
    coll: str | None = None
    pipeline: list = []
    if isinstance(spec, str):
        coll = spec
    elif isinstance(spec, dict):
        for k, v in spec.items():
            if k == "coll":
                if not isinstance(v, str):
                    raise wrong_type("$unionWith.coll", v, "string")
                coll = v
            elif k == "pipeline":
                if not isinstance(v, list):
                    raise wrong_type("$unionWith.pipeline", v, "array")
                pipeline = pipeline_array(v)
            else:
                raise MongoError("IDLUnknownField", f"BSON field '$unionWith.{k}' is an unknown field.")
        if coll is None:
            if not pipeline or "$documents" not in pipeline[0]:
                raise MongoError("FailedToParse", _COLLECTIONLESS)
    else:
        raise MongoError("FailedToParse", "the $unionWith stage specification must be an object or string, but found "
                                          f"{type_name(spec)}")
    if coll == "":
        raise MongoError("InvalidNamespace", f"Invalid $unionWith namespace: {pctx.db}.")
    sub = compile_pipeline(pipeline, pctx.sub("$unionWith"))
    from_documents = bool(pipeline) and "$documents" in pipeline[0]

    def run(stream: Iterable[dict]) -> Iterator[dict]:
        yield from stream
        if from_documents or coll is None:
            source: Iterable[dict] = ()
        else:
            source = pctx.require_process("$unionWith").documents(pctx.db, coll, pctx)
        yield from sub(iter(source))

    return run
