"""$lookup: join each input document with the documents of another collection (document_source_lookup.cpp).

Three forms, one stage:

- equality — `{from, localField, foreignField, as}`: the foreign documents matching
  `{foreignField: {$eq: v}}` for the values `v` at localField (an array's elements, each;
  a missing path or empty array is null; several values make an `$in`, or an `$or` of
  `$eq`s when one is a regex, so that a regex only meets regexes), in an array at `as`;
- pipeline — `{from, let, pipeline, as}`: the sub-pipeline runs over the foreign
  collection once per input document, with the `let` variables evaluated on that
  document (`$$name` in the sub-pipeline); `from` may be left out when the pipeline
  starts with `$documents`;
- both — `{from, localField, foreignField, let, pipeline, as}`: the equality match
  first, then the pipeline.

The foreign collection is read once per command through the pipeline's process
interface (a view resolves to its pipeline; mongos gathers a sharded one from its
shards) and matched through a hash table (`lookup_hash_table`), or by the node's
indexes.  A sub-pipeline's leading stages that use none of the `let` variables run
once and are reused (the server's DocumentSourceSequentialDocumentCache).  `as` is
set as setNestedField sets it: documents are created on the way, anything else
there is replaced.  Errors are the server's parse errors (FailedToParse with its
messages; 51047 for a stage a sub-pipeline refuses).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

from bson import Regex

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.document_path_support import set_nested, visit_all_values_at_path
from mongosim.shardsim.query.document_sources.lookup_hash_table import LookupHashTable
from mongosim.shardsim.query.document_sources.sub_pipeline import field_path, pipeline_array
from mongosim.shardsim.query.expressions import compile_expression
from mongosim.shardsim.query.fmt import bson_str, element_str
from mongosim.shardsim.query.pipeline_context import PipelineContext
from mongosim.shardsim.query.stage_registry import register
from mongosim.shardsim.query.stages import compile_pipeline
from mongosim.shardsim.query.values import MISSING, type_name
from mongosim.shardsim.query.variables import check_references, check_user_variable_name

__all__ = ["parse_lookup", "parse_from"]

_SPECIAL_FROM = {("config", None), ("local", "oplog.rs"), ("local", "tenantMigration.oplogView")}


def parse_from(value: Any, db: str | None, stage: str = "$lookup") -> tuple[str | None, str]:
    """(database, collection) of a `from`: a name in the pipeline's database; the object form only
    for the server's internal namespaces."""
    if isinstance(value, str):
        return db, value
    if not isinstance(value, dict):
        raise MongoError("FailedToParse", f"{stage} 'from' field must be a string, but found {type_name(value)}")
    fdb, coll = value.get("db", ""), value.get("coll", "")
    if not (fdb == "config" and isinstance(coll, str) and coll.startswith("cache.chunks.")) and \
            (fdb, coll) not in _SPECIAL_FROM:
        raise MongoError("FailedToParse", f"{stage} with syntax {{from: {{db:<>, coll:<>}},..}} is not supported for "
                                          f"db: {fdb} and coll: {coll}")
    return fdb, coll


def _starts_with_documents(pipeline: list) -> bool:
    return bool(pipeline) and isinstance(pipeline[0], dict) and "$documents" in pipeline[0]


