"""mapReduce on a node, run by the script engine (shardsim.javascript).

The command is parsed as MapReduceCommandRequest: `map`, `reduce` and `out`
are required; `out` is `{inline: 1}`, a collection name, or `{replace | merge
| reduce: <coll>, db?}`.  The run, as 8.0's aggregation rewrite of it
(map_reduce_agg: a `$_internalJsEmit` projection, a `$group` whose
accumulator is `$_internalJsReduce`, then finalize and `$out`/`$merge`):

1. the input: the documents matching `query`, in `sort` order, at most `limit`
   (a shard reading for mongos keeps only the documents it owns);
2. map, with `this` the document; each `emit(key, value)` is kept as BSON and
   grouped by key (BSON equality: 1 and 1.0 are one key);
3. reduce(key, values) for every key — even one with a single value, as the
   accumulator does — passing the values last-emitted first; a group too
   large for one call would be reduced again with the partial result (the
   re-reduce the server may do, and mongos does with the shards' results);
4. finalize(key, value) when given; `scope` variables are globals of every
   function;
5. the results `{_id: key, value}` sorted by `_id`; out inline in the reply,
   else written: `replace` as a `$out`, `merge` as a `$merge` replacing by
   `_id`, `reduce` as a merge of reduce(key, [existing value, new value]).

The reply: `{results: [...]}` inline, else `{result: <coll>}` (`{result:
{db, collection}}` when `out` names a database).  Errors in the scripts are
139 JSInterpreterFailure (shardsim.javascript.engine); whatever fails once the
run has started reads "MapReduce internal error :: caused by :: ...", as the
server adds that context.  A view is refused (166).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterable

from bson import Code

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.command_registry import command
from mongosim.shardsim.create_collection import check_namespace, ensure_collection
from mongosim.shardsim.generic_args import GENERIC_ARGUMENTS
from mongosim.shardsim.javascript.engine import ScriptEngine
from mongosim.shardsim.javascript.values import UNDEFINED, NativeFunction, to_bson
from mongosim.shardsim.operation_context import OpCtx
from mongosim.shardsim.query.matcher import Matcher
from mongosim.shardsim.query.values import hashable, sort_key
from mongosim.shardsim.reads import output_writer
from mongosim.shardsim.view_catalog import resolve
from mongosim.shardsim.writes import matching_documents

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

# the command's own fields, and the generic arguments every command takes (mongos's among them)
FIELDS = frozenset({"mapReduce", "mapreduce", "map", "reduce", "out", "query", "sort", "limit", "finalize", "scope",
                    "jsMode", "verbose", "bypassDocumentValidation", "collation", "$_reduced"}) | GENERIC_ARGUMENTS
OUT_MODES = ("inline", "replace", "merge", "reduce")
REDUCE_BATCH = 1000  # values per reduce call; a larger group is reduced again with the partial result


def parse(cmd: dict) -> tuple[str | None, str | None, str]:
    """(output db or None, output collection or None for inline, mode)."""
    for key in cmd:
        if key not in FIELDS:
            raise MongoError(40415, f"BSON field 'MapReduceCommandRequest.{key}' is an unknown field.")
    for key in ("map", "reduce", "out"):
        if key not in cmd:
            raise MongoError(40414, f"BSON field 'MapReduceCommandRequest.{key}' is missing but a required field")
    for key in ("map", "reduce", "finalize"):
        if key in cmd and not isinstance(cmd[key], (str, Code)) and not (key == "finalize" and cmd[key] is None):
            raise MongoError("TypeMismatch", f"BSON field 'MapReduceCommandRequest.{key}' is the wrong type, "
                                             "expected types '[javascript, string]'")
    if "query" in cmd and not isinstance(cmd["query"], dict):
        raise MongoError("TypeMismatch", "BSON field 'MapReduceCommandRequest.query' is the wrong type, expected "
                                         "type 'object'")
    if cmd.get("scope") is not None and not isinstance(cmd["scope"], dict):
        raise MongoError("TypeMismatch", "BSON field 'MapReduceCommandRequest.scope' is the wrong type, expected "
                                         "type 'object'")
    out = cmd["out"]
    if isinstance(out, str):
        return None, out, "replace"
    if not isinstance(out, dict):
        raise MongoError("TypeMismatch", "'out' must be either a string or an object")
    modes = [m for m in OUT_MODES if m in out]
    if len(modes) != 1:
        raise MongoError("BadValue", "'out' requires exactly one of 'inline', 'replace', 'merge' or 'reduce'")
    mode = modes[0]
    if mode == "inline":
        return None, None, mode
    if not isinstance(out[mode], str):
        raise MongoError("TypeMismatch", f"'out.{mode}' must be a string")
    db = out.get("db")
    if db is not None and not isinstance(db, str):
        raise MongoError("TypeMismatch", "'out.db' must be a string")
    return db, out[mode], mode


def engine_for(cmd: dict) -> ScriptEngine:
    """The command's script scope: its `scope` as globals (bounded by the command's maxTimeMS, as every run)."""
    return ScriptEngine(cmd.get("scope") or {})


def map_phase(eng: ScriptEngine, map_src, docs: Iterable[dict]) -> dict:
    """Run map over the documents: {hashable key: (key, [values in emit order])}."""
    groups: dict = {}

    def emit(interp, this, args):
        key = to_bson(args[0] if args else UNDEFINED)
        value = to_bson(args[1] if len(args) > 1 else UNDEFINED)
        h = hashable(key)
        g = groups.get(h)
        if g is None:
            groups[h] = (key, [value])
        else:
            g[1].append(value)
        return UNDEFINED

    eng.set_global("emit", NativeFunction(emit, "emit"))
    fn = eng.function(map_src)
    for doc in docs:
        eng.call_js(fn, [], eng.to_js(doc))
    return groups


def reduce_values(eng: ScriptEngine, reduce_src, key, values: list):
    """The group's values reduced to one (AccumulatorInternalJsReduce::getValue: last value first)."""
    fn = eng.function(reduce_src)
    pending = list(values)
    while True:
        batch = pending[-REDUCE_BATCH:][::-1]
        del pending[-REDUCE_BATCH:]
        result = eng.call(fn, [key, batch])
        if not pending:
            return result
        pending.append(result)


