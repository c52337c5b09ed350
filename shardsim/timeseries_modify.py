"""Deletes and updates of measurements (the server's TimeseriesModifyStage, timeseries_modify.cpp, and
TimeseriesUpsertStage), and findAndModify on a time-series collection.

A statement's filter is split (timeseries_predicates): its meta-only part, renamed onto the buckets,
and bounds on `control.min`/`control.max` make the *bucket filter* (with `control.closed` not true),
which a planned query on the buckets collection serves (indexes, the translated `hint`); the whole
filter then runs on each candidate bucket's measurements.  Buckets are visited one at a time, the
candidates fixed first (a multi-update does not meet the measurements it moved):

* delete: the matched measurements go; a bucket left empty is deleted, otherwise replaced by the
  bucket its other measurements make (same `_id`, min/max recomputed: makeModificationOp).  A
  multi-delete whose filter is all meta deletes whole buckets (n counts their measurements).
* update: the update applies to each matched measurement (`_id` may change; `$` is the position
  the filter matched); those it leaves unchanged stay, the changed ones are taken out of the bucket
  and inserted into *new* buckets through a side bucket catalog of the statement (the measurement
  must still have a date in the time field: BadValue).  The original bucket's write and the side
  buckets' inserts/updates are one atomic write: outside a transaction one `applyOps` entry.
* upsert: nothing matched; the measurement the query's equalities and the update make (an `_id`
  generated) goes into a new bucket, a plain insert.

Replies count measurements: `n` matched, `nModified` changed, `upserted: [{index, _id}]` with the
measurement's `_id`.  Limits of 8.0: no multi-update or multi-delete in a transaction
(OperationNotSupportedInTransaction); updateOne / findAndModify with a `sort` is InvalidOptions; a
retryable update runs each statement in an internal transaction on a child session (its `applyOps`
entry carries `lsid: {id, uid, txnNumber, txnUUID}`, `txnNumber: 0`); a retryable findAndModify is
refused (7308305 / 7314600).
"""

from __future__ import annotations

import datetime
import uuid
from typing import TYPE_CHECKING, Any

from bson import Binary, Int64

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.collation import command_collator, statement_collator
from mongosim.shardsim.operation_context import OpCtx
from mongosim.shardsim.query.matcher import Matcher
from mongosim.shardsim.query.update import apply_update, classify_update, mutable_id, parse_update
from mongosim.shardsim.query.values import hashable
from mongosim.shardsim.query.variables import for_command
from mongosim.shardsim.timeseries import buckets_of
from mongosim.shardsim.timeseries_index_conversion import hint as translate_hint
from mongosim.shardsim.timeseries_minmax import Schema
from mongosim.shardsim.timeseries_predicates import BucketSpec, bucket_predicate, split_meta
from mongosim.shardsim.timeseries_write_util import (
    MAX_COUNT,
    BucketWrites,
    append,
    bucket_oid,
    comparator,
    count_of,
    measurements_of,
    new_bucket,
    normalize_metadata,
    round_time,
    series_key,
    time_of,
)
from mongosim.shardsim.writes import (
    WriteErrors,
    WriteSession,
    _write_concern_reply,
    matching_documents,
    parse_find_and_modify,
    parse_update_statement,
    prepare_insert,
    replay_update,
    statement_variables,
)

if TYPE_CHECKING:
    from mongosim.shardsim.catalog import Collection
    from mongosim.shardsim.node import Node

CLOSED = {"control.closed": {"$not": {"$eq": True}}}  # (closed buckets take no writes)


async def run(node: Node, ctx: OpCtx, command: str, name: str) -> dict:
    if command == "delete":
        return await _delete(node, ctx, name)
    if command == "update":
        return await _update(node, ctx, name)
    return await _find_and_modify(node, ctx, name)


class _Target:
    """The time-series collection a command writes: its buckets collection and options."""

    def __init__(self, node: Node, ctx: OpCtx, name: str) -> None:
        self.node = node
        self.name = name
        self.buckets = buckets_of(name)
        self.coll: Collection | None = node.catalog.collection(ctx.db, self.buckets)
        if self.coll is None:
            raise MongoError("NamespaceNotFound", "Could not find time-series buckets collection for write")
        self.ts: dict = self.coll.options["timeseries"]
        self.spec = BucketSpec(self.ts)
        self.compare = comparator(self.coll)
        self.ns = f"{ctx.db}.{self.buckets}"


