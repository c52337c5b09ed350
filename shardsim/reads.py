"""Reads on one node: find, getMore, killCursors, count, distinct, aggregate, list*.

Queries scan the collection (the `_id` equality fast path aside), then sort,
skip, limit and project with the query engine.  Results are served through
cursors (`shardsim.cursors`); an aggregate whose first stage is `$changeStream`
is handed to `shardsim.changestream`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from bson import Int64

from mongosim.oplog.errors import MongoError
from mongosim.shardsim import timeseries
from mongosim.shardsim.clustered import index_specs, is_clustered
from mongosim.shardsim.collation import command_collator
from mongosim.shardsim.command_registry import COMMANDS, command
from mongosim.shardsim.create_collection import check_namespace
from mongosim.shardsim.cursors import QueryCursor, cursor_reply
from mongosim.shardsim.operation_context import OpCtx
from mongosim.shardsim.source_stage_registry import NODE_SOURCES
from mongosim.shardsim.merge_stage import parse_merge, run_merge
from mongosim.shardsim.mongod_process_interface import MongodProcessInterface
from mongosim.shardsim import local_database
from mongosim.shardsim.oplog_collection import is_oplog
from mongosim.shardsim.out_stage import parse_out, run_out
from mongosim.shardsim.coll_stats import coll_stats_document, leading_coll_stats
from mongosim.shardsim.logical_session_cache import expand_list_local_sessions
from mongosim.shardsim.query.documents_stage import documents_source
from mongosim.shardsim.query.idl_errors import wrong_type
from mongosim.shardsim.query.matcher import Matcher
from mongosim.shardsim.query.pipeline_shape import split_pipeline
from mongosim.shardsim.query.variables import for_command
from mongosim.shardsim import get_executor
from mongosim.shardsim.canonical_query import check_hint
from mongosim.shardsim.get_executor import execute, find_query
from mongosim.shardsim.distinct_scan import field_values
from mongosim.shardsim.geo.geo_near_stage import GeoNearStage
from mongosim.shardsim.timeseries_predicates import pushdown
from mongosim.shardsim.query.document_metadata import strip, to_wire

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node


def int_arg(cmd: dict, name: str, cmd_name: str, default: int | None = None, *, allow_negative: bool = False) -> int | None:
    v = cmd.get(name, default)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise wrong_type(f"{cmd_name}.{name}", v, ("long", "int", "decimal", "double"))
    if isinstance(v, float):
        if not v.is_integer():
            raise MongoError("BadValue", f"BSON field '{cmd_name}.{name}' has a non-integral value")
        v = int(v)
    if v < 0 and not allow_negative:
        raise MongoError(51024 if name == "batchSize" else "BadValue",
                         f"BSON field '{name}' value must be >= 0, actual value '{v}'")
    return int(v)


def run_find(node: Node, db: str, coll_name: str, cmd: dict, view=None, variables: dict | None = None
             ) -> tuple[list[dict], int | None]:
    """The find command's documents, planned (`shardsim.query_planner`) and run to the end, and the
    number of them after which its executor is at EOF (`get_executor.eof_at`)."""
    flt = cmd.get("filter") or {}
    if not isinstance(flt, dict):
        raise MongoError("TypeMismatch", "BSON field 'FindCommandRequest.filter' is the wrong type, expected type 'object'")
    coll = local_database.readable(node, db, coll_name)
    collator = command_collator(cmd.get("collation"), coll, "find.collation")
    matcher = Matcher(flt, variables, collator)
    skip = int_arg(cmd, "skip", "find", 0) or 0
    limit = int_arg(cmd, "limit", "find", None)
    cq = find_query(f"{db}.{coll_name}", cmd, flt, matcher, skip=skip, limit=limit,
                    batch_size=int_arg(cmd, "batchSize", "find", None), variables=variables, collator=collator)
    docs, sol, _ctx = execute(coll, cq, view)
    return docs, get_executor.eof_at(sol, len(docs))


def tailable_find(node: Node, ctx: OpCtx, name: str) -> dict:
    """A find that follows new records: tailable on a capped collection, or on `local.oplog.rs`."""
    from mongosim.shardsim import oplog_collection, tailable_cursor
    from mongosim.shardsim.query.projection import compile_projection

    cmd = ctx.cmd
    tailable_cursor.check_find_options(cmd)
    int_arg(cmd, "skip", "find")
    int_arg(cmd, "limit", "find")
    variables = for_command(node, ctx)
    matcher = Matcher(cmd.get("filter") or {}, variables)
    project = compile_projection(cmd["projection"], variables=variables) if cmd.get("projection") else None
    if is_oplog(ctx.db, name):
        return oplog_collection.find(node, cmd, matcher.matches, project)
    return tailable_cursor.find(node, ctx.db, name, cmd, matcher.matches, project)


def pipeline_source(coll, ns: str, pipeline: list, view, hint, variables: dict | None = None, collator=None
                    ) -> tuple[Iterator[dict], list, int | None]:
    """The documents a pipeline starts from, the stages left to run on them (its leading
    `$match`/`$sort`/`$limit` run as a planned query: `get_executor.pipeline_query`), and, when the
    query absorbed every stage, where that plan's executor is at EOF (`get_executor.eof_at`): the
    server then answers with the plan's executor alone (run_aggregate.cpp canOptimizeAwayPipeline)."""
    if pipeline and isinstance(pipeline[0], dict) and len(pipeline[0]) == 1 and "$geoNear" in pipeline[0]:
        stage = GeoNearStage(pipeline[0]["$geoNear"])
        return iter(stage.run(coll, ns, view, variables, collator)), pipeline[1:], None
    if pipeline and isinstance(pipeline[0], dict) and "$_internalUnpackBucket" in pipeline[0]:
        pipeline = pushdown(pipeline, coll.options.get("collation") if coll is not None else None, collator)
    cq, rest = get_executor.pipeline_query(coll, ns, pipeline, hint, variables, collator)
    if coll is None:
        return iter(()), pipeline, None
    if cq is None:
        return (iter(view.scan(coll)) if view is not None else coll.scan()), pipeline, None
    docs, sol, _ctx = execute(coll, cq, view)
    return iter(docs), rest, None if rest else get_executor.eof_at(sol, len(docs))


