"""Views: read-only namespaces defined by an aggregation over another namespace (the ViewCatalog).

A view is a document of `<db>.system.views`: `{_id: "db.view", viewOn: <name>,
pipeline: [...]}`.  A read on a view becomes an aggregate on the backing
collection with the view's pipeline first; a view on a view resolves
recursively (at most 20 deep, else ViewDepthLimitExceeded); an aggregate that starts
with `$collStats` is not expanded (run_aggregate.cpp; shardsim/coll_stats.py).  `find`, `count`
and `distinct` are converted into aggregation pipelines and their replies
converted back, as the server does (query_request_conversion; the
view-resolving paths of count and distinct); the cursor of a find on a view
names the view.  Everything else on a view is CommandNotSupportedOnView (166,
"Namespace db.v is a view, not a collection"): writes (a write error per
statement; findAndModify a command error), indexes, change streams.  `collMod`
changes a view's definition (ddl.py, view_catalog.modify_view).

Through mongos, the primary shard answers a router's read on a view with
CommandOnShardedViewNotSupportedOnMongod (169) carrying `resolvedView: {ns,
pipeline}`; mongos then runs the aggregate on the backing namespace across
the shards (router/views.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mongosim.oplog.errors import MongoError
from mongosim.shardsim import timeseries
from mongosim.shardsim.collation import view_collator
from mongosim.shardsim.operation_context import OpCtx
from mongosim.shardsim.view_catalog import MAX_VIEW_DEPTH, definition, resolve  # noqa: F401

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

READS = frozenset({"find", "count", "distinct", "aggregate"})
WRITES = frozenset({"insert", "update", "delete"})
REFUSED = frozenset({"findAndModify", "findandmodify", "createIndexes", "listIndexes", "dropIndexes",
                     "validate", "collStats", "shardCollection"})
ON_A_NAMESPACE = READS | WRITES | REFUSED  # the commands Node.run_command checks for a view
# the commands a time-series collection answers itself (the others: as its view)
TIMESERIES = frozenset({"insert", "update", "delete", "findAndModify", "findandmodify", "createIndexes",
                        "listIndexes", "dropIndexes"})


async def run_on_timeseries(node: Node, ctx: OpCtx, command: str, name: str) -> dict:
    """A write or an index command on the time-series collection `name` (timeseries_commands.py)."""
    from mongosim.shardsim import timeseries_commands

    return await timeseries_commands.run(node, ctx, command, name)


def not_a_collection(db: str, name: str) -> MongoError:
    return MongoError("CommandNotSupportedOnView", f"Namespace {db}.{name} is a view, not a collection")


def as_pipeline(command: str, cmd: dict) -> list:
    """The stages a find / count / distinct on a view adds after the view's pipeline."""
    stages: list[dict] = []
    flt = cmd.get("filter" if command == "find" else "query")
    if flt:
        stages.append({"$match": flt})
    if command == "find":
        if cmd.get("sort"):
            stages.append({"$sort": cmd["sort"]})
        if cmd.get("skip"):
            stages.append({"$skip": cmd["skip"]})
        if cmd.get("limit"):
            stages.append({"$limit": abs(cmd["limit"])})
        if cmd.get("projection"):
            stages.append({"$project": cmd["projection"]})
    elif command == "count":
        if cmd.get("skip"):
            stages.append({"$skip": cmd["skip"]})
        if cmd.get("limit"):
            stages.append({"$limit": abs(cmd["limit"])})
        stages.append({"$count": "count"})
    elif command == "distinct":
        key = cmd.get("key")
        if not isinstance(key, str):
            raise MongoError("FailedToParse", "BSON field 'distinct.key' is missing but a required field")
    return stages