# -- one statement ---------------------------------------------------------------------------------
class _Statement:
    """What one delete / update statement does to the buckets (`run`): n, nModified, the upserted
    `_id`, and for findAndModify the measurement before and after."""

    def __init__(self, target: _Target, ctx: OpCtx, ws: WriteSession, index: int, q: dict, multi: bool,
                 collator: Any, hint: Any, update: Any = None, array_filters: list | None = None,
                 variables: dict | None = None, upsert: bool = False, supplied: dict | None = None,
                 stmt_id: int | None = None) -> None:
        self.t, self.ctx, self.ws, self.index = target, ctx, ws, index
        self.q, self.multi, self.update, self.array_filters = q, multi, update, array_filters
        self.variables = variables or {}
        self.upsert, self.supplied = upsert, supplied
        self.stmt_id = stmt_id
        self.collator = collator
        self.matcher = Matcher(q, self.variables, collator)
        self.hint = translate_hint(target.ts, hint) if hint is not None else None
        self.n = self.n_modified = 0
        self.upserted: Any = None
        self.before: dict | None = None
        self.after: dict | None = None
        self.side = _SideCatalog(target, ws)

    def bucket_filter(self) -> tuple[dict, bool]:
        """The bucket filter, and whether the measurements need a look (else whole buckets match)."""
        meta, rest = split_meta(self.q, self.t.spec)
        default = self.t.coll.options.get("collation") or None
        strings_ok = (self.collator.spec if self.collator is not None else None) == default
        parts = [CLOSED]
        if meta is not None:
            parts.append(meta)
        loose = bucket_predicate(rest, self.t.spec, strings_ok=strings_ok) if rest is not None else None
        if loose is not None:
            parts.append(loose)
        return {"$and": parts}, rest is not None

    async def run(self) -> None:
        flt, residual = self.bucket_filter()
        bucket_matcher = Matcher(flt, self.variables, self.collator)
        coll, candidates = await self.ws.settled_targets(
            self.ctx.db, self.t.buckets,
            lambda c: list(matching_documents(c, flt, bucket_matcher, self.ws, hint=self.hint, collator=self.collator)))
        if self.update is None and self.multi and not residual:
            for bucket in candidates:
                writes = BucketWrites(coll)
                writes.delete(bucket)
                writes.commit(self.t.node, self.ctx, self.ws, self.index, group=False, stmt_id=self.stmt_id)
                self.n += count_of(bucket, self.t.ts)
            return
        for candidate in candidates:
            bucket = self.ws.get(coll, candidate["_id"])
            if bucket is None or not bucket_matcher.matches(bucket):
                continue
            if self._modify(coll, bucket) and not self.multi:
                break
        if self.update is not None and self.upsert and self.n == 0:
            self._upsert()

    def _modify(self, coll: Collection, bucket: dict) -> bool:
        """Apply the statement to one bucket's measurements; whether one matched."""
        matched: list[dict] = []
        unchanged: list[dict] = []
        for m in measurements_of(bucket, self.t.ts):
            if (self.multi or not matched) and self.matcher.matches(m):
                matched.append(m)
            else:
                unchanged.append(m)
        if not matched:
            return False
        if self.update is None:
            modified = matched
        else:
            pairs = self._apply(matched, unchanged)
            self._check_shard_key(pairs)
            modified = [new for _old, new in pairs]
        self.before = matched[0]
        self.after = modified[0] if modified else matched[0]
        self.n += len(matched)
        if not modified:
            return True
        writes = BucketWrites(coll)
        if unchanged:
            writes.replace(bucket, new_bucket(bucket["_id"], unchanged, self.t.ts, self.t.compare))
        else:
            writes.delete(bucket)
        if self.update is not None:
            self.side.add(writes, modified)
        writes.commit(self.t.node, self.ctx, self.ws, self.index, group=True, stmt_id=self.stmt_id)
        self.side.committed(writes)
        self.n_modified += len(modified)
        return True

    def _apply(self, matched: list[dict], unchanged: list[dict]) -> list[tuple[dict, dict]]:
        """(measurement, as updated) of each one the update changes; the others join `unchanged`."""
        pairs: list[tuple[dict, dict]] = []
        kind = classify_update(self.update)
        with mutable_id():
            for m in matched:
                position = self.matcher.match_position(m)[1] if kind == "operators" else None
                res = apply_update(m, self.update, array_filters=self.array_filters, match_position=position,
                                   variables=self.variables)
                if res.diff is None:
                    unchanged.append(m)
                else:
                    pairs.append((m, res.doc))
        for _old, new in pairs:
            time_of(new, self.t.ts)
        return pairs

    def _check_shard_key(self, pairs: list[tuple[dict, dict]]) -> None:
        """An update of a sharded collection's shard key fields (TimeseriesModifyStage's
        _checkUpdateChangesShardKeyFields): never in a multi-update; only retryable or in a
        transaction; a measurement whose new bucket another shard owns is WouldChangeOwningShard
        (mongos deletes it here and inserts it there)."""
        coll, node = self.t.coll, self.t.node
        if not coll.shard_key or node.owns is None or not pairs:
            return
        paths = [_user_path(f, self.t.ts) for f in coll.shard_key]
        changed = [(old, new) for old, new in pairs if _key_of(old, paths, self.t.ts) != _key_of(new, paths, self.t.ts)]
        if not changed:
            return
        if self.multi:
            raise MongoError("InvalidOptions", "Multi-update operations are not allowed when updating the shard key "
                                               "field.")
        if self.ctx.txn is None and self.ctx.txn_number is None:
            raise MongoError("IllegalOperation", "Must run update to shard key field in a multi-statement transaction "
                                                 "or with retryWrites: true.")
        old, new = changed[0]
        bucket = new_bucket(bucket_oid(round_time(time_of(new, self.t.ts), self.t.ts)), [new], self.t.ts,
                            self.t.compare)
        if not node.owns(coll.ns, bucket):  # (mongos deletes the measurement and inserts the new bucket)
            raise MongoError("WouldChangeOwningShard", "This update would cause the doc to change owning shards",
                             preImage=old, postImage=bucket, shouldUpsert=False, userPostImage=new)

    def _upsert(self) -> None:
        if self.supplied is not None:
            doc = prepare_insert(dict(self.supplied))
        else:
            with mutable_id():
                doc = apply_update({}, self.update, array_filters=self.array_filters, upsert_query=self.q,
                                   is_insert=True, variables=self.variables).doc
        time_of(doc, self.t.ts)
        writes = BucketWrites(self.t.coll)
        self.side.add(writes, [doc])
        writes.commit(self.t.node, self.ctx, self.ws, self.index, group=False, stmt_id=self.stmt_id)
        self.side.committed(writes)
        self.n = 1
        self.upserted = doc["_id"]
        self.after = doc


