"""bulkWrite through mongos: the server's ClusterBulkWrite (src/mongo/s/write_ops/bulk_write_exec.cpp).

mongos parses and validates the request as a shard does (`shardsim.bulk_write`),
evaluates `let` once (`router.let_parameters`), gives every insert without an
`_id` one (addIdsForInserts), then targets each op by its namespace's routing:

- an insert goes to the shard owning its shard key (the database's primary
  shard for an unsharded collection); an update or delete to the shards its
  filter may match.
- Ops that each target one shard are sent as child bulkWrites, one per shard
  and round (`ops` and `nsInfo` narrowed to what that shard needs, `stmtIds` of
  a retryable write the client's statement ids): ordered, a round is the run of
  consecutive ops on one shard; unordered, every shard's ops at once.
- A multi update/delete matching several shards is sent to each of them and
  the replies summed; a single one (multi: false) tries the shards in turn
  until one writes, or, with `sort`, writes the document the sort puts first
  across all of them (`router.write_without_shard_key`).
- A WouldChangeOwningShard from a shard becomes mongos's delete + insert in a
  transaction (`router.change_owning_shard`), as for the update command.
- Ops on a time-series collection whose buckets are sharded are targeted as the
  write commands target them (`router.timeseries_routing`: a measurement by the
  bucket it would start, an update or delete by its bucket-level predicate) and
  reach the shards on the buckets: their nsInfo entry names `system.buckets.<coll>`
  with `isTimeseriesNamespace: true` (buildBulkCommandRequest), and the shard runs
  them as time-series writes.

Each child bulkWrite carries, in its `nsInfo`, the client's `collectionUUID` (each
op's shard checks it: a mismatch is that op's error item) and the version each namespace was
targeted by (`shardVersion`, `databaseVersion`: router/shard_versioning.py); a
child a shard refuses as routed by a stale table ran nothing, so its ops are
targeted again after a refresh (a multi op only on the shards that did not
answer yet).

The shards' reply items are re-indexed to the client's ops; an ordered bulkWrite
stops at the first error, and inside a transaction any error ends it.  The
reply is served through mongos's own cursor (`admin.$cmd.bulkWrite`), with the
shards' writeConcernErrors merged into one (mergeWriteConcernErrors).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bson import ObjectId
from mongosim.oplog.errors import MongoError, name_of
from mongosim.router.change_owning_shard import change_owning_shard
from mongosim.router.command_registry import router_command
from mongosim.router.commands_crud import TIMESERIES_FLAG, _rerun_statement, _update_result, targets_for_query
from mongosim.router.let_parameters import freeze_let
from mongosim.router.request import Request
from mongosim.router.shard_versioning import MAX_STALE_RETRIES, is_stale, version_fields
from mongosim.router.sharding import critical_sections, ensure_database
from mongosim.router.timeseries_routing import bucket_key_values, routing_query, sharded_buckets
from mongosim.router.write_without_shard_key import first_in_sort_order, narrowed
from mongosim.shardsim.bulk_write import (
    WOULD_CHANGE_OWNING_SHARD,
    BulkOp,
    BulkRequest,
    Replies,
    batch_size_of,
    cursor_reply,
    error_item,
    ok_item,
    parse_request,
    update_statement,
)

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

_FORWARD = ("lsid", "txnNumber", "autocommit", "startTransaction", "readConcern", "writeConcern", "comment",
            "maxTimeMS", "bypassDocumentValidation", "let")


class _Special:
    """An op mongos cannot simply batch: several target shards."""

    def __init__(self, shards: list[str]) -> None:
        self.shards = shards


class _Stale(Exception):
    """A shard refused a child bulkWrite as routed by a stale table (nothing ran): target it again."""


class ClusterBulkWrite:
    def __init__(self, router: Router, req: Request, breq: BulkRequest) -> None:
        self.router = router
        self.req = req
        self.breq = breq
        self.replies = Replies(breq.errors_only)
        self.items: dict[int, dict] = {}
        self.in_txn = req.cmd.get("autocommit") is False
        self.retryable = not self.in_txn and "txnNumber" in req.cmd
        self.base = {k: req.cmd[k] for k in _FORWARD if k in req.cmd}
        self.wc_errors: list[tuple[str, dict]] = []
        self.stopped = False
        self.stale_rounds = 0  # refreshes after a stale answer (up to MAX_STALE_RETRIES)
        self.stale = False  # a child came back stale in this round
        self.routed: dict[tuple[str, str], dict] = {}  # (ns, shard) -> the versions it was targeted by
        self.multi_items: dict[int, dict[str, dict]] = {}  # a multi op's items, per shard that answered

    # -- targeting -----------------------------------------------------------------
    def _ns(self, op: BulkOp) -> tuple[str, str, str]:
        ns = self.breq.namespaces[op.ns_index]
        db, coll = ns.split(".", 1)
        return db, coll, ns

    def _routed_ns(self, ns: str) -> tuple[str, bool]:
        """The namespace ops on `ns` are targeted by and sent to: a time-series collection's buckets when
        they are sharded (isShardedTimeSeriesBucketsNamespace), and whether it is those."""
        db, coll = ns.split(".", 1)
        ts = sharded_buckets(self.router, db, coll)
        return (f"{db}.{ts[0]}", True) if ts is not None else (ns, False)

    def _target(self, idx: int) -> str | _Special:
        """The one shard op `idx` goes to, or the shards of an op that needs several (the versions they
        are targeted by, and the namespace, are remembered for the child bulkWrites' nsInfo)."""
        target = self._target_by_cache(idx)
        ns = self.breq.namespaces[self.breq.ops[idx].ns_index]
        for shard in (target.shards if isinstance(target, _Special) else [target]):
            if isinstance(shard, str) and (ns, shard) not in self.routed:
                self.routed[(ns, shard)] = self._ns_entry(ns, shard)
        return target

    def _ns_entry(self, ns: str, shard: str) -> dict:
        """The nsInfo entry of `ns` for `shard`: a sharded time-series collection's names its buckets,
        `isTimeseriesNamespace: true` (buildBulkCommandRequest)."""
        target_ns, ts = self._routed_ns(ns)
        db, coll = target_ns.split(".", 1)
        return {"ns": target_ns, **(TIMESERIES_FLAG if ts else {}), **version_fields(self.router, db, coll, shard)}

    def _target_by_cache(self, idx: int) -> str | _Special:
        op = self.breq.ops[idx]
        db, _coll, ns = self._ns(op)
        primary = self.router.catalog.primary_of(db)  # first: a database not cached is looked up
        ns, ts = self._routed_ns(ns)
        routing = self.router.catalog.routing(ns)
        if op.kind == "insert":
            if routing is None:
                return primary
            doc = op.spec["document"]  # (a measurement: where the bucket it would start lives)
            return routing.shard_for(bucket_key_values(routing, doc) if ts else routing.pattern.extract(doc))
        q = routing_query(routing, op.spec["filter"]) if ts else op.spec["filter"]  # (the bucket-level predicate)
        if routing is not None and op.kind == "update" and op.spec.get("upsert") \
                and routing.pattern.extract_from_query(q) is None:
            raise MongoError("ShardKeyNotFound", "Failed to target upsert by query :: could not extract exact "
                                                 f"shard key from query {q}")
        shards = targets_for_query(self.router, ns, q, op.spec.get("collation"))
        return shards[0] if len(shards) == 1 else _Special(shards)

    # -- running ----------------------------------------------------------------------
    async def run(self) -> Replies:
        pending = list(range(len(self.breq.ops)))
        while pending and not self.stopped:
            pending = await (self._ordered_round(pending) if self.breq.ordered else self._unordered_round(pending))
            if self.stale:  # some child ran nothing: target its ops again by a fresh routing table
                self.stale = False
                self.stale_rounds += 1
                await self._refresh()
        for idx in sorted(self.items):
            self.replies.add(self.breq.ops[idx].kind, self.items[idx])
        return self.replies

    def _record(self, idx: int, item: dict) -> None:
        self.items[idx] = item
        if not item["ok"] and (self.breq.ordered or self.in_txn):
            self.stopped = True

    def _targets(self, pending: list[int]) -> list[tuple[int, Any]]:
        out = []
        for idx in pending:
            try:
                out.append((idx, self._target(idx)))
            except MongoError as err:
                out.append((idx, err))
        return out

    async def _ordered_round(self, pending: list[int]) -> list[int]:
        head, target = self._targets(pending[:1])[0]
        if isinstance(target, MongoError):
            self._record(head, error_item(head, target, self.breq.ops[head].kind == "update"))
            return pending[1:]
        if isinstance(target, _Special):
            await self._special(head, target.shards)
            return pending[1:]
        batch = [head]
        for idx in pending[1:]:
            try:
                t = self._target(idx)
            except MongoError:
                break
            if t != target:
                break
            batch.append(idx)
        done = await self._batch(target, batch)
        return [i for i in pending if i not in done]

    async def _unordered_round(self, pending: list[int]) -> list[int]:
        """The server's unordered targeting: ops in order into per-shard batches (a multi op into
        the batch of each shard it may match, so each shard sees its ops in the client's order),
        until a single op without the shard key, which goes alone in a round of its own."""
        by_shard: dict[str, list[int]] = {}
        multi: dict[int, dict[str, dict]] = {}
        for idx, target in self._targets(pending):
            if isinstance(target, MongoError):
                self._record(idx, error_item(idx, target, self.breq.ops[idx].kind == "update"))
            elif isinstance(target, _Special) and self.breq.ops[idx].spec.get("multi"):
                multi[idx] = self.multi_items.setdefault(idx, {})
                for shard in target.shards:
                    if shard not in multi[idx]:  # (not again on a shard that answered before a stale one)
                        by_shard.setdefault(shard, []).append(idx)
            elif isinstance(target, _Special):
                if by_shard:
                    break
                await self._special(idx, target.shards)
                return [i for i in pending if i != idx]
            else:
                by_shard.setdefault(target, []).append(idx)
        done: set[int] = set()
        stale_multi: set[int] = set()
        for shard, batch in by_shard.items():
            if self.stopped:
                return []
            ran = await self._batch(shard, batch, multi)
            done |= ran
            stale_multi |= {i for i in batch if i in multi and i not in ran}
        for idx, items in multi.items():
            if items and idx not in stale_multi:
                self._record(idx, _combined(idx, list(items.values()), self.breq.ops[idx].kind == "update"))
        return [i for i in pending if i not in self.items and (i not in done or i in stale_multi)]

    # -- one child bulkWrite -------------------------------------------------------------
    def _child(self, shard: str, idxs: list[int], ops: list[dict] | None = None) -> dict:
        """The bulkWrite `shard` gets for the client's ops `idxs` (their namespaces renumbered, each with
        the version it was targeted by)."""
        ns_index: dict[int, int] = {}
        child_ops = []
        for k, idx in enumerate(idxs):
            op = self.breq.ops[idx]
            spec = dict(ops[k] if ops is not None else op.spec)
            spec[op.kind] = ns_index.setdefault(op.ns_index, len(ns_index))
            child_ops.append({op.kind: spec.pop(op.kind), **spec})
        cmd: dict[str, Any] = {
            "bulkWrite": 1, "ops": child_ops, "nsInfo": [self._child_ns_info(i, shard) for i in ns_index],
            "ordered": self.breq.ordered, "errorsOnly": False, **self.base}
        if self.retryable:
            cmd["stmtIds"] = [self.breq.stmt_id_of(i) for i in idxs]
        if self.in_txn:
            for k in ("lsid", "txnNumber", "autocommit", "startTransaction", "readConcern", "writeConcern"):
                cmd.pop(k, None)
        return cmd

    async def _refresh(self) -> None:
        """A fresh routing table (a database dropped meanwhile is created again, as writes do)."""
        self.router.refresh_catalog()
        self.routed = {}
        for db in sorted({ns.split(".", 1)[0] for ns in self.breq.namespaces}):
            await ensure_database(self.router, db)

    def _ns_info(self, ns: str, shard: str) -> dict:
        entry = self.routed.get((ns, shard))
        return dict(entry) if entry is not None else self._ns_entry(ns, shard)

    def _child_ns_info(self, i: int, shard: str) -> dict:
        """The child's entry for the client's nsInfo entry `i`: with its `collectionUUID` (the shard checks it)."""
        entry = self._ns_info(self.breq.namespaces[i], shard)
        if self.breq.uuids[i] is not None:
            entry["collectionUUID"] = self.breq.uuids[i]
        return entry

    def _stale(self, err: MongoError) -> bool:
        """A stale answer to retry (never inside a transaction: there the command fails or restarts)."""
        return not self.in_txn and is_stale(err) and self.stale_rounds < MAX_STALE_RETRIES

    async def _send(self, shard: str, cmd: dict) -> list[dict]:
        """Run a child bulkWrite on `shard`; its reply items (following the shard's cursor)."""
        router = self.router
        if self.in_txn:
            reply = await router.txns.run_in_transaction(self.req, shard, "admin", cmd)
        else:
            reply = await router.shard(shard).command("admin", cmd)
        key = router.shard(shard).node.oplog.last_key
        if key > self.req.op_time_key:
            self.req.op_time_key = key
        if reply.get("writeConcernError"):
            self.wc_errors.append((shard, reply["writeConcernError"]))
        self.replies.retried.extend(reply.get("retriedStmtIds") or ())
        cursor = reply["cursor"]
        items = list(cursor["firstBatch"])
        cid = cursor["id"]
        while cid:
            more = await router.shard(shard).command("admin", {"getMore": cid, "collection": "$cmd.bulkWrite"})
            items.extend(more["cursor"]["nextBatch"])
            cid = more["cursor"]["id"]
        return items

    async def _batch(self, shard: str, idxs: list[int], multi: dict[int, list[dict]] | None = None) -> set[int]:
        """Send ops `idxs` to `shard`; record their items (those of ops sent to several shards go
        into `multi`, to be combined); the ops that ran (or failed)."""
        multi = multi if multi is not None else {}
        try:
            items = await self._send(shard, self._child(shard, idxs))
        except MongoError as err:
            if self.in_txn:
                raise
            if self._stale(err):
                self.stale = True
                return set()
            items = [error_item(k, err, self.breq.ops[idx].kind == "update")
                     for k, idx in enumerate(idxs[:1] if self.breq.ordered else idxs)]
        done = set()
        for item in items:
            idx = idxs[item["idx"]]
            done.add(idx)
            if idx in multi:
                multi[idx][shard] = {**item, "idx": idx}
            else:
                await self._note(shard, idx, item)
        return done

    async def _note(self, shard: str, idx: int, item: dict) -> None:
        """Record a shard's item for op `idx`, moving the document of a WouldChangeOwningShard."""
        item = {**item, "idx": idx}
        if item["ok"] or item.get("code") != WOULD_CHANGE_OWNING_SHARD:
            self._record(idx, item)
            return
        op = self.breq.ops[idx]
        db, _coll, ns = self._ns(op)
        ns, ts = self._routed_ns(ns)
        coll = ns.split(".", 1)[1]
        rerun_cmd = {"update": coll, "updates": [update_statement(op.spec)], "ordered": True,
                     **(TIMESERIES_FLAG if ts else {})}
        if "let" in self.req.cmd:
            rerun_cmd["let"] = self.req.cmd["let"]
        try:
            done = await change_owning_shard(
                self.router, self.req, db, coll, ns, shard, item,
                _rerun_statement(self.router, shard, db, rerun_cmd), _update_result,
                self.breq.stmt_id_of(idx) if self.retryable else None)
        except MongoError as err:
            if self.in_txn:
                raise
            self._record(idx, error_item(idx, err, True))
            return
        self._record(idx, ok_item(idx, done.get("n", 0), done.get("nModified", 0), done.get("upserted"),
                                  "upserted" in done))

    # -- ops on several shards ------------------------------------------------------------
    async def _special(self, idx: int, shards: list[str]) -> None:
        op = self.breq.ops[idx]
        update = op.kind == "update"
        while True:
            try:
                if op.spec.get("multi"):
                    await self._broadcast(idx, shards)
                elif update and op.spec.get("sort") and not self._routed_ns(self._ns(op)[2])[1]:
                    await self._first_by_sort(idx, shards)  # (a time-series one, as the update command: in turn)
                else:
                    await self._one_by_one(idx, shards)
                break
            except _Stale:  # target it again by a fresh table (a multi op: where it did not run yet)
                self.stale_rounds += 1
                await self._refresh()
                target = self._target(idx)
                shards = target.shards if isinstance(target, _Special) else [target]
        if idx not in self.items:  # matched nothing anywhere
            self._record(idx, ok_item(idx, 0, 0 if update else None))

    async def _one_shard(self, shard: str, idx: int, spec: dict | None = None) -> dict | None:
        """Op `idx` (or `spec` in its place) on `shard` alone: its item (None if it did not run)."""
        try:
            items = await self._send(shard, self._child(shard, [idx], [spec] if spec is not None else None))
        except MongoError as err:
            if self.in_txn:
                raise
            if self._stale(err):
                raise _Stale() from err
            return error_item(idx, err, self.breq.ops[idx].kind == "update")
        return {**items[0], "idx": idx} if items else None

    async def _broadcast(self, idx: int, shards: list[str]) -> None:
        """A multi update/delete on every shard it may match: the counts summed, the first error kept."""
        update = self.breq.ops[idx].kind == "update"
        answered = self.multi_items.setdefault(idx, {})
        for shard in shards:
            if shard in answered:  # (it ran there before a stale answer elsewhere)
                continue
            item = await self._one_shard(shard, idx)
            if item is None:
                continue
            if not item["ok"]:
                self._record(idx, item)
                return
            answered[shard] = item
        n = sum(item.get("n", 0) for item in answered.values())
        n_modified = sum(item.get("nModified", 0) for item in answered.values())
        self._record(idx, ok_item(idx, n, n_modified if update else None))

    async def _one_by_one(self, idx: int, shards: list[str]) -> None:
        """A single update/delete without the shard key: the shards in turn, until one writes."""
        for shard in shards:
            item = await self._one_shard(shard, idx)
            if item is None:
                continue
            if not item["ok"] or item.get("n", 0) > 0:
                await self._note(shard, idx, item)
                return

    async def _first_by_sort(self, idx: int, shards: list[str]) -> None:
        op = self.breq.ops[idx]
        db, coll, _ns = self._ns(op)
        try:
            found = await first_in_sort_order(self.router, self.req, db, coll, op.spec["filter"], op.spec["sort"],
                                              shards, self.req.cmd.get("let"), op.spec.get("collation"))
        except MongoError as err:
            if self.in_txn:
                raise
            if self._stale(err):
                raise _Stale() from err
            self._record(idx, error_item(idx, err, True))
            return
        if found is None:
            return
        shard, doc = found
        item = await self._one_shard(shard, idx, {**op.spec, "filter": narrowed(op.spec["filter"], doc)})
        if item is not None:
            await self._note(shard, idx, item)



def _combined(idx: int, items: list[dict], update: bool) -> dict:
    """One op's item from the shards it ran on: the first error, else the counts summed."""
    for item in items:
        if not item["ok"]:
            return item
    n = sum(i.get("n", 0) for i in items)
    return ok_item(idx, n, sum(i.get("nModified", 0) for i in items) if update else None)


def merge_write_concern_errors(errors: list[tuple[str, dict]]) -> dict | None:
    """The server's mergeWriteConcernErrors: the shards' writeConcernErrors as one, with the first's
    code and each as "<codeName>: <errmsg> at <shard>" ("Multiple errors reported :: ... :: and :: ...")."""
    if not errors:
        return None
    parts = [f"{e.get('codeName') or _code_name(e.get('code'))}: {e.get('errmsg', '')} at {shard}"
             for shard, e in errors]
    msg = ("Multiple errors reported :: " if len(parts) > 1 else "") + " :: and :: ".join(parts)
    return {"code": errors[0][1].get("code"), "errmsg": msg}


def _code_name(code: Any) -> str:
    return name_of(int(code)) if isinstance(code, int) else "UnknownError"


def _with_ids(cmd: dict) -> dict:
    """addIdsForInserts: an `_id` (first) for every inserted document without one."""
    ops = cmd["ops"]
    if not any(isinstance(op, dict) and "insert" in op and isinstance(op.get("document"), dict)
               and "_id" not in op["document"] for op in ops):
        return cmd
    new_ops = []
    for op in ops:
        if isinstance(op, dict) and "insert" in op and isinstance(op.get("document"), dict) \
                and "_id" not in op["document"]:
            op = {**op, "document": {"_id": ObjectId(), **op["document"]}}
        new_ops.append(op)
    return {**cmd, "ops": new_ops}


@router_command("bulkWrite")
async def cmd_bulk_write(router: Router, req: Request) -> dict:
    if req.db != "admin":
        raise MongoError("Unauthorized", "bulkWrite may only be run against the admin database.")
    parse_request(req.cmd)  # the request is checked before its let is evaluated
    batch_size = batch_size_of(req.cmd)
    freeze_let(router, req)
    req.cmd = _with_ids(req.cmd)
    breq = parse_request(req.cmd)
    for ns in dict.fromkeys(breq.namespaces):
        db, coll = ns.split(".", 1)
        ts = sharded_buckets(router, db, coll)
        await critical_sections(router).wait(f"{db}.{ts[0]}" if ts is not None else ns)
        await ensure_database(router, db)
    run = ClusterBulkWrite(router, req, breq)
    replies = await run.run()
    reply = cursor_reply(router.cursors, replies, batch_size)
    wce = merge_write_concern_errors(run.wc_errors)
    if wce is not None:
        reply = {k: v for k, v in reply.items() if k != "ok"}
        reply["writeConcernError"] = wce
        reply["ok"] = 1.0
    return reply
