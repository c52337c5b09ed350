"""CRUD through the router: targeting by shard key and merging shard replies.

Writes: each document (insert) or statement (update/delete) is targeted to a
shard — the database's primary shard for an unsharded collection, the owner of
the chunk holding the shard key for a sharded one.  Ordered writes go out as
contiguous runs per shard, one after the other, stopping at the first error;
unordered writes go out grouped per shard.  Write errors are re-indexed to the
client's positions.  A single-document update/delete/findAndModify whose filter
lacks the full shard key tries the owning shards one by one (as 7.0+ does with
its two-phase protocol); multi-document ones broadcast.

Reads: a find with the full shard key goes to one shard; otherwise every shard
owning a chunk answers, and the router merges (sort), applies skip/limit and
projection, and serves the result through its own cursor.
"""

from __future__ import annotations

from itertools import groupby, repeat
from operator import contains
from typing import TYPE_CHECKING, Any

from bson import ObjectId
from mongosim.oplog.bsonutil import DocumentSequence
from mongosim.oplog.clock import ts_key
from mongosim.oplog.errors import MongoError
from mongosim.router.change_owning_shard import Outcome, change_owning_shard
from mongosim.router.collation_targeting import collation_sensitive, effective_collation
from mongosim.router.command_registry import router_command
from mongosim.router.insert_targeting import target_documents
from mongosim.router.let_parameters import freeze_let, router_variables
from mongosim.router.request import GENERIC_FIELDS, Request
from mongosim.router.sort_key_merge import merge, needs_sort_key, shard_projection
from mongosim.router.shard_versioning import MAX_STALE_RETRIES, is_stale, note_routing, with_versions
from mongosim.router.sharding import critical_sections, ensure_database
from mongosim.router.store_possible_cursor import store_possible_cursor
from mongosim.router.timeseries_routing import BUCKETS, bucket_key_values, routing_query, sharded_buckets
from mongosim.router.write_without_shard_key import first_in_sort_order, narrowed
from mongosim.shardsim.collation import command_collator
from mongosim.shardsim.cursors import DEFAULT_FIRST_BATCH, QueryCursor, cursor_reply
from mongosim.shardsim.node import WOULD_CHANGE_OWNING_SHARD
from mongosim.shardsim.query.projection import compile_projection
from mongosim.shardsim.query.sorting import sort_key_fn
from mongosim.shardsim.reads import int_arg
from mongosim.shardsim.snapshot_reads import existed_at

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

_PASS = ("lsid", "txnNumber", "autocommit", "startTransaction", "readConcern", "writeConcern", "bypassDocumentValidation", "let", "comment",
         "collectionUUID",
         "maxTimeMS")


def _ns(req: Request) -> tuple[str, str, str]:
    coll = req.cmd[req.name]
    if not isinstance(coll, str):
        raise MongoError("InvalidNamespace", f"collection name has invalid type {type(coll).__name__}")
    return req.db, coll, f"{req.db}.{coll}"


def _session_fields(req: Request) -> dict:
    return {k: req.cmd[k] for k in _PASS if k in req.cmd}


def _read_targets(router: Router, req: Request, ns: str, query: dict | None) -> list[str]:
    """The shards a read asks. A snapshot read (outside a transaction) asks every shard holding
    the collection: chunks may have moved since its atClusterTime, and each shard's snapshot holds
    exactly the documents it owned then (mongos routes by the routing table of that time)."""
    rc = req.cmd.get("readConcern")
    if isinstance(rc, dict) and rc.get("level") == "snapshot" and "autocommit" not in req.cmd:
        from mongosim.router.commands_ddl import shards_holding

        db, coll = ns.split(".", 1)
        if db not in ("config", "admin"):
            at = ts_key(rc["atClusterTime"])  # (set by Router._snapshot_read_time)
            return [s for s in shards_holding(router, db, coll) if existed_at(router.shard(s).node, at)]
    shards = targets_for_query(router, ns, query, req.cmd.get("collation"))
    note_routing(router, req, ns.split(".", 1)[1], shards)
    return shards


