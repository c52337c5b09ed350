"""A change stream through the router: the pipeline split, the shard cursors, and the merge part.

Opening (`aggregate` with `$changeStream` on mongos):

1. Resolve the start: the client's token or `startAtOperationTime`, or for a
   new stream the cluster time + 1 tick, so every shard starts in sync.
2. Split the pipeline: the shard part (`$changeStream` with the same options,
   plus the user's per-event stages) goes to every shard as an aggregate with
   `$_needsMerge`; the config server gets a stream on `config.shards`.
   The shards are those of the registry now, as 8.0's mongos targets them
   (sharded_agg_helpers.cpp: a pipeline starting with `$changeStream` must run
   on all shards, `shardRegistry()->getAllShardIds()`), so a stream resumed
   from before a shard's removal does not read what that shard wrote (its
   chunks' later writes come from their new owners).
3. The merge part runs here: `$mergeCursors` (the AsyncResultsMerger) ->
   `$_internalChangeStreamHandleTopologyChange` -> (for an event token)
   `$_internalChangeStreamEnsureResumeTokenPresent`.

Each getMore releases what the merger can release; if nothing, it asks the
remotes with empty buffers for more (concurrently, each bounded to 1 s, each
for its ask: AsyncResultsMerger.size_requests) and
waits until something is releasable or the client's maxTimeMS runs out — then
returns an empty batch whose PBRT is the high-water mark.

Reading ahead: once a batch carrying events has left for the client (not
before: a reply larger than the socket's buffer would wait for the shards'
work), the router asks every remote holding less than its ask for more
(AsyncResultsMerger.needs_fetch), so the shards compute the next batches while
the client decodes this one — after a batch released at once and after one
that had to wait for a remote alike.

Preparing the next batch: once the reply has left, and again when the
read-ahead's last reply lands (not at each: 64 remotes would merge 64 times),
the router merges ahead the run of plain events the
gate allows, up to the client's last batch size (`_prepare`:
AsyncResultsMerger.peek_run, which releases nothing).  The next getMore
releases that run (`take`) and goes on as usual: the run is a prefix of what
it would release itself, so its reply is the same, only the merge is off the
client's round trip.  A getMore asking for fewer events drops the run and
merges for itself.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, Callable

import trio
from mongosim.oplog.bsonutil import RawBatch, plain
from mongosim.oplog.clock import key_ts
from mongosim.oplog.errors import MongoError, in_category
from mongosim.oplog.resume_token import decode_resume_token, make_high_water_mark_token
from mongosim.router.merge.async_results_merger import AsyncResultsMerger, RemoteCursor
from mongosim.router.merge.ensure_resume_token_present import EnsureResumeTokenPresent
from mongosim.router.merge.handle_topology_change import HandleTopologyChange
from mongosim.router.merge.split_pipeline import shard_command
from mongosim.router.request import Request, after_reply
from mongosim.shardsim.changestream.cursor import BATCH_BYTES, ID_MODIFIED_MSG, OVERHEAD
from mongosim.shardsim.changestream.spec import parse_spec, validate
from mongosim.shardsim.changestream.token_version import regenerate_high_water_mark
from mongosim.shardsim.changestream.user_stages import validate_user_pipeline
from mongosim.shardsim.cursors import cursor_reply

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

SHARD_AWAIT_CAP_MS = 1000
OPEN_RETRIES = 3  # the AsyncRequestsSender's kMaxNumFailedHostRetryAttempts (RetryPolicy kIdempotent)
DEFAULT_AWAIT_MS = 1000
_stream_ids = itertools.count(1)


def _stream_tracer(tracer: Callable[[dict], None], stream: int) -> Callable[[dict], None]:
    """The router's tracer, with each record tagged by the merged stream it comes from."""
    def emit(record: dict) -> None:
        record["stream"] = stream
        tracer(record)
    return emit


def _nbytes(event) -> int:
    """Encoded size of a buffered event (bytes, or a RawBSONDocument)."""
    return len(event) if isinstance(event, (bytes, bytearray, memoryview)) else len(event.raw)