@register("$lookup")
def parse_lookup(spec: Any, pctx: PipelineContext) -> Callable[[Iterable[dict]], Iterator[dict]]:
    if not isinstance(spec, dict):
        raise MongoError("FailedToParse", f"the $lookup stage specification must be an object, but found {type_name(spec)}")
    from_db = from_coll = None
    has_from = False
    pipeline: list | None = None
    let: dict = {}
    has_let = False
    as_field = local = foreign = ""
    for name, arg in spec.items():
        if name == "pipeline":
            pipeline = pipeline_array(arg)
        elif name == "let":
            if not isinstance(arg, dict):
                raise MongoError("FailedToParse", f"$lookup argument '{element_str('let', arg)}' must be an object, "
                                                  f"is type {type_name(arg)}")
            let, has_let = arg, True
        elif name == "from":
            from_db, from_coll = parse_from(arg, pctx.db)
            has_from = True
        elif name == "_internalCollation":
            continue
        else:
            if not isinstance(arg, str):
                raise MongoError("FailedToParse", f"$lookup argument '{name}' must be a string, found "
                                                  f"{element_str(name, arg)}: {type_name(arg)}")
            if name == "as":
                as_field = arg
            elif name == "localField":
                local = arg
            elif name == "foreignField":
                foreign = arg
            else:
                raise MongoError("FailedToParse", f"unknown argument to $lookup: {name}")
    if not has_from:
        if pipeline is None:
            raise MongoError("FailedToParse", "must specify 'pipeline' when 'from' is empty")
        if not _starts_with_documents(pipeline):
            raise MongoError("FailedToParse", "$lookup stage without explicit collection must have a pipeline with "
                                              "$documents as first stage")
    elif from_coll == "":
        raise MongoError("InvalidNamespace", f"invalid $lookup namespace: {from_db}.")
    if not as_field:
        raise MongoError("FailedToParse", "must specify 'as' field for a $lookup")
    if pipeline is not None:
        if bool(local) != bool(foreign):
            raise MongoError("FailedToParse", "$lookup requires both or neither of 'localField' and 'foreignField' "
                                              "to be specified")
    else:
        if not (local and foreign):
            raise MongoError("FailedToParse", "$lookup requires either 'pipeline' or both 'localField' and "
                                              "'foreignField' to be specified")
        if has_let:
            raise MongoError("FailedToParse", "$lookup with a 'let' argument must also specify 'pipeline'")
    as_parts = field_path(as_field)
    local_parts = field_path(local) if local else None
    if foreign:
        field_path(foreign)
    return _Lookup(pctx, from_db if has_from else None, from_coll, as_parts, local_parts, foreign or None,
                   pipeline, let).run