def targets_for_query(router: Router, ns: str, query: dict | None, collation: Any = None) -> list[str]:
    """Shards that may hold documents matching `query` (compared under `collation`, a command's field)."""
    db = ns.split(".", 1)[0]
    if db in ("config", "admin"):
        return ["config"]
    p = router.catalog.primary_of(db)  # first: a database not cached is looked up (with its collections)
    r = router.catalog.routing(ns)
    if r is None:
        return [p] if p else []
    if collation_sensitive(r.pattern.fields, query, effective_collation(r, collation)):
        return r.shards()
    values = r.pattern.extract_from_query(query or {})
    if values is not None:
        return [r.shard_for(values)]
    return r.shards()


def _shard_for_doc(router: Router, ns: str, primary: str, doc: dict) -> str:
    r = router.catalog.routing(ns)
    if r is None:
        return primary
    return r.shard_for(r.pattern.extract(doc))


async def _run_txn_aware(router: Router, req: Request, shard: str, db: str, cmd: dict) -> dict:
    cmd = with_versions(router, req, db, cmd, shard)
    if req.cmd.get("autocommit") is False:
        return await router.txns.run_in_transaction(req, shard, db, cmd)
    return await router.shard(shard).command(db, cmd)


def _note_op_time(req: Request, router: Router, shard: str) -> None:
    key = router.shard(shard).node.oplog.last_key
    if key > req.op_time_key:
        req.op_time_key = key


@router_command("insert")
async def cmd_insert(router: Router, req: Request) -> dict:
    db, coll, ns = _ns(req)
    docs = req.cmd.get("documents")
    if not isinstance(docs, list):
        raise MongoError("FailedToParse", "BSON field 'insert.documents' is missing but a required field")
    ordered = req.cmd.get("ordered", True)
    ts = sharded_buckets(router, db, coll)
    if ts is not None:
        return await _timeseries_insert(router, req, ts[0], docs, ordered)
    await critical_sections(router).wait(ns)
    primary = await ensure_database(router, db)
    prepared = _with_ids(docs)

    def target(d: Any) -> str | MongoError:
        """The shard of one document, by the routing table as it is now (it may be refreshed)."""
        p = router.catalog.primary_of(db) or primary  # (ensure_database runs again after a refresh)
        try:
            return _shard_for_doc(router, ns, p, d) if isinstance(d, dict) else p
        except MongoError as err:
            return err

    def target_many(idxs: list[int]) -> dict[int, str | MongoError]:
        """The shard of each document at `idxs`: from the documents' bytes where it can be."""
        p = router.catalog.primary_of(db) or primary
        sub = prepared.subset(idxs)
        found = target_documents(router.catalog.routing(ns), p, sub, sub.raws, target)
        return dict(zip(idxs, found))

    return await _fan_out_writes(router, req, "insert", coll, "documents", prepared, target, ordered, target_many)


async def _timeseries_insert(router: Router, req: Request, buckets: str, docs: list, ordered: bool) -> dict:
    """Measurements into sharded buckets: each to the shard of the bucket it would start."""
    ns = f"{req.db}.{buckets}"
    await critical_sections(router).wait(ns)
    await ensure_database(router, req.db)

    def target(d: Any) -> str | MongoError:
        try:
            return router.catalog.routing(ns).shard_for(bucket_key_values(router.catalog.routing(ns), d))
        except MongoError as err:
            return err

    return await _fan_out_writes(router, req, "insert", buckets, "documents", _with_ids(docs), target, ordered,
                                 extra=TIMESERIES_FLAG)


def _with_ids(docs: list) -> DocumentSequence:
    """The documents, each with an `_id` (mongos gives one to those without, first), and their bytes
    where they came with them (a new `_id` is spliced in front of the other fields' bytes)."""
    raws = list(getattr(docs, "raws", None) or [None] * len(docs))
    try:
        if all(map(contains, docs, repeat("_id"))):
            return DocumentSequence(docs, raws)
    except TypeError:  # not every document is an object: the shard refuses those
        pass
    out = list(docs)
    for i, d in enumerate(out):
        if isinstance(d, dict) and "_id" not in d:
            oid = ObjectId()
            out[i] = {"_id": oid, **d}
            r = raws[i]
            raws[i] = None if r is None else (len(r) + 17).to_bytes(4, "little") + b"\x07_id\x00" + oid.binary + r[4:]
    return DocumentSequence(out, raws)


