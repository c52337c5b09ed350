"""Where the special stages of an aggregation may stand (the server's Pipeline::validateCommon).

- `$documents` (like `$currentOp`, `$listLocalSessions`) needs no collection: it
  is only valid first (40602), and only in `{aggregate: 1}` (73 "'$documents'
  can only be run with {aggregate: 1}"); `{aggregate: 1}` in turn needs such a
  first stage (73 "{aggregate: 1} is not valid for '$match'; a collection is
  required.").
- `$out` and `$merge` write the results: only as the last stage (40601), never
  inside a transaction (263) nor with readConcern linearizable (InvalidOptions).

`split_pipeline` returns the pipeline in three parts: the `$documents` spec (or
None), the stages in between, and the writing stage `(name, spec)` (or None).
`involved_collections` lists the other collections a pipeline reads — through
`$lookup`, `$graphLookup` and `$unionWith`, at any depth of sub-pipelines and
`$facet`s (the server's LiteParsedPipeline::getInvolvedNamespaces).
"""

from __future__ import annotations

from typing import Any

from mongosim.oplog.errors import MongoError

COLLECTIONLESS_FIRST = frozenset({"$documents", "$currentOp", "$listLocalSessions", "$changeStream",
                                  "$querySettings", "$listSampledQueries", "$listCachedAndActiveUsers",
                                  "$listClusterCatalog"})
WRITERS = frozenset({"$out", "$merge"})


def _name(stage: Any) -> str | None:
    return next(iter(stage)) if isinstance(stage, dict) and len(stage) == 1 else None


def split_pipeline(target: Any, pipeline: list, cmd: dict) -> tuple[Any, list, tuple[str, Any] | None]:
    """(the $documents spec or None, the middle stages, the writing stage or None)."""
    names = [_name(st) for st in pipeline]
    if target == 1:
        if not pipeline:
            raise MongoError("InvalidNamespace", "{aggregate: 1} is not valid for an empty pipeline.")
        if names[0] not in COLLECTIONLESS_FIRST:
            raise MongoError("InvalidNamespace", f"{{aggregate: 1}} is not valid for '{names[0]}'; "
                                                 "a collection is required.")
    elif names and names[0] == "$documents":
        raise MongoError("InvalidNamespace", "'$documents' can only be run with {aggregate: 1}")
    for i, name in enumerate(names):
        if name == "$documents" and i > 0:
            raise MongoError(40602, "$documents is only valid as the first stage in a pipeline")
        if name in WRITERS and i != len(names) - 1:
            raise MongoError(40601, f"{name} can only be the final stage in the pipeline")
    writer = None
    if names and names[-1] in WRITERS:
        name = names[-1]
        if cmd.get("autocommit") is False:
            raise MongoError("OperationNotSupportedInTransaction", f"{name} cannot be used in a transaction")
        rc = cmd.get("readConcern")
        if isinstance(rc, dict) and rc.get("level") == "linearizable":
            raise MongoError("InvalidOptions", f"{name} cannot be used with a 'linearizable' read concern level")
        writer = (name, pipeline[-1][name])
        pipeline = pipeline[:-1]
    documents = None
    if names and names[0] == "$documents":
        documents = pipeline[0]["$documents"]
        pipeline = pipeline[1:]
    return documents, pipeline, writer


def involved_collections(pipeline: Any) -> list[str]:
    """The names (in the pipeline's database) of the collections its stages read besides the input."""
    found: dict[str, None] = {}
    _involved(pipeline, found)
    return list(found)


def _involved(pipeline: Any, found: dict[str, None]) -> None:
    if not isinstance(pipeline, list):
        return
    for stage in pipeline:
        name = _name(stage)
        if name is None:
            continue
        spec = stage[name]
        if name in ("$lookup", "$graphLookup") and isinstance(spec, dict):
            if isinstance(spec.get("from"), str) and spec["from"]:
                found[spec["from"]] = None
            _involved(spec.get("pipeline"), found)
        elif name == "$unionWith":
            if isinstance(spec, str) and spec:
                found[spec] = None
            elif isinstance(spec, dict):
                if isinstance(spec.get("coll"), str) and spec["coll"]:
                    found[spec["coll"]] = None
                _involved(spec.get("pipeline"), found)
        elif name == "$facet" and isinstance(spec, dict):
            for sub in spec.values():
                _involved(sub, found)
