"""`explain` through mongos: each targeted shard explains its part; mongos wraps their answers.

The router sends every shard the command wrapped as `{explain: <what the shard
would run>, verbosity}` (ClusterExplain::wrapAsExplain) — for a multi-shard
find, the same shard command `find` sends (skip folded into the limit) — and
builds the server's cluster explain (cluster_explain.cpp):

- find, count, distinct: `queryPlanner: {mongosPlannerVersion: 1, winningPlan:
  {stage: SINGLE_SHARD | SHARD_MERGE | SHARD_MERGE_SORT, shards: [{explainVersion,
  shardName, connectionString, serverInfo, ...the shard's queryPlanner}]}}`, and
  with execution stats the summed `nReturned`, `totalKeysExamined`,
  `totalDocsExamined` and the per-shard `executionStages`;
- update, delete, findAndModify: the same with SINGLE_SHARD or SHARD_WRITE;
- aggregate: `splitPipeline` (null when one shard runs it all) and `shards:
  {name: {host, ...the shard's explain}}`;
- a change-stream aggregate keeps its own explain (`router.merge.explain`).

Through a non-existent database the answer is the EOF plan, as mongos gives.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from mongosim.oplog.errors import MongoError
from mongosim.router.command_registry import router_command
from mongosim.router.commands_crud import targets_for_query
from mongosim.router.request import Request
from mongosim.shardsim.explain_cmd import SERVER_PARAMETERS, parse_explain, server_info
from mongosim.shardsim.canonical_query import parsed_query
from mongosim.shardsim.query.stage_registry import desugared
from mongosim.shardsim.query.stages import DOC_STAGES

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

_SESSION = ("lsid", "txnNumber", "autocommit", "startTransaction", "readConcern")
_WRITES = ("update", "delete", "findAndModify", "findandmodify")


def _query_of(name: str, inner: dict) -> dict:
    if name == "find":
        q = inner.get("filter")
    elif name in ("count", "distinct", "findAndModify", "findandmodify"):
        q = inner.get("query")
    elif name in ("update", "delete"):
        stmts = inner.get("updates" if name == "update" else "deletes")
        q = stmts[0].get("q") if isinstance(stmts, list) and stmts and isinstance(stmts[0], dict) else None
    elif name == "aggregate":
        p = inner.get("pipeline")
        q = p[0].get("$match") if isinstance(p, list) and p and isinstance(p[0], dict) else None
    else:
        q = None
    return q if isinstance(q, dict) else {}


def _shard_inner(name: str, inner: dict, n_shards: int) -> dict:
    """What mongos sends each shard to explain (the shard part of the command)."""
    cmd = {k: v for k, v in inner.items() if k not in ("$db", "$clusterTime", "$readPreference")}
    if name == "find" and n_shards > 1:
        limit, skip = cmd.pop("limit", None), cmd.pop("skip", None) or 0
        if limit:
            cmd["limit"] = abs(int(limit)) + int(skip)
    return cmd


def _stage_name(name: str, n: int, inner: dict) -> str:
    if n == 1:
        return "SINGLE_SHARD"
    if name in _WRITES:
        return "SHARD_WRITE"
    return "SHARD_MERGE_SORT" if inner.get("sort") else "SHARD_MERGE"


def _host(router: Router, shard: str) -> str:
    return f"{shard}/{router.shard(shard).node.host}"


def _mongos_tail(router: Router, out: dict, inner: dict, db: str) -> dict:
    from mongosim.shardsim.explain_cmd import _hash_hex

    out["queryShapeHash"] = _hash_hex({"cmd": {k: v for k, v in inner.items() if k not in ("lsid", "$db")}}, 64)
    out["serverInfo"] = server_info(router.identity.address)
    out["serverParameters"] = dict(SERVER_PARAMETERS)
    out["command"] = {**inner, "$db": db}
    out["ok"] = 1.0
    return out


def _eof(router: Router, ns: str, name: str, inner: dict, db: str) -> dict:
    qp = {"namespace": ns, "parsedQuery": parsed_query(_query_of(name, inner)),
          "winningPlan": {"stage": "EOF"}}
    return _mongos_tail(router, {"queryPlanner": qp}, inner, db)


async def _ask(router: Router, req: Request, shards: list[str], db: str, cmd: dict) -> dict[str, dict]:
    session = {k: req.cmd[k] for k in _SESSION if k in req.cmd}
    out = {}
    for s in shards:
        try:
            out[s] = await router.shard(s).command(db, {**cmd, **session})
        except MongoError as err:
            if err.code == 169:  # (a view: the caller explains its aggregate)
                raise
            raise MongoError(err.code, f"Explain command on shard {s} failed :: caused by :: {err.errmsg}") from None
    return out


def _plain(reply: dict) -> dict:
    return {k: v for k, v in reply.items() if k not in ("ok", "$clusterTime", "operationTime", "_opTimeKey")}


def build_explain_result(router: Router, replies: dict[str, dict], stage: str, millis: int,
                         limit: int | None, skip: int | None) -> dict:
    """ClusterExplain::buildPlannerInfo + buildExecStats."""
    shards = []
    for s, r in replies.items():
        entry: dict[str, Any] = {"explainVersion": r.get("explainVersion", "1"), "shardName": s,
                                 "connectionString": _host(router, s), "serverInfo": r.get("serverInfo", {})}
        entry.update(r["queryPlanner"])
        shards.append(entry)
    out: dict[str, Any] = {"queryPlanner": {"mongosPlannerVersion": 1, "winningPlan": {"stage": stage,
                                                                                        "shards": shards}}}
    first = next(iter(replies.values()))
    if "executionStats" not in first:
        return out
    n = keys = docs = child_ms = counted = 0
    has_counted = False
    for r in replies.values():
        es = r["executionStats"]
        n += es.get("nReturned", 0)
        keys += es.get("totalKeysExamined", 0)
        docs += es.get("totalDocsExamined", 0)
        child_ms += es.get("executionTimeMillis", 0)
        st = es.get("executionStages", {})
        if "nCounted" in st:
            counted += st["nCounted"]
            has_counted = True
    multi = len(replies) > 1
    if multi:
        if skip:
            n, counted = max(n - skip, 0), max(counted - skip, 0)
        if limit:
            n, counted = min(n, abs(limit)), min(counted, abs(limit))
    stages: dict[str, Any] = {"stage": stage, "nReturned": n}
    if has_counted:
        stages["nCounted"] = counted
    if multi and limit:
        stages["limitAmount"] = abs(limit)
    if multi and skip:
        stages["skipAmount"] = skip
    stages.update({"executionTimeMillis": millis, "totalKeysExamined": keys, "totalDocsExamined": docs,
                   "totalChildMillis": child_ms,
                   "shards": [{"shardName": s, **r["executionStats"]} for s, r in replies.items()]})
    es_out: dict[str, Any] = {"nReturned": n, "executionTimeMillis": millis, "totalKeysExamined": keys,
                              "totalDocsExamined": docs, "executionStages": stages}
    if "allPlansExecution" in first["executionStats"]:
        es_out["allPlansExecution"] = [{"shardName": s, "allPlans": r["executionStats"].get("allPlansExecution", [])}
                                       for s, r in replies.items()]
    out["executionStats"] = es_out
    return out


async def explain_aggregate(router: Router, req: Request, db: str, inner: dict, verbosity: str) -> dict:
    ns = f"{db}.{inner['aggregate']}"
    shards = targets_for_query(router, ns, _query_of("aggregate", inner))
    if not shards:
        return _eof(router, ns, "aggregate", inner, db)
    cmd = {"explain": {k: v for k, v in inner.items() if k not in ("$db", "$clusterTime", "$readPreference")},
           "verbosity": verbosity}
    replies = await _ask(router, req, shards, db, cmd)
    per_shard = {}
    for s, r in replies.items():
        body = _plain(r)
        for k in ("serverInfo", "serverParameters", "command", "queryShapeHash"):
            body.pop(k, None)
        per_shard[s] = {"host": _host(router, s), **body}
    out: dict[str, Any] = {}
    if router.catalog.routing(ns) is None:
        out["splitPipeline"] = None
    else:
        from mongosim.shardsim.get_executor import pipeline_query

        pipeline = inner.get("pipeline") or []
        cq, rest = pipeline_query(None, ns, pipeline, inner.get("hint"))
        shards_part = pipeline[: len(pipeline) - len(rest)] if cq is not None else []
        pushed, sort, rest = _desugared_sort_split(rest)
        shards_part = [*shards_part, *pushed]
        merger = [{"$mergeCursors": {**sort, "compareWholeSortKey": False, "tailableMode": "normal", "nss": ns,
                                     "allowPartialResults": False, "recordRemoteOpWaitTime": False,
                                     "requestQueryStatsFromRemotes": False}}, *rest]
        out["mergeType"] = "mongos"
        out["splitPipeline"] = {"shardsPart": shards_part, "mergerPart": merger}
    out["shards"] = per_shard
    return _mongos_tail(router, out, inner, db)


def _desugared_sort_split(rest: list) -> tuple[list, dict, list]:
    """Where the server splits a pipeline whose stages desugar ($setWindowFields, $densify, $fill):
    the document-at-a-time stages and the `$sort` they become run on the shards, the router merges
    the sorted streams (`$mergeCursors` with `sort`) and runs the rest.  (pushed, sort field, rest)."""
    stages = desugared(rest)
    if stages == rest:
        return [], {}, rest
    k = 0
    while k < len(stages) and isinstance(stages[k], dict) and len(stages[k]) == 1 and next(iter(stages[k])) in DOC_STAGES:
        k += 1
    if k < len(stages) and isinstance(stages[k].get("$sort"), dict) and "sortKey" in stages[k]["$sort"]:
        return stages[: k + 1], {"sort": stages[k]["$sort"]["sortKey"]}, stages[k + 1:]
    return [], {}, stages


@router_command("explain")
async def cmd_explain(router: Router, req: Request) -> dict:
    inner, verbosity = parse_explain(req.cmd)
    name = next(iter(inner))
    db = req.db
    if name == "aggregate":
        p = inner.get("pipeline")
        if isinstance(p, list) and p and isinstance(p[0], dict) and "$changeStream" in p[0]:
            from mongosim.router.merge.cluster_change_stream import open_cluster_change_stream

            sub = Request(db, {**inner, "explain": True, **{k: req.cmd[k] for k in _SESSION if k in req.cmd}},
                          req.conn, "aggregate")
            return await open_cluster_change_stream(router, sub)
    try:
        return await _explain(router, req, db, name, inner, verbosity)
    except MongoError as err:
        resolved = err.extra.get("resolvedView") if err.code == 169 else None
        if resolved is None:
            raise
    # a view: explain the aggregate on its backing namespace (what a read on it runs)
    from mongosim.shardsim.views import as_pipeline

    extra = list(inner.get("pipeline") or []) if name == "aggregate" else as_pipeline(name, inner)
    agg = {"aggregate": resolved["ns"].split(".", 1)[1], "pipeline": [*resolved["pipeline"], *extra], "cursor": {}}
    return await explain_aggregate(router, req, db, agg, verbosity)


async def _explain(router: Router, req: Request, db: str, name: str, inner: dict, verbosity: str) -> dict:
    if name == "aggregate":
        if not isinstance(inner.get("aggregate"), str):
            raise MongoError("InvalidNamespace", "aggregate target must be a collection name")
        return await explain_aggregate(router, req, db, inner, verbosity)
    coll = inner[name]
    if not isinstance(coll, str):
        raise MongoError("InvalidNamespace", f"collection name has invalid type {type(coll).__name__}")
    ns = f"{db}.{coll}"
    t0 = time.perf_counter()
    shards = targets_for_query(router, ns, _query_of(name, inner))
    if not shards:
        return _eof(router, ns, name, inner, db)
    cmd = {"explain": _shard_inner(name, inner, len(shards)), "verbosity": verbosity}
    replies = await _ask(router, req, shards, db, cmd)
    millis = int((time.perf_counter() - t0) * 1000)
    limit = inner.get("limit") if name in ("find", "count") else None
    skip = inner.get("skip") if name in ("find", "count") else None
    out = build_explain_result(router, replies, _stage_name(name, len(shards), inner), millis,
                               int(limit) if isinstance(limit, (int, float)) and limit else None,
                               int(skip) if isinstance(skip, (int, float)) and skip else None)
    return _mongos_tail(router, out, inner, db)