def _child_batches(pending: list[int], shards: dict[int, Any], ordered: bool) -> list[tuple[str, list[int]]]:
    """Group item positions into child batches: contiguous runs per shard when ordered, one batch
    per shard otherwise; an item that could not be targeted is its own "!" batch."""
    groups: list[tuple[str, list[int]]] = []
    if ordered:
        for i in pending:
            s = shards[i]
            if isinstance(s, MongoError):
                groups.append(("!", [i]))
            elif groups and groups[-1][0] == s:
                groups[-1][1].append(i)
            else:
                groups.append((s, [i]))
    elif all(map(isinstance, shards.values(), repeat(str))):
        # per shard, in the order shards first appear; each group in the items' order (a stable sort)
        at = shards.__getitem__
        by = {s: list(g) for s, g in groupby(sorted(pending, key=at), at)}
        groups.extend((s, by[s]) for s in dict.fromkeys(map(at, pending)))
    else:
        by: dict[str, list[int]] = {}
        for i in pending:
            s = shards[i]
            if isinstance(s, MongoError):
                groups.append(("!", [i]))
            else:
                by.setdefault(s, []).append(i)
        groups.extend(by.items())
    return groups


async def _fan_out_writes(router: Router, req: Request, cmd_name: str, coll: str, field: str,
                          items: list, target, ordered: bool, target_many=None, extra: dict | None = None) -> dict:
    """Send `items` to their shards (`target(item)`, or `target_many(positions)` for all at once) in
    child batches and merge the replies (a DocumentSequence's children carry their documents' bytes).

    A child batch a shard refuses as routed by a stale table wrote nothing: the router refreshes
    and retargets its items (ordered: and every later item, not sent yet), up to
    MAX_STALE_RETRIES times."""
    base = {**_session_fields(req), **(extra or {})}
    in_txn = "autocommit" in req.cmd
    n = n_modified = 0
    upserted: list[dict] = []
    errors: list[dict] = []
    pending = list(range(len(items)))
    for attempt in range(MAX_STALE_RETRIES + 1):
        shards = target_many(pending) if target_many is not None else {i: target(items[i]) for i in pending}
        note_routing(router, req, coll, set(shards.values()))
        retry: list[int] = []
        groups = _child_batches(pending, shards, ordered)
        for g, (shard, idxs) in enumerate(groups):
            if shard == "!":
                errors.append(shards[idxs[0]].to_write_error(idxs[0]))
                if ordered:
                    break
                continue
            subset = items.subset(idxs) if isinstance(items, DocumentSequence) else [items[i] for i in idxs]
            cmd = {cmd_name: coll, field: subset, "ordered": ordered, **base}
            if "txnNumber" in req.cmd:
                cmd["stmtIds"] = list(idxs)
            try:
                reply = await _run_txn_aware(router, req, shard, req.db, cmd)
            except MongoError as err:
                if in_txn:
                    raise
                if is_stale(err) and attempt < MAX_STALE_RETRIES:
                    retry.extend(idxs)
                    if ordered:  # the later items were not sent: they go again, in order, after it
                        retry.extend(i for _s, later in groups[g + 1:] for i in later)
                        break
                    continue
                for i in idxs:
                    errors.append(err.to_write_error(i))
                    if ordered:
                        break
                if ordered:
                    break
                continue
            _note_op_time(req, router, shard)
            n += reply.get("n", 0)
            n_modified += reply.get("nModified", 0)
            for u in reply.get("upserted", []):
                upserted.append({"index": idxs[u["index"]], "_id": u["_id"]})
            errs = reply.get("writeErrors") or []
            for e in errs:
                e = dict(e)
                e["index"] = idxs[e["index"]]
                errors.append(e)
            if errs and ordered:
                break
        if not retry:
            break
        router.refresh_catalog()
        await ensure_database(router, req.db)  # (it may have been dropped meanwhile: writes create it again)
        pending = sorted(retry)
    out: dict[str, Any] = {"n": n}
    if cmd_name == "update":
        if upserted:
            out["upserted"] = sorted(upserted, key=lambda u: u["index"])
        out["nModified"] = n_modified
    if errors:
        out["writeErrors"] = sorted(errors, key=lambda e: e["index"])
    out["ok"] = 1.0
    return out


