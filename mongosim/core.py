"""The emulated cluster as a trio object: nodes, router, wire server, background tasks.

`open_cluster()` is the async way in (use it inside `trio.run`, e.g. with
`trio.testing.MockClock` for virtual time); `mongosim.Cluster` wraps it in a
background thread for synchronous callers such as pymongo test code.

Topologies: "sharded" (a config server, N shards, mongos front doors) and
"replset" (one replica set, no router).  Every shard and the config server is
a replica set of `members` members (mongosim/members.py), each listening on
its own port; `nodes[name]` is a set's current primary.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

import trio
from bson import ObjectId

import mongosim.status  # noqa: F401  (registers the mongosimStatus router command)
from mongosim.command_log import CommandLog, enabled as command_log_enabled
from mongosim.members import build_replica_set
from mongosim.oplog.clock import TimeSource
from mongosim.oplog.errors import MongoError
from mongosim.router import handshake
from mongosim.router.mongos import Router
from mongosim.router.sharding_catalog_manager import ShardingCatalogManager
from mongosim.shardsim import ttl_monitor
from mongosim.shardsim.node import Node
from mongosim.shardsim.replica_set import ReplicaSet


@dataclass
class ClusterOptions:
    """How a cluster is built (`Cluster(**options)`, `open_cluster(**options)`, `mongosim serve` flags).

    shards          number of shards (sharded topology), >= 1
    routers         number of mongos routers (sharded topology), >= 1: router00, router01, ... on consecutive
                    ports from `port` (each its own free port with port 0); `uri` names them all
    topology        "sharded" (config server + shards behind a mongos) or "replset" (one replica set;
                    drivers read its change streams directly)
    members         members of every replica set (each shard, the config server; the replset topology's
                    set), >= 1: each listens on its own port (after the routers' with a fixed `port`)
    arbiters        arbiters of every shard's replica set (the replset topology's set), >= 0, added after
                    the members (ids members..members+arbiters-1; config servers have none, as the server
                    refuses them there): `members=2, arbiters=1` is the PSA shape
    election_timeout  seconds (electionTimeoutMillis / 1000, default the server's 10): how long the members
                    wait for a dead primary before electing another
    heartbeat_interval  seconds (heartbeatIntervalMillis / 1000, default 2)
    host, port      where the wire server listens; port 0 picks a free port (read `Cluster.uri`)
    noop_interval   seconds between a node's periodic noop writes (periodicNoopIntervalSecs): how long an
                    idle shard can hold a merged change stream back
    instant_hwm     idle shards promise their current cluster time at once (no cold-shard latency)
    oplog_size_mb   cap each oplog at this many MiB (None: unbounded), like --oplogSize
    epoch           a fixed wall-clock start for virtual time (MockClock); None: real time
    set_name        the replica set's name (replset topology)
    skews           {node name: seconds} each node's wall clock runs ahead (negative: behind)
    listen          False: no TCP listener (in-process clients only, `mongosim.testing.AsyncClient`)
    auth            require authentication (SCRAM-SHA-256 / SCRAM-SHA-1)
    users_file      a JSON file of users created at start (README, "Users file")
    tls_cert_file   PEM certificate (and key) to serve TLS; tls_key_file: the key, if apart
    data_dir        persist oplogs, documents and config here (survives kill -9)
    event_cache     CRUD change events rendered once and shared by all streams, per node (0: off)
    """

    shards: int = 2
    topology: str = "sharded"  # or "replset"
    routers: int = 1  # mongos routers (sharded), on consecutive ports from `port`
    host: str = "127.0.0.1"
    port: int = 0
    noop_interval: float = 10.0
    instant_hwm: bool = False
    oplog_size_mb: float | None = None
    epoch: float | None = None  # fixed wall-clock start (virtual time); None = real time
    set_name: str = "rs0"
    skews: dict[str, float] = field(default_factory=dict)
    listen: bool = True  # False: no TCP listener (in-process clients only)
    auth: bool = False
    users_file: str | None = None
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    data_dir: str | None = None
    event_cache: int = 16_384  # CRUD events rendered once and shared, per node (0: off)
    members: int = 1  # members of every replica set (shards, config server)
    arbiters: int = 0  # arbiters of every shard's set (the replset topology's): members=2, arbiters=1 is PSA
    election_timeout: float = 10.0  # seconds (the server's electionTimeoutMillis / 1000)
    heartbeat_interval: float = 2.0  # seconds (heartbeatIntervalMillis / 1000)


def shard_name(i: int) -> str:
    return f"shard{i:02d}"


def router_name(i: int) -> str:
    return f"router{i:02d}"


class ClusterCore:
    """A running cluster: its nodes, its front door, its task nursery."""

    def __init__(self, opts: ClusterOptions, nursery: trio.Nursery) -> None:
        self.opts = opts
        self.nursery = nursery
        self.time = TimeSource(opts.epoch)
        self.replica_sets: dict[str, ReplicaSet] = {}
        self.member_frontends: dict[str, Any] = {}  # member host -> its front door
        self.member_ports_used = 0
        self.router: Router | None = None  # = routers[0]
        self.routers: list[Router] = []
        self.mongos: list[Any] = []  # mongosim.mongos_process.MongosProcess, one per router
        self.frontend: Any = None
        self.port: int = 0
        self.faults: Any = None
        self.store: Any = None  # shardsim.persistence.Store with --data-dir
        self.balancer: Any = None  # router.balancer.Balancer (sharded clusters)
        self.rw_defaults: Any = None  # shardsim.rw_concern_defaults.RWConcernDefaults (mongosim/members.py)

    @property
    def oplog_bytes(self) -> int | None:
        return int(self.opts.oplog_size_mb * 1024 * 1024) if self.opts.oplog_size_mb else None

    def make_node(self, name: str, *, is_config: bool = False) -> Node:
        """A new replica set `name` (a shard, or the config server); its primary's node."""
        rs = build_replica_set(self, name, is_config=is_config, set_name="configRepl" if is_config else None)
        node = rs.members[0].node
        if self.store is not None:
            self.store.adopt(node)  # restore its saved state (--data-dir), journal it from now on
        return node

    @property
    def nodes(self) -> dict[str, Node]:
        """Each replica set's current primary (or its last one, while it has none)."""
        out = {}
        for name, rs in self.replica_sets.items():
            p = rs.primary
            out[name] = p.node if p is not None else rs.members[0].node
        return out

    @property
    def config(self) -> Node | None:
        return self.nodes["config"] if "config" in self.replica_sets else None

    @property
    def public_host(self) -> str:
        return self.opts.host if self.opts.host not in ("0.0.0.0", "::") else "127.0.0.1"

    def endpoints(self) -> dict[str, list[str]]:
        """Every endpoint: the routers', and each replica set's members (set name -> hosts)."""
        out: dict[str, list[str]] = {}
        if self.mongos and self.opts.listen:
            out["routers"] = [f"{self.public_host}:{p.port}" for p in self.mongos]
        for rs in self.replica_sets.values():
            out[rs.name] = [m.host for m in rs.members]
        return out

    def replica_set_uri(self, name: str) -> str:
        """The connection string of one replica set (a shard's, the config server's)."""
        rs = self.replica_sets[name]
        return f"mongodb://{','.join(m.host for m in rs.data_bearing)}/?replicaSet={rs.name}"

    @property
    def uri(self) -> str:
        """The cluster's URI: every router's host:port (drivers load-balance across them)."""
        host = self.opts.host if self.opts.host not in ("0.0.0.0", "::") else "127.0.0.1"
        if self.opts.topology == "replset":
            rs = next(iter(self.replica_sets.values()), None)
            hosts = ",".join(m.host for m in rs.data_bearing) if rs is not None and self.opts.listen \
                else f"{host}:{self.port}"
            return f"mongodb://{hosts}/?replicaSet={self.opts.set_name}"
        if len(self.mongos) > 1:
            return "mongodb://" + ",".join(f"{host}:{p.port}" for p in self.mongos) + "/"
        return f"mongodb://{host}:{self.port}/"

    @property
    def shards(self) -> dict[str, Node]:
        """The cluster's shards (not the config server, nor shards removed by removeShard)."""
        retired = self.router.registry.retired if self.router is not None else {}
        return {n: node for n, node in self.nodes.items() if n != "config" and n not in retired}

    async def start(self) -> None:
        ident = handshake.ServerIdentity(host=self.opts.host if self.opts.host not in ("0.0.0.0", "::") else "127.0.0.1",
                                         is_mongos=self.opts.topology == "sharded", set_name=self.opts.set_name)
        saved = None
        if self.opts.data_dir:
            from mongosim.durability import open_store

            self.store, saved = open_store(self.opts)
        from mongosim.faults import FaultInjector

        self.faults = FaultInjector(self)
        if (self.opts.members > 1 or self.opts.arbiters) and self.opts.data_dir:
            raise ValueError("--data-dir keeps one member per replica set: use it with --members 1 and no arbiters")
        if self.opts.arbiters < 0:
            raise ValueError("arbiters must be >= 0")
        if self.opts.topology == "replset":
            rs = build_replica_set(self, shard_name(0), set_name=self.opts.set_name)
            if self.store is not None:
                self.store.adopt(rs.members[0].node)
            self.frontend = self.member_frontends[rs.members[0].host]
            self.frontend.identity.argv = ident.argv
            self.port = self.frontend.identity.port
        else:
            config = self.make_node("config", is_config=True)
            names = [n for n in saved if n != "config"] if saved else [shard_name(i) for i in range(self.opts.shards)]
            shards = {n: self.make_node(n) for n in names}
            manager = ShardingCatalogManager(config, shards, shard_factory=self.make_node)
            for rs in self.replica_sets.values():  # a failover changes the nodes routers gossip to
                rs.listeners.append(manager.registry.topology_changed)
            self._make_routers(manager, ident)
            from mongosim.router.config_initialization import initialize_config_database

            await initialize_config_database(self.router, [] if saved else list(shards))
            self.router.refresh_catalog()
            await self._start_balancer(manager)
            for router in self.routers:
                router.nursery = self.nursery
                router.faults = self.faults
            self.frontend = self.router
        if self.opts.auth or self.opts.users_file:
            from mongosim.router.authn import make_auth

            self.frontend.auth = make_auth(self.opts.auth, self.opts.users_file)
            for router in self.routers:
                router.auth = self.frontend.auth  # users live on the config server: every router knows them
            for member_frontend in self.member_frontends.values():  # every mongod asks for credentials too
                member_frontend.auth = self.frontend.auth
        else:  # the users and roles a set's primary writes are every member's (admin.system.users replicates)
            for router in self.routers[1:]:
                router.auth = self.routers[0].auth
            for rs in self.replica_sets.values():
                doors = [self.member_frontends[m.host] for m in rs.members if m.host in self.member_frontends]
                for door in doors[1:]:
                    door.auth = doors[0].auth
        if self.store is not None:
            from mongosim.durability import finish_restore

            finish_restore(self)
        self.nursery.start_soon(self._reap_cursors, name="cursor-reaper")
        if self.routers:
            await self._start_mongos()

    def _wrap_service(self, service: Any) -> Any:
        """What a listener serves around a front door: --data-dir's durability, `serve -v`'s command log."""
        if self.store is not None:
            from mongosim.shardsim.persistence import DurableService

            service = DurableService(service, self.store)
        if command_log_enabled():  # `mongosim serve -v`: every command as a mongod-style JSON line
            service = CommandLog(service)
        return service

    def _ssl_context(self) -> Any:
        if not self.opts.tls_cert_file:
            return None
        import ssl

        ssl_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ssl_context.load_cert_chain(self.opts.tls_cert_file, self.opts.tls_key_file)
        return ssl_context

    def _make_routers(self, manager: ShardingCatalogManager, ident: handshake.ServerIdentity) -> None:
        """The cluster's mongos routers, router00, router01, ... each with its own identity."""
        from dataclasses import replace

        for i in range(max(1, self.opts.routers)):
            identity = ident if i == 0 else replace(ident, process_id=ObjectId(), parameters=dict(ident.parameters))
            self.routers.append(Router(manager, identity=identity, instant_hwm=self.opts.instant_hwm,
                                       name=router_name(i)))
        self.router = self.routers[0]

    async def _start_mongos(self) -> None:
        """Every router as a process: its listener on port p + i (or a free port), its uptime pings."""
        from mongosim.mongos_process import MongosProcess

        ssl_context = self._ssl_context()
        for i, router in enumerate(self.routers):
            port = self.opts.port + i if self.opts.port else 0
            proc = MongosProcess(router, self.opts.host, port, listen=self.opts.listen, ssl_context=ssl_context,
                                 wrap=self._wrap_service)
            self.mongos.append(proc)
            await proc.start(self.nursery)
        self.port = self.mongos[0].port if self.opts.listen else 0

    def mongos_process(self, name: str) -> Any:
        """The MongosProcess of router `name` (router00, router01, ...)."""
        for proc in self.mongos:
            if proc.name == name:
                return proc
        raise MongoError("ShardNotFound", f"no router named {name}")

    @property
    def router_uris(self) -> list[str]:
        """One URI per router (mongodb://host:port/), in router order: for clients that must talk to one
        router (the spec runner's useMultipleMongoses: false, a test pinning a router)."""
        host = self.opts.host if self.opts.host not in ("0.0.0.0", "::") else "127.0.0.1"
        return [f"mongodb://{host}:{p.port}/" for p in self.mongos]

    async def _start_balancer(self, manager: ShardingCatalogManager) -> None:
        """The config server's balancer (it drains shards being removed), with its own router."""
        from mongosim.router.balancer import Balancer

        self.balancer = Balancer(Router(manager, name="config", instant_hwm=self.opts.instant_hwm))
        self.balancer.auto_merger.parameters = self._config_server_parameters
        await self.nursery.start(self.balancer.run, name="balancer")

    def _config_server_parameters(self) -> dict:
        """The config server primary's server parameters (its setParameter: autoMergerIntervalSecs ...)."""
        rs = self.replica_sets.get("config")
        primary = rs.primary if rs is not None else None
        frontend = self.member_frontends.get(primary.host) if primary is not None else None
        return frontend.identity.parameters if frontend is not None else {}

    async def _reap_cursors(self) -> None:
        """The cursor monitor: every 4 s (clientCursorMonitorFrequencySecs) cursors idle for longer than
        cursorTimeoutMillis (10 minutes) are killed, on every node and router."""
        while True:
            await trio.sleep(4)
            for rs in list(self.replica_sets.values()):
                for m in rs.members:
                    m.node.cursors.reap_idle()
                primary = rs.primary  # the TTL monitor deletes on the primary; secondaries replicate it
                if primary is not None:
                    ttl_monitor.run_once(primary.node)
            for router in self.routers:
                router.cursors.reap_idle()


@asynccontextmanager
async def open_cluster(**kwargs: Any) -> AsyncIterator[ClusterCore]:
    """Run a cluster for the duration of the `async with` block."""
    opts = kwargs.pop("options", None) or ClusterOptions(**kwargs)
    core = None
    try:
        async with trio.open_nursery() as nursery:
            core = ClusterCore(opts, nursery)
            await core.start()
            try:
                yield core
            finally:
                nursery.cancel_scope.cancel()
    finally:
        if core is not None and core.store is not None:
            core.store.close()  # clean shutdown: a final snapshot (after every task has stopped)


async def serve_cluster(options: ClusterOptions, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Run a cluster until cancelled; report the ClusterCore through task_status (for nursery.start)."""
    async with open_cluster(options=options) as core:
        task_status.started(core)
        await trio.sleep_forever()
