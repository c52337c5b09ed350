"""Aggregation stages: the document-at-a-time ones change streams allow, and a few more.

A pipeline is a list of stages, each `{$name: spec}`; documents flow through
them in order.  Change streams accept only stages that look at one document at
a time (`$match`, `$project`, `$addFields`/`$set`, `$unset`, `$replaceRoot`/
`$replaceWith`, `$redact`): `compile_stage(stage)` turns one into
`f(doc) -> dict | None` (None: the document is dropped).  `run_pipeline`
also runs the blocking stages of ordinary aggregations (`$sort` — with a
following `$limit`, a top-k sort —, `$limit`, `$skip`, `$group` with the
accumulators of `accumulators.py`, `$count`, `$unwind`, `$sortByCount`) and the
stages registered in `stage_registry` by `document_sources/` (`$lookup`,
`$facet`, `$unionWith`, ...).  A pipeline compiles once (`compile_pipeline`,
every stage parsed before a document is read) in a `PipelineContext` and may
then run many times.  Update pipelines (`run_update_pipeline`) allow
`$addFields`/`$set`, `$project`, `$unset`, `$replaceRoot`/`$replaceWith`.

Errors follow the server: an unknown stage is 40324 `Unrecognized pipeline
stage name: '$foo'`, a stage object with more than one field 40323.

Source: src/mongo/db/pipeline/document_source_*.cpp.  Hand-written: no
maintained library runs MongoDB pipelines (mongomock's aggregate is the test
oracle only).
"""

from __future__ import annotations

import heapq
from typing import Any, Callable, Iterable, Iterator

from bson import DBRef, Decimal128, Int64
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.expressions import (
    _DESCEND,
    _KEEP,
    _PRUNE,
    compile_expression,
    field_path_get,
)
from mongosim.shardsim.query.collation import compare_for, expression_context, hashable_for
from mongosim.shardsim.query.document_metadata import MetaDoc, carry
from mongosim.shardsim.query.extensions_callback import check_match_stage
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.pipeline_context import PipelineContext
from mongosim.shardsim.query.stage_registry import NOT_IN_FACET, NOT_IN_LOOKUP, NOT_IN_UNION, STAGES
from mongosim.shardsim.query.values import (
    MISSING,
    dbref_doc,
    is_number,
    type_name,
)
from mongosim.shardsim.query.variables import check_references
from mongosim.shardsim.query.search_stages import refuse_search_stage

__all__ = ["compile_stage", "compile_update_pipeline", "run_pipeline", "run_update_pipeline", "compile_pipeline",
           "run_pipeline_in", "compile_group", "DOC_STAGES", "UPDATE_STAGES"]

DOC_STAGES = frozenset({"$match", "$project", "$addFields", "$set", "$unset", "$replaceRoot", "$replaceWith", "$redact"})
UPDATE_STAGES = frozenset({"$addFields", "$set", "$project", "$unset", "$replaceRoot", "$replaceWith"})
_KNOWN_OTHER = frozenset({
    "$sort", "$limit", "$skip", "$group", "$count", "$unwind", "$sortByCount", "$lookup", "$facet", "$bucket",
    "$bucketAuto", "$out", "$merge", "$geoNear", "$graphLookup", "$sample", "$changeStream", "$indexStats",
    "$collStats", "$currentOp", "$listSessions", "$densify", "$fill", "$setWindowFields", "$unionWith",
    "$documents", "$changeStreamSplitLargeEvent", "$planCacheStats", "$listLocalSessions", "$search",
    "$searchMeta", "$vectorSearch", "$listSearchIndexes",
})


# Stages other modules implement over the whole stream (`$_internalUnpackBucket`: shardsim.timeseries).
STREAM_STAGES: dict[str, Callable[[Iterable[dict], Any], Iterable[dict]]] = {}