async def _target_one_statement(router: Router, req: Request, ns: str, q: dict, multi: bool, upsert: bool,
                                collation: Any = None) -> list[str]:
    r = router.catalog.routing(ns)
    if r is not None and upsert:
        if r.pattern.extract_from_query(q) is None:
            raise MongoError("ShardKeyNotFound", f"Failed to target upsert by query :: could not extract exact shard key from query {q}")
    shards = targets_for_query(router, ns, q, collation)
    note_routing(router, req, ns.split(".", 1)[1], shards)
    return shards


@router_command("update")
async def cmd_update(router: Router, req: Request) -> dict:
    db, coll, ns = _ns(req)
    stmts = req.cmd.get("updates")
    if not isinstance(stmts, list):
        raise MongoError("FailedToParse", "BSON field 'update.updates' is missing but a required field")
    freeze_let(router, req)
    return await _statements(router, req, "update", *_write_target(router, db, coll, ns), "updates", stmts,
                             lambda st: bool(st.get("multi")))


@router_command("delete")
async def cmd_delete(router: Router, req: Request) -> dict:
    db, coll, ns = _ns(req)
    stmts = req.cmd.get("deletes")
    if not isinstance(stmts, list):
        raise MongoError("FailedToParse", "BSON field 'delete.deletes' is missing but a required field")
    freeze_let(router, req)
    return await _statements(router, req, "delete", *_write_target(router, db, coll, ns), "deletes", stmts,
                             lambda st: st.get("limit", 0) == 0)


TIMESERIES_FLAG = {"isTimeseriesNamespace": True}


def _write_target(router: Router, db: str, coll: str, ns: str) -> tuple[str, str]:
    """The namespace an update / delete goes to: a time-series collection's buckets when they are sharded."""
    ts = sharded_buckets(router, db, coll)
    return (ts[0], f"{db}.{ts[0]}") if ts is not None else (coll, ns)


def _route_query(router: Router, ns: str, q: Any) -> Any:
    """The filter a statement is targeted by (a time-series collection's: its bucket-level predicate)."""
    routing = router.catalog.routing(ns)
    if routing is not None and routing.timeseries_fields is not None:
        return routing_query(routing, q)
    return q


async def _statements(router: Router, req: Request, cmd_name: str, coll: str, ns: str, field: str,
                      stmts: list, is_multi) -> dict:
    ordered = req.cmd.get("ordered", True)
    await critical_sections(router).wait(ns)
    await ensure_database(router, req.db)
    base = _session_fields(req)
    if coll.startswith(BUCKETS) and coll != req.cmd[req.name]:
        base.update(TIMESERIES_FLAG)
    n = n_modified = 0
    upserted: list[dict] = []
    errors: list[dict] = []
    for i, st in enumerate(stmts):
        try:
            if not isinstance(st, dict):
                raise MongoError("TypeMismatch", f"BSON field '{cmd_name}.{field}' element must be an object")
            multi = is_multi(st)
            answered: set[str] = set()  # shards a multi-statement ran on (not sent again after a stale one)
            for attempt in range(MAX_STALE_RETRIES + 1):
                try:
                    got = await _one_statement(router, req, cmd_name, coll, ns, field, base, i, st, multi, answered)
                    break
                except MongoError as err:
                    if "autocommit" in req.cmd or not is_stale(err) or attempt == MAX_STALE_RETRIES:
                        raise
                    router.refresh_catalog()  # routed by a stale table: nothing was written there
                    await ensure_database(router, req.db)
            n += got[0]
            n_modified += got[1]
            upserted.extend(got[2])
        except _WriteError as we:
            errors.append(we.error)
            if ordered:
                break
        except MongoError as err:
            if router.txns is not None and "autocommit" in req.cmd:
                raise
            errors.append(err.to_write_error(i))
            if ordered:
                break
    out: dict[str, Any] = {"n": n}
    if cmd_name == "update":
        if upserted:
            out["upserted"] = upserted
        out["nModified"] = n_modified
    if errors:
        out["writeErrors"] = errors
    out["ok"] = 1.0
    return out


