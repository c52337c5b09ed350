"""The mongos: command dispatch, cluster-time gossip, error labels, failpoints.

`Router.run_command(db, cmd, conn)` is what the wire server calls for every
request.  It advances the cluster clock from the client's `$clusterTime`,
applies test failpoints, runs the command's handler (registered with
`@router_command`) and, on failure, labels the error as the server would
(`ResumableChangeStreamError` for resumable change-stream failures, ...).
`decorate` adds `operationTime` and `$clusterTime` to every reply.

The shards and the config server are `shardsim.Node`s reached through
`ShardRemote`s; sharding metadata is read from the config server into the
`CatalogCache`.
"""

from __future__ import annotations

import time
from typing import Callable

import trio
from bson import ObjectId, Timestamp
from mongosim.oplog.clock import key_ts, ts_key
from mongosim.oplog.errors import MongoError
from mongosim.router import authn, collection_uuid_mismatch, handshake, shard_versioning
from mongosim.router.catalog_cache import CatalogCache
from mongosim.router.commands import ROUTER_COMMANDS
from mongosim.router.server_status import ServerCounters
from mongosim.router.error_labels import COMMIT_OR_ABORT, change_stream_labels
from mongosim.router.failpoints import (
    CloseConnection,
    FailPoints,
    app_name_of,
    apply_fail_command,
    attach_write_concern_error,
    fail_get_more_after_checkout,
)
from mongosim.router.remote import ShardRemote, begin_request, end_request, merge_write_concern_errors
from mongosim.router.request import AFTER_REPLY, Request
from mongosim.router.server import ConnState
from mongosim.router.sharding_catalog_manager import ShardingCatalogManager
from mongosim.router.sharding import critical_sections
from mongosim.router.transactions import RouterTransactions
from mongosim.shardsim import snapshot_reads
from mongosim.shardsim.collation import check_collations
from mongosim.shardsim.collection_uuid import mismatch as uuid_mismatch
from mongosim.shardsim.cursors import CursorManager
from mongosim.shardsim.fail_point import check_max_time_always_times_out
from mongosim.shardsim.generic_args import check_generic_arguments
from mongosim.shardsim.generic_args import max_time_ms as generic_max_time_ms
from mongosim.shardsim.javascript import engine as js_engine
from mongosim.shardsim.logical_session_cache import LogicalSessionCache
from mongosim.shardsim.profiler import ProfileSettings
from mongosim.shardsim.read_concern_support import (
    check_client_provenance,
    check_read_concern_support,
    with_default_read_concern,
)
from mongosim.shardsim.transaction_validation import validate_session_options
from mongosim.shardsim.write_concern import check_client_provenance as check_client_write_provenance
from mongosim.shardsim.node import Node

# the commands whose `collectionUUID` on a database that does not exist is CollectionUUIDMismatch
# "Database does not exist" at mongos (cluster_find_cmd, cluster_aggregate, cluster_count_cmd, ...:
# CollectionUUIDMismatchInfo with no actual collection); collMod checks it itself (commands_ddl.py)
_NO_DATABASE_NO_UUID = frozenset({"find", "count", "distinct", "aggregate", "listIndexes", "dropIndexes", "drop"})
_WRITE_COMMANDS = frozenset({"insert", "update", "delete"})  # (their write errors: collection_uuid_mismatch)


class ClusterClock:
    """The router's view of cluster time: only ever advanced by gossip.

    `listeners` hear every advance (instant-HWM mode: the router passes the
    new cluster time on to the shards at once, so idle shards can promise it).
    """

    def __init__(self) -> None:
        self.key = 0
        self.listeners: list = []

    def advance(self, key: int) -> None:
        if key > self.key:
            self.key = key
            for listener in self.listeners:
                listener(key)

    def now(self) -> Timestamp:
        return key_ts(self.key)


def is_change_stream_command(name: str, cmd: dict, router: "Router | None" = None, db: str = "") -> bool:
    if name == "aggregate":
        p = cmd.get("pipeline")
        return isinstance(p, list) and bool(p) and isinstance(p[0], dict) and "$changeStream" in p[0]
    if name == "getMore" and router is not None:
        cid = cmd.get("getMore")
        cur = router.cursors._cursors.get(cid) if isinstance(cid, int) else None  # e.g. getMore: [] is TypeMismatch later
        return getattr(cur, "is_change_stream", False)
    return False


