"""A node: one replica-set member's data, used for every shard and for the config server.

It owns what a mongod owns: a catalog of collections, an oplog, a logical
clock, cursors, the pre-image store and the session table.  Commands arrive as
dicts (`await node.run_command(db, cmd)`) from the router's shard remotes or,
in replica-set mode, straight from the wire.  Every write goes through
`log()`, which reserves a timestamp and appends the oplog entry in the same
synchronous step, so entries are always in timestamp order.

The periodic noop writer (`run_noop_writer`) writes `{msg: "periodic noop"}`
when nothing else was written during an interval, as the server's NoopWriter
does; that is what lets an idle shard's high-water mark advance.

In a replica set of several members (`shardsim.replica_set`) every member is a
Node with its own data and oplog; `replica_set`/`member` link it to its set
(None for a node on its own), `term` is stamped on the entries it writes.
A secondary's oplog is filled by replication, not by `log()`.
"""

from __future__ import annotations

import math
import secrets
import time
from typing import Any, Callable

import trio
from bson import Int64, Timestamp
from mongosim.oplog import entry as oplog_entry
from mongosim.oplog.clock import LogicalClock, NodeClock, TimeSource, key_ts
from mongosim.oplog.error_codes import CODES
from mongosim.oplog.errors import MongoError
from mongosim.oplog.oplog import Oplog
from mongosim.shardsim import collection_uuid, profiler, snapshot_reads, views
from mongosim.shardsim.create_collection import check_user_write
from mongosim.shardsim.top import Top
from mongosim.shardsim.catalog import Catalog
from mongosim.shardsim.collation import check_collations
from mongosim.shardsim.commands import COMMANDS
from mongosim.shardsim.fail_point import CloseConnection, FailPoints, check_max_time_always_times_out
from mongosim.shardsim.generic_args import check_generic_arguments
from mongosim.shardsim.javascript import engine as js_engine
from mongosim.shardsim.logical_session_cache import LogicalSessionCache
from mongosim.shardsim.sessions_collection import SessionsCollection
from mongosim.shardsim.read_concern_support import check_read_concern_support
from mongosim.shardsim.generic_args import max_time_ms as generic_max_time_ms
from mongosim.shardsim.fsync import BLOCKED as FSYNC_BLOCKED
from mongosim.shardsim.fsync import FsyncLock
from mongosim.shardsim.kill_op import OperationTable, interrupted
from mongosim.shardsim.operation_context import OpCtx
from mongosim.shardsim.uncommitted_catalog_updates import visible_to

_WRITE_COMMANDS = {"insert", "update", "delete", "findAndModify", "findandmodify"}
RESOLVED_VIEW = 169  # CommandOnShardedViewNotSupportedOnMongod
WOULD_CHANGE_OWNING_SHARD = CODES["WouldChangeOwningShard"]  # mongos handles it (router/change_owning_shard.py)


TXN_LIFETIME_LIMIT_S = 60.0  # the server's transactionLifetimeLimitSeconds default
TXN_REAPER_PERIOD_S = 1.0