def serve_cursor(node: Node, ns: str, results: Iterator[dict], batch_size: int | None, single_batch: bool = False,
                 eof_at: int | None = None, *, first_asks_past: bool = False) -> dict:
    """The first batch, and a cursor kept unless it is exhausted (`QueryCursor`: `eof_at` is where
    the source is at EOF) or the command asked for a single batch.  `first_asks_past`: the first
    batch closes only when an ask found nothing (an aggregate's: handleCursorCommand never asks
    isEOF), its getMores by `eof_at` too."""
    cur = QueryCursor(ns, results, eof_at=None if first_asks_past else eof_at)
    batch = cur.first_batch(batch_size)
    cur.eof_at = eof_at
    if cur.exhausted or single_batch:
        return cursor_reply(batch, 0, ns, first=True)
    cid = node.cursors.register(cur)
    return cursor_reply(batch, cid, ns, first=True)


@command("find")
def cmd_find(node: Node, ctx: OpCtx) -> dict:
    cmd = ctx.cmd
    name = check_namespace(ctx.db, cmd["find"])
    if cmd.get("tailable") or cmd.get("awaitData") or is_oplog(ctx.db, name):
        return tailable_find(node, ctx, name)
    batch_size = int_arg(cmd, "batchSize", "find", None)  # (the limit is the plan's LIMIT, not the batch's)
    docs, eof_at = run_find(node, ctx.db, name, cmd, ctx.view, for_command(node, ctx))
    return serve_cursor(node, f"{ctx.db}.{name}", iter(docs), batch_size, bool(cmd.get("singleBatch")), eof_at)


@command("getMore")
async def cmd_get_more(node: Node, ctx: OpCtx) -> dict:
    return await node.cursors.get_more(ctx.cmd, ctx.db, client=not ctx.from_router)


@command("killCursors")
def cmd_kill_cursors(node: Node, ctx: OpCtx) -> dict:
    coll = ctx.cmd["killCursors"]
    ids = ctx.cmd.get("cursors")
    if not isinstance(ids, list):
        raise MongoError("FailedToParse", "BSON field 'killCursors.cursors' is missing but a required field")
    return node.cursors.kill(f"{ctx.db}.{coll}", ids)