def _stage_name(stage) -> tuple[str, Any]:
    if not isinstance(stage, dict):
        raise MongoError(40323, "A pipeline stage specification object must contain exactly one field.")
    if len(stage) != 1:
        raise MongoError(40323, "A pipeline stage specification object must contain exactly one field.")
    name, spec = next(iter(stage.items()))
    if name not in DOC_STAGES and name not in _KNOWN_OTHER and name not in STAGES and name not in STREAM_STAGES:
        raise MongoError(40324, f"Unrecognized pipeline stage name: '{name}'")
    refuse_search_stage(name)
    return name, spec


def _compile(expr, variables: dict | None, checked: bool) -> Callable:
    """Compile an expression of a stage; with the command's variables, check the `$$names` it uses."""
    if checked:
        check_references(expr, variables or ())
    return compile_expression(expr)


def compile_stage(stage: dict, *, now=None, variables: dict | None = None) -> Callable[[dict], dict | None]:
    """A document-at-a-time stage as `f(doc) -> dict | None`.  `variables`: the command's
    variables ($$NOW, $$CLUSTER_TIME, `let`); `now` alone sets $$NOW."""
    name, spec = _stage_name(stage)
    if name not in DOC_STAGES:
        raise MongoError("BadValue", f"{name} is not a document-at-a-time stage")
    checked = variables is not None
    if variables is None and now is not None:
        variables = {"NOW": now}
    return _doc_stage(name, spec, variables, checked)


def _doc_stage(name: str, spec, variables: dict | None, checked: bool) -> Callable[[dict], dict | None]:
    if name == "$match":
        from mongosim.shardsim.query.matcher import Matcher

        if not isinstance(spec, dict):
            raise MongoError(15959, "the match filter must be an expression in an object")
        check_match_stage(spec)
        m = Matcher(spec, variables if checked else None).matches
        return lambda doc: doc if m(doc) else None
    if name == "$project":
        from mongosim.shardsim.query.projection import compile_projection

        if not isinstance(spec, dict):
            raise MongoError(15969, "$project specification must be an object")
        proj = compile_projection(spec, find=False, variables=variables if checked else None)
        return lambda doc: proj(doc)
    if name in ("$addFields", "$set"):
        return _add_fields(name, spec, variables, checked)
    if name == "$unset":
        fields = [spec] if isinstance(spec, str) else spec
        if not isinstance(fields, list) or not fields or not all(isinstance(f, str) for f in fields):
            raise MongoError(31002, "$unset specification must be a string or an array containing only string values")
        from mongosim.shardsim.query.projection import compile_projection

        proj = compile_projection({f: 0 for f in fields}, find=False)
        return lambda doc: proj(doc)
    if name in ("$replaceRoot", "$replaceWith"):
        if name == "$replaceRoot":
            if not isinstance(spec, dict) or "newRoot" not in spec:
                raise MongoError(40231, "no newRoot specified for the $replaceRoot stage")
            expr = _compile(spec["newRoot"], variables, checked)
        else:
            expr = _compile(spec, variables, checked)

        def replace(doc):
            v = expr(doc, variables)
            if type(v) is not dict and type(v) is not MetaDoc:
                raise MongoError(
                    40228,
                    f"'newRoot' expression must evaluate to an object, but resulting value was: "
                    f"{'MISSING' if v is MISSING else bson_str(v)}. Type of resulting value: '{type_name(v)}'. "
                    f"Input document: {bson_str(doc)}",
                )
            return v

        return replace
    if name == "$redact":
        expr = _compile(spec, variables, checked)

        def redact_obj(obj, root):
            r = expr(obj, {"ROOT": root, **(variables or {})})
            if r is _KEEP:
                return obj
            if r is _PRUNE:
                return None
            if r is _DESCEND:
                out = {}
                for k, v in obj.items():
                    if type(v) is dict:
                        sub = redact_obj(v, root)
                        if sub is not None:
                            out[k] = sub
                    elif type(v) is list:
                        out[k] = redact_arr(v, root)
                    else:
                        out[k] = v
                return out
            raise MongoError(
                17053,
                "$redact's expression should not return anything aside from the variables $$KEEP, $$DESCEND, "
                f"and $$PRUNE, but returned {bson_str(r) if r is not MISSING else 'MISSING'}",
            )

        def redact_arr(arr, root):
            out = []
            for e in arr:
                if type(e) is dict:
                    sub = redact_obj(e, root)
                    if sub is not None:
                        out.append(sub)
                elif type(e) is list:
                    out.append(redact_arr(e, root))
                else:
                    out.append(e)
            return out

        return lambda doc: redact_obj(doc, doc)
    raise AssertionError(name)