class _Lookup:
    def __init__(self, pctx: PipelineContext, db: str | None, coll: str | None, as_parts, local_parts, foreign,
                 pipeline: list | None, let: dict) -> None:
        self.pctx = pctx
        self.db, self.coll = db, coll
        self.as_parts = as_parts
        self.local_parts = local_parts
        self.foreign = foreign
        outer = pctx.variables if pctx.variables is not None else {}
        self.outer = outer
        self.lets = []
        for name, expr in let.items():
            check_user_variable_name(name)
            if pctx.checked:
                check_references(expr, outer)
            self.lets.append((name, compile_expression(expr)))
        self.vars: dict = dict(outer)
        for name, _f in self.lets:
            self.vars[name] = None  # (defined for the sub-pipeline's parse-time check)
        self.sub = pctx.sub("$lookup", self.vars)
        self.source_from_documents = pipeline is not None and _starts_with_documents(pipeline)
        self.prefix = self.suffix = None
        self.cached_prefix: list[dict] | None = None
        if pipeline:
            names = [name for name, _f in self.lets]
            k = 0
            if local_parts is None:  # (no cache with a local/foreign match: it is correlated)
                while k < len(pipeline) and not _uses(pipeline[k], names):
                    k += 1
            if k:
                self.prefix = compile_pipeline(pipeline[:k], self.sub)
            if k < len(pipeline):
                rest = pipeline[k:]
                if self.source_from_documents and k == 0 and local_parts is not None:
                    # (the equality match goes after $documents: run it first, then the match, then the rest)
                    self.documents = compile_pipeline(rest[:1], self.sub)
                    rest = rest[1:]
                self.suffix = compile_pipeline(rest, self.sub) if rest else None
        # the correlated sub-pipeline's leading $match on `{$expr: {$eq: ["$field", "$$var"]}}`: read
        # through an index on the field (see `_probe`)
        self.probe = _expr_equality(pipeline[0], [name for name, _f in self.lets]) \
            if pipeline and self.prefix is None and local_parts is None and not self.source_from_documents else None
        self.table: LookupHashTable | None = None
        if db is not None and pctx.process is not None:
            pctx.process.check_foreign("$lookup", db, coll)

    def _foreign_docs(self) -> list[dict]:
        process = self.pctx.require_process("$lookup")
        return process.documents(self.db, self.coll, self.pctx)

    def _set_lets(self, doc: dict) -> None:
        vs = self.vars
        if self.outer is not vs:
            vs.update(self.outer)
        for name, f in self.lets:
            vs[name] = f(doc, self.outer)

    def _matched(self, doc: dict, source: list[dict] | None) -> list[dict]:
        """The source documents the local values of `doc` match (the equality form)."""
        values = list(visit_all_values_at_path(doc, self.local_parts)) or [None]
        foreign = self.foreign
        if len(values) == 1:
            flt = {foreign: {"$eq": values[0]}}
        elif any(isinstance(v, Regex) or type(v).__name__ == "Pattern" for v in values):
            flt = {"$or": [{foreign: {"$eq": v}} for v in values]}
        else:
            flt = {foreign: {"$in": values}}
        if source is not None:
            return LookupHashTable(source, foreign, self.pctx.collator).matching(flt, values, self.vars)
        process = self.pctx.require_process("$lookup")
        found = process.equality_matches(self.db, self.coll, foreign, values, flt, self.pctx)
        if found is not None:
            return found
        if self.table is None:
            self.table = LookupHashTable(self._foreign_docs(), foreign, self.pctx.collator)
        return self.table.matching(flt, values, self.vars)

    def _probe(self) -> list[dict] | None:
        """The foreign documents whose field equals the variable's value, by an index leading with the field
        (None: no such index, or a value an equality cannot look up).  They are a superset of what the
        `$expr` equality keeps (an array holding the value, a missing field for null), which the sub-
        pipeline's `$match` then applies as written: the server rewrites that `$expr` into
        `{field: {$_internalExprEq: value}}`, an index's bounds, in the same way (RewriteExpr)."""
        path, name = self.probe
        value = self.vars.get(name, MISSING)
        if value is MISSING:
            return None
        try:
            found = self.pctx.require_process("$lookup").equality_matches(
                self.db, self.coll, path, [value], {path: {"$eq": value}}, self.pctx)
        except MongoError:
            return None
        return found

    def _results(self, doc: dict) -> list[dict]:
        if self.lets:
            self._set_lets(doc)
        if self.prefix is not None:
            if self.cached_prefix is None:
                start = () if self.source_from_documents or self.db is None else self._foreign_docs()
                self.cached_prefix = list(self.prefix(iter(start)))
            source: list[dict] | None = self.cached_prefix
        elif self.source_from_documents and self.local_parts is not None:
            source = list(self.documents(iter(())))
        elif self.source_from_documents:
            source = []  # ($documents in the suffix produces them)
        else:
            source = None
        if self.local_parts is not None:
            source = self._matched(doc, source)
        elif source is None:
            source = self._probe() if self.probe is not None else None
            if source is None:
                source = self._foreign_docs()
        if self.suffix is not None:
            return list(self.suffix(iter(source)))
        return list(source)

    def run(self, stream: Iterable[dict]) -> Iterator[dict]:
        for doc in stream:
            yield set_nested(doc, self.as_parts, self._results(doc))


def _expr_equality(stage: Any, names: list[str]) -> tuple[str, str] | None:
    """(field path, variable) of a `$match` stage whose filter is, or has among its top-level `$and`,
    `{$expr: {$eq: ["$<field>", "$$<variable>"]}}` (either order) with a `let` variable."""
    if not isinstance(stage, dict) or len(stage) != 1 or not isinstance(stage.get("$match"), dict):
        return None
    flt = stage["$match"]
    conjuncts = flt.get("$and")
    clauses = [flt, *(c for c in conjuncts if isinstance(c, dict))] if isinstance(conjuncts, list) else [flt]
    for clause in clauses:
        expr = clause.get("$expr")
        eq = expr.get("$eq") if isinstance(expr, dict) and len(expr) == 1 else None
        if not (isinstance(eq, list) and len(eq) == 2 and all(isinstance(x, str) for x in eq)):
            continue
        for field, var in (eq, eq[::-1]):
            if field.startswith("$") and not field.startswith("$$") and var.startswith("$$") and var[2:] in names \
                    and all(part and not part.startswith("$") for part in field[1:].split(".")):
                return field[1:], var[2:]
    return None


def _uses(stage: Any, names: list[str]) -> bool:
    """Whether a stage mentions any of the `$$names` (then it depends on the input document)."""
    if not names:
        return False
    text = bson_str(stage) if not isinstance(stage, dict) else repr(stage)
    return any(f"$${n}" in text for n in names)