def _user_path(bucket_field: str, ts: dict) -> str:
    """A bucket shard key field in measurement terms (meta.x -> <metaField>.x, control.min.<t> -> <t>)."""
    if bucket_field == "meta" or bucket_field.startswith("meta."):
        return ts["metaField"] + bucket_field[4:]
    return ts["timeField"]


def _key_of(measurement: dict, paths: list[str], ts: dict) -> tuple:
    from mongosim.shardsim.query.paths import get_path

    out = []
    for path in paths:
        value = get_path(measurement, path)
        if path == ts["timeField"] and isinstance(value, datetime.datetime):
            value = round_time(value, ts)
        elif path.split(".", 1)[0] == ts.get("metaField"):
            value = normalize_metadata(value)
        out.append(hashable(value))
    return tuple(out)


class _SideCatalog:
    """The buckets a statement's changed measurements go into: new ones, filled as the bucket
    catalog fills buckets (one series per meta value, the span, the count, the schema)."""

    def __init__(self, target: _Target, ws: WriteSession) -> None:
        self.t = target
        self.open: dict[Any, dict] = {}  # series -> the newest side bucket as written

    def add(self, writes: BucketWrites, measurements: list[dict]) -> None:
        """The writes that put `measurements` into side buckets (an insert per new bucket, an update of
        the series' open one)."""
        ts = self.t.ts
        meta = ts.get("metaField")
        plans: dict[Any, list] = {}  # series -> [bucket before (None: a new one), its new measurements]
        order: list[list] = []
        for m in measurements:
            when = time_of(m, ts)
            if meta is not None and meta in m:
                m = {**m, meta: normalize_metadata(m[meta])}
            series = series_key(m, ts)
            plan = plans.get(series)
            if plan is None and series in self.open:
                plan = plans[series] = [self.open[series], []]
                order.append(plan)
            if plan is not None and self._fits(plan, m, when):
                plan[1].append(m)
                continue
            plan = plans[series] = [None, [m]]
            order.append(plan)
        for base, added in order:
            if base is None:
                start = round_time(time_of(added[0], ts), ts)
                writes.insert(new_bucket(bucket_oid(start), added, ts, self.t.compare))
            elif added:
                writes.update(base, *append(base, added, ts, self.t.compare))

    def _fits(self, plan: list, m: dict, when: datetime.datetime) -> bool:
        base, added = plan
        ts = self.t.ts
        if base is not None:
            control = base["control"]
            start, count = control["min"][ts["timeField"]], count_of(base, ts) + len(added)
            schema = Schema.of(control["min"], control["max"])
        else:
            start, count, schema = round_time(time_of(added[0], ts), ts), len(added), Schema()
        if not start <= when < start + datetime.timedelta(seconds=int(ts["bucketMaxSpanSeconds"])) or \
                count >= MAX_COUNT:
            return False
        meta = ts.get("metaField")
        return all(schema.update(x, meta) for x in added) and schema.update(m, meta)

    def committed(self, writes: BucketWrites) -> None:
        for kind, old, new, _op in writes.items:
            if new is None:
                continue
            series = ("meta", hashable(new["meta"])) if "meta" in new else None
            if kind == "insert" or (old is not None and self.open.get(series) is old):
                self.open[series] = new