@command("count")
def cmd_count(node: Node, ctx: OpCtx) -> dict:
    cmd = ctx.cmd
    name = check_namespace(ctx.db, cmd["count"])
    q = cmd.get("query") or {}
    if not isinstance(q, dict):
        raise MongoError("TypeMismatch", "BSON field 'count.query' is the wrong type, expected type 'object'")
    coll = local_database.readable(node, ctx.db, name)
    collator = command_collator(cmd.get("collation"), coll, "count.collation")
    skip = int_arg(cmd, "skip", "count", 0) or 0
    limit = int_arg(cmd, "limit", "count", None, allow_negative=True)
    hint = check_hint(cmd.get("hint"))
    if coll is not None and not q and ctx.view is None and hint is None:
        n = len(coll)  # (the server's RECORD_STORE_FAST_COUNT)
        n = max(n - skip, 0)
        if limit:
            n = min(n, abs(limit))
    else:
        Matcher(q, None, collator)  # (a bad query is an error even on a missing collection)
        n = get_executor.count(coll, q, ctx.view, hint=hint, skip=skip, limit=limit, collator=collator)
    return {"n": n, "ok": 1.0}


@command("distinct")
def cmd_distinct(node: Node, ctx: OpCtx) -> dict:
    cmd = ctx.cmd
    name = check_namespace(ctx.db, cmd["distinct"])
    key = cmd.get("key")
    if not isinstance(key, str):
        raise MongoError("FailedToParse", "BSON field 'distinct.key' is missing but a required field")
    coll = local_database.readable(node, ctx.db, name)
    collator = command_collator(cmd.get("collation"), coll, "distinct.collation")
    query = cmd.get("query") or {}
    if not isinstance(query, dict):
        raise MongoError("TypeMismatch", "BSON field 'distinct.query' is the wrong type, expected type 'object'")
    hint = check_hint(cmd.get("hint"))
    if coll is None:
        Matcher(query, None, collator)  # (a bad query is an error even on a missing collection)
        return {"values": [], "ok": 1.0}
    sol, fast = get_executor.distinct_plan_of(coll, key, query, hint, ctx.view, collator)
    rows = get_executor.run(coll, sol, ctx.view)[0]
    return {"values": _distinct_of(rows, collator) if fast else distinct_values(rows, key, collator), "ok": 1.0}


def distinct_values(docs, key: str, collator=None) -> list:
    """The distinct values at `key` (the first of each set equal under `collator`), in BSON order."""
    parts = key.split(".")
    return _distinct_of((v for doc in docs for v in field_values(doc, parts)), collator)


def _distinct_of(values, collator) -> list:
    """The first of each set of `values` equal under `collator`, in BSON order."""
    from mongosim.shardsim.query.collation import hashable_for, sort_key_for

    same = hashable_for(collator)
    seen: dict[Any, Any] = {}
    for v in values:
        seen.setdefault(same(v), v)
    return sorted(seen.values(), key=sort_key_for(collator))


