"""A database's views: their definitions in `<db>.system.views` (the server's ViewCatalog).

`definition(node, db, name)` is the `system.views` document of a view (None for a
collection); `resolve(node, db, name)` follows a view on a view down to its backing
collection and returns it with the whole pipeline (the innermost view's stages
first), at most 20 deep (ViewDepthLimitExceeded).  Reads on views are served by
`views.py`; `$lookup` and its kind resolve their foreign views here too.

Writing a definition (`create_view`, `modify_view`) is the server's
ViewsForDatabase insert / update (catalog/views_for_database.cpp), in its order:

1. the pipeline is validated (view_catalog_helpers::validatePipeline): each
   stage lite-parsed (40323, 40324) for the namespaces it reads, then parsed
   whole (a bad spec, `$$undefined` 17276); `$out`/`$merge` anywhere is
   OptionNotSupportedOnView ("... cannot be used in the view definition of
   db.v because it writes to disk"), a leading `$changeStream` too, and a stage
   that reads no collection (`$documents`, `$currentOp`, ...) InvalidNamespace.
   Any of these comes back as "Invalid pipeline for view db.v :: caused by ::
   <reason>" with the reason's code;
2. a view among the namespaces it reads with another collation:
   OptionNotSupportedOnView "View db.v has conflicting collation with view db.w";
3. the view graph (`view_graph.py`): cycles, depth, pipeline size;
4. the document `{_id: "db.v", viewOn, pipeline, collation?}` is inserted into
   `system.views` — or, for a modification, the old one *replaced* by it
   (an `u` entry whose `o` is the whole new document, `o2: {_id: "db.v"}`, logged
   even when nothing changed, as collection_internal::updateDocument does): a
   change stream turns these writes into `create` / `modify` events
   (ChangeStreamViewDefinitionEventTransformation, changestream/transform.py);
5. a view on a `system.buckets.*` namespace other than a time-series
   collection's own is InvalidNamespace ("Invalid view: cannot define a view
   over a system.buckets namespace except by creating a time-series
   collection") — the server finds it when it loads the new definition into
   its map, after the write, which its write unit then rolls back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mongosim.oplog import bsonutil
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.view_graph import MAX_VIEW_DEPTH, ViewGraph

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node
    from mongosim.shardsim.operation_context import OpCtx

__all__ = ["definition", "resolve", "MAX_VIEW_DEPTH", "involved_namespaces", "create_view", "modify_view"]

SYSTEM_VIEWS = "system.views"
_BUCKETS = "system.buckets."
_WRITES_TO_DISK = ("$out", "$merge")
_NO_COLLECTION = ("$documents", "$currentOp", "$listLocalSessions", "$listSessions")
# first stages the node serves outside compile_pipeline (their specs are checked where they run)
_SOURCE_STAGES = ("$collStats", "$indexStats", "$planCacheStats", "$geoNear", "$changeStream", *_NO_COLLECTION)


def definition(node: Node, db: str, name: str) -> dict | None:
    """The system.views document of `db.name`, or None when it is not a view."""
    views = node.catalog.collection(db, SYSTEM_VIEWS)
    return views.get(f"{db}.{name}") if views is not None else None


def resolve(node: Node, db: str, name: str) -> tuple[str, list] | None:
    """(backing collection, the whole pipeline) of the view `db.name`; None if it is not a view."""
    view = definition(node, db, name)
    if view is None:
        return None
    pipelines: list[list] = []
    depth = 0
    while view is not None:
        depth += 1
        if depth > MAX_VIEW_DEPTH:
            raise MongoError("ViewDepthLimitExceeded", f"View depth too deep or view cycle detected; maximum depth is {MAX_VIEW_DEPTH}")
        pipelines.append(list(view.get("pipeline") or []))
        name = view["viewOn"]
        view = definition(node, db, name)
    pipeline = [stage for p in reversed(pipelines) for stage in p]
    return name, pipeline


# -- what a pipeline reads (LiteParsedPipeline::getInvolvedNamespaces) ------------------------------
def _stage(stage: Any) -> tuple[str, Any]:
    if not isinstance(stage, dict) or len(stage) != 1:
        raise MongoError(40323, "A pipeline stage specification object must contain exactly one field.")
    return next(iter(stage.items()))


def involved_namespaces(db: str, pipeline: Any) -> list[str]:
    """The namespaces `pipeline` reads besides its input, in the order it names them."""
    out: list[str] = []

    def add(ns: str) -> None:
        if ns not in out:
            out.append(ns)

    def walk(stages: Any) -> None:
        if not isinstance(stages, list):
            return
        for stage in stages:
            name, spec = _stage(stage)
            if name in ("$lookup", "$graphLookup") and isinstance(spec, dict):
                source = spec.get("from")
                if isinstance(source, str):
                    add(f"{db}.{source}")
                elif isinstance(source, dict) and isinstance(source.get("coll"), str):
                    add(f"{source.get('db', db)}.{source['coll']}")
                walk(spec.get("pipeline"))
            elif name == "$unionWith":
                if isinstance(spec, str):
                    add(f"{db}.{spec}")
                elif isinstance(spec, dict):
                    if isinstance(spec.get("coll"), str):
                        add(f"{db}.{spec['coll']}")
                    walk(spec.get("pipeline"))
            elif name == "$facet" and isinstance(spec, dict):
                for sub in spec.values():
                    walk(sub)

    walk(pipeline)
    return out


def _validate_pipeline(db: str, name: str, pipeline: list, collation: dict | None) -> list[str]:
    """view_catalog_helpers::validatePipeline: the namespaces the pipeline reads, or its error."""
    from mongosim.shardsim.collation import collator_of_spec
    from mongosim.shardsim.query.pipeline_context import PipelineContext
    from mongosim.shardsim.query.stages import compile_pipeline

    involved = involved_namespaces(db, pipeline)
    names = [_stage(s)[0] for s in pipeline]
    lead = 1 if names and names[0] in _SOURCE_STAGES else 0
    rest = [s for s, n in zip(pipeline[lead:], names[lead:]) if n not in _WRITES_TO_DISK]
    compile_pipeline(rest, PipelineContext({}, collator=collator_of_spec(collation), db=db, checked=True))
    for i, stage_name in enumerate(names):
        if stage_name in _WRITES_TO_DISK:
            raise MongoError("OptionNotSupportedOnView", f"The aggregation stage {stage_name} in location {i} of the "
                             f"pipeline cannot be used in the view definition of {db}.{name} because it writes to disk")
    if names and names[0] == "$changeStream":
        raise MongoError("OptionNotSupportedOnView", "$changeStream cannot be used in a view definition")
    for stage_name in names:
        if stage_name in _NO_COLLECTION:
            raise MongoError("InvalidNamespace", f"'{stage_name}' cannot be used in a view definition")
    return involved


def _refs(db: str, view: dict) -> list[str]:
    """What a stored view reads: its pipeline's namespaces, then its viewOn (a malformed stored pipeline
    reads nothing more)."""
    try:
        involved = involved_namespaces(db, view.get("pipeline") or [])
    except MongoError:
        involved = []
    return [*involved, f"{db}.{view['viewOn']}"]


def _pipeline_size(pipeline: list) -> int:
    return sum(len(bsonutil.encode(stage)) for stage in pipeline)


def check_definition(node: Node, db: str, name: str, view_on: str, pipeline: list, collation: dict | None) -> None:
    """Validate the definition of `db.name` against the database's other views (steps 1-3 of the module doc)."""
    ns = f"{db}.{name}"
    try:
        involved = _validate_pipeline(db, name, pipeline, collation)
    except MongoError as err:
        raise MongoError(err.code, f"Invalid pipeline for view {ns} :: caused by :: {err.errmsg}", **err.extra) from None
    refs = [*involved, f"{db}.{view_on}"]
    views = node.catalog.collection(db, SYSTEM_VIEWS)
    others = {v["_id"]: v for v in views.docs.values() if v.get("_id") != ns} if views is not None else {}
    for ref in refs:
        other = others.get(ref)
        if other is not None and other.get("collation") != collation:
            raise MongoError("OptionNotSupportedOnView", f"View {ns} has conflicting collation with view {ref}")
    graph = ViewGraph()
    for other_ns, other in others.items():
        graph.insert(other_ns, _refs(db, other), _pipeline_size(other.get("pipeline") or []), other.get("collation"))
    graph.insert_and_validate(ns, refs, _pipeline_size(pipeline), collation)


