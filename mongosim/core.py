"""The emulated cluster as a trio object: nodes, router, wire server, background tasks.

`open_cluster()` is the async way in (use it inside `trio.run`, e.g. with
`trio.testing.MockClock` for virtual time); `mongosim.Cluster` wraps it in a
background thread for synchronous callers such as pymongo test code.

Topologies: "sharded" (a config server, N shards, a mongos front door) and
"replset" (one replica set, no router).  Every shard and the config server is
a replica set of `members` members (mongosim/members.py), each listening on
its own port; `nodes[name]` is a set's current primary.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, AsyncIterator

import trio

from mongosim.members import build_replica_set
from mongosim.oplog.clock import TimeSource
from mongosim.router import handshake
from mongosim.router.mongos import Router
from mongosim.router.server import serve_tcp
from mongosim.shardsim.node import Node
from mongosim.shardsim.replica_set import ReplicaSet


@dataclass
class ClusterOptions:
    shards: int = 2
    topology: str = "sharded"  # or "replset"
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
    election_timeout: float = 10.0  # seconds (the server's electionTimeoutMillis / 1000)
    heartbeat_interval: float = 2.0  # seconds (heartbeatIntervalMillis / 1000)


def shard_name(i: int) -> str:
    return f"shard{i:02d}"


class ClusterCore:
    """A running cluster: its nodes, its front door, its task nursery."""

    def __init__(self, opts: ClusterOptions, nursery: trio.Nursery) -> None:
        self.opts = opts
        self.nursery = nursery
        self.time = TimeSource(opts.epoch)
        self.replica_sets: dict[str, ReplicaSet] = {}
        self.member_frontends: dict[str, Any] = {}  # member host -> its front door
        self.member_ports_used = 0
        self.router: Router | None = None
        self.frontend: Any = None
        self.port: int = 0
        self.faults: Any = None
        self.store: Any = None  # shardsim.persistence.Store with --data-dir

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
        rs = self.replica_sets.get("config")
        return self.nodes["config"] if rs is not None else None

    @property
    def public_host(self) -> str:
        return self.opts.host if self.opts.host not in ("0.0.0.0", "::") else "127.0.0.1"

    def ssl_context(self):
        if not self.opts.tls_cert_file:
            return None
        import ssl

        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(self.opts.tls_cert_file, self.opts.tls_key_file)
        return ctx

    def endpoints(self) -> dict[str, list[str]]:
        """Every endpoint: the router's, and each replica set's members (set name -> hosts)."""
        out: dict[str, list[str]] = {}
        if self.router is not None and self.opts.listen:
            out["router"] = [f"{self.public_host}:{self.port}"]
        for rs in self.replica_sets.values():
            out[rs.name] = [m.host for m in rs.members]
        return out

    @property
    def uri(self) -> str:
        host = self.public_host
        if self.opts.topology == "replset":
            rs = self.replica_sets.get(self.opts.set_name)
            hosts = ",".join(m.host for m in rs.members) if rs is not None and self.opts.listen else f"{host}:{self.port}"
            return f"mongodb://{hosts}/?replicaSet={self.opts.set_name}"
        return f"mongodb://{host}:{self.port}/"

    def replica_set_uri(self, name: str) -> str:
        """The connection string of one replica set (a shard's, the config server's)."""
        rs = self.replica_sets[name]
        return f"mongodb://{','.join(m.host for m in rs.members)}/?replicaSet={rs.name}"

    @property
    def shards(self) -> dict[str, Node]:
        return {n: node for n, node in self.nodes.items() if n != "config"}

    async def start(self) -> None:
        ident = handshake.ServerIdentity(host=self.opts.host if self.opts.host not in ("0.0.0.0", "::") else "127.0.0.1",
                                         is_mongos=self.opts.topology == "sharded", set_name=self.opts.set_name)
        saved = None
        if self.opts.data_dir:
            from mongosim.durability import open_store

            self.store, saved = open_store(self.opts)
        from mongosim.faults import FaultInjector

        self.faults = FaultInjector(self)
        if self.opts.members > 1 and self.opts.data_dir:
            raise ValueError("--data-dir keeps one member per replica set: use it with --members 1")
        if self.opts.topology == "replset":
            rs = build_replica_set(self, shard_name(0), set_name=self.opts.set_name)
            node = rs.members[0].node
            if self.store is not None:
                self.store.adopt(node)
            self.frontend = self.member_frontends[rs.members[0].host]
            self.frontend.identity.argv = ident.argv
            self.port = self.frontend.identity.port
        else:
            config = self.make_node("config", is_config=True)
            names = [n for n in saved if n != "config"] if saved else [shard_name(i) for i in range(self.opts.shards)]
            shards = {n: self.make_node(n) for n in names}
            self.router = Router(config, shards, identity=ident, shard_factory=self.make_node,
                                 instant_hwm=self.opts.instant_hwm)
            for n in shards:
                for m in self.replica_sets[n].members:
                    self.router.attach_filtering_metadata(n, m.node)
            from mongosim.router.sharding import config_write, shard_document

            if shards and not saved:
                await config_write(self.router, {"insert": "shards",
                                                 "documents": [shard_document(self.router, n) for n in shards]})
            self.router.refresh_catalog()
            self.router.nursery = self.nursery
            self.router.faults = self.faults
            self.frontend = self.router
        if self.opts.auth or self.opts.users_file:
            from mongosim.router.authn import make_auth

            self.frontend.auth = make_auth(self.opts.auth, self.opts.users_file)
            for member_frontend in self.member_frontends.values():  # every mongod asks for credentials too
                member_frontend.auth = self.frontend.auth
        if self.store is not None:
            from mongosim.durability import finish_restore

            finish_restore(self)
        self.nursery.start_soon(self._reap_cursors, name="cursor-reaper")
        if self.opts.listen and self.router is not None:
            ssl_context = self.ssl_context()
            service = self.frontend
            if self.store is not None:
                from mongosim.shardsim.persistence import DurableService

                service = DurableService(self.frontend, self.store)
            self.port = await self.nursery.start(partial(serve_tcp, ssl_context=ssl_context),
                                                 service, self.opts.host, self.opts.port)
            self.frontend.identity.port = self.port

    async def _reap_cursors(self) -> None:
        while True:
            await trio.sleep(60)
            for rs in list(self.replica_sets.values()):
                for m in rs.members:
                    m.node.cursors.reap_idle()
            if self.router is not None:
                self.router.cursors.reap_idle()


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