async def _one_statement(router: Router, req: Request, cmd_name: str, coll: str, ns: str, field: str, base: dict,
                         i: int, st: dict, multi: bool, answered: set[str]) -> tuple[int, int, list[dict]]:
    """One update/delete statement on the shards it targets: (n, nModified, upserted)."""
    n = n_modified = 0
    upserted: list[dict] = []
    q = st.get("q") or {}
    shards = await _target_one_statement(router, req, ns, _route_query(router, ns, q), multi, bool(st.get("upsert")),
                                         st.get("collation"))
    if not multi and st.get("sort") and len(shards) > 1 and "isTimeseriesNamespace" not in base:
        # the document the sort puts first
        found = await first_in_sort_order(router, req, req.db, coll, q, st["sort"], shards, req.cmd.get("let"),
                                          st.get("collation"))
        if found is None:
            return 0, 0, []
        shards, st = [found[0]], {**st, "q": narrowed(q, found[1])}
    for shard in shards:
        if shard in answered:
            continue
        cmd = {cmd_name: coll, field: [st], "ordered": True, **base}
        if "txnNumber" in req.cmd:
            cmd["stmtIds"] = [i]
        reply = await _run_txn_aware(router, req, shard, req.db, cmd)
        if multi:
            answered.add(shard)
        _note_op_time(req, router, shard)
        if reply.get("writeErrors") and reply["writeErrors"][0].get("code") == WOULD_CHANGE_OWNING_SHARD:
            flag = {k: base[k] for k in TIMESERIES_FLAG if k in base}
            done = await change_owning_shard(
                router, req, req.db, coll, ns, shard, reply["writeErrors"][0],
                _rerun_statement(router, shard, req.db, {cmd_name: coll, field: [st], "ordered": True, **flag}),
                _update_result, i)
            if "upserted" in done:
                upserted.append({"index": i, "_id": done["upserted"]})
            return n + done.get("n", 0), n_modified + done.get("nModified", 0), upserted
        if reply.get("writeErrors"):
            e = dict(reply["writeErrors"][0])
            e["index"] = i
            raise _WriteError(e)
        n += reply.get("n", 0)
        n_modified += reply.get("nModified", 0)
        for u in reply.get("upserted", []):
            upserted.append({"index": i, "_id": u["_id"]})
        if not multi and reply.get("n", 0) > 0:
            break
    return n, n_modified, upserted


def _rerun_statement(router: Router, shard: str, db: str, cmd: dict):
    """The statement run again on `shard` in mongos's internal transaction: its reply, or the
    WouldChangeOwningShard it meets again (any other write error is raised)."""

    async def rerun(txn_req: Request) -> dict | MongoError:
        reply = await router.txns.run_in_transaction(txn_req, shard, db, cmd)
        if reply.get("writeErrors"):
            err = MongoError.from_write_error(reply["writeErrors"][0])
            if err.code != WOULD_CHANGE_OWNING_SHARD:
                raise err
            return err
        return reply

    return rerun


