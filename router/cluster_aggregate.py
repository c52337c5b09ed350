"""aggregate through mongos (the server's ClusterAggregate and cluster_aggregation_planner).

A change stream goes to the merge machinery (`router/merge/`); an explain to
`cluster_explain`.  Otherwise mongos decides where the pipeline runs:

- on one shard, whole: the collection is unsharded (or the leading `$match`
  targets one shard) and every other collection the pipeline reads (`$lookup`,
  `$graphLookup`, `$unionWith`, through views too) is unsharded, so it lives on
  that same primary shard;
- else split: the shards run the pipeline's shard-safe prefix — the leading
  document-at-a-time stages ($match, $project, $addFields/$set, $unset,
  $replaceRoot/$replaceWith, $redact, $unwind), and a `$sort`+`$limit` (each shard's
  top k) or a `$limit` right after them — with the router's `$$NOW`,
  `$$CLUSTER_TIME` and `let` values, so a shard's stages see what the router's
  would; the router gathers their results (the shards a leading `$match` targets)
  and runs the rest, with the foreign collections gathered across their shards
  (`mongos_process_interface`).  A sort or group at the router sees every
  document, as on a replica set, so its results are the replica set's.  `$setWindowFields`,
  `$densify` and `$fill` run here too: the server pushes the `$sort` they desugar into to the
  shards and merges the sorted streams; the router's own sort gives the same order.

A pipeline starting with a `$text` `$match` or a `$geoNear` runs that part on the
shards with `needsMerge` (their documents keep their scores and distances) and
the rest here (`sort_key_merge`).  An option registered in `AGGREGATE_OPTIONS`
(`$_passthroughToShard`) takes the command whole.

`{aggregate: 1}` pipelines ($documents, $currentOp, $listLocalSessions,
$shardedDataDistribution) run on the router; `$collStats` asks each shard holding
the collection (`router/cluster_coll_stats.py`), as do `$indexStats` and
`$planCacheStats` (`router/cluster_source_stages.py`).  A `$out`/`$merge` at the
end writes the results (`aggregate_output`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mongosim.oplog.errors import MongoError
from mongosim.router.aggregate_output import output_writer
from mongosim.router.cluster_coll_stats import cluster_coll_stats, leading_data_distribution, sharded_data_distribution
from mongosim.router.command_registry import AGGREGATE_OPTIONS, ROUTER_COMMANDS, router_command
from mongosim.router.commands_crud import (
    _collation_field,
    _hint,
    _merge_collator,
    _read_targets,
    _run_txn_aware,
    _serve,
    _session_fields,
)
from mongosim.router.let_parameters import router_variables
from mongosim.router.mongos_process_interface import backing_of, gather_foreign, view_definitions
from mongosim.router.request import Request
from mongosim.router.sort_key_merge import merged_with_metadata, starts_with_metadata
from mongosim.router.source_stage_registry import ROUTER_SOURCES
from mongosim.shardsim.coll_stats import leading_coll_stats
from mongosim.shardsim.logical_session_cache import expand_list_local_sessions
from mongosim.shardsim.query.document_metadata import strip
from mongosim.shardsim.query.documents_stage import documents_source
from mongosim.shardsim.query.extensions_callback import check_pipeline
from mongosim.shardsim.query.pipeline_shape import involved_collections, split_pipeline
from mongosim.shardsim.query.process_interface import InMemoryProcessInterface
from mongosim.shardsim.query.stages import DOC_STAGES, run_pipeline
from mongosim.shardsim.query.variables import frozen_let

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

__all__ = ["cmd_aggregate", "split_for_shards"]

SHARD_SAFE = DOC_STAGES | {"$unwind"}


def _name(stage: Any) -> str | None:
    return next(iter(stage)) if isinstance(stage, dict) and len(stage) == 1 else None


def split_for_shards(pipeline: list) -> tuple[list, list]:
    """(the stages each shard runs, the stages the router runs after gathering their results)."""
    k = 0
    while k < len(pipeline) and _name(pipeline[k]) in SHARD_SAFE:
        k += 1
    shard_part, merge_part = list(pipeline[:k]), list(pipeline[k:])
    if merge_part and _name(merge_part[0]) == "$sort" and len(merge_part) > 1 and _name(merge_part[1]) == "$limit":
        shard_part += merge_part[:2]  # each shard's top k; the router sorts them again
    elif merge_part and _name(merge_part[0]) == "$limit":
        shard_part += merge_part[:1]
    return shard_part, merge_part


def _leading_filter(pipeline: list) -> dict | None:
    """The leading $match stages as one filter (for targeting), None if there are none."""
    matches = []
    for st in pipeline:
        if _name(st) != "$match" or not isinstance(st["$match"], dict):
            break
        matches.append(st["$match"])
    if not matches:
        return None
    return matches[0] if len(matches) == 1 else {"$and": matches}


@router_command("aggregate")
async def cmd_aggregate(router: Router, req: Request) -> dict:
    pipeline = req.cmd.get("pipeline")
    if not isinstance(pipeline, list):
        raise MongoError("TypeMismatch", "'pipeline' option must be specified as an array")
    for option, handler in AGGREGATE_OPTIONS.items():  # e.g. $_passthroughToShard: one shard's stream, unmerged
        if option in req.cmd:
            return await handler(router, req)
    if pipeline and isinstance(pipeline[0], dict) and "$changeStream" in pipeline[0]:
        from mongosim.router.merge.cluster_change_stream import (
            open_cluster_change_stream,
        )

        return await open_cluster_change_stream(router, req)
    for st in pipeline:
        if isinstance(st, dict) and "$changeStream" in st:
            raise MongoError(40602, "$changeStream is only valid as the first stage in a pipeline")
    if req.cmd.get("cursor") is None and not req.cmd.get("explain"):
        raise MongoError("FailedToParse", "The 'cursor' option is required, except for aggregate with the explain argument")
    if req.cmd.get("explain"):  # the legacy form: explain at verbosity queryPlanner (router.cluster_explain)
        inner = {k: v for k, v in req.cmd.items() if k not in ("explain", "$db", "$clusterTime", "$readPreference")}
        return await ROUTER_COMMANDS["explain"](router, Request(req.db, {"explain": inner, "verbosity": "queryPlanner"},
                                                                req.conn, "explain"))
    variables = router_variables(router, req)
    target = req.cmd["aggregate"]
    db = req.db
    batch_size = (req.cmd.get("cursor") or {}).get("batchSize")
    cluster_stats = await _cluster_stats_source(router, db, target, pipeline)
    if cluster_stats is not None:  # $collStats / $shardedDataDistribution: documents about the cluster first
        ns = f"{db}.{target}" if isinstance(target, str) else f"{db}.$cmd.aggregate"
        rest = pipeline[1:]
        process = await _foreign(router, req, db, rest)
        results = list(run_pipeline(iter(cluster_stats), rest, variables=variables,
                                    collator=_merge_collator(router, ns, req.cmd) if isinstance(target, str) else None,
                                    process=process, db=db))
        return _serve(router, ns, results, batch_size)
    # (a mongos lists its own sessions)
    pipeline = expand_list_local_sessions(target, pipeline, req.cmd, router.session_cache, router.config.wall.wall)
    documents, pipeline, writer = split_pipeline(target, pipeline, req.cmd)
    write = None if req.cmd.get("explain") else output_writer(router, req, writer)
    if target == 1:
        ns = f"{db}.$cmd.aggregate"
        source = ROUTER_SOURCES.get(_name(pipeline[0]) if pipeline else None)
        if source is not None:
            docs = await source(router, req, None, pipeline[0][_name(pipeline[0])])
            pipeline = pipeline[1:]
        else:
            docs = documents_source(documents, variables) if documents is not None else []
        process = await _foreign(router, req, db, pipeline)
        results = list(run_pipeline(iter(docs), pipeline, variables=variables, process=process, db=db))
        return _serve(router, ns, await _written(write, results, variables), batch_size)
    if not isinstance(target, str):
        raise MongoError("InvalidNamespace", "aggregate target must be a collection name or 1")
    ns = f"{db}.{target}"
    check_pipeline(pipeline)
    source = ROUTER_SOURCES.get(_name(pipeline[0]) if pipeline else None)
    if source is not None:  # $indexStats, $planCacheStats: each shard's documents
        docs = await source(router, req, target, pipeline[0][_name(pipeline[0])])
        rest = pipeline[1:]
        process = await _foreign(router, req, db, rest)
        results = list(run_pipeline(iter(docs), rest, variables=variables, collator=_merge_collator(router, ns, req.cmd),
                                    process=process, db=db))
        return _serve(router, ns, await _written(write, results, variables), batch_size)
    involved = involved_collections(pipeline)
    views = await view_definitions(router, db) if involved else {}
    foreign_sharded = any(router.catalog.routing(f"{db}.{backing_of(views, db, c)}") is not None for c in involved)
    shards = _read_targets(router, req, ns, _leading_filter(pipeline))
    unsharded = router.catalog.routing(ns) is None
    if len(shards) == 1 and not foreign_sharded and (unsharded or not involved):
        results = await _whole_on(router, req, shards[0], db, pipeline)
    elif starts_with_metadata(pipeline):  # a $text $match or a $geoNear: run on the shards with needsMerge
        k = starts_with_metadata(pipeline)
        docs = []
        for shard in shards:
            docs.extend(await _aggregate_on(router, req, shard, db, target, pipeline[:k], variables, needs_merge=True))
        docs = merged_with_metadata(docs, by_distance="$geoNear" in pipeline[0])
        process = await _foreign(router, req, db, pipeline[k:], views)
        results = list(run_pipeline(iter(docs), pipeline[k:], variables=variables,
                                    collator=_merge_collator(router, ns, req.cmd), process=process, db=db))
    else:
        shard_part, merge_part = split_for_shards(pipeline)
        docs: list[dict] = []
        for shard in shards:
            docs.extend(await _aggregate_on(router, req, shard, db, target, shard_part, variables))
        process = await _foreign(router, req, db, merge_part, views)
        results = list(run_pipeline(iter(docs), merge_part, variables=variables,
                                    collator=_merge_collator(router, ns, req.cmd), process=process, db=db))
    return _serve(router, ns, await _written(write, results, variables), batch_size)


async def _cluster_stats_source(router: Router, db: str, target: Any, pipeline: list) -> list[dict] | None:
    """The documents of a leading $collStats or $shardedDataDistribution (router/cluster_coll_stats.py)."""
    spec = leading_coll_stats(pipeline, target)
    if spec is not None:
        return await cluster_coll_stats(router, db, target, spec)
    if leading_data_distribution(pipeline, db, target) is not None:
        return await sharded_data_distribution(router)
    return None


async def _foreign(router: Router, req: Request, db: str, pipeline: list, views: dict | None = None
                   ) -> InMemoryProcessInterface | None:
    """The foreign collections of a pipeline run here, gathered from the shards (None if it reads none)."""
    names = involved_collections(pipeline)
    if not names:
        return None
    if views is None:
        views = await view_definitions(router, db)
    return await gather_foreign(router, req, db, names, views)


async def _follow(router: Router, shard: str, db: str, reply: dict) -> list[dict]:
    """Every document of a shard's aggregate reply (following its cursor: a batch stops short of 16 MB)."""
    results = list(reply["cursor"]["firstBatch"])
    cid = reply["cursor"]["id"]
    while cid:
        more = await router.shard(shard).command(
            db, {"getMore": cid, "collection": reply["cursor"]["ns"].split(".", 1)[1]})
        results.extend(more["cursor"]["nextBatch"])
        cid = more["cursor"]["id"]
    return results