def _add_fields(name: str, spec, variables, checked: bool = False) -> Callable:
    if not isinstance(spec, dict):
        raise MongoError(40272, f"{name} specification stage must be an object, got {type_name(spec)}")
    items = []
    for path, e in _flatten_add(spec):
        if path.startswith("$"):
            raise MongoError(16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
        items.append((tuple(path.split(".")), _compile(e, variables, checked)))

    def add(doc):
        out = dict(doc)
        for parts, f in items:
            v = f(doc, variables)
            _set_computed(out, parts, v)
        return out

    return add


def _flatten_add(spec: dict, prefix: str = ""):
    for k, v in spec.items():
        if isinstance(v, dict) and v and not next(iter(v)).startswith("$"):
            yield from _flatten_add(v, prefix + k + ".")
        else:
            yield prefix + k, v


def _set_computed(obj: dict, parts, v):
    """Set a computed field (MISSING removes it); through arrays, in every element."""
    k = parts[0]
    if len(parts) == 1:
        if v is MISSING:
            obj.pop(k, None)
        else:
            obj[k] = v
        return
    cur = obj.get(k, MISSING)
    if type(cur) is dict:
        cur = dict(cur)
        obj[k] = cur
        _set_computed(cur, parts[1:], v)
    elif type(cur) is list:
        obj[k] = [_set_in_elem(e, parts[1:], v) for e in cur]
    else:
        if v is MISSING:
            return
        new: dict = {}
        obj[k] = new
        _set_computed(new, parts[1:], v)


def _set_in_elem(e, parts, v):
    if type(e) is dict:
        e = dict(e)
        _set_computed(e, parts, v)
        return e
    if type(e) is list:
        return [_set_in_elem(x, parts, v) for x in e]
    new: dict = {}
    _set_computed(new, parts, v)
    return new


def compile_update_pipeline(pipeline: list, *, now=None, variables: dict | None = None) -> list[Callable[[dict], dict | None]]:
    """Parse an update pipeline (only the stages an update allows) into its stage functions."""
    if not isinstance(pipeline, list):
        raise MongoError("FailedToParse", "update pipeline must be an array")
    fns = []
    for stage in pipeline:
        name, _ = _stage_name(stage)
        if name not in UPDATE_STAGES:
            raise MongoError("InvalidOptions", f"{name} is not allowed to be used within an update")
        fns.append(compile_stage(stage, now=now, variables=variables))
    return fns


def run_update_pipeline(doc: dict, pipeline: list, *, now=None, variables: dict | None = None) -> dict:
    """Apply an update pipeline to one document; returns the new document."""
    fns = compile_update_pipeline(pipeline, now=now, variables=variables)
    cur = doc
    for f in fns:
        cur = f(cur)
    return cur


# ---------------------------------------------------------------------------------
# whole-pipeline execution


def run_pipeline(docs: Iterable[dict], pipeline: list, *, now=None, variables: dict | None = None,
                 collator=None, process=None, db: str | None = None) -> Iterator[dict]:
    """Run an aggregation pipeline over `docs` (with the command's `variables`; strings compare under
    `collator`, None for the simple collation; `process`: how `$lookup` and its kind read other
    collections of `db`)."""
    checked = variables is not None
    if variables is None and now is not None:
        variables = {"NOW": now}
    pctx = PipelineContext(variables, collator=collator, process=process, db=db, checked=checked)
    return compile_pipeline(pipeline, pctx)(docs)


def run_pipeline_in(docs: Iterable[dict], pipeline: list, pctx: PipelineContext) -> Iterator[dict]:
    """Run `pipeline` over `docs` in the context `pctx` (a view's pipeline inside a stage's)."""
    return compile_pipeline(pipeline, pctx)(docs)


def compile_pipeline(pipeline: list, pctx: PipelineContext) -> Callable[[Iterable[dict]], Iterator[dict]]:
    """Parse every stage of `pipeline` (errors before any document is read, as the server's
    Pipeline::parse) into one function mapping input documents to the pipeline's output.  The
    function may run many times (a `$lookup`'s sub-pipeline runs once per input document): the
    compiled stages read `pctx.variables` when they run."""
    if pctx.collator is not None:
        with expression_context.compiling(pctx.collator):
            steps = _compile_steps(pipeline, pctx)
    else:
        steps = _compile_steps(pipeline, pctx)

    def run(docs: Iterable[dict]) -> Iterator[dict]:
        stream = docs
        for step in steps:
            stream = step(stream)
        return iter(stream)

    return run


def _compile_steps(pipeline, pctx: PipelineContext) -> list[Callable[[Iterable[dict]], Iterable[dict]]]:
    if not isinstance(pipeline, list):
        raise MongoError(14, "'pipeline' option must be specified as an array")
    variables, checked, collator = pctx.variables, pctx.checked, pctx.collator
    steps: list[Callable[[Iterable[dict]], Iterable[dict]]] = []
    i, n = 0, len(pipeline)
    while i < n:
        name, spec = _stage_name(pipeline[i])
        _check_allowed(name, pctx)
        i += 1
        if name in DOC_STAGES:
            f = _doc_stage(name, spec, variables, checked)
            steps.append(lambda s, f=f: _map_stage(s, f))
        elif name == "$sort":
            from mongosim.shardsim.query.sorting import sort_key_fn

            key = sort_key_fn(spec, collator)
            limit = _limit_after(pipeline, i)
            if limit is not None:  # $sort + $limit: a top-k sort (the server's limit coalescing)
                i += 1
                steps.append(lambda s, key=key, k=limit: iter(heapq.nsmallest(k, s, key=key)))
            else:
                steps.append(lambda s, key=key: iter(sorted(s, key=key)))
        elif name == "$limit":
            k = _positive_int(spec, "$limit", 15958, "the limit must be positive")
            steps.append(lambda s, k=k: _limit(s, k))
        elif name == "$skip":
            k = _nonneg_int(spec, "$skip", 15956, "the $skip stage must be non-negative")
            steps.append(lambda s, k=k: _skip(s, k))
        elif name == "$group":
            steps.append(compile_group(spec, pctx))
        elif name == "$count":
            if not isinstance(spec, str) or not spec:
                raise MongoError(40156, "the count field must be a non-empty string")
            if spec.startswith("$"):
                raise MongoError(40158, "the count field cannot be a $-prefixed path")
            if "." in spec:
                raise MongoError(40160, "the count field cannot contain '.'")
            steps.append(lambda s, field=spec: _count(s, field))
        elif name == "$unwind":
            steps.append(_compile_unwind(spec))
        elif name == "$sortByCount":
            steps.append(_compile_sort_by_count(spec, pctx))
        elif name in STAGES:
            steps.append(STAGES[name].parse(spec, pctx))
        elif name in STREAM_STAGES:
            steps.append(lambda s, run=STREAM_STAGES[name], spec=spec: run(s, spec))
        elif name == "$documents" and i == 1 and pctx.inside in ("$lookup", "$unionWith"):
            from mongosim.shardsim.query.documents_stage import documents_source

            steps.append(lambda s, spec=spec: iter(documents_source(spec, pctx.variables)))
        elif name == "$geoNear":  # (run by the query layer when it comes first: shardsim/geo/geo_near_stage.py)
            raise MongoError(40603, "$geoNear was not the first stage in the pipeline.")
        elif name in ("$documents", "$collStats", "$indexStats", "$currentOp", "$planCacheStats", "$changeStream",
                      "$listLocalSessions", "$listSessions"):
            raise MongoError(40602, f"{name} is only valid as the first stage in a pipeline")
        else:
            raise MongoError("NotImplemented", f"{name} is not supported by mongosim")
    return steps


def _check_allowed(name: str, pctx: PipelineContext) -> None:
    """A sub-pipeline's own refusals (each stage's StageConstraints)."""
    inside = pctx.inside
    if inside is None:
        return
    reg = STAGES.get(name)
    if inside == "$facet" and (name in NOT_IN_FACET or (reg is not None and not reg.in_facet)):
        raise MongoError(40600, f"{name} is not allowed to be used within a $facet stage")
    if inside == "$lookup" and (name in NOT_IN_LOOKUP or (reg is not None and not reg.in_lookup)):
        raise MongoError(51047, f"{name} is not allowed within a $lookup's sub-pipeline")
    if inside == "$unionWith" and (name in NOT_IN_UNION or (reg is not None and not reg.in_union)):
        raise MongoError(31441, f"{name} is not allowed within a $unionWith's sub-pipeline")


def _limit_after(pipeline: list, i: int) -> int | None:
    """The $limit right after a $sort (checked as the $limit stage checks it), else None."""
    if i < len(pipeline) and isinstance(pipeline[i], dict) and len(pipeline[i]) == 1 and "$limit" in pipeline[i]:
        return _positive_int(pipeline[i]["$limit"], "$limit", 15958, "the limit must be positive")
    return None


def _map_stage(stream, f):
    for d in stream:
        r = f(d)
        if r is not None:
            yield r if r is d else carry(d, r)  # (a new document keeps the metadata: text score, distance)


def _limit(stream, n):
    if n <= 0:
        return
    for i, d in enumerate(stream):
        yield d
        if i + 1 >= n:
            return


def _skip(stream, n):
    for i, d in enumerate(stream):
        if i >= n:
            yield d


def _as_int(v):
    if isinstance(v, bool) or not is_number(v):
        return None
    f = float(v.to_decimal()) if isinstance(v, Decimal128) else float(v)
    if f != int(f):
        return None
    return int(f)


def _positive_int(v, name, code, msg):
    n = _as_int(v)
    if n is None:
        raise MongoError(15957, "the limit must be specified as a number")
    if n <= 0:
        raise MongoError(code, msg)
    return n


def _nonneg_int(v, name, code, msg):
    n = _as_int(v)
    if n is None:
        raise MongoError(15972, "Argument to $skip must be a number")
    if n < 0:
        raise MongoError(code, msg)
    return n


def _count(stream, field):
    n = sum(1 for _ in stream)
    if n:
        yield {field: n}


def _compile_unwind(spec):
    """$unwind, checked as DocumentSourceUnwind::createFromBson checks it."""
    idx_field, preserve = None, False
    if isinstance(spec, str):
        path = spec
    elif isinstance(spec, dict):
        path = None
        for k, v in spec.items():
            if k == "path":
                if not isinstance(v, str):
                    raise MongoError(28808, f"expected a string as the path for $unwind stage, got {type_name(v)}")
                path = v
            elif k == "preserveNullAndEmptyArrays":
                if not isinstance(v, bool):
                    raise MongoError(28809, "expected a boolean for the preserveNullAndEmptyArrays option to $unwind "
                                            f"stage, got {type_name(v)}")
                preserve = v
            elif k == "includeArrayIndex":
                if not isinstance(v, str) or not v:
                    raise MongoError(28810, "expected a non-empty string for the includeArrayIndex  option to "
                                            f"$unwind stage, got {type_name(v)}")
                if v.startswith("$"):
                    raise MongoError(28822, "includeArrayIndex option to $unwind stage should not be prefixed with "
                                            f"a '$': {v}")
                idx_field = v
            else:
                raise MongoError(28811, f"unrecognized option to $unwind stage: {k}")
        if path is None:
            raise MongoError(28812, "no path specified to $unwind stage")
    else:
        raise MongoError(15981, f"expected either a string or an object as specification for $unwind stage, got {type_name(spec)}")
    if not path.startswith("$"):
        raise MongoError(28818, f"path option to $unwind stage should be prefixed with a '$': {path}")
    parts = tuple(path[1:].split("."))
    idx_parts = tuple(idx_field.split(".")) if idx_field else None
    return lambda stream: _unwind(stream, parts, idx_parts, preserve)


def _unwind(stream, parts, idx_parts, preserve):
    for doc in stream:
        v = field_path_get(doc, parts) if len(parts) == 1 else _plain_get(doc, parts)
        if type(v) is list and v:
            for i, e in enumerate(v):
                out = _with_path(doc, parts, e)
                if idx_parts:
                    _set_computed(out, idx_parts, Int64(i))
                yield out
        elif type(v) is list or v is None or v is MISSING:
            if preserve:
                out = dict(doc) if type(v) is not list else _without_path(doc, parts)
                if idx_parts:
                    _set_computed(out, idx_parts, None)
                yield out
        else:
            out = dict(doc)
            if idx_parts:
                _set_computed(out, idx_parts, None)
            yield out


def _plain_get(doc, parts):
    cur = doc
    for p in parts:
        if type(cur) is DBRef:  # (the embedded document {$ref, $id, ...} it stands for)
            cur = dbref_doc(cur)
        elif type(cur) is not dict and type(cur) is not MetaDoc:
            return MISSING
        cur = cur.get(p, MISSING)
    return cur


def _with_path(doc, parts, value):
    out = dict(doc)
    cur = out
    for p in parts[:-1]:
        nxt = dict(cur[p])
        cur[p] = nxt
        cur = nxt
    cur[parts[-1]] = value
    return out


def _without_path(doc, parts):
    out = dict(doc)
    cur = out
    for p in parts[:-1]:
        nxt = dict(cur[p])
        cur[p] = nxt
        cur = nxt
    cur.pop(parts[-1], None)
    return out


# --- $group ----------------------------------------------------------------------


def compile_group(spec, pctx: PipelineContext) -> Callable[[Iterable[dict]], Iterator[dict]]:
    """$group: one output document per distinct `_id` (missing is null; equal under the collation
    share a group), in the order groups first appear, with the accumulators' results."""
    from mongosim.shardsim.query.accumulators import parse_statement

    if not isinstance(spec, dict):
        raise MongoError(15947, "a group's fields must be specified in an object")
    if "_id" not in spec:
        raise MongoError(15955, "a group specification must include an _id")
    variables, checked, collator = pctx.variables, pctx.checked, pctx.collator
    id_expr = _compile(spec["_id"], variables, checked)
    statements = [parse_statement(field, a, lambda e: _compile(e, variables, checked), collator)
                  for field, a in spec.items() if field != "_id"]
    same = hashable_for(collator)

    def run(stream):
        groups: dict = {}
        for doc in stream:
            key = id_expr(doc, variables)
            if key is MISSING:
                key = None
            h = same(key)
            g = groups.get(h)
            if g is None:
                key_doc = {"_id": key}
                g = groups[h] = (key, [st.new(key_doc, variables) for st in statements])
            for st, acc in zip(statements, g[1]):
                acc.add(st.arg(doc, variables) if st.arg is not None else 1)
        for key, accs in groups.values():
            out = {"_id": key}
            for st, acc in zip(statements, accs):
                v = acc.result()
                out[st.field] = None if v is MISSING else v
            yield out

    return run


def _compile_sort_by_count(spec, pctx: PipelineContext):
    if not (isinstance(spec, str) and spec.startswith("$")) and not (
            isinstance(spec, dict) and len(spec) == 1 and next(iter(spec)).startswith("$")):
        raise MongoError(40148, "the sortByCount field must be defined as a $-prefixed path or an expression")
    group = compile_group({"_id": spec, "count": {"$sum": 1}}, pctx)

    def run(stream):
        grouped = list(group(stream))
        grouped.sort(key=lambda d: -d["count"])
        return iter(grouped)

    return run