def _update_result(outcome: Outcome) -> dict:
    """An update statement's result (as a shard records it for retries) after a WouldChangeOwningShard."""
    if outcome.rerun is not None:
        done = {"n": outcome.rerun.get("n", 0), "nModified": outcome.rerun.get("nModified", 0)}
        for u in outcome.rerun.get("upserted", []):
            done["upserted"] = u["_id"]
        return done
    if outcome.upserted:
        return {"n": 1, "nModified": 0, "upserted": outcome.info["postImage"]["_id"]}
    return {"n": 1, "nModified": 1} if outcome.moved else {"n": 0, "nModified": 0}


class _WriteError(Exception):
    def __init__(self, error: dict) -> None:
        self.error = error


@router_command("findAndModify", "findandmodify")
async def cmd_find_and_modify(router: Router, req: Request) -> dict:
    db, coll, ns = _ns(req)
    user_coll = coll
    coll, ns = _write_target(router, db, coll, ns)
    freeze_let(router, req)
    await critical_sections(router).wait(ns)
    await ensure_database(router, db)
    q = req.cmd.get("query") or {}
    shards = await _target_one_statement(router, req, ns, _route_query(router, ns, q), False,
                                         bool(req.cmd.get("upsert")), req.cmd.get("collation"))
    narrow: dict = TIMESERIES_FLAG if coll != user_coll else {}
    if req.cmd.get("sort") and len(shards) > 1 and not req.cmd.get("upsert") and not narrow:
        # the document the sort puts first
        found = await first_in_sort_order(router, req, db, coll, q, req.cmd["sort"], shards, req.cmd.get("let"),
                                          req.cmd.get("collation"))
        shards, narrow = ([found[0]], {"query": narrowed(q, found[1])}) if found else ([], {})
    last = None
    for shard in shards:
        cmd = {k: v for k, v in req.cmd.items() if k not in ("$db", "$clusterTime", "$readPreference")}
        cmd = {req.name: coll, **{k: v for k, v in cmd.items() if k != req.name}, **narrow}
        try:
            last = await _run_txn_aware(router, req, shard, db, cmd)
        except MongoError as err:
            if err.code != WOULD_CHANGE_OWNING_SHARD:
                raise
            plain = {k: v for k, v in cmd.items() if k not in _SESSION_FIELDS}
            return await change_owning_shard(router, req, db, coll, ns, shard, err.extra,
                                             _rerun_find_and_modify(router, shard, db, plain),
                                             _find_and_modify_reply(req.cmd), int(req.cmd.get("stmtId", 0)))
        _note_op_time(req, router, shard)
        if last.get("lastErrorObject", {}).get("n", 0) > 0:
            return last
    return last or {"lastErrorObject": {"n": 0, "updatedExisting": False}, "value": None, "ok": 1.0}


_SESSION_FIELDS = ("lsid", "txnNumber", "stmtId", "autocommit", "startTransaction", "readConcern", "writeConcern")


def _rerun_find_and_modify(router: Router, shard: str, db: str, cmd: dict):
    """findAndModify run again on `shard` in mongos's internal transaction: its reply, or the
    WouldChangeOwningShard it meets again."""

    async def rerun(txn_req: Request) -> dict | MongoError:
        try:
            return await router.txns.run_in_transaction(txn_req, shard, db, cmd)
        except MongoError as err:
            if err.code != WOULD_CHANGE_OWNING_SHARD:
                raise
            return err

    return rerun


def _find_and_modify_reply(cmd: dict):
    """findAndModify's reply after a WouldChangeOwningShard: the image `new` asks for, projected."""

    def reply(outcome: Outcome) -> dict:
        if outcome.rerun is not None:
            return {k: v for k, v in outcome.rerun.items() if k not in ("$clusterTime", "operationTime")}
        if not outcome.moved:
            return {"lastErrorObject": {"n": 0, "updatedExisting": False}, "value": None, "ok": 1.0}
        info = outcome.info
        post = info.get("userPostImage", info["postImage"])  # (a time-series collection's: the measurement)
        value = post if cmd.get("new") else (None if outcome.upserted else info["preImage"])
        if value is not None and cmd.get("fields"):
            value = compile_projection(cmd["fields"])(value)
        last_error: dict[str, Any] = {"n": 1, "updatedExisting": not outcome.upserted}
        if outcome.upserted:
            last_error["upserted"] = info["postImage"]["_id"]
        return {"lastErrorObject": last_error, "value": value, "ok": 1.0}

    return reply