class Node:
    def __init__(
        self,
        name: str,
        time_source: TimeSource,
        *,
        oplog_bytes: int | None = None,
        skew: float = 0.0,
        is_config: bool = False,
        noop_interval: float = 10.0,
        instant_hwm: bool = False,
        host: str = "localhost:27018",
        initiate: bool = True,
    ) -> None:
        self.name = name
        self.host = host
        self.wall = NodeClock(time_source, skew)
        self.clock = LogicalClock(self.wall)
        self.oplog = Oplog(oplog_bytes)
        self.catalog = Catalog()
        self.is_config = is_config
        self.noop_interval = noop_interval
        self.instant_hwm = instant_hwm
        # filtering metadata (shardsim/filtering_metadata.py; set when the node joins a cluster as a shard):
        # the shard-version check of routed commands, and does this shard own a document's shard-key value?
        self.filtering: Any = None
        self.owns: Callable[[str, dict], bool] | None = None
        # the cluster's shards by name, for a shard acting as a router (updateLookup: lookup_single_document.py)
        self.shard_node: Callable[[str], Node | None] | None = None
        self.noop_paused = False
        self.preimages: dict[tuple[bytes, int, int], dict] = {}
        from mongosim.shardsim.sessions import SessionTable

        self.sessions = SessionTable()
        self.session_cache = LogicalSessionCache()  # the sessions clients used on this member ($listLocalSessions)
        self.sessions_collection = SessionsCollection()  # config.system.sessions ($listSessions)
        self.session_cache.sink = self.sessions_collection.apply
        self.session_cache.wall = lambda: self.wall.wall()
        self.profiler = profiler.ProfileSettings()  # the database profiler's settings (shardsim/profiler.py)
        self.top = Top()  # usage by collection: latencyStats and the `top` command (shardsim/top.py)
        from mongosim.shardsim.cursors import (
            CursorManager,  # local import: cursors imports node types
        )

        self.cursors = CursorManager(self)
        self.operations = OperationTable()  # the commands in flight, by opid (killOp, $currentOp)
        self.fsync = FsyncLock()  # fsync {lock: true} holds writes back (shardsim/fsync.py)
        self.tracer = None  # set to a callable(dict) to trace the change-stream stages
        self.txn_locks: dict = {}  # (ns, _id key) -> the Transaction that wrote it
        self.txn_lifetime_s = TXN_LIFETIME_LIMIT_S
        self.progress = trio.lowlevel.ParkingLot()  # woken by writes and by gossip (hear_cluster_time)
        from mongosim.shardsim.changestream.render import EventCache

        self.event_cache = EventCache()  # CRUD events rendered once per oplog entry
        self.txn_released = trio.lowlevel.ParkingLot()  # woken when a transaction ends (its locks go)
        self.epoch = secrets.token_bytes(4)
        self.failpoints = FailPoints()  # this node's (configureFailPoint on a replica-set member)
        self.joined_key = 0  # the cluster time it joined a running cluster at (router.sharding.add_shard)
        self.term = oplog_entry.TERM  # the replica set's term (`t` of the entries it writes)
        self.replica_set: Any = None  # shardsim.replica_set.ReplicaSet, when a member of one
        self.commits_alone = False  # its writes are committed as it makes them (ReplicaSet.notify sets it)
        self.member: Any = None  # its shardsim.replica_set.Member
        if initiate:  # (a new member's oplog comes from its sync source instead)
            self.log(oplog_entry.noop_op("initiating set"))

    # -- the oplog -------------------------------------------------------------------
    def log(self, op: dict, ctx: OpCtx | None = None, **session_fields: Any) -> Timestamp:
        """Reserve a timestamp and append `op` as a complete oplog entry."""
        key = self.clock.reserve(1)
        ts = key_ts(key)
        e = oplog_entry.finish(op, ts, self.wall.wall(), term=self.term, **session_fields)
        self.oplog.append(e)
        self.logged()
        if ctx is not None:
            ctx.op_time_key = key
        return ts

    def op_time(self, key: int) -> dict:
        """The optime `{ts, t}` of this node's oplog entry at `key`: `t` is the term it was written in
        (an entry's `prevOpTime` names its predecessor so; outside a replica set the term is 1)."""
        term = self.member.term_at(key) if self.member is not None else self.term
        return oplog_entry.op_time(key_ts(key), Int64(int(term)))

    def logged(self) -> None:
        """After entries were appended (by `log`, or in a batch): expire old snapshot history, wake
        whoever waits for the oplog to move."""
        if self.catalog.snapshots.pinned:  # snapshot reads keep history for a while, not forever
            self.catalog.snapshots.expire(trio.current_time())
        if self.progress:  # anyone parked (ParkingLot.__len__)
            self.progress.unpark_all()
        if self.commits_alone:  # (a primary whose set's write majority is itself: primary + arbiter)
            self.member.rs.progress()

    def hear_cluster_time(self, key: int) -> None:
        """Gossip arriving outside a command (instant-HWM mode): the clock moves, and change-stream
        getMores parked in awaitData wake up to promise the new time."""
        if key > self.clock.key:
            self.clock.advance(key)
            if self.progress:  # anyone parked (ParkingLot.__len__): the common case is no one
                self.progress.unpark_all()

    async def wait_for_progress(self, pos: int, promised_key: int) -> None:
        """Park until the (majority-visible) oplog grows past `pos`, or (instant-HWM) the clock
        passes a promise (which it can make only with every entry majority-committed)."""
        oplog = self.oplog
        while oplog.visible_end <= pos and (self.clock.key + 1 <= promised_key or oplog.visible_end < oplog.end):
            await self.progress.park()

    @property
    def last_write_key(self) -> int:
        return self.oplog.last_key

    # -- commands ----------------------------------------------------------------------
    async def run_command(self, db: str, cmd: dict, *, from_router: bool = False, view: Any = None) -> dict:
        """Run one command; raise MongoError on failure.  The reply has `ok: 1.0`.
        `view`: what a read sees instead of the present data (readConcern majority's snapshot).
        In a profiled database the profiler records it (a replica-set member's entry point runs
        `run_unprofiled` and profiles the command itself: shardsim.service_entry_point)."""
        if not self.profiler.levels:  # (profiling off everywhere: the common case costs this test)
            return await self._run_command(db, cmd, from_router, view)
        return await profiler.profiled(self, db, cmd, lambda: self._run_command(db, cmd, from_router, view), None,
                                       from_router=from_router)

    async def _run_command(self, db: str, cmd: dict, from_router: bool, view: Any) -> dict:
        if not cmd:
            raise MongoError("FailedToParse", "Empty command object")
        name = next(iter(cmd))
        handler = COMMANDS.get(name)  # command names are case-sensitive (aliases are registered)
        if handler is None:
            raise MongoError("CommandNotFound", f"no such command: '{name}'")
        if not from_router:  # (mongos checked the client's command; what it sends on is well-formed)
            if "maxTimeMSOpOnly" in cmd:  # (only mongos and other members send it: internal clients)
                raise MongoError("InvalidOptions", "Can not specify maxTimeMSOpOnly for non internal clients")
            check_generic_arguments(name, cmd)
            check_collations(name, cmd)
        if name in _WRITE_COMMANDS:  # (a client's write through mongos too: the shard refuses it)
            check_user_write(db, name, cmd)
        check_read_concern_support(name, cmd)  # (also for mongos's commands: the level it sends a shard)
        check_max_time_always_times_out(self.failpoints, cmd)
        if self.filtering is not None and ("shardVersion" in cmd or "databaseVersion" in cmd or name == "bulkWrite"):
            self.filtering.check(db, cmd)  # routed by a stale routing table: StaleConfig / StaleDbVersion
        if "collectionUUID" in cmd and name in collection_uuid.COMMANDS:
            collection_uuid.check_command(self, db, name, cmd)
        lsid = cmd.get("lsid")
        txn = cmd.get("txnNumber")
        ctx = OpCtx(db, cmd, lsid=lsid, txn_number=int(txn) if txn is not None else None, from_router=from_router)
        max_time_ms = generic_max_time_ms(cmd)
        if max_time_ms and name != "getMore":
            ctx.deadline = trio.current_time() + max_time_ms / 1000.0
        op_only = cmd.get("maxTimeMSOpOnly")
        if op_only and from_router:  # (mongos's time left for the operation: shardsim.generic_args)
            ctx.deadline = min(ctx.deadline, trio.current_time() + int(op_only) / 1000.0)
        if cmd.get("autocommit") is False:
            from mongosim.shardsim.txn_commands import attach_transaction

            attach_transaction(self, ctx, name)
        elif snapshot_reads.is_snapshot_read(name, cmd):
            snapshot_reads.open_view(self, ctx)
        elif view is not None:
            ctx.snapshot = view
        elif name in _WRITE_COMMANDS and self.txn_locks and self.prepared_namespaces:
            if lsid is not None and ctx.txn_number is not None:
                self.sessions.begin(lsid, ctx.txn_number)  # the session is checked out before any wait
            await self._wait_for_prepared(db, cmd.get(name), ctx.deadline)
        js_deadline = None  # (scripts the command runs stop at its maxTimeMS: shardsim.javascript.engine)
        if ctx.deadline != math.inf:
            js_deadline = js_engine.COMMAND_DEADLINE.set(time.monotonic() + ctx.deadline - trio.current_time())
        started = time.perf_counter_ns()
        op = self.operations.begin(ctx, name)
        ctx.opid = op.opid
        try:
            with op.scope:  # (killOp cancels it: shardsim.kill_op)
                if self.fsync.count and name in FSYNC_BLOCKED:
                    await self.fsync.wait_unlocked(ctx.deadline)  # (an fsync lock holds writes back)
                if ctx.txn is None:
                    reply = await self._dispatch(handler, ctx, db, name)
                else:
                    with visible_to(ctx.txn):  # the collections the transaction created are found by name
                        reply = await self._dispatch(handler, ctx, db, name)
            if op.scope.cancelled_caught:
                if name == "getMore" and isinstance(cmd.get("getMore"), int):
                    self.cursors.remove(int(cmd["getMore"]))  # (a getMore that fails frees its cursor: getmore_cmd.cpp)
                raise interrupted()
        except MongoError as err:
            if (ctx.txn is not None and name not in ("commitTransaction", "abortTransaction", "prepareTransaction")
                    and err.code != WOULD_CHANGE_OWNING_SHARD
                    and (err.code != RESOLVED_VIEW or ctx.cmd.get("startTransaction"))):
                # an error inside a transaction aborts it, as on the server (a view resolved for mongos
                # only when the transaction started with it: mongos may not come back to this shard)
                ctx.txn.abort(ctx)
            if ctx.close_connection:
                raise CloseConnection() from err  # the connection was closed before the error could be sent
            raise
        finally:
            self.operations.end(op)
            if js_deadline is not None:
                js_engine.COMMAND_DEADLINE.reset(js_deadline)
            self.top.record(db, name, cmd, (time.perf_counter_ns() - started) // 1000)
        if ctx.txn is not None and any(e.get("code") != WOULD_CHANGE_OWNING_SHARD for e in reply.get("writeErrors", ())):
            ctx.txn.abort(ctx)  # (WouldChangeOwningShard is mongos's to handle: the transaction goes on)
        if max_time_ms and name != "getMore":
            self.cursors.note_time_limit(reply)
        if not from_router and name != "getMore":
            self.cursors.note_api_parameters(reply, cmd)
        if ctx.at_cluster_time:
            snapshot_reads.stamp_reply(name, reply, ctx.at_cluster_time)
        if ctx.op_time_key:
            reply["_opTimeKey"] = ctx.op_time_key
        if ctx.close_connection:
            raise CloseConnection()  # (the command's writes stand; its reply is lost with the connection)
        return reply

    run_unprofiled = _run_command  # (`run_command` without the profiler: a member's entry point profiles itself)

    async def _dispatch(self, handler: Any, ctx: OpCtx, db: str, name: str) -> dict:
        """Run the command's handler (a command on a view runs as the view's aggregate)."""
        reply = None
        target = ctx.cmd.get(name)
        if ctx.cmd.get("isTimeseriesNamespace") is True and name in views.TIMESERIES and type(target) is str \
                and target.startswith(views.timeseries.BUCKETS):  # (mongos: a sharded time-series collection's)
            return await views.run_on_timeseries(self, ctx, name, target[len(views.timeseries.BUCKETS):])
        if name in views.ON_A_NAMESPACE and type(target) is str and self.catalog.collection(db, target) is None:
            reply = await views.run_on_view(self, ctx, name, target)  # (None: not a view either)
        if reply is None:
            reply = handler(self, ctx)
            if hasattr(reply, "__await__"):
                reply = await reply
        return reply

    @property
    def prepared_namespaces(self) -> set[str]:
        return {ns for (ns, _k), t in self.txn_locks.items() if t.state == "prepared"}

    async def _wait_for_prepared(self, db: str, coll: Any, deadline: float) -> None:
        """A write waits while a prepared transaction holds documents of its collection."""
        ns = f"{db}.{coll}"
        await self.park_until(lambda: ns not in self.prepared_namespaces, deadline)

    async def park_until(self, ready: Callable[[], bool], deadline: float) -> None:
        """Wait for transactions to end until `ready()`; MaxTimeMSExpired at the command's deadline."""
        with trio.move_on_at(deadline):
            while not ready():
                await self.txn_released.park()
            return
        raise MongoError("MaxTimeMSExpired", "operation exceeded time limit")

    def operation_time(self, ctx_key: int = 0) -> Timestamp:
        return key_ts(ctx_key or self.clock.key)

    # -- expired transactions ------------------------------------------------------
    async def run_transaction_reaper(self) -> None:
        """Abort transactions open longer than `transactionLifetimeLimitSeconds`, as the server's
        periodic job does (prepared ones wait for their coordinator): their document locks and
        snapshot are released; the client's next statement gets NoSuchTransaction."""
        while True:
            await trio.sleep(TXN_REAPER_PERIOD_S)
            self.abort_expired_transactions()

    def abort_expired_transactions(self) -> None:
        deadline = trio.current_time() - self.txn_lifetime_s
        for txn in self.sessions.open_transactions():
            if txn.state == "in_progress" and txn.started < deadline:
                txn.abort()

    # -- the periodic noop writer --------------------------------------------------
    async def run_noop_writer(self) -> None:
        """Every interval, write a noop if nothing was written since the last check."""
        last_seen = -1
        while True:
            await trio.sleep(self.noop_interval)
            if self.noop_paused or (self.member is not None and not self.member.is_primary):
                continue  # (only a primary writes)
            if self.oplog.last_key == last_seen:
                ts = self.log(oplog_entry.noop_op("periodic noop"))
                if self.tracer is not None:
                    self.tracer({"where": self.name, "step": "noop", "ts": (ts.time << 32) | ts.inc})
            last_seen = self.oplog.last_key