class ClusterChangeStreamCursor:
    is_change_stream = True
    interrupt: MongoError | None = None  # set when the router stops under an in-flight getMore

    def __init__(self, router: Router, ns: str, db: str, target: Any, spec_bson: dict, user_stages: list,
                 client_token: Any) -> None:
        self.router = router
        self.ns = ns
        self.db = db
        self.target = target
        self.spec_bson = spec_bson
        self.user_stages = user_stages
        # trace (mongosim.trace): None unless router.tracer is set — then every emit is tagged with this stream
        self.trace = _stream_tracer(router.tracer, next(_stream_ids)) if router.tracer else None
        self.arm = AsyncResultsMerger(trace=self.trace)
        self.topology = HandleTopologyChange(self)
        self.ensure = EnsureResumeTokenPresent(client_token) if client_token is not None and client_token["_data"] and \
            decode_resume_token(client_token).token_type != 0 else None
        self.changed = trio.Event()
        self.exhausted = False
        self.last_used = 0.0
        self._scopes: set[trio.CancelScope] = set()
        self.pbrt: dict | None = None
        self._ahead: tuple[int, int | None] | None = None  # the read-ahead to start once the reply has left
        self._ahead_limit: int | None = None  # the client batch size the next batch is prepared for
        self._round: set[int] = set()  # the remotes the last read-ahead asked, until they answer
        self._prepared: tuple | None = None  # a run merged ahead (peek_run), for the next getMore
        self._answering = False  # inside a getMore: it merges for itself

    # -- establishing -----------------------------------------------------------------------
    @staticmethod
    async def _establish(remote: Any, db: str, cmd: dict) -> dict:
        """Open one remote cursor; a retriable error (a dropped connection, a stepping-down
        primary) is retried, as mongos' establishCursors does: the client never sees it."""
        for attempt in range(OPEN_RETRIES + 1):
            try:
                return await remote.command(db, cmd)
            except MongoError as err:
                if attempt == OPEN_RETRIES or not in_category(err.code, "RetriableError"):
                    raise
        raise AssertionError("unreachable")

    async def open_remote(self, shard: str, spec_bson: dict) -> None:
        """Open the cursor on one shard (a shard added mid-stream)."""
        remote = self.router.shard(shard)
        cmd = shard_command({"aggregate": self.target}, spec_bson, self.user_stages)
        reply = await self._establish(remote, self.db, cmd)
        self._add_from_reply(shard, remote, reply, is_config=False)

    async def open_remotes(self, shards: list[str], spec_bson: dict, start: Any) -> None:
        """Open the cursors on the shards and the config server concurrently, then add them to the
        merger in ShardId order ("config" sorts before "shardNN", as in mongos' set of targets), so
        the order does not depend on which reply came first.  When one fails, the opened ones are
        added all the same, for `close` to kill them."""
        shard_cmd = shard_command({"aggregate": self.target}, spec_bson, self.user_stages)
        config_cmd = {"aggregate": "shards", "pipeline": [{"$changeStream": {"startAtOperationTime": start,
                                                                              "allowToRunOnConfigDB": True}}],
                      "cursor": {"batchSize": 0}, "$_needsMerge": True}
        opened: dict[str, tuple] = {}

        async def open_one(name: str, remote: Any, db: str, cmd: dict) -> None:
            opened[name] = (remote, await self._establish(remote, db, cmd))

        try:
            async with trio.open_nursery() as nursery:
                for shard in shards:
                    remote = self.router.shard(shard) if shard in self.router.shards else self.router.retired_remote(shard)
                    nursery.start_soon(open_one, shard, remote, self.db, shard_cmd)
                nursery.start_soon(open_one, "config", self.router.config_remote, "config", config_cmd)
        finally:
            for name in sorted(opened):
                remote, reply = opened[name]
                self._add_from_reply(name, remote, reply, is_config=name == "config")

    def _add_from_reply(self, shard: str, remote: Any, reply: dict, *, is_config: bool) -> None:
        cur = reply["cursor"]
        rc = RemoteCursor(shard, remote, int(cur["id"]), cur["ns"], is_config=is_config)
        self.arm.add_remote(rc, cur.get("firstBatch", []), cur, cur.get("postBatchResumeToken"), int(cur["id"]) == 0)

    # -- fetching -------------------------------------------------------------------------
    def _schedule(self, await_ms: int, batch_size: int | None = None, low_water: int = 1,
                  read_ahead: bool = False) -> None:
        """Ask the remotes that need it for more (`needs_fetch`), each for its ask out of a client
        batch of `batch_size` (AsyncResultsMerger.size_requests)."""
        arm = self.arm
        if read_ahead and batch_size:
            wanted = arm.read_ahead_round(batch_size)
        else:
            wanted = [(i, arm.ask_for(arm.remotes[i], batch_size) if batch_size else None)
                      for i in arm.needs_fetch(low_water, read_ahead)]
        for idx, ask in wanted:
            rc = arm.remotes[idx]
            rc.pending = True
            # (not the config server's: its stream is a trickle, its getMore waits for its await time,
            # and the round would not land before it)
            if read_ahead and not rc.is_config:
                self._round.add(idx)
            self.router.nursery.start_soon(self._fetch, idx, min(await_ms, SHARD_AWAIT_CAP_MS), ask)

    async def _fetch(self, idx: int, await_ms: int, batch_size: int | None = None) -> None:
        rc = self.arm.remotes[idx]
        if getattr(self, "_closed", False):  # scheduled before the cursor closed, started after: nothing to ask
            rc.pending = False
            return
        with trio.CancelScope() as scope:
            self._scopes.add(scope)
            try:
                cmd = {"getMore": rc.cursor_id, "collection": rc.collection, "maxTimeMS": await_ms}
                if batch_size:
                    cmd["batchSize"] = batch_size  # the remote's ask (the server: the client's batch size)
                reply = await rc.remote.command(self.db if not rc.is_config else "config", cmd)
                cur = reply["cursor"]
                rc.cursor_id = int(cur["id"])
                self.arm.add_batch(idx, cur.get("nextBatch", []), cur, cur.get("postBatchResumeToken"),
                                   rc.cursor_id == 0)
            except MongoError as err:
                rc.error = err
            finally:
                rc.pending = False
                self._scopes.discard(scope)
                self.changed.set()
        if idx in self._round:  # the last of a read-ahead's replies: merge the next batch ahead again
            self._round.discard(idx)
            if not self._round:
                self._prepare()

    # -- the merge part -----------------------------------------------------------------------
    async def _release(self, out: list, limit: int, size: int = 0) -> None:
        """Move what the merger may release into `out` (up to `limit` events, ~16 MB; `out` holds
        `size` bytes with their array overhead): runs of plain events in one step each; special
        events, and every event while the client's token has not been passed or a trace is on,
        one by one through the merge part's stages."""
        arm = self.arm
        # remotes fail only while we await (their fetch tasks run then): check now and after awaits
        for rc in arm.errors():
            raise self._shard_error(rc)
        while len(out) < limit and not self.exhausted:
            if self.trace is None and (self.ensure is None or self.ensure.done):
                run = arm.next_run(limit - len(out), BATCH_BYTES - size, not out)
                if run is not None:
                    raws, tok = run
                    out += raws
                    size += sum(map(len, raws)) + OVERHEAD * len(raws)
                    self.pbrt = tok
                    arm.returned(tok)
                    continue
            if not arm.ready():
                return
            if out:  # a batch stops short of 16 MB, as the server's does (the reply must fit in one message)
                _key, nxt = arm.front_event()
                if size + _nbytes(nxt) + OVERHEAD > BATCH_BYTES:
                    return
            key, tok, raw, intact, op_type, rc = arm.next_ready()
            topology_event = rc.is_config or op_type == "migrateChunkToNewShard"
            # The client's token may be a topology event's (a shard's promise can be one), so the
            # resume-token check looks at events before the topology stage swallows them.
            keep = self.ensure is None or self.ensure.passes(key, tok)
            if topology_event:
                if self.trace:
                    self.trace({"step": "swallowed", "key": key, "shard": rc.shard, "op": op_type,
                                "reason": "topology event (handle topology change)"})
                await self.topology.handle(rc, raw, op_type)
                for failed in arm.errors():
                    raise self._shard_error(failed)
                continue
            if not keep:
                if self.trace:
                    self.trace({"step": "swallowed", "key": key, "shard": rc.shard, "op": op_type,
                                "reason": "the resume token itself" if key == self.ensure.key
                                else "before the resume token"})
                continue
            if not intact:
                raise MongoError("ChangeStreamFatalError", ID_MODIFIED_MSG)
            out.append(raw)
            size += _nbytes(raw) + OVERHEAD
            self.pbrt = tok
            arm.returned(tok)
            if op_type == "invalidate":
                self.exhausted = True
                return

    def _shard_error(self, rc: RemoteCursor) -> MongoError:
        err = rc.error
        self.close()
        return err

    def _prepare(self) -> None:
        """Between getMores: merge ahead the run of plain events the gate allows now (unless the
        one merged already is a whole batch)."""
        limit = self._ahead_limit
        if limit is None or self._answering or self.exhausted or self.trace is not None or \
                (self.ensure is not None and not self.ensure.done):
            return
        if self._prepared is not None and len(self._prepared[0]) >= limit:
            return
        self._prepared = self.arm.peek_run(limit, BATCH_BYTES, True)

    def _take_prepared(self, prepared: tuple, out: list, limit: int) -> int:
        """Release the run merged ahead into the (empty) batch; its bytes.  0 if it does not fit
        the getMore's batch size: then the getMore merges for itself."""
        raws, tok, counts = prepared
        if len(raws) > limit:
            return 0
        self.arm.take(counts)
        out += raws
        self.pbrt = tok
        self.arm.returned(tok)
        return sum(map(len, raws)) + OVERHEAD * len(raws)

    async def next_batch(self, limit: int, await_ms: int | None) -> list:
        out: list = RawBatch()
        batch = limit if limit < 2**31 else None
        self._answering = True
        try:
            prepared, self._prepared = self._prepared, None
            size = 0
            if prepared is not None and not self.arm.errors():  # (a remote's error comes first)
                size = self._take_prepared(prepared, out, limit)
            await self._release(out, limit, size)
            if not (await_ms is None or out or self.exhausted):
                deadline = trio.current_time() + await_ms / 1000.0
                while not out and not self.exhausted:
                    self.changed = trio.Event()
                    self._schedule(await_ms, batch)
                    with trio.move_on_at(deadline) as scope:
                        await self.changed.wait()
                    await self._release(out, limit)
                    if scope.cancelled_caught:
                        break
        finally:
            self._answering = False
        if out and not self.exhausted:
            # Keep requests outstanding while the client consumes this batch (the ARM does): the
            # shards compute their next batches while the client decodes this one — also after a
            # batch that had to wait for a remote, or the stream would go on waiting remote by remote.
            if batch:
                self.arm.size_requests(batch)
            self._ahead = (await_ms or DEFAULT_AWAIT_MS, batch)
            after_reply(self._read_ahead)
        return out

    def _read_ahead(self) -> None:
        """The reply has left: ask the remotes below their ask for more (see the module doc)."""
        if self._ahead is not None and not self.exhausted:
            await_ms, batch = self._ahead
            self._schedule(await_ms, batch, batch or 1, read_ahead=True)
            self._ahead_limit = batch
            self._prepare()
        self._ahead = None

    def current_pbrt(self) -> dict:
        hwm = self.arm.advance_high_water_mark()
        if self.ensure is not None and not (self.ensure.seen or self.ensure.done):
            # until the client's token has been seen in the stream, never promise beyond it
            return self.ensure.token
        if self.exhausted and self.pbrt is not None:
            return self.pbrt
        cand = [t for t in (self.pbrt, hwm) if t is not None]
        if not cand:
            return self.initial_pbrt
        return max(cand, key=lambda t: t["_data"])

    # -- cursor protocol ----------------------------------------------------------------------
    async def get_more(self, batch_size: int | None, max_time_ms: int | None):
        limit = batch_size if batch_size else 2**31
        batch = await self.next_batch(limit, max_time_ms if max_time_ms is not None else DEFAULT_AWAIT_MS)
        if self.interrupt is not None:  # the router stopped meanwhile: an error, not the end of the stream
            raise self.interrupt
        pbrt = self.current_pbrt()
        if self.trace:
            self.trace_reply(batch, pbrt)
        if self.exhausted:
            self.close()
        return batch, {"postBatchResumeToken": pbrt}, self.exhausted

    def trace_reply(self, batch: list, pbrt: dict) -> None:
        self.trace({"step": "reply", "events": [plain(raw)["_id"]["_data"] for raw in batch], "pbrt": pbrt["_data"],
                    "closed": self.exhausted})

    def close(self) -> None:
        if self.exhausted and not self._scopes and getattr(self, "_closed", False):
            return
        self._closed = True
        self.exhausted = True
        self._prepared = None
        for scope in list(self._scopes):
            scope.cancel()
        for rc in self.arm.remotes:
            if rc.cursor_id and not rc.exhausted:
                rc.remote.cursor_node(rc.cursor_id).cursors.remove(rc.cursor_id)  # (the member holding it)