# -- the commands ----------------------------------------------------------------------------------
def _check_in_transaction(ctx: OpCtx, target: _Target, multi: bool, what: str) -> None:
    if ctx.txn is not None and multi:
        raise MongoError("OperationNotSupportedInTransaction",
                         f"Cannot perform a multi {what} inside of a multi-document transaction on a time-series "
                         f"collection: {target.ns}")


def _begin(node: Node, ctx: OpCtx, name: str, field: str) -> tuple[list, _Target, WriteSession]:
    """A write command's statements (the `field` of `command.field`), its target and write session."""
    stmts = ctx.cmd.get(field.split(".")[1])
    if not isinstance(stmts, list):
        raise MongoError("FailedToParse", f"BSON field '{field}' is missing but a required field")
    return stmts, _Target(node, ctx, name), WriteSession(node, ctx)


async def _delete(node: Node, ctx: OpCtx, name: str) -> dict:
    stmts, target, ws = _begin(node, ctx, name, "delete.deletes")
    n = 0
    errors = WriteErrors(ctx, ws)
    variables = None
    for i, st in errors.statements(stmts):
        _check_in_transaction(ctx, target, isinstance(st, dict) and st.get("limit", 0) == 0, "delete")
        with errors.statement(i):
            saved = ws.already(i)
            if saved is not None:
                n += saved.get("n", 0)
                continue
            q = _query(st, "delete.deletes")
            limit = st.get("limit", 0)
            if limit not in (0, 1):
                raise MongoError("FailedToParse", "The limit field in delete objects must be 0 or 1. Got " + str(limit))
            if variables is None:
                variables = for_command(node, ctx)
            collator = statement_collator(st, target.coll, "delete.deletes")
            stmt = _Statement(target, ctx, ws, i, q, limit == 0, collator, st.get("hint"), variables=variables)
            await stmt.run()
            n += stmt.n
            if ws.state is not None:
                ws.state.executed[ws.stmt_id(i)] = {"n": stmt.n}
    return _write_concern_reply({"n": n}, errors.errors)


def _statement(st: Any, where: str) -> dict:
    if not isinstance(st, dict):
        raise MongoError("TypeMismatch", f"BSON field '{where}' element must be an object")
    return st


def _query(st: Any, where: str) -> dict:
    q = _statement(st, where).get("q", {})
    if not isinstance(q, dict):
        raise MongoError("TypeMismatch", f"BSON field '{where}.q' is the wrong type, expected type 'object'")
    return q