# -- reads --------------------------------------------------------------------------
def _serve(router: Router, ns: str, results: list[dict], batch_size: int | None, single_batch: bool = False) -> dict:
    """mongos's first batch of merged results.  Its cluster cursor is exhausted only when a `next()`
    made for the batch found none (cluster_find.cpp runQuery, the aggregate's merging cursor): a
    batch the results exactly fill leaves the cursor open, whatever the shards' cursors did."""
    cur = QueryCursor(ns, iter(results))
    batch = cur.first_batch(batch_size)
    if cur.exhausted or single_batch:
        return cursor_reply(batch, 0, ns, first=True)
    return cursor_reply(batch, router.cursors.register(cur), ns, first=True)


class Gathered(list):
    """The results of a find on some shards; `one_batch` when they all came in first batches."""

    one_batch = True


async def _gather(router: Router, req: Request, db: str, shards: list[str], cmd: dict) -> Gathered:
    """Run a find on `shards` and collect every result (following their cursors)."""
    out = Gathered()
    limit = cmd.get("limit")
    if not (type(limit) is int and 0 < limit <= DEFAULT_FIRST_BATCH):
        # (with a small limit the shard's first batch holds every result already: no batch size,
        # so that a find by `_id` stays eligible for the shard's express path)
        cmd = {**cmd, "batchSize": 2**31 - 1}
    for shard in shards:
        remote = router.shard(shard)
        reply = await _run_txn_aware(router, req, shard, db, cmd)
        cur = reply["cursor"]
        out.extend(cur["firstBatch"])
        cid = cur["id"]
        if cid:
            out.one_batch = False
        while cid:
            more = await remote.command(db, {"getMore": cid, "collection": cur["ns"].split(".", 1)[1]})
            out.extend(more["cursor"]["nextBatch"])
            cid = more["cursor"]["id"]
    return out


@router_command("find")
async def cmd_find(router: Router, req: Request) -> dict:
    db, coll, ns = _ns(req)
    variables = router_variables(router, req)
    cmd = req.cmd
    flt = cmd.get("filter") or {}
    if not isinstance(flt, dict):
        raise MongoError("TypeMismatch", "BSON field 'FindCommandRequest.filter' is the wrong type, expected type 'object'")
    shards = _read_targets(router, req, ns, flt)
    if cmd.get("tailable") and len(shards) == 1:  # a capped collection is never sharded: its one shard's cursor
        reply = await router.shard(shards[0]).command(db, {k: v for k, v in cmd.items() if k not in GENERIC_FIELDS})
        return store_possible_cursor(router, shards[0], db, reply)
    batch_size = cmd.get("batchSize")
    limit = cmd.get("limit")
    skip = cmd.get("skip") or 0
    # (the client's comment goes on to the shards, as mongos passes it, so a shard's profiler and
    # currentOp show it)
    passthrough = {k: v for k, v in cmd.items()
                   if k not in GENERIC_FIELDS or k in ("lsid", "txnNumber", "readConcern", "autocommit", "startTransaction", "comment")}
    if len(shards) <= 1:
        if not shards:
            return cursor_reply([], 0, ns, first=True)
        shard_cmd = {k: v for k, v in passthrough.items() if k not in ("batchSize", "singleBatch")}
        results = await _gather(router, req, db, shards, shard_cmd)
        if results.one_batch and 0 < len(results) < (DEFAULT_FIRST_BATCH if batch_size is None else batch_size):
            # the shard's one batch is the whole answer, short of the client's first batch (and, being the
            # shard's batch, within 16 MB): it is the reply's batch as it is, the next() after it EOF
            return cursor_reply(results, 0, ns, first=True)
    elif needs_sort_key(flt, cmd.get("sort"), cmd.get("projection")):  # (text scores, distances: sort_key_merge)
        proj, directions = shard_projection(cmd)
        shard_cmd = {k: v for k, v in passthrough.items() if k not in ("skip", "limit", "batchSize", "singleBatch")}
        shard_cmd["projection"] = proj
        if limit:
            shard_cmd["limit"] = int(limit) + int(skip)
        results = merge(await _gather(router, req, db, shards, shard_cmd), directions,
                        _merge_collator(router, ns, cmd))
        if skip:
            results = results[int(skip):]
        if limit:
            results = results[: int(limit)]
    else:
        shard_cmd = {k: v for k, v in passthrough.items() if k not in ("projection", "skip", "limit", "batchSize", "singleBatch")}
        if limit:
            shard_cmd["limit"] = int(limit) + int(skip)
        results = await _gather(router, req, db, shards, shard_cmd)
        if cmd.get("sort"):
            results.sort(key=sort_key_fn(cmd["sort"], _merge_collator(router, ns, cmd)))
        if skip:
            results = results[int(skip):]
        if limit:
            results = results[: int(limit)]
        if cmd.get("projection"):
            project = compile_projection(cmd["projection"], variables=variables)
            results = [project(d) for d in results]
    # (the batch is the batch size alone: the limit is a RouterStageLimit, at EOF when asked past it)
    return _serve(router, ns, results, batch_size, bool(cmd.get("singleBatch")))