async def _whole_on(router: Router, req: Request, shard: str, db: str, pipeline: list) -> list[dict]:
    """The whole pipeline (its writing stage aside) run by one shard."""
    cmd = {k: v for k, v in req.cmd.items() if k not in ("$db", "$clusterTime", "$readPreference")}
    cmd["pipeline"] = pipeline
    reply = await _run_txn_aware(router, req, shard, db, {**cmd, "cursor": {"batchSize": 2**31 - 1}})
    return await _follow(router, shard, db, reply)


async def _aggregate_on(router: Router, req: Request, shard: str, db: str, coll: str, stages: list,
                        variables: dict, *, needs_merge: bool = False) -> list[dict]:
    """A shard's results for the shards' part of a split pipeline (with the router's variables;
    `needs_merge`: the documents keep their metadata, as the shards send it for a merge)."""
    let = req.cmd.get("let")
    if let is None:
        let = frozen_let({}, variables)  # ($$NOW and $$CLUSTER_TIME: the router's)
    cmd = {"aggregate": coll, "pipeline": stages, "cursor": {"batchSize": 2**31 - 1}, **_hint(req),
           **_collation_field(req), **_session_fields(req), "let": let}
    if needs_merge:
        cmd["needsMerge"] = True
    for k in ("allowDiskUse",):
        if k in req.cmd:
            cmd[k] = req.cmd[k]
    reply = await _run_txn_aware(router, req, shard, db, cmd)
    return await _follow(router, shard, db, reply)


async def _written(write, results: list[dict], variables: dict) -> list[dict]:
    """The results to return: none once a $out or $merge has written them."""
    if write is None:
        return results
    await write(strip(results), variables)
    return []