@command("aggregate")
async def cmd_aggregate(node: Node, ctx: OpCtx) -> dict:
    cmd = ctx.cmd
    pipeline = cmd.get("pipeline")
    if not isinstance(pipeline, list):
        raise MongoError("TypeMismatch", "'pipeline' option must be specified as an array")
    target = cmd["aggregate"]
    if pipeline and isinstance(pipeline[0], dict) and "$changeStream" in pipeline[0]:
        from mongosim.shardsim.changestream.aggregate import open_change_stream

        return await open_change_stream(node, ctx)
    for i, st in enumerate(pipeline):
        if isinstance(st, dict) and "$changeStream" in st:
            raise MongoError(40602, "$changeStream is only valid as the first stage in a pipeline")
    cursor_opt = cmd.get("cursor")
    if cursor_opt is None and not cmd.get("explain"):
        raise MongoError("FailedToParse", "The 'cursor' option is required, except for aggregate with the explain argument")
    if cmd.get("explain"):  # the legacy form: explain at verbosity queryPlanner (shardsim.explain_cmd)
        inner = {k: v for k, v in cmd.items() if k != "explain"}
        return await COMMANDS["explain"](node, OpCtx(ctx.db, {"explain": inner, "verbosity": "queryPlanner"},
                                                     from_router=ctx.from_router))
    from mongosim.shardsim.query.stages import run_pipeline

    variables = for_command(node, ctx)
    coll_stats = leading_coll_stats(pipeline, target)
    if coll_stats is not None:  # one document about the collection, then the rest of the pipeline
        doc = coll_stats_document(node, ctx.db, check_namespace(ctx.db, target), coll_stats)
        results = list(run_pipeline(iter([doc]), pipeline[1:], variables=variables,
                                    process=MongodProcessInterface(node, ctx), db=ctx.db))
        return serve_cursor(node, f"{ctx.db}.{target}", iter(results), (cursor_opt or {}).get("batchSize"))
    pipeline = expand_list_local_sessions(target, pipeline, cmd, node.session_cache, node.wall.wall)
    documents, stages, writer = split_pipeline(target, pipeline, cmd)
    write = output_writer(ctx.db, writer)  # its spec checked before anything is read
    if cmd.get("explain"):
        write = None  # an explained $out or $merge writes nothing
    source = NODE_SOURCES.get(next(iter(stages[0])) if stages and isinstance(stages[0], dict) and len(stages[0]) == 1
                              else None)  # $collStats, $indexStats, $planCacheStats, $currentOp
    eof_at = None  # (a pipeline's executor is at EOF only once asked past its end)
    if target == 1:
        docs: Iterator[dict] = iter(documents_source(documents, variables) if documents is not None else ())
        ns = f"{ctx.db}.$cmd.aggregate"
        collator = command_collator(cmd.get("collation"), None, "aggregate.collation")
        if source is not None:
            docs, stages = iter(source(node, ctx, None, stages[0][next(iter(stages[0]))])), stages[1:]
    else:
        name = check_namespace(ctx.db, target)
        coll = local_database.readable(node, ctx.db, name)
        ns = f"{ctx.db}.{name}"
        collator = command_collator(cmd.get("collation"), coll, "aggregate.collation")
        if source is not None:
            docs, stages = iter(source(node, ctx, name, stages[0][next(iter(stages[0]))])), stages[1:]
        else:
            docs, stages, eof_at = pipeline_source(coll, ns, stages, ctx.view, cmd.get("hint"), variables, collator)
    eof_at = eof_at if write is None else None  # (an $out or $merge stage keeps the pipeline)
    results = list(run_pipeline(docs, stages, variables=variables, collator=collator,
                                process=MongodProcessInterface(node, ctx), db=ctx.db))
    if cmd.get("needsMerge"):  # (for mongos: the documents' metadata goes with them)
        results = [to_wire(d) for d in results]
    if write is not None:
        await write(output_node(node), ctx, strip(results), variables)
        results = []
    batch_size = (cursor_opt or {}).get("batchSize")
    return serve_cursor(node, ns, iter(results), batch_size, eof_at=eof_at, first_asks_past=True)


def output_node(node: Node) -> Node:
    """The node an aggregate's $out or $merge writes on: its own, or on a secondary its set's primary's
    (since 5.0 a secondary runs the pipeline and sends the writes to the primary)."""
    m = node.member
    if m is None or m.is_primary:
        return node
    primary = m.rs.primary
    if primary is None:
        raise MongoError("NotWritablePrimary", "not primary")
    return primary.node


def output_writer(db: str, writer: tuple[str, Any] | None):
    """The $out or $merge ending a pipeline, as `write(node, ctx, results, variables)` (None if none)."""
    if writer is None:
        return None
    name, spec = writer
    if name == "$out":
        target_db, coll = parse_out(spec, db)
        return lambda node, ctx, results, variables: run_out(node, ctx, target_db, coll, results)
    merge = parse_merge(spec, db)
    return lambda node, ctx, results, variables: run_merge(node, ctx, merge, results, variables)


