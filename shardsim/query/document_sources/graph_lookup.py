"""$graphLookup: a breadth-first search over another collection (document_source_graph_lookup.cpp).

For each input document, `startWith` gives the first frontier (an array's elements,
each).  Level by level, the foreign documents whose `connectToField` is `$in` the
frontier (and that match `restrictSearchWithMatch`) are found; each not seen before
(by `_id`: a document without one is 40271) joins the results — with its level at
`depthField` (a long) — and its `connectFromField` values (visited as `$lookup`
visits a path) make the next frontier.  The search stops when a level finds nothing
new, or after level `maxDepth`.  A null in the frontier matches a null
`connectToField` but never a missing one (the server adds `$exists: true`) nor
undefined.  The results go in an array at `as`, in the order found.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

from bson import Int64

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.collation import hashable_for
from mongosim.shardsim.query.document_path_support import set_nested, visit_all_values_at_path
from mongosim.shardsim.query.document_sources.lookup import parse_from
from mongosim.shardsim.query.document_sources.lookup_hash_table import LookupHashTable
from mongosim.shardsim.query.document_sources.sub_pipeline import field_path
from mongosim.shardsim.query.expressions import compile_expression
from mongosim.shardsim.query.matcher import Matcher
from mongosim.shardsim.query.pipeline_context import PipelineContext
from mongosim.shardsim.query.stage_registry import register
from mongosim.shardsim.query.values import MISSING, is_number, type_name
from mongosim.shardsim.query.variables import check_references

__all__ = ["parse_graph_lookup"]

_STRING_ARGS = ("from", "as", "connectFromField", "depthField", "connectToField")


@register("$graphLookup")
def parse_graph_lookup(spec: Any, pctx: PipelineContext) -> Callable[[Iterable[dict]], Iterator[dict]]:
    if not isinstance(spec, dict):
        raise MongoError("FailedToParse", f"the $graphLookup stage specification must be an object, but found "
                                          f"{type_name(spec)}")
    args: dict[str, Any] = {}
    start_with = MISSING
    max_depth = None
    restrict = None
    for name, arg in spec.items():
        if name == "startWith":
            if pctx.checked:
                check_references(arg, pctx.variables or {})
            start_with = compile_expression(arg)
            continue
        if name == "maxDepth":
            if not is_number(arg) or isinstance(arg, bool):
                raise MongoError(40100, f"maxDepth must be numeric, found type: {type_name(arg)}")
            f = float(arg.to_decimal()) if type(arg).__name__ == "Decimal128" else float(arg)
            d = int(f) if f == f and abs(f) != float("inf") else 0
            if d < 0:
                raise MongoError(40101, f"maxDepth requires a nonnegative argument, found: {d}")
            if d != f:
                raise MongoError(40102, f"maxDepth could not be represented as a long long: {d}")
            max_depth = d
            continue
        if name == "restrictSearchWithMatch":
            if not isinstance(arg, dict):
                raise MongoError(40185, f"restrictSearchWithMatch must be an object, found {type_name(arg)}")
            try:
                Matcher(arg, pctx.variables if pctx.checked else None, pctx.collator)
            except MongoError as err:
                raise MongoError(err.code, "Failed to parse 'restrictSearchWithMatch' option to $graphLookup :: "
                                           f"caused by :: {err.errmsg}") from None
            restrict = arg
            continue
        if name in _STRING_ARGS:
            if not isinstance(arg, (str, dict)):
                raise MongoError(40103, f"expected string as argument for {name}, found: {type_name(arg)}")
            if name == "from":
                args[name] = parse_from(arg, pctx.db, "$graphLookup")
            elif isinstance(arg, str):
                args[name] = arg
            else:
                raise MongoError(40103, f"expected string as argument for {name}, found: {type_name(arg)}")
            continue
        raise MongoError(40104, f"Unknown argument to $graphLookup: {name}")
    if not args.get("from") or not args["from"][1] or not args.get("as") or start_with is MISSING or \
            not args.get("connectFromField") or not args.get("connectToField"):
        raise MongoError(40105, "$graphLookup requires 'from', 'as', 'startWith', 'connectFromField', and "
                                "'connectToField' to be specified.")
    db, coll = args["from"]
    as_parts = field_path(args["as"])
    from_parts = field_path(args["connectFromField"])
    to_field = args["connectToField"]
    field_path(to_field)
    depth_parts = field_path(args["depthField"]) if "depthField" in args else None
    if pctx.process is not None:
        pctx.process.check_foreign("$graphLookup", db, coll)
    same = hashable_for(pctx.collator)
    variables = pctx.variables
    state: dict[str, LookupHashTable] = {}

    def level(frontier: list) -> list[dict]:
        """The foreign documents the frontier reaches (one $in query)."""
        table = state.get("t")
        if table is None:
            docs = pctx.require_process("$graphLookup").documents(db, coll, pctx)
            table = state["t"] = LookupHashTable(docs, to_field, pctx.collator)
        conds: list[dict] = [{to_field: {"$in": frontier}}]
        if restrict:
            conds.insert(0, restrict)
        has_null = any(v is None for v in frontier)
        if has_null:
            conds.append({to_field: {"$exists": True}})
            conds.append({to_field: {"$not": {"$type": "undefined"}}})
        return table.matching({"$and": conds}, frontier, variables)

    def search(doc: dict) -> list[dict]:
        start = start_with(doc, variables)
        frontier = [v for v in (start if type(start) is list else [start]) if v is not MISSING]
        visited: dict = {}
        depth = 0
        while frontier:
            found: list = []
            for m in level(frontier):
                if "_id" not in m:
                    raise MongoError(40271, f"Documents in the '{db}.{coll}' namespace must contain an _id for "
                                            "de-duplication in $graphLookup")
                k = same(m["_id"])
                if k in visited:
                    continue
                if depth_parts is not None:
                    m = set_nested(m, depth_parts, Int64(depth))
                visited[k] = m
                found.extend(visit_all_values_at_path(m, from_parts))
            depth += 1
            if max_depth is not None and depth > max_depth:
                break
            seen: dict = {}
            for v in found:
                seen.setdefault(same(v), v)
            frontier = list(seen.values())
        return list(visited.values())

    def run(stream: Iterable[dict]) -> Iterator[dict]:
        for doc in stream:
            yield set_nested(doc, as_parts, search(doc))

    return run
