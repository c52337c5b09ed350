"""From a command to its running plan (the server's get_executor.cpp): parse the query options, plan,
execute; what find, count, distinct, aggregate's leading `$match`, update, delete and findAndModify
call to read the documents they work on.

`find_query(ns, cmd)` validates the find command's query options (hint, min,
max, returnKey, showRecordId) with the server's errors; `execute(coll, cq,
view)` plans and runs, returning the documents and the solution (whose stages
explain reads).
"""

from __future__ import annotations

from typing import Any

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.distinct_scan import DistinctScan, distinct_plan, from_query_plan
from mongosim.shardsim.index_access_method import IndexAccessMethod
from mongosim.shardsim.plan_executor import Count, ExecContext, PlanStage, view_changes
from mongosim.shardsim.query.extensions_callback import NEAR_OPS, check_pipeline, mentions, near_not_allowed
from mongosim.shardsim.query.idl_errors import wrong_type
from mongosim.shardsim.query.matcher import Matcher
from mongosim.shardsim.canonical_query import CanonicalQuery, check_hint
from mongosim.shardsim.query_planner import IndexPlan, Solution, hinted_index, plan_query


def _obj_arg(cmd: dict, name: str) -> dict | None:
    v = cmd.get(name)
    if v is None:
        return None
    if not isinstance(v, dict):
        raise wrong_type(f"FindCommandRequest.{name}", v, "object")
    return v or None


def _bool_arg(cmd: dict, name: str) -> bool:
    v = cmd.get(name, False)
    if not isinstance(v, bool):
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return bool(v)
        raise wrong_type(f"FindCommandRequest.{name}", v, ("bool", "long", "int", "decimal", "double"))
    return v


def find_query(ns: str, cmd: dict, flt: dict, matcher: Matcher, *, skip: int = 0, limit: int | None = None,
               batch_size: int | None = None, variables: dict | None = None, collator=None) -> CanonicalQuery:
    """The canonical query of a find command (its options validated as the server does)."""
    hint = check_hint(cmd.get("hint"))
    mn, mx = _obj_arg(cmd, "min"), _obj_arg(cmd, "max")
    if mn and mx and list(mn) != list(mx):
        raise MongoError(51176, "min() and max() must have the same field names")
    if (mn or mx) and isinstance(hint, dict) and "$natural" in hint:
        raise MongoError("BadValue", "$natural hint cannot be used with min or max")
    proj = cmd.get("projection")
    if proj is not None and not isinstance(proj, dict):
        raise MongoError("TypeMismatch", "BSON field 'FindCommandRequest.projection' is the wrong type, expected "
                                         "type 'object'")
    sort = cmd.get("sort")
    return CanonicalQuery(ns, flt, matcher, sort=sort or None, projection=proj or None, skip=skip, limit=limit,
                          hint=hint, min=mn, max=mx, return_key=_bool_arg(cmd, "returnKey"),
                          show_record_id=_bool_arg(cmd, "showRecordId"), batch_size=batch_size, variables=variables,
                          collator=collator)


def execute(coll, cq: CanonicalQuery, view: Any = None, *, explain: bool = False) -> tuple[list, Solution, ExecContext]:
    """Plan `cq` on `coll` (as `view` sees it) and run the plan to the end."""
    return run(coll, _plan(coll, cq, view), view, explain=explain)


def _plan(coll, cq: CanonicalQuery, view: Any) -> Solution:
    sharded = coll is not None and bool(coll.shard_key)
    return plan_query(coll, cq, view_changed=view_changes(coll, view), sharded=sharded)


def run(coll, sol: Solution, view: Any = None, *, explain: bool = False) -> tuple[list, Solution, ExecContext]:
    """Run a planned query to the end (counting the index it used, unless explained)."""
    if not explain and coll is not None:
        if sol.express:
            used = [sol.root.ix.name if sol.root.ix is not None else "_id_"]
        elif sol.or_plans:
            used = [p.ix.name for p in sol.or_plans]
        else:
            used = [sol.index_plan.ix.name if sol.index_plan is not None else "$collScan"]
        # (the server's CollectionIndexUsageTracker: index accesses and collection scans)
        for name in used:
            coll.index_usage.setdefault(name, [0, None])[0] += 1
    ctx = ExecContext(coll, view, explain)
    if isinstance(sol.root, Count):
        sol.root.count(ctx)
        return [], sol, ctx
    return list(sol.root.run(ctx)), sol, ctx


def eof_at(sol: Solution, n: int) -> int | None:
    """The number of results after which the executor of a run plan reports isEOF without being asked
    again (`n`, all of them), or None when it learns it only by trying past its last one.

    The executor is at EOF when its root stage is (PlanExecutorImpl::isEOF, `eof_with_last`); a
    multi-planned query's root is the MultiPlanStage, at EOF as soon as its buffered trial results
    are handed out if the winner ended in the trial.  Plain finds run in the classic engine in 8.0
    (SBE only takes queries with a pushed-down `$group`/`$lookup`)."""
    return n if sol.trial_eof or sol.root.eof_with_last() else None


