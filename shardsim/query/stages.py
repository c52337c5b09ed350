"""Aggregation stages: the document-at-a-time ones change streams allow, and a few more.

A pipeline is a list of stages, each `{$name: spec}`; documents flow through
them in order.  Change streams accept only stages that look at one document at
a time (`$match`, `$project`, `$addFields`/`$set`, `$unset`, `$replaceRoot`/
`$replaceWith`, `$redact`): `compile_stage(stage)` turns one into
`f(doc) -> dict | None` (None: the document is dropped).  `run_pipeline`
also runs the blocking stages of ordinary aggregations (`$sort`, `$limit`,
`$skip`, `$group`, `$count`, `$unwind`, `$sortByCount`).  Update pipelines
(`run_update_pipeline`) allow `$addFields`/`$set`, `$project`, `$unset`,
`$replaceRoot`/`$replaceWith`.

Errors follow the server: an unknown stage is 40324 `Unrecognized pipeline
stage name: '$foo'`, a stage object with more than one field 40323.

Source: src/mongo/db/pipeline/document_source_*.cpp.  Hand-written: no
maintained library runs MongoDB pipelines (mongomock's aggregate is the test
oracle only).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

from bson import Decimal128, Int64
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
from mongosim.shardsim.query.values import (
    MISSING,
    is_number,
    type_name,
)
from mongosim.shardsim.query.variables import check_references
from mongosim.shardsim.search_indexes import refuse_search_stage

__all__ = ["compile_stage", "compile_update_pipeline", "run_pipeline", "run_update_pipeline", "DOC_STAGES", "UPDATE_STAGES"]

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
    if name not in DOC_STAGES and name not in _KNOWN_OTHER and name not in STREAM_STAGES:
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
                 collator=None) -> Iterator[dict]:
    """Run an aggregation pipeline over `docs` (with the command's `variables`; strings compare under
    `collator`, None for the simple collation)."""
    if collator is not None:
        with expression_context.compiling(collator):
            return _run_pipeline(docs, pipeline, now, variables, collator)
    return _run_pipeline(docs, pipeline, now, variables, None)


def _run_pipeline(docs, pipeline, now, variables, collator) -> Iterator[dict]:
    if not isinstance(pipeline, list):
        raise MongoError(14, "'pipeline' option must be specified as an array")
    checked = variables is not None
    if variables is None and now is not None:
        variables = {"NOW": now}
    stream: Iterable[dict] = docs
    for stage in pipeline:
        name, spec = _stage_name(stage)
        if name in DOC_STAGES:
            stream = _map_stage(stream, compile_stage(stage, variables=variables) if checked
                                else compile_stage(stage, now=now))
        elif name == "$sort":
            from mongosim.shardsim.query.sorting import sort_key_fn

            stream = iter(sorted(stream, key=sort_key_fn(spec, collator)))
        elif name == "$limit":
            n = _positive_int(spec, "$limit", 15958, "the limit must be positive")
            stream = _limit(stream, n)
        elif name == "$skip":
            n = _nonneg_int(spec, "$skip", 15956, "the $skip stage must be non-negative")
            stream = _skip(stream, n)
        elif name == "$group":
            stream = _group(stream, spec, variables, checked, collator)
        elif name == "$count":
            if not isinstance(spec, str) or not spec:
                raise MongoError(40156, "the count field must be a non-empty string")
            if spec.startswith("$"):
                raise MongoError(40158, "the count field cannot be a $-prefixed path")
            if "." in spec:
                raise MongoError(40160, "the count field cannot contain '.'")
            stream = _count(stream, spec)
        elif name == "$unwind":
            stream = _unwind(stream, spec)
        elif name == "$sortByCount":
            stream = _sort_by_count(stream, spec, variables, checked, collator)
        elif name in STREAM_STAGES:
            stream = STREAM_STAGES[name](stream, spec)
        elif name == "$geoNear":  # (run by the query layer when it comes first: shardsim/geo/geo_near_stage.py)
            raise MongoError(40603, "$geoNear was not the first stage in the pipeline.")
        else:
            raise MongoError("NotImplemented", f"{name} is not supported by mongosim")
    return iter(stream)


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


def _unwind(stream, spec):
    if isinstance(spec, str):
        path, idx_field, preserve = spec, None, False
    elif isinstance(spec, dict):
        path = spec.get("path")
        idx_field = spec.get("includeArrayIndex")
        preserve = bool(spec.get("preserveNullAndEmptyArrays", False))
    else:
        raise MongoError(15981, f"expected either a string or an object as specification for $unwind stage, got {type_name(spec)}")
    if not isinstance(path, str) or not path.startswith("$"):
        raise MongoError(28818, "path option to $unwind stage should be prefixed with a '$'")
    parts = tuple(path[1:].split("."))
    for doc in stream:
        v = field_path_get(doc, parts) if len(parts) == 1 else _plain_get(doc, parts)
        if type(v) is list and v:
            for i, e in enumerate(v):
                out = _with_path(doc, parts, e)
                if idx_field:
                    out[idx_field] = Int64(i)
                yield out
        elif type(v) is list or v is None or v is MISSING:
            if preserve:
                out = dict(doc) if type(v) is not list else _without_path(doc, parts)
                if idx_field:
                    out[idx_field] = None
                yield out
        else:
            out = dict(doc)
            if idx_field:
                out[idx_field] = None
            yield out


def _plain_get(doc, parts):
    cur = doc
    for p in parts:
        if type(cur) is not dict and type(cur) is not MetaDoc:
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


class _Acc:
    __slots__ = ("op", "state", "n", "compare", "hashable")

    def __init__(self, op, collator=None):
        self.op = op
        self.n = 0
        self.compare = compare_for(collator)  # $min/$max and $addToSet honour the collation
        self.hashable = hashable_for(collator)
        self.state = MISSING if op not in ("$push", "$addToSet") else []

    def add(self, v):
        op = self.op
        if op == "$sum" or op == "$count":
            if op == "$count":
                v = 1
            if is_number(v):
                self.state = v if self.state is MISSING else _add_nums(self.state, v)
            elif self.state is MISSING:
                self.state = 0
        elif op == "$avg":
            if is_number(v):
                self.state = v if self.state is MISSING else _add_nums(self.state, v)
                self.n += 1
        elif op == "$min" or op == "$max":
            if v is None or v is MISSING:
                return
            if self.state is MISSING:
                self.state = v
            else:
                c = self.compare(v, self.state)
                if (op == "$min" and c < 0) or (op == "$max" and c > 0):
                    self.state = v
        elif op == "$first":
            if self.n == 0:
                self.state = None if v is MISSING else v
            self.n += 1
        elif op == "$last":
            self.state = None if v is MISSING else v
        elif op == "$push":
            if v is not MISSING:
                self.state.append(v)
        elif op == "$addToSet":
            if v is not MISSING:
                same = self.hashable
                k = same(v)
                if all(same(x) != k for x in self.state):
                    self.state.append(v)

    def result(self):
        op = self.op
        if op in ("$sum", "$count"):
            return 0 if self.state is MISSING else self.state
        if op == "$avg":
            if self.n == 0:
                return None
            s = self.state
            if isinstance(s, Decimal128):
                return Decimal128(s.to_decimal() / self.n)
            return float(s) / self.n
        if op in ("$min", "$max"):
            return None if self.state is MISSING else self.state
        return self.state


def _add_nums(a, b):
    from mongosim.shardsim.query.expressions import _OPS

    return _OPS["$add"]([{"$literal": a}, {"$literal": b}])({})


_ACCUMULATORS = {"$sum", "$avg", "$min", "$max", "$first", "$last", "$push", "$addToSet", "$count"}


def _group(stream, spec, variables, checked=False, collator=None):
    if collator is not None:
        with expression_context.compiling(collator):  # (a generator: it compiles when first pulled)
            groups = _group_by(stream, spec, variables, checked, collator)
    else:
        groups = _group_by(stream, spec, variables, checked, None)
    yield from groups


def _group_by(stream, spec, variables, checked, collator):
    if not isinstance(spec, dict):
        raise MongoError(15947, "a group's fields must be specified in an object")
    if "_id" not in spec:
        raise MongoError(15955, "a group specification must include an _id")
    id_expr = _compile(spec["_id"], variables, checked)
    accs = []
    for field, a in spec.items():
        if field == "_id":
            continue
        if "." in field:
            raise MongoError(40235, f"The field name '{field}' cannot contain '.'")
        if not isinstance(a, dict) or len(a) != 1:
            raise MongoError(40234, f"The field '{field}' must be an accumulator object")
        op, arg = next(iter(a.items()))
        if op not in _ACCUMULATORS:
            raise MongoError(15952, f"unknown group operator '{op}'")
        if op == "$count":
            if arg != {}:
                raise MongoError(40049, "$count takes no arguments, i.e. $count:{}")
            accs.append((field, op, None))
        else:
            accs.append((field, op, _compile(arg, variables, checked)))
    groups: dict = {}
    same = hashable_for(collator)  # the group key: equal _ids under the collation share a group
    for doc in stream:
        key = id_expr(doc, variables)
        if key is MISSING:
            key = None
        h = same(key)
        g = groups.get(h)
        if g is None:
            g = groups[h] = (key, [_Acc(op, collator) for _f, op, _e in accs])
        for (field, op, e), acc in zip(accs, g[1]):
            acc.add(e(doc, variables) if e is not None else 1)
    out_docs = []
    for key, state in groups.values():
        out = {"_id": key}
        for (field, _op, _e), acc in zip(accs, state):
            out[field] = acc.result()
        out_docs.append(out)
    return out_docs


def _sort_by_count(stream, spec, variables, checked=False, collator=None):
    grouped = list(_group(stream, {"_id": spec, "count": {"$sum": 1}}, variables, checked, collator))
    grouped.sort(key=lambda d: -d["count"])
    return iter(grouped)