@command("listCollections")
def cmd_list_collections(node: Node, ctx: OpCtx) -> dict:
    cmd = ctx.cmd
    flt = cmd.get("filter") or {}
    name_only = bool(cmd.get("nameOnly"))
    out = []
    database = node.catalog.db(ctx.db)
    member_local = local_database.collections(node, ctx.db)  # (a member's local.oplog.rs, local.system.replset)
    shadowed = {c.name for c in member_local}
    for coll in [*member_local, *(c for c in (database.collections.values() if database is not None else ())
                                  if c.name not in shadowed)]:
        if coll.name.startswith("system.") and coll.name not in ("system.views", "system.profile") and \
                not coll.name.startswith(timeseries.BUCKETS) and coll.name not in shadowed:
            continue
        info: dict[str, Any] = {"name": coll.name, "type": "collection"}
        if not name_only:
            info["options"] = dict(coll.options)
            info["info"] = {"readOnly": False, "uuid": coll.uuid}
            if not is_clustered(coll.options) and coll.options.get("autoIndexId") is not False:
                info["idIndex"] = coll.indexes[0] if coll.indexes and coll.indexes[0]["name"] == "_id_" else \
                    {"v": 2, "key": {"_id": 1}, "name": "_id_"}
        out.append(info)
    if database is not None:
        views = database.collections.get("system.views")
        if views is not None:
            for v in views.docs.values():
                ts_info = timeseries.list_entry(node, ctx.db, v, name_only)
                if ts_info is not None:
                    out.append(ts_info)
                    continue
                vname = v["_id"].split(".", 1)[1]
                info = {"name": vname, "type": "view"}
                if not name_only:
                    info["options"] = {"viewOn": v["viewOn"], "pipeline": v.get("pipeline", [])}
                    if v.get("collation"):
                        info["options"]["collation"] = v["collation"]
                    info["info"] = {"readOnly": True}
                out.append(info)
    if flt:
        m = Matcher(flt)
        out = [c for c in out if m.matches(c)]
    # (the documents are queued up front: the executor is at EOF with the last one)
    return serve_cursor(node, f"{ctx.db}.$cmd.listCollections", iter(out), (cmd.get("cursor") or {}).get("batchSize"),
                        eof_at=len(out))


@command("listIndexes")
def cmd_list_indexes(node: Node, ctx: OpCtx) -> dict:
    name = check_namespace(ctx.db, ctx.cmd["listIndexes"])
    coll = local_database.readable(node, ctx.db, name)
    if coll is None:
        raise MongoError("NamespaceNotFound", f"ns does not exist: {ctx.db}.{name}")
    specs = index_specs(coll.options, coll.indexes)
    return serve_cursor(node, f"{ctx.db}.$cmd.listIndexes.{name}", iter(specs), (ctx.cmd.get("cursor") or {}).get("batchSize"),
                        eof_at=len(specs))


_FCV_DOCUMENT = {"_id": "featureCompatibilityVersion", "version": "8.0"}  # (admin.system.version)


def database_items(node: Node, flt: Any = None, *, member_databases: bool = False) -> list[dict]:
    """mongod's listDatabases entries, in name order: `{name, sizeOnDisk, empty}` for each database holding
    a collection (sizes are the documents' BSON sizes; `empty`: no collection, as mongod's catalog says),
    those the `filter` matches (a match expression over the entry, applied by mongod to its own; another
    type than a document is the IDL's TypeMismatch).  `member_databases` (a client's listDatabases on a
    replica-set member): also the databases every member has — `admin` (its system.version: the
    featureCompatibilityVersion document), `config` (config.transactions, made at step-up) and `local`
    (the oplog and the set's config: shardsim/local_database.py); mongos leaves them to its own rules."""
    from mongosim.oplog import bsonutil

    if flt is not None and not isinstance(flt, dict):
        raise wrong_type("listDatabases.filter", flt, "object")
    sizes: dict[str, int] = {}
    for name, database in node.catalog.databases.items():
        if not database.collections:
            continue  # (a database is its collections: mongod lists none without one)
        sizes[name] = sum(len(bsonutil.encode(d)) for coll in database.collections.values()
                          for d in coll.docs.values())
    if member_databases and getattr(node, "member", None) is not None:
        sizes.setdefault("admin", len(bsonutil.encode(_FCV_DOCUMENT)))
        sizes.setdefault("config", 0)
        sizes["local"] = sizes.get("local", 0) + node.oplog.size_bytes + sum(
            len(bsonutil.encode(d)) for d in local_database.collection(node, "local", local_database.REPLSET).scan())
    items = [{"name": name, "sizeOnDisk": Int64(size), "empty": False} for name, size in sorted(sizes.items())]
    if flt:
        match = Matcher(flt)
        items = [d for d in items if match.matches(d)]
    return items


@command("listDatabases")
def cmd_list_databases(node: Node, ctx: OpCtx) -> dict:
    items = database_items(node, ctx.cmd.get("filter"), member_databases=True)
    total = sum(int(d["sizeOnDisk"]) for d in items)
    if ctx.cmd.get("nameOnly"):
        return {"databases": [{"name": d["name"]} for d in items], "ok": 1.0}
    return {"databases": items, "totalSize": Int64(total), "totalSizeMb": Int64(total >> 20), "ok": 1.0}