async def open_cluster_change_stream(router: Router, req: Request) -> dict:
    cmd = req.cmd
    pipeline = cmd["pipeline"]
    target = cmd["aggregate"]
    spec = parse_spec(pipeline[0]["$changeStream"])
    validate(spec, req.db, target, in_router=True)
    regenerate_high_water_mark(spec)
    user_stages, split = validate_user_pipeline(pipeline[1:])
    shard_stages = list(pipeline[1:])
    cursor_opt = cmd.get("cursor")
    if cursor_opt is None and not cmd.get("explain"):
        raise MongoError("FailedToParse", "The 'cursor' option is required, except for aggregate with the explain argument")
    token = spec.resume_token
    if token is None and spec.start_at_operation_time is None:
        spec.start_at_operation_time = key_ts(router.clock.key + 1)
    start = spec.start_at_operation_time if token is None else decode_resume_token(token).cluster_time
    ns = f"{req.db}.{target}" if isinstance(target, str) else f"{req.db}.$cmd.aggregate"
    spec_bson = spec.to_bson()
    if cmd.get("explain"):
        from mongosim.router.merge.explain import explain_change_stream

        return await explain_change_stream(router, req.db, target, spec_bson, shard_stages, token)
    cur = ClusterChangeStreamCursor(router, ns, req.db, target, spec_bson, shard_stages, token)
    cur.initial_pbrt = token if token is not None else make_high_water_mark_token(start)
    # the shards now, whatever the start (sharded_agg_helpers.cpp getTargetedShards: getAllShardIds)
    shards = sorted(router.shards)
    try:
        await cur.open_remotes(shards, spec_bson, start)
    except BaseExceptionGroup as eg:  # a shard refused: report its error as the server would
        first = eg.exceptions[0]
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        cur.close()
        raise first
    batch_size = (cursor_opt or {}).get("batchSize")
    batch = await cur.next_batch(batch_size if batch_size else 2**31, None)
    pbrt = cur.current_pbrt()
    if cur.trace:
        cur.trace_reply(batch, pbrt)
    req.op_time_key = router.clock.key
    if cur.exhausted:
        cur.close()
        return cursor_reply(batch, 0, ns, first=True, fields={"postBatchResumeToken": pbrt})
    cid = router.cursors.register(cur)
    return cursor_reply(batch, cid, ns, first=True, fields={"postBatchResumeToken": pbrt})