async def run_on_view(node: Node, ctx: OpCtx, command: str, name: str) -> dict | None:
    """Serve `command` on `ctx.db.name` if that is a view (None if it is not)."""
    resolved = resolve(node, ctx.db, name)
    if resolved is None or (command == "aggregate" and _starts_with_coll_stats(ctx.cmd)):
        return None  # (a $collStats reads the view's namespace itself, unexpanded: shardsim/coll_stats.py)
    is_timeseries = timeseries.options_of(node, ctx.db, definition(node, ctx.db, name)) is not None
    if command in TIMESERIES and is_timeseries:
        return await run_on_timeseries(node, ctx, command, name)
    if command == "collStats" and is_timeseries:
        return None  # (its buckets' stats: shardsim/storage_stats.py)
    if command in REFUSED or (command == "aggregate" and _opens_change_stream(ctx.cmd)):
        raise not_a_collection(ctx.db, name)
    if command in WRITES:
        stmts = ctx.cmd.get({"insert": "documents", "update": "updates", "delete": "deletes"}[command]) or [None]
        first = not_a_collection(ctx.db, name).to_write_error(0)
        reply: dict[str, Any] = {"n": 0, "writeErrors": [first] if ctx.cmd.get("ordered", True) else
                                 [not_a_collection(ctx.db, name).to_write_error(i) for i in range(len(stmts))]}
        if command == "update":
            reply["nModified"] = 0
        return {**reply, "ok": 1.0}
    backing, pipeline = resolved
    collator = view_collator(definition(node, ctx.db, name), ctx.cmd.get("collation"))
    if ctx.from_router:
        raise resolved_on_mongos(ctx.db, backing, pipeline, collator)
    from mongosim.shardsim.mongod_process_interface import MongodProcessInterface
    from mongosim.shardsim.query.stages import run_pipeline
    from mongosim.shardsim.query.variables import for_command
    from mongosim.shardsim.reads import pipeline_source

    variables = for_command(node, ctx)
    extra = list(ctx.cmd.get("pipeline") or []) if command == "aggregate" else as_pipeline(command, ctx.cmd)
    coll = node.catalog.collection(ctx.db, backing)
    docs, rest, _eof_at = pipeline_source(coll, f"{ctx.db}.{backing}", pipeline + extra, ctx.view, view_hint(pipeline, ctx.cmd),
                                 variables, collator)
    results = run_pipeline(docs, rest, variables=variables, collator=collator,
                           process=MongodProcessInterface(node, ctx), db=ctx.db)
    return finish_view_read(node, command, ctx.cmd, f"{ctx.db}.{name}", results, collator=collator)


def view_hint(pipeline: list, cmd: dict):
    """A read's `hint` on a time-series view, as the buckets collection's (a user key pattern translated)."""
    from mongosim.shardsim.timeseries_index_conversion import hint
    from mongosim.shardsim.timeseries_predicates import unpack_options

    spec = unpack_options(pipeline[0]) if pipeline and "hint" in cmd else None
    return hint(spec, cmd["hint"]) if spec is not None else None


def finish_view_read(node: Node | None, command: str, cmd: dict, view_ns: str, results: Any,
                     serve=None, collator=None) -> dict:
    """The reply of a read on a view from the documents its aggregate produced."""
    if command == "count":
        first = next(iter(results), None)
        return {"n": first["count"] if first else 0, "ok": 1.0}
    if command == "distinct":
        from mongosim.shardsim.reads import distinct_values

        return {"values": distinct_values(results, cmd["key"], collator), "ok": 1.0}
    from mongosim.shardsim.reads import int_arg, serve_cursor

    batch_size = int_arg(cmd["cursor"], "batchSize", "aggregate", None) if command == "aggregate" and \
        isinstance(cmd.get("cursor"), dict) else int_arg(cmd, "batchSize", command, None)
    if command == "find":
        int_arg(cmd, "limit", "find", None)  # (checked; the view's aggregate applies it as a $limit)
    single = command == "find" and bool(cmd.get("singleBatch"))
    return (serve or serve_cursor)(node, view_ns, iter(list(results)), batch_size, single)


def _starts_with_coll_stats(cmd: dict) -> bool:
    """Whether the aggregate's pipeline starts with $collStats, which run_aggregate.cpp does not expand over
    a view (a time-series collection's stage reads its buckets instead)."""
    p = cmd.get("pipeline")
    return isinstance(p, list) and bool(p) and isinstance(p[0], dict) and "$collStats" in p[0]


def _opens_change_stream(cmd: dict) -> bool:
    p = cmd.get("pipeline")
    return isinstance(p, list) and bool(p) and isinstance(p[0], dict) and "$changeStream" in p[0]


def as_aggregate(node: Node, ctx: OpCtx, command: str, cmd: dict) -> dict | None:
    """A read on a view as the aggregate it stands for (`explain` explains that), or None if the
    namespace is not a view; through mongos, the shard's 169 with the resolved view instead."""
    name = cmd.get(command)
    if command not in READS or not isinstance(name, str):
        return None
    resolved = resolve(node, ctx.db, name)
    if resolved is None:
        return None
    backing, pipeline = resolved
    collator = view_collator(definition(node, ctx.db, name), cmd.get("collation"))
    if ctx.from_router:
        raise resolved_on_mongos(ctx.db, backing, pipeline, collator)
    extra = list(cmd.get("pipeline") or []) if command == "aggregate" else as_pipeline(command, cmd)
    agg = {"aggregate": backing, "pipeline": pipeline + extra, "cursor": {}}
    if collator is not None:
        agg["collation"] = collator.spec
    return agg


def resolved_on_mongos(db: str, backing: str, pipeline: list, collator) -> MongoError:
    """The shard's answer to a router's read on a view: the view resolved (with its collation), for mongos
    to run as an aggregate across the shards."""
    resolved_view: dict[str, Any] = {"ns": f"{db}.{backing}", "pipeline": pipeline}
    if collator is not None:
        resolved_view["collation"] = collator.spec
    return MongoError("CommandOnShardedViewNotSupportedOnMongod", "Resolved views on sharded collections must be "
                      "executed by mongos", resolvedView=resolved_view)