def matching(coll, flt: dict, matcher: Matcher | None, view: Any = None, *, hint: Any = None,
             limit: int | None = None, sort: dict | None = None, collator=None) -> list[dict]:
    """The documents matching `flt` (for count, distinct, writes): a plan without projection (`matcher`
    compiled with `collator`, the query's collation)."""
    if coll is None:
        return []
    cq = CanonicalQuery(coll.ns, flt, matcher or Matcher(flt, None, collator), sort=sort or None, limit=limit,
                        hint=hint, collator=collator)
    return execute(coll, cq, view)[0]


def distinct_plan_of(coll, key: str, query: dict, hint: Any, view: Any, collator) -> tuple[Solution, bool]:
    """The plan of a `distinct`: (a solution, whether it is a DISTINCT_SCAN, whose rows are the values;
    otherwise its rows are the matching documents).

    An empty query: getExecutorForSimpleDistinct (`distinct_scan.distinct_plan`; a hint restricts it to
    the hinted index).  Otherwise the query is planned, and its plan's index scan becomes a DISTINCT_SCAN
    where nothing else filters its keys (`distinct_scan.from_query_plan`).  A view with changes of its own
    (a transaction's writes) is read by the query plan, which merges them."""
    cq = CanonicalQuery(coll.ns if coll is not None else "", query, Matcher(query, None, collator), hint=hint,
                        collator=collator)
    if coll is None or view_changes(coll, view):
        return _plan(coll, cq, view), False
    if not query:
        hinted = hinted_index(coll, cq) if hint is not None else None
        if hint is None or isinstance(hinted, IndexAccessMethod):
            fast = distinct_plan(coll, key, collator, hinted)
            if fast is not None:
                return Solution(fast, index_plan=_scanned(fast)), True
        return _plan(coll, cq, view), False
    sol = _plan(coll, cq, view)
    fast = from_query_plan(sol.root, key, coll.shard_key)
    if fast is None:
        return sol, False
    return Solution(fast, index_plan=sol.index_plan), True


def _scanned(root: PlanStage) -> IndexPlan:
    """The index a DISTINCT_SCAN reads, as the plan that used it (for the index usage counters)."""
    scan = next(s for s in root.walk() if isinstance(s, DistinctScan))
    return IndexPlan(scan.ix, scan.bounds, [])


def count(coll, flt: dict, view: Any = None, *, hint: Any = None, skip: int = 0, limit: int | None = None,
          collator=None) -> int:
    if mentions(flt, NEAR_OPS):
        raise near_not_allowed()
    if coll is None:
        return 0
    cq = CanonicalQuery(coll.ns, flt, Matcher(flt, None, collator), skip=skip, limit=limit, hint=hint, count=True,
                        collator=collator)
    _docs, sol, _ctx = execute(coll, cq, view)
    return sol.root.n_counted


def pipeline_query(coll, ns: str, pipeline: list, hint: Any, variables: dict | None = None, collator=None
                   ) -> tuple[CanonicalQuery | None, list]:
    """The query layer's part of a pipeline (its leading `$match`, then `$sort`, then `$limit`, and the
    `hint`) as a canonical query, and the stages left; None when a plain collection scan feeds it."""
    hint = check_hint(hint)
    check_pipeline(pipeline)
    k = 0
    flt: dict = {}
    sort = None
    limit = None
    matches = []
    while k < len(pipeline) and _only(pipeline[k], "$match") and isinstance(pipeline[k]["$match"], dict):
        matches.append(pipeline[k]["$match"])  # (adjacent $match stages coalesce, as the server's optimizer does)
        k += 1
    if matches:
        flt = matches[0] if len(matches) == 1 else {"$and": matches}
    if k < len(pipeline) and _only(pipeline[k], "$sort") and isinstance(pipeline[k]["$sort"], dict):
        sort = pipeline[k]["$sort"]
        k += 1
        if k < len(pipeline) and _only(pipeline[k], "$limit") and type(pipeline[k]["$limit"]) is int \
                and pipeline[k]["$limit"] > 0:
            limit = pipeline[k]["$limit"]
            k += 1
    if not flt and sort is None and hint is None:
        return None, pipeline
    cq = CanonicalQuery(ns, flt, Matcher(flt, variables, collator), sort=sort, limit=limit, hint=hint,
                        variables=variables, collator=collator)
    cq.want_text_score = cq.text is not None  # (later stages may read it)
    return cq, pipeline[k:]


def _only(stage: Any, name: str) -> bool:
    return isinstance(stage, dict) and len(stage) == 1 and name in stage
