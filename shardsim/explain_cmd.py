"""`explain` on a node: how a find, count, distinct, aggregate, update, delete or findAndModify would run.

`{explain: <command>, verbosity}` (default `allPlansExecution`) plans the
command without running its effect and answers in the server's shape
(explain.cpp, plan_explainer_impl.cpp):

- `queryPlanner`: `namespace`, `parsedQuery`, the flags, `winningPlan` (the
  stage tree: IXSCAN / FETCH / COLLSCAN / SORT / PROJECTION_* / SKIP / LIMIT /
  COUNT / COUNT_SCAN / EXPRESS_IXSCAN / EOF, with `indexName`, `keyPattern`,
  `isMultiKey`, `multiKeyPaths`, `direction`, `indexBounds`...) and the
  `rejectedPlans`;
- `executionStats` (verbosity executionStats and up): the winning plan run to
  the end — `nReturned`, `executionTimeMillis`, `totalKeysExamined`,
  `totalDocsExamined`, and `executionStages` (the tree with each stage's
  counters); writes are only simulated (`nWouldModify`, `nWouldDelete`);
- `allPlansExecution`: every candidate run the same way, with its score;
- then `queryShapeHash`, `command`, `serverInfo`, `serverParameters`.

An aggregate explains as a find when its whole pipeline runs in the query layer
(a `$match`, `$sort`, `$limit` prefix); otherwise as `stages`, the first being
`$cursor` (the query layer's part).  The legacy `aggregate` with `explain:
true` is verbosity queryPlanner.  A change-stream aggregate keeps its own
explain (`shardsim.changestream`).
"""

from __future__ import annotations

import hashlib
import time
from typing import TYPE_CHECKING, Any

from mongosim.oplog import bsonutil
from mongosim.oplog.errors import MongoError
from mongosim.shardsim import get_executor, plan_ranker, views
from mongosim.shardsim.build_info import GIT_VERSION, SERVER_VERSION
from mongosim.shardsim.collation import command_collator
from mongosim.shardsim.command_registry import command
from mongosim.shardsim.create_collection import check_namespace
from mongosim.shardsim.operation_context import OpCtx
from mongosim.shardsim.query.stage_registry import desugared
from mongosim.shardsim.plan_executor import Count, ExecContext, PlanStage, summary, view_changes, winning_plan
from mongosim.shardsim.query.matcher import Matcher
from mongosim.shardsim.timeseries_predicates import pushdown
from mongosim.shardsim.canonical_query import CanonicalQuery, check_hint, parsed_query
from mongosim.shardsim.query_planner import Solution, plan_query
from mongosim.shardsim.reads import int_arg

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

VERBOSITIES = ("queryPlanner", "executionStats", "allPlansExecution")
SERVER_PARAMETERS = {
    "internalQueryFacetBufferSizeBytes": 104857600,
    "internalQueryFacetMaxOutputDocSizeBytes": 104857600,
    "internalLookupStageIntermediateDocumentMaxSizeBytes": 104857600,
    "internalDocumentSourceGroupMaxMemoryBytes": 104857600,
    "internalQueryMaxBlockingSortMemoryUsageBytes": 104857600,
    "internalQueryProhibitBlockingMergeOnMongoS": 0,
    "internalQueryMaxAddToSetBytes": 104857600,
    "internalDocumentSourceSetWindowFieldsMaxMemoryBytes": 104857600,
    "internalQueryFrameworkControl": "trySbeRestricted",
    "internalQueryPlannerIgnoreIndexWithCollationForRegex": 1,
}
EXPLAINABLE = ("find", "count", "distinct", "aggregate", "update", "delete", "findAndModify", "findandmodify")