async def _update(node: Node, ctx: OpCtx, name: str) -> dict:
    stmts, target, ws = _begin(node, ctx, name, "update.updates")
    retryable = ws.state is not None
    n = n_modified = 0
    upserted: list[dict] = []
    errors = WriteErrors(ctx, ws)
    variables = None
    for i, st in errors.statements(stmts):
        _check_in_transaction(ctx, target, isinstance(st, dict) and bool(st.get("multi")), "update")
        with errors.statement(i):
            saved = ws.already(i)
            if saved is not None:
                n, n_modified = replay_update(saved, i, upserted, n, n_modified)
                continue
            q, u, multi = parse_update_statement(_statement(st, "update.updates"))
            if st.get("sort") is not None:
                if multi:
                    raise MongoError("FailedToParse", "Cannot specify sort with multi=true")
                raise MongoError("InvalidOptions", "Cannot perform an updateOne or a findAndModify with a query and "
                                                   "sort on a time-series collection.")
            if variables is None:
                variables = for_command(node, ctx)
            stmt_vars = statement_variables(variables, st, u)
            parse_update(u, st.get("arrayFilters"))
            collator = statement_collator(st, target.coll, "update.updates")
            supplied = (st.get("c") or {}).get("new") if st.get("upsertSupplied") else None
            args = dict(q=q, multi=multi, collator=collator, hint=st.get("hint"), update=u,
                        array_filters=st.get("arrayFilters"), variables=stmt_vars, upsert=bool(st.get("upsert")),
                        supplied=supplied)
            if retryable:
                stmt = await _in_internal_transaction(node, ctx, target, ws, i, args)
            else:
                stmt = _Statement(target, ctx, ws, i, **args)
                await stmt.run()
            n += stmt.n
            n_modified += stmt.n_modified
            result = {"n": stmt.n, "nModified": stmt.n_modified}
            if stmt.upserted is not None:
                upserted.append({"index": i, "_id": stmt.upserted})
                result["upserted"] = stmt.upserted
            if ws.state is not None:
                ws.state.executed[ws.stmt_id(i)] = result
    reply: dict[str, Any] = {"n": n}
    if upserted:
        reply["upserted"] = upserted
    reply["nModified"] = n_modified
    return _write_concern_reply(reply, errors.errors)


async def _in_internal_transaction(node: Node, ctx: OpCtx, target: _Target, ws: WriteSession, index: int,
                                   args: dict) -> _Statement:
    """A retryable write's update statement in an internal transaction (runTimeseriesRetryableUpdates):
    a child of the client's session (`{id, uid, txnNumber, txnUUID}`, txnNumber 0) whose commit is one
    `applyOps` entry; the client's session remembers the statement."""
    from mongosim.shardsim.transactions import Transaction

    parent = ctx.lsid or {}
    lsid = {k: parent[k] for k in ("id", "uid") if k in parent}
    lsid["txnNumber"] = Int64(ctx.txn_number)
    lsid["txnUUID"] = Binary(uuid.uuid4().bytes, 4)
    inner = OpCtx(ctx.db, ctx.cmd, lsid=lsid, txn_number=0, from_router=ctx.from_router)
    inner.txn = Transaction(node, lsid, 0)
    inner.deadline = ctx.deadline
    try:
        stmt = _Statement(target, inner, WriteSession(node, inner), index, stmt_id=ws.stmt_id(index), **args)
        await stmt.run()
        inner.txn.commit(inner)
    except MongoError:
        inner.txn.abort(inner)
        raise
    finally:
        node.sessions.forget(lsid)
    if inner.op_time_key:
        ctx.op_time_key = inner.op_time_key
    return stmt


async def _find_and_modify(node: Node, ctx: OpCtx, name: str) -> dict:
    from mongosim.shardsim.query.projection import compile_projection

    cmd = ctx.cmd
    q, remove, update = parse_find_and_modify(cmd)
    target = _Target(node, ctx, name)
    ws = WriteSession(node, ctx)
    if ws.state is not None:
        raise MongoError(7308305 if remove else 7314600, "Retryable findAndModify on a timeseries is not supported")
    if cmd.get("sort"):
        raise MongoError("InvalidOptions", "Cannot perform an updateOne or a findAndModify with a query and sort on a "
                                           "time-series collection.")
    variables = for_command(node, ctx)
    collator = command_collator(cmd.get("collation"), target.coll, "findAndModify.collation")
    fields = cmd.get("fields")
    project = compile_projection(fields, variables=variables) if fields else None
    stmt = _Statement(target, ctx, ws, 0, q, False, collator, cmd.get("hint"), update=update,
                      array_filters=cmd.get("arrayFilters"), variables=variables, upsert=bool(cmd.get("upsert")))
    await stmt.run()
    last_error: dict[str, Any] = {"n": stmt.n}
    value = None
    if remove:
        value = stmt.before
    elif stmt.upserted is not None:
        last_error = {"n": 1, "updatedExisting": False, "upserted": stmt.upserted}
        value = stmt.after if cmd.get("new") else None
    elif stmt.n:
        last_error["updatedExisting"] = True
        value = stmt.after if cmd.get("new") else stmt.before
    else:
        last_error["updatedExisting"] = False
    if value is not None and project is not None:
        value = project(value)
    return {"lastErrorObject": last_error, "value": value, "ok": 1.0}


__all__ = ["run"]