def finish(eng: ScriptEngine, cmd: dict, groups: dict, finalize: bool = True) -> list[dict]:
    """Reduce (and finalize) each group: the result documents, sorted by _id."""
    out = []
    fin = eng.function(cmd["finalize"]) if finalize and cmd.get("finalize") is not None else None
    for key, values in groups.values():
        value = reduce_values(eng, cmd["reduce"], key, values)
        if fin is not None:
            value = eng.call(fin, [key, value])
        out.append({"_id": key, "value": value})
    out.sort(key=lambda d: sort_key(d["_id"]))
    return out


def reduce_into_existing(eng: ScriptEngine, cmd: dict, results: list[dict], existing: dict) -> list[dict]:
    """`out: {reduce}`: a result whose _id is in the target already is reduce(key, [old value, new value])."""
    merged = []
    for doc in results:
        old = existing.get(hashable(doc["_id"]))
        if old is not None:
            value = eng.call(eng.function(cmd["reduce"]), [doc["_id"], [old.get("value"), doc["value"]]])
            doc = {"_id": doc["_id"], "value": value}
        merged.append(doc)
    return merged


def output_stage(mode: str, db: str, coll: str) -> tuple[str, dict]:
    """The aggregation stage that writes mapReduce's results (replace: $out; merge and reduce: $merge by _id)."""
    if mode == "replace":
        return "$out", {"db": db, "coll": coll}
    return "$merge", {"into": {"db": db, "coll": coll}, "on": "_id", "whenMatched": "replace",
                      "whenNotMatched": "insert"}


def input_documents(node: Node, ctx: OpCtx, name: str) -> list[dict]:
    cmd = ctx.cmd
    q = cmd.get("query") or {}
    coll = node.catalog.collection(ctx.db, name)
    sort = cmd.get("sort") or None
    docs = list(matching_documents(coll, q, Matcher(q), ctx.view, sort=sort))
    if coll is not None and coll.shard_key and ctx.from_router and node.owns is not None:
        docs = [d for d in docs if node.owns(coll.ns, d)]  # (no orphans: the shard's filtering)
    limit = cmd.get("limit")
    return docs[: int(limit)] if limit else docs


def reply_for(db: str, out_db: str | None, out_coll: str | None, results: list) -> dict:
    if out_coll is None:
        return {"results": results, "ok": 1.0}
    if out_db is not None:
        return {"result": {"db": out_db, "collection": out_coll}, "ok": 1.0}
    return {"result": out_coll, "ok": 1.0}


@command("mapReduce", "mapreduce")
async def cmd_map_reduce(node: Node, ctx: OpCtx) -> dict:
    first = next(iter(ctx.cmd))
    if "$_reduced" in ctx.cmd and not ctx.from_router:
        raise MongoError(40415, "BSON field 'MapReduceCommandRequest.$_reduced' is an unknown field.")
    name = check_namespace(ctx.db, ctx.cmd[first])
    out_db, out_coll, mode = parse(ctx.cmd)
    if node.catalog.collection(ctx.db, name) is None and resolve(node, ctx.db, name) is not None:
        raise MongoError("CommandNotSupportedOnView", "mapReduce on a view is not supported")
    target_db = out_db or ctx.db
    if out_coll is not None:
        check_namespace(target_db, out_coll)
    with internal_error_context():
        return await _run(node, ctx, name, out_db, out_coll, mode, target_db)


@contextmanager
def internal_error_context():
    """What fails while the translated pipeline runs carries the server's context (map_reduce_agg.cpp)."""
    try:
        yield
    except MongoError as e:
        if e.errmsg.startswith(INTERNAL_ERROR):
            raise
        raise MongoError(e.code, f"{INTERNAL_ERROR} :: caused by :: {e.errmsg}") from None


INTERNAL_ERROR = "MapReduce internal error"


async def _run(node: Node, ctx: OpCtx, name: str, out_db: str | None, out_coll: str | None, mode: str,
               target_db: str) -> dict:
    docs = input_documents(node, ctx, name)
    results: list[dict] = []
    if docs:
        eng = engine_for(ctx.cmd)
        groups = map_phase(eng, ctx.cmd["map"], docs)
        # mongos asks a shard for its reduced, unfinalized values (`$_reduced`) and finalizes after merging
        results = finish(eng, ctx.cmd, groups, finalize=not ctx.cmd.get("$_reduced"))
    if out_coll is None:
        return reply_for(ctx.db, out_db, None, results)
    if mode == "reduce" and results:
        target = node.catalog.collection(target_db, out_coll)
        existing = {}
        if target is not None:
            for doc in results:
                old = target.get(doc["_id"])
                if old is not None:
                    existing[hashable(doc["_id"])] = old
        results = reduce_into_existing(engine_for(ctx.cmd), ctx.cmd, results, existing)
    ensure_collection(node, ctx, target_db, out_coll)
    if results or mode == "replace":
        write = output_writer(ctx.db, output_stage(mode, target_db, out_coll))
        await write(node, ctx, results, {})
    return reply_for(ctx.db, out_db, out_coll, [])