def parse_explain(cmd: dict) -> tuple[dict, str]:
    """(the explained command, the verbosity) of an explain command, checked as the server does."""
    inner = cmd.get("explain")
    if not isinstance(inner, dict):
        raise MongoError("FailedToParse", "explain command requires a nested object")
    if not inner:
        raise MongoError("FailedToParse", "Explain failed due to unknown command: ")
    verbosity = cmd.get("verbosity", "allPlansExecution")
    if not isinstance(verbosity, str) or verbosity not in VERBOSITIES:
        raise MongoError("FailedToParse", "verbosity string must be one of {'queryPlanner', 'executionStats', "
                                          "'allPlansExecution'}")
    name = next(iter(inner))
    if name not in EXPLAINABLE:
        from mongosim.shardsim.command_registry import COMMANDS

        if name in COMMANDS or name in ("insert", "create", "drop"):
            raise MongoError("IllegalOperation", f"Cannot explain cmd: {name}")
        raise MongoError("CommandNotFound", f"Explain failed due to unknown command: {name}")
    return inner, verbosity


def server_info(host: str) -> dict:
    h, _, port = host.rpartition(":")
    return {"host": h or host, "port": int(port) if port.isdigit() else 27017, "version": SERVER_VERSION,
            "gitVersion": GIT_VERSION}


def _hash_hex(obj: Any, n: int) -> str:
    return hashlib.sha256(bsonutil.encode({"s": _shape(obj)})).hexdigest().upper()[:n]