class Router:
    """One mongos of an emulated cluster.

    Its own: cluster clock, catalog cache (which may be stale: shards answer
    StaleConfig and it refreshes), cursors, transactions, failpoints and
    identity.  Shared with the cluster's other routers, through the
    `ShardingCatalogManager`: the config server, the shard registry (each
    router reaches the shards through its own `ShardRemote`s, whose link faults
    are the shard's), the DDL lock and the migration critical sections.
    A router can be stopped and started again (`stop`/`start`): what it held in
    memory is lost, as when a mongos process restarts.
    """

    def __init__(
        self,
        manager: ShardingCatalogManager,
        *,
        identity: handshake.ServerIdentity | None = None,
        instant_hwm: bool = False,
        name: str = "router00",
    ) -> None:
        self.name = name
        self.manager = manager
        self.registry = manager.registry
        self.counters = ServerCounters()  # serverStatus's opcounters, network, asserts (router/server_status.py)
        self.identity = identity or handshake.ServerIdentity()
        self.clock = ClusterClock()
        self.config_remote = ShardRemote("config", self.registry.config, self.clock, self.registry.config_faults)
        self._remotes: dict[str, ShardRemote] = {}
        self._remotes_version = -1
        self.instant_hwm = instant_hwm
        self.connections: set[int] = set()
        self.hello_changed = trio.Event()
        self.tracer = None  # callable(dict) receiving merge trace events, or None
        self.auth = authn.make_auth(False)  # replaced by the cluster when --auth
        self.up = False
        self.start()
        if instant_hwm:
            self.clock.listeners.append(self._gossip_to_shards)

    # -- process lifecycle ------------------------------------------------------------------
    def start(self) -> None:
        """Start with empty memory: a fresh catalog cache (read from the config server), no
        cursors, transactions or failpoints, a new process id in its topologyVersion."""
        for node in self.registry.all_nodes():
            self.clock.advance(node.clock.key)
        self.catalog = CatalogCache(lambda: self.config)
        self.cursors = CursorManager(None)
        self.failpoints = FailPoints()
        self.txns = RouterTransactions(self)  # the transaction coordinator
        self.session_cache = LogicalSessionCache()  # the sessions this mongos has seen ($listLocalSessions)
        # a refresh writes them to config.system.sessions, kept by the config server's primary ($listSessions)
        self.session_cache.sink = lambda active, ended: self.config.sessions_collection.apply(active, ended)
        self.session_cache.wall = lambda: self.config.wall.wall()
        self.profile_settings = ProfileSettings()  # slowms, sampleRate, filters: a mongos profiles nothing
        self.started_at = trio.current_time()
        self.identity.process_id = ObjectId()
        self.identity.topology_counter = 0
        self.up = True
        self.refresh_catalog()

    def stop(self) -> None:
        """The mongos process goes away: its cursors die (their shard cursors are killed), its
        in-memory transactions and routing cache are lost (the shards' transactions it started
        stay open until their lifetime limit, as after a real mongos crash)."""
        self.up = False
        self.cursors.kill_all(MongoError("InterruptedAtShutdown", "interrupted at shutdown"))
        self.connections.clear()
        self.hello_changed.set()
        self.hello_changed = trio.Event()

    # -- shared state -------------------------------------------------------------------------
    @property
    def config(self) -> Node:
        """The config server's primary."""
        return self.registry.config_primary()

    @property
    def shards(self) -> dict[str, ShardRemote]:
        """This router's remotes to the registry's shards (rebuilt when a shard joins or leaves)."""
        reg = self.registry
        if self._remotes_version != reg.version:
            old = self._remotes
            self._remotes = {n: (old[n] if n in old and old[n].registered is node else
                                 ShardRemote(n, node, self.clock, reg.faults[n]))
                             for n, node in reg.nodes.items()}
            self._remotes_version = reg.version
        return self._remotes

    @property
    def shard_factory(self) -> Callable[[str], Node] | None:
        return self.registry.shard_factory

    @shard_factory.setter
    def shard_factory(self, factory: Callable[[str], Node] | None) -> None:
        self.registry.shard_factory = factory

    @property
    def _ddl_lock(self) -> trio.Lock:
        return self.manager.ddl_lock

    def _gossip_to_shards(self, key: int) -> None:
        """Instant-HWM: every node learns a new cluster time at once (see Node.hear_cluster_time)."""
        for node in self.registry.all_nodes():
            node.hear_cluster_time(key)

    # -- wire service interface ---------------------------------------------------------
    async def run_command(self, db: str, cmd: dict, conn: ConnState) -> dict:
        if not cmd:
            raise MongoError("FailedToParse", "Empty command object")
        if not self.up:  # stopped: connections still open (its listener is closing) are closed
            raise CloseConnection()
        name = next(iter(cmd))
        self.connections.add(conn.id)
        ct = cmd.get("$clusterTime")
        if isinstance(ct, dict) and isinstance(ct.get("clusterTime"), Timestamp):
            self.clock.advance(ts_key(ct["clusterTime"]))
        handler = ROUTER_COMMANDS.get(name)  # command names are case-sensitive (aliases are registered)
        if handler is None:
            raise MongoError("CommandNotFound", f"no such command: '{name}'")
        check_generic_arguments(name, cmd)
        validate_session_options(db, name, cmd)
        if db == "local":  # ExecCommandClient's prologue: after the session options are validated
            raise MongoError("IllegalOperation", "Can't use 'local' database through mongos")
        check_client_write_provenance(name, cmd)  # (the writeConcern's first, as strategy.cpp checks them)
        check_client_provenance(cmd)  # (the client's: one naming nothing else gives way to the default)
        cmd = with_default_read_concern(name, cmd, self._default_read_concern())
        check_read_concern_support(name, cmd)
        check_collations(name, cmd)
        check_max_time_always_times_out(self.failpoints, cmd)
        authn.authorize(self, db, cmd, conn)
        cmd = authn.resolve_session(self, cmd, conn)
        req = Request(db, cmd, conn, name)
        if "collectionUUID" in cmd and name in _NO_DATABASE_NO_UUID and self.catalog.primary_of(db) is None:
            raise uuid_mismatch(db, cmd["collectionUUID"], cmd[name], None, "Database does not exist")
        at_cluster_time = await self._snapshot_read_time(req) if snapshot_reads.is_snapshot_read(name, cmd) else 0
        # decided before running: a failing getMore may remove its cursor
        req.is_change_stream = is_change_stream_command(name, cmd, self, db)
        if "autocommit" in cmd:  # (refused before the transaction is touched: it goes on)
            self.txns.check_api_parameters(req)
        # read preference and the time left out, the shards' writeConcernErrors back
        max_time_ms = generic_max_time_ms(cmd) if "maxTimeMS" in cmd and name != "getMore" else None
        shard_request = begin_request(cmd, max_time_ms)
        after_reply = AFTER_REPLY.set(conn.after_reply)  # (what waits for this reply to leave: request.after_reply)
        js_deadline = None  # (scripts run for this command stop at its maxTimeMS: shardsim.javascript.engine)
        if max_time_ms:
            js_deadline = js_engine.COMMAND_DEADLINE.set(time.monotonic() + max_time_ms / 1000.0)
        try:
            if self.failpoints:
                await apply_fail_command(self.failpoints, req)
            if handshake.is_streaming_hello(name, cmd):
                await self.await_hello(cmd, conn)
            if "autocommit" in cmd:
                self.txns.begin(req)
            if name == "getMore":
                fail_get_more_after_checkout(self.failpoints, self.cursors, db, cmd, app_name_of(conn.client))
            reply = await self._run_handler(handler, req)
            if name in _WRITE_COMMANDS and reply.get("writeErrors"):
                await collection_uuid_mismatch.complete_write_errors(self, reply)
        except MongoError as caught:
            err = caught
            if err.code == collection_uuid_mismatch.CODE:  # (its actualCollection, or the error finding it)
                err = await collection_uuid_mismatch.complete_error(self, err)
            injected = err.extra.get("_failCommand", False)  # (failCommand fires before the transaction is touched)
            self._label(err, req)
            if "autocommit" in cmd and name not in COMMIT_OR_ABORT and not injected:
                await self.txns.implicitly_abort(req)
            if err is caught:
                raise
            raise err from None
        finally:
            wces = end_request(shard_request)
            AFTER_REPLY.reset(after_reply)
            if js_deadline is not None:
                js_engine.COMMAND_DEADLINE.reset(js_deadline)
        if wces and reply.get("ok") and "writeConcernError" not in reply:
            reply["writeConcernError"] = merge_write_concern_errors(wces)
        if cmd.get("autocommit") is False:
            token = self.txns.recovery_token(req)
            if token is not None:
                reply["recoveryToken"] = token
        if at_cluster_time:
            snapshot_reads.stamp_reply(name, reply, at_cluster_time)
        if req.op_time_key:
            reply.setdefault("_opTimeKey", req.op_time_key)
        authn.note_cursor_owner(self, reply, conn)
        if name != "getMore":
            self.cursors.note_api_parameters(reply, cmd)
        return reply

    def _default_read_concern(self) -> dict | None:
        """The cluster-wide default read concern (the config server keeps the defaults,
        `shardsim.rw_concern_defaults`): mongos applies it and sends it on to the shards."""
        config = self.registry.config
        rs = getattr(config, "replica_set", None) if config is not None else None
        defaults = getattr(rs, "defaults", None)
        return defaults.read_concern if defaults is not None else None

    async def _run_handler(self, handler: Callable, req: Request) -> dict:
        """Run the command; after a stale routing table, refresh and run it again when it may be
        (router/shard_versioning.py)."""
        attempt = 0
        cmd = req.cmd  # (a handler may replace it, e.g. with `let` evaluated: each attempt starts afresh)
        while True:
            req.cmd = cmd
            req.routing = {}
            try:
                return await handler(self, req)
            except MongoError as err:
                if not await shard_versioning.retry_after_stale(self, req, err, attempt):
                    raise
            attempt += 1

    async def _snapshot_read_time(self, req: Request) -> int:
        """A snapshot read outside a transaction: one cluster time for every shard, sent to each
        as readConcern.atClusterTime. mongosim picks the time outside a migration of the
        collection (it waits for the migration's critical section): between a migration's clone
        and its commit both shards hold the moving documents, and shards here do not filter
        orphans by the ownership of a past time as the server's do."""
        if "atClusterTime" not in req.cmd["readConcern"] and isinstance(req.cmd.get(req.name), str):
            await critical_sections(self).wait(f"{req.db}.{req.cmd[req.name]}")
        req.cmd = {**req.cmd, "readConcern": self.pin_snapshot_time(req.cmd["readConcern"])}
        return ts_key(req.cmd["readConcern"]["atClusterTime"])

    def pin_snapshot_time(self, read_concern: dict) -> dict:
        """`read_concern` (level snapshot) with its atClusterTime: the client's, or the latest
        cluster time; pinned on every shard at once, before any shard is asked, so each reads
        at that time whenever the request reaches it."""
        key = snapshot_reads.requested_time({"readConcern": read_concern}, self.clock.key) or self.clock.key
        for name in self.shards:
            node = self.shard(name).node
            if snapshot_reads.existed_at(node, key):
                snapshot_reads.pin(node, key)
        return {**read_concern, "atClusterTime": key_ts(key)}

    def _label(self, err: MongoError, req: Request) -> None:
        explicit = err.extra.pop("_explicitLabels", None)
        injected = err.extra.pop("_failCommand", False)
        if explicit is not None:
            err.labels = list(explicit)
            return
        if req.is_change_stream:
            for label in change_stream_labels(err.code, resumable_candidate=not (injected and req.name == "getMore")):
                err.add_label(label)
        self.txns.label_error(err, req)

    def decorate(self, reply: dict, db: str, cmd: dict, conn: ConnState) -> dict:
        op_key = reply.pop("_opTimeKey", 0) or self.clock.key
        if conn.extra:  # (what a failCommand left for the reply)
            attach_write_concern_error(reply, conn)  # (a mongos adds no label of its own to it)
        reply["operationTime"] = key_ts(op_key)
        reply["$clusterTime"] = handshake.cluster_time_doc(self.clock.now())
        return reply

    async def await_hello(self, cmd: dict, conn: ConnState) -> None:
        wait = cmd.get("maxAwaitTimeMS")
        tv = cmd.get("topologyVersion") or {}
        if tv.get("processId") != self.identity.process_id or tv.get("counter") != self.identity.topology_counter:
            return
        with trio.move_on_after(max(float(wait or 0), 0) / 1000.0):
            await self.hello_changed.wait()

    def connection_closed(self, conn: ConnState) -> None:
        self.connections.discard(conn.id)

    # -- shards ---------------------------------------------------------------------------
    def shard(self, name: str) -> ShardRemote:
        if name == "config":
            return self.config_remote
        try:
            return self.shards[name]
        except KeyError:
            err = MongoError("ShardNotFound", f"Shard {name} not found")
            if name in self.registry.retired:
                # Routing that names a removed shard is stale: as 8.0's ShardRegistry drops the catalog
                # cache's entries that reference a removed shard (invalidateEntriesThatReferenceShard),
                # the cache is refreshed and the command retargeted (shard_versioning.is_stale).
                self.refresh_catalog()
                err.shard_removed = True
            raise err from None

    def retired_remote(self, name: str) -> ShardRemote:
        """A remote to a shard removed from the cluster (its node still runs): for change streams
        that started before its removal."""
        r = self.registry.retired[name]
        return ShardRemote(name, r.node, self.clock, r.faults)

    def refresh_catalog(self) -> None:
        self.catalog.refresh(self.config.catalog)