@router_command("getMore")
async def cmd_get_more(router: Router, req: Request) -> dict:
    return await router.cursors.get_more(req.cmd, req.db)


@router_command("killCursors")
async def cmd_kill_cursors(router: Router, req: Request) -> dict:
    ids = req.cmd.get("cursors")
    if not isinstance(ids, list):
        raise MongoError("FailedToParse", "BSON field 'killCursors.cursors' is missing but a required field")
    return router.cursors.kill(f"{req.db}.{req.cmd['killCursors']}", ids)


def _hint(req: Request) -> dict:
    return {"hint": req.cmd["hint"]} if "hint" in req.cmd else {}


@router_command("count")
async def cmd_count(router: Router, req: Request) -> dict:
    db, coll, ns = _ns(req)
    q = req.cmd.get("query") or {}
    skip = int_arg(req.cmd, "skip", "count", 0) or 0  # checked before any shard is asked
    limit = int_arg(req.cmd, "limit", "count", None, allow_negative=True)
    total = 0
    for shard in _read_targets(router, req, ns, q):
        reply = await _run_txn_aware(router, req, shard, db, {"count": coll, "query": q, **_hint(req),
                                                              **_collation_field(req),
                                                              **_session_fields(req)})
        total += reply["n"]
    total = max(total - skip, 0)
    if limit:
        total = min(total, abs(limit))
    return {"n": total, "ok": 1.0}


@router_command("distinct")
async def cmd_distinct(router: Router, req: Request) -> dict:
    from mongosim.shardsim.query.collation import hashable_for, sort_key_for

    db, coll, ns = _ns(req)
    q = req.cmd.get("query") or {}
    collator = _merge_collator(router, ns, req.cmd)
    same = hashable_for(collator)  # the shards' values merged as equal under the collation
    seen: dict = {}
    for shard in _read_targets(router, req, ns, q):
        reply = await _run_txn_aware(router, req, shard, db, {"distinct": coll, "key": req.cmd.get("key"), "query": q,
                                                              **_hint(req), **_collation_field(req),
                                                              **_session_fields(req)})
        for v in reply["values"]:
            seen.setdefault(same(v), v)
    return {"values": sorted(seen.values(), key=sort_key_for(collator)), "ok": 1.0}


def _merge_collator(router: Router, ns: str, cmd: dict):
    """The collator mongos merges the shards' results with: the command's, else the sharded collection's
    default (an unsharded collection's primary shard applies its own)."""
    return command_collator(effective_collation(router.catalog.routing(ns), cmd.get("collation")), None)


def _collation_field(req: Request) -> dict:
    """The command's collation, passed on to the shards."""
    return {"collation": req.cmd["collation"]} if "collation" in req.cmd else {}