def _shape(v: Any) -> Any:
    """A query's shape: its structure with every literal replaced by its type."""
    if isinstance(v, dict):
        return {k: _shape(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_shape(x) for x in v]
    return type(v).__name__


# -- the planner's part -------------------------------------------------------------------------
def planner_info(ns: str, cq: CanonicalQuery, sol: Solution) -> dict:
    qp: dict[str, Any] = {"namespace": ns, "parsedQuery": parsed_query(cq.filter, cq.text_shown)}
    if cq.collator is not None:
        qp["collation"] = dict(cq.collator.spec)
    qp["indexFilterSet"] = False
    if not sol.express:
        shape = {"filter": cq.filter, "sort": cq.sort, "projection": cq.projection}
        qp["queryHash"] = _hash_hex(shape, 8)
        qp["planCacheKey"] = _hash_hex({"k": shape, "plan": "cache"}, 8)
    qp["optimizationTimeMillis"] = 0
    qp["maxIndexedOrSolutionsReached"] = False
    qp["maxIndexedAndSolutionsReached"] = False
    qp["maxScansToExplodeReached"] = False
    qp["prunedSimilarIndexes"] = False
    qp["winningPlan"] = winning_plan(sol.root)
    qp["rejectedPlans"] = [winning_plan(r) for r in sol.rejected]
    return qp


def _score(root: PlanStage) -> float:
    """The multi-planner's score of a plan that has run (`plan_ranker.score`)."""
    works = root.advanced + root.need_time + (1 if root.eof else 0)
    return plan_ranker.score(root.advanced, works, root.eof, {s.stage for s in root.walk()})


def _run(root: PlanStage, ctx: ExecContext) -> None:
    if isinstance(root, Count):
        root.count(ctx)
    else:
        for _ in root.run(ctx):
            pass


def _plan_execution(r: PlanStage, score: float) -> dict:
    """One candidate's entry of allPlansExecution."""
    rs = summary(r)
    return {"nReturned": rs["nReturned"], "executionTimeMillisEstimate": 0, "totalKeysExamined": rs["totalKeysExamined"],
            "totalDocsExamined": rs["totalDocsExamined"], "score": score, "executionStages": winning_plan(r, True)}


def execution_info(sol: Solution, ctx_factory, verbosity: str, millis: int, extra_root: Any = None) -> dict:
    """executionStats (and allPlansExecution): the winning plan has run; the multi-planner's candidates
    show their trial (the others — an `$or`'s, a count's — run now)."""
    root = sol.root
    s = summary(root)
    es: dict[str, Any] = {"executionSuccess": True, "nReturned": s["nReturned"], "executionTimeMillis": millis,
                          "totalKeysExamined": s["totalKeysExamined"], "totalDocsExamined": s["totalDocsExamined"],
                          "executionStages": winning_plan(root, True) if extra_root is None else extra_root}
    if verbosity == "allPlansExecution":
        plans = []
        if sol.trial is not None:  # the multi-planner's candidates: their trial's counters and scores
            plans = [_plan_execution(r, score) for r, score in sol.trial()]
        elif sol.rejected:
            for r in [root, *sol.rejected]:
                if r is not root:
                    _run(r, ctx_factory())
                plans.append(_plan_execution(r, _score(r)))
        es["allPlansExecution"] = plans
    return es


def explain_query(node: Node, ctx: OpCtx, ns: str, coll, cq: CanonicalQuery, verbosity: str,
                  wrap=None, sol: Solution | None = None) -> dict:
    """queryPlanner (+ executionStats) of one planned query (`sol`: planned already); `wrap(root_explain,
    stats)` adds a write stage."""
    t0 = time.perf_counter()
    sharded = coll is not None and bool(coll.shard_key)
    if sol is None:
        sol = plan_query(coll, cq, view_changed=view_changes(coll, ctx.view), sharded=sharded)
    out: dict[str, Any] = {"explainVersion": "1", "queryPlanner": planner_info(ns, cq, sol)}
    if wrap is not None:
        out["queryPlanner"]["winningPlan"] = wrap(out["queryPlanner"]["winningPlan"], False, None)
    if verbosity != "queryPlanner":
        ectx = ExecContext(coll, ctx.view, explain=True)
        _run(sol.root, ectx)
        millis = int((time.perf_counter() - t0) * 1000)
        es = execution_info(sol, lambda: ExecContext(coll, ctx.view, explain=True), verbosity, millis)
        if wrap is not None:
            es["executionStages"] = wrap(es["executionStages"], True, sol)
        out["executionStats"] = es
    return out


def _finish(out: dict, node: Node, db: str, inner: dict) -> dict:
    out["queryShapeHash"] = _hash_hex({"cmd": {k: v for k, v in inner.items() if k not in ("lsid", "$db")}}, 64)
    out["command"] = {**inner, "$db": db}
    out["serverInfo"] = server_info(node.host)
    out["serverParameters"] = dict(SERVER_PARAMETERS)
    out["ok"] = 1.0
    return out


# -- the commands ---------------------------------------------------------------------------------
def _variables(node: Node, ctx: OpCtx, inner: dict) -> dict:
    """The explained command's variables (its `let`, $$NOW...)."""
    from mongosim.shardsim.query.variables import for_command

    return for_command(node, OpCtx(ctx.db, inner, from_router=ctx.from_router))


def _find(node: Node, ctx: OpCtx, inner: dict, verbosity: str) -> dict:
    name = check_namespace(ctx.db, inner["find"])
    flt = inner.get("filter") or {}
    if not isinstance(flt, dict):
        raise MongoError("TypeMismatch", "BSON field 'FindCommandRequest.filter' is the wrong type, expected type 'object'")
    variables = _variables(node, ctx, inner)
    collator = command_collator(inner.get("collation"), node.catalog.collection(ctx.db, name), "find.collation")
    matcher = Matcher(flt, variables, collator)
    skip = int_arg(inner, "skip", "find", 0) or 0
    limit = int_arg(inner, "limit", "find", None, allow_negative=True)
    if limit is not None and limit < 0:  # (legacy hard limit: singleBatch)
        limit = -limit
    ns = f"{ctx.db}.{name}"
    cq = get_executor.find_query(ns, inner, flt, matcher, skip=skip, limit=limit,
                                 batch_size=int_arg(inner, "batchSize", "find", None), variables=variables,
                                 collator=collator)
    return explain_query(node, ctx, ns, node.catalog.collection(ctx.db, name), cq, verbosity)


def _count(node: Node, ctx: OpCtx, inner: dict, verbosity: str) -> dict:
    name = check_namespace(ctx.db, inner["count"])
    q = inner.get("query") or {}
    if not isinstance(q, dict):
        raise MongoError("TypeMismatch", "BSON field 'count.query' is the wrong type, expected type 'object'")
    ns = f"{ctx.db}.{name}"
    coll = node.catalog.collection(ctx.db, name)
    skip = int_arg(inner, "skip", "count", 0) or 0
    limit = int_arg(inner, "limit", "count", None, allow_negative=True)
    hint = check_hint(inner.get("hint"))
    if coll is not None and not q and hint is None and ctx.view is None:
        n = max(len(coll) - skip, 0)
        if limit:
            n = min(n, abs(limit))
        plan = {"stage": "RECORD_STORE_FAST_COUNT"}
        out: dict[str, Any] = {"explainVersion": "1", "queryPlanner": {
            "namespace": ns, "parsedQuery": {}, "indexFilterSet": False, "optimizationTimeMillis": 0,
            "maxIndexedOrSolutionsReached": False, "maxIndexedAndSolutionsReached": False,
            "maxScansToExplodeReached": False, "prunedSimilarIndexes": False,
            "winningPlan": {"isCached": False, **plan}, "rejectedPlans": []}}
        if verbosity != "queryPlanner":
            out["executionStats"] = {
                "executionSuccess": True, "nReturned": 0, "executionTimeMillis": 0, "totalKeysExamined": 0,
                "totalDocsExamined": 0, "executionStages": {
                    "isCached": False, "stage": "RECORD_STORE_FAST_COUNT", "nReturned": 0,
                    "executionTimeMillisEstimate": 0, "works": 1, "advanced": 0, "needTime": 0, "needYield": 0,
                    "saveState": 0, "restoreState": 0, "isEOF": 1, "nCounted": n, "nSkipped": min(skip, len(coll))}}
            if verbosity == "allPlansExecution":
                out["executionStats"]["allPlansExecution"] = []
        return out
    collator = command_collator(inner.get("collation"), coll, "count.collation")
    cq = CanonicalQuery(ns, q, Matcher(q, None, collator), skip=skip, limit=limit, hint=hint, count=True,
                        collator=collator)
    return explain_query(node, ctx, ns, coll, cq, verbosity)


def _distinct(node: Node, ctx: OpCtx, inner: dict, verbosity: str) -> dict:
    name = check_namespace(ctx.db, inner["distinct"])
    if not isinstance(inner.get("key"), str):
        raise MongoError("FailedToParse", "BSON field 'distinct.key' is missing but a required field")
    q = inner.get("query") or {}
    if not isinstance(q, dict):
        raise MongoError("TypeMismatch", "BSON field 'distinct.query' is the wrong type, expected type 'object'")
    ns = f"{ctx.db}.{name}"
    coll = node.catalog.collection(ctx.db, name)
    collator = command_collator(inner.get("collation"), coll, "distinct.collation")
    cq = CanonicalQuery(ns, q, Matcher(q, None, collator), hint=check_hint(inner.get("hint")), collator=collator)
    sol, _fast = get_executor.distinct_plan_of(coll, inner["key"], q, cq.hint, ctx.view, collator)
    return explain_query(node, ctx, ns, coll, cq, verbosity, sol=sol)


def _write_stage(kind: str, counters) -> Any:
    """Wrap a plan in the UPDATE/DELETE stage (EXPRESS_UPDATE/EXPRESS_DELETE for an `_id` lookup)."""

    def wrap(plan: dict, stats: bool, sol: Solution | None) -> dict:
        if plan.get("stage") == "EXPRESS_IXSCAN":
            out = {"isCached": False, "stage": f"EXPRESS_{kind}", "keyPattern": plan["keyPattern"],
                   "indexName": plan["indexName"]}
            if stats:
                out["nReturned"] = 0
                out["executionTimeMillisEstimate"] = 0
                out["keysExamined"] = plan.get("keysExamined", 0)
                out["docsExamined"] = plan.get("docsExamined", 0)
                out.update(counters(sol))
            return out
        inner = {k: v for k, v in plan.items() if k != "isCached"}
        out = {"isCached": False, "stage": kind}
        if stats:
            out.update({"nReturned": 0, "executionTimeMillisEstimate": 0, "works": inner.get("works", 1) + 1,
                        "advanced": 0, "needTime": inner.get("advanced", 0), "needYield": 0, "saveState": 0,
                        "restoreState": 0, "isEOF": 1})
            out.update(counters(sol))
        out["inputStage"] = inner
        return out

    return wrap


def _matched(sol: Solution | None) -> int:
    return sol.root.advanced if sol is not None else 0


def _update_one(node: Node, ctx: OpCtx, ns: str, coll, q: dict, multi: bool, upsert: bool, hint, sort,
                verbosity: str, variables: dict | None = None, collation: Any = None) -> dict:
    collator = command_collator(collation, coll)
    cq = CanonicalQuery(ns, q, Matcher(q, variables, collator), hint=check_hint(hint), limit=None if multi else 1,
                        sort=sort or None, collator=collator)

    def counters(sol):
        n = _matched(sol)
        return {"nMatched": n, "nWouldModify": n, "nWouldUpsert": 1 if (upsert and n == 0) else 0}

    return explain_query(node, ctx, ns, coll, cq, verbosity, wrap=_write_stage("UPDATE", counters))


def _delete_one(node: Node, ctx: OpCtx, ns: str, coll, q: dict, multi: bool, hint, sort, verbosity: str,
                variables: dict | None = None, collation: Any = None) -> dict:
    collator = command_collator(collation, coll)
    cq = CanonicalQuery(ns, q, Matcher(q, variables, collator), hint=check_hint(hint), limit=None if multi else 1,
                        sort=sort or None, collator=collator)
    return explain_query(node, ctx, ns, coll, cq, verbosity,
                         wrap=_write_stage("DELETE", lambda sol: {"nWouldDelete": _matched(sol)}))


def _single_statement(inner: dict, field: str) -> dict:
    stmts = inner.get(field)
    if not isinstance(stmts, list) or len(stmts) != 1:
        raise MongoError("InvalidLength", "explained write batches must be of size 1")
    if not isinstance(stmts[0], dict):
        raise MongoError("TypeMismatch", f"BSON field '{field}' element must be an object")
    return stmts[0]


def _update(node: Node, ctx: OpCtx, inner: dict, verbosity: str) -> dict:
    name = check_namespace(ctx.db, inner["update"])
    st = _single_statement(inner, "updates")
    q = st.get("q") or {}
    return _update_one(node, ctx, f"{ctx.db}.{name}", node.catalog.collection(ctx.db, name), q,
                       bool(st.get("multi")), bool(st.get("upsert")), st.get("hint"), st.get("sort"), verbosity,
                       _variables(node, ctx, inner), st.get("collation"))


def _delete(node: Node, ctx: OpCtx, inner: dict, verbosity: str) -> dict:
    name = check_namespace(ctx.db, inner["delete"])
    st = _single_statement(inner, "deletes")
    q = st.get("q") or {}
    return _delete_one(node, ctx, f"{ctx.db}.{name}", node.catalog.collection(ctx.db, name), q,
                       st.get("limit", 0) == 0, st.get("hint"), None, verbosity, _variables(node, ctx, inner),
                       st.get("collation"))


def _find_and_modify(node: Node, ctx: OpCtx, inner: dict, verbosity: str) -> dict:
    first = next(iter(inner))
    name = check_namespace(ctx.db, inner[first])
    q = inner.get("query") or {}
    ns = f"{ctx.db}.{name}"
    coll = node.catalog.collection(ctx.db, name)
    variables = _variables(node, ctx, inner)
    if inner.get("remove"):
        return _delete_one(node, ctx, ns, coll, q, False, inner.get("hint"), inner.get("sort"), verbosity, variables,
                           inner.get("collation"))
    return _update_one(node, ctx, ns, coll, q, False, bool(inner.get("upsert")), inner.get("hint"),
                       inner.get("sort"), verbosity, variables, inner.get("collation"))


def explain_aggregate(node: Node, ctx: OpCtx, inner: dict, verbosity: str) -> dict:
    target = inner["aggregate"]
    pipeline = inner.get("pipeline")
    if not isinstance(pipeline, list):
        raise MongoError("TypeMismatch", "'pipeline' option must be specified as an array")
    if target == 1:
        return {"explainVersion": "1", "stages": list(pipeline)}
    name = check_namespace(ctx.db, target)
    ns = f"{ctx.db}.{name}"
    coll = node.catalog.collection(ctx.db, name)
    variables = _variables(node, ctx, inner)
    collator = command_collator(inner.get("collation"), coll, "aggregate.collation")
    if pipeline and isinstance(pipeline[0], dict) and "$_internalUnpackBucket" in pipeline[0]:
        pipeline = pushdown(pipeline, coll.options.get("collation") if coll is not None else None, collator)
    cq, rest = get_executor.pipeline_query(coll, ns, pipeline, inner.get("hint"), variables, collator)
    cq, pushed = _push_desugared_sort(coll, ns, inner.get("hint"), variables, collator, pipeline, cq, rest)
    if cq is None:
        cq = CanonicalQuery(ns, {}, Matcher({}), collator=collator)
    from mongosim.shardsim.mongod_process_interface import MongodProcessInterface
    from mongosim.shardsim.query.stages import run_pipeline

    for st in rest:  # (validated as the aggregate would validate them)
        if not isinstance(st, dict) or len(st) != 1:
            raise MongoError(40323, "A pipeline stage specification object must contain exactly one field.")
    if not rest:
        return explain_query(node, ctx, ns, coll, cq, verbosity)
    cursor = explain_query(node, ctx, ns, coll, cq, verbosity)
    cursor.pop("explainVersion", None)
    stages: list[dict] = [{"$cursor": cursor}]
    if verbosity != "queryPlanner":
        docs = get_executor.execute(coll, cq, ctx.view)[0] if coll is not None else []
        for st in rest:
            if not ({"$out", "$merge"} & set(st)):  # (an explained $out or $merge writes nothing)
                docs = list(run_pipeline(iter(docs), [st], variables=variables, collator=collator,
                                         process=MongodProcessInterface(node, ctx), db=ctx.db))
            parts = desugared([st])  # ($setWindowFields, $densify, $fill: the stages they become)
            if pushed and st is rest[0]:
                parts = parts[1:]
            for part in parts:
                stages.append({**part, "nReturned": len(docs), "executionTimeMillisEstimate": 0})
    else:
        stages.extend(desugared(rest)[1 if pushed else 0:])
    return {"explainVersion": "1", "stages": stages}


def _push_desugared_sort(coll, ns: str, hint, variables, collator, pipeline: list, cq, rest: list):
    """The `$sort` a leading $setWindowFields/$densify/$fill desugars into, pushed into the query layer
    as the server's optimizer does (after the query layer's $match, when it has no sort or limit of its
    own): (the query with that sort, whether it was pushed)."""
    if not rest or (cq is not None and (cq.sort or cq.limit)):
        return cq, False
    first = desugared(rest[:1])
    if first == rest[:1] or not isinstance(first[0].get("$sort"), dict) or "sortKey" not in first[0]["$sort"]:
        return cq, False
    prefix = pipeline[: len(pipeline) - len(rest)]
    pushed, _ = get_executor.pipeline_query(coll, ns, [*prefix, {"$sort": first[0]["$sort"]["sortKey"]}], hint,
                                            variables, collator)
    return pushed, True


_EXPLAINERS = {
    "find": _find, "count": _count, "distinct": _distinct, "aggregate": explain_aggregate,
    "update": _update, "delete": _delete, "findAndModify": _find_and_modify, "findandmodify": _find_and_modify,
}


@command("explain")
async def cmd_explain(node: Node, ctx: OpCtx) -> dict:
    inner, verbosity = parse_explain(ctx.cmd)
    name = next(iter(inner))
    if name == "aggregate":
        p = inner.get("pipeline")
        if isinstance(p, list) and p and isinstance(p[0], dict) and "$changeStream" in p[0]:
            from mongosim.shardsim.changestream.aggregate import open_change_stream

            sub = OpCtx(ctx.db, {**inner, "explain": True, **{k: ctx.cmd[k] for k in ("$_needsMerge",) if k in ctx.cmd}},
                        from_router=ctx.from_router)
            return await open_change_stream(node, sub)
    as_view = views.as_aggregate(node, ctx, name, inner)
    if as_view is not None:  # a read on a view explains as the aggregate on its backing collection
        return _finish(explain_aggregate(node, ctx, as_view, verbosity), node, ctx.db, inner)
    out = _EXPLAINERS[name](node, ctx, inner, verbosity)
    return _finish(out, node, ctx.db, inner)