def _check_buckets(db: str, name: str, view_on: str) -> None:
    if view_on.startswith(_BUCKETS) and view_on != _BUCKETS + name:
        raise MongoError("InvalidNamespace", "Invalid view: cannot define a view over a system.buckets namespace "
                                             "except by creating a time-series collection")


def _document(db: str, name: str, view_on: str, pipeline: list, collation: dict | None) -> dict:
    doc: dict[str, Any] = {"_id": f"{db}.{name}", "viewOn": view_on, "pipeline": pipeline}
    if collation:
        doc["collation"] = collation
    return doc


def create_view(node: Node, ctx: OpCtx, name: str, view_on: str, pipeline: list, collation: dict | None) -> None:
    """Insert the definition of the new view `ctx.db.name` (`collation` normalised, None for simple)."""
    from mongosim.shardsim.create_collection import ensure_collection
    from mongosim.shardsim.operation_context import OpCtx
    from mongosim.shardsim.writes import WriteSession, insert_one

    check_definition(node, ctx.db, name, view_on, pipeline, collation)
    _check_buckets(ctx.db, name, view_on)
    views = ensure_collection(node, ctx, ctx.db, SYSTEM_VIEWS)
    sub = OpCtx(ctx.db, {})  # (the catalog's own write: no session fields)
    insert_one(node, sub, views, _document(ctx.db, name, view_on, pipeline, collation), WriteSession(node, sub), 0)
    ctx.op_time_key = max(ctx.op_time_key, sub.op_time_key)


def modify_view(node: Node, ctx: OpCtx, name: str, view_on: str, pipeline: list) -> None:
    """Replace the definition of the view `ctx.db.name` (its collation stays) by `view_on` + `pipeline`."""
    from mongosim.oplog import entry as E
    from mongosim.shardsim.operation_context import OpCtx
    from mongosim.shardsim.writes import WriteSession

    old = definition(node, ctx.db, name)
    assert old is not None
    collation = old.get("collation")
    check_definition(node, ctx.db, name, view_on, pipeline, collation)
    _check_buckets(ctx.db, name, view_on)
    views = node.catalog.collection(ctx.db, SYSTEM_VIEWS)
    new = _document(ctx.db, name, view_on, pipeline, collation)
    sub = OpCtx(ctx.db, {})
    ws = WriteSession(node, sub)
    ws.replace(views, old, new)
    ws.log(E.replace_op(views.ns, views.uuid, new, {"_id": new["_id"]}), 0)
    ctx.op_time_key = max(ctx.op_time_key, sub.op_time_key)
