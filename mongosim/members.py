"""A cluster's replica sets: building their members and serving each member's own port.

`build_replica_set` makes the `members` Nodes of one shard (or of the config
server, or of a `--topology replset` deployment): the first is initiated and
becomes primary in term 1; the others start from it by initial sync.  Then
come the `arbiters` (shards and the replset topology's set; a config server
has none, as the server refuses them there): each is a mongod of its own,
with its port, that holds no data and copies no oplog.  A sharded cluster
whose shards have arbiters starts with the cluster-wide write concern set to
`{w: 1}` (the server adds no shard with arbiters before one is set; w: 1 is
what the set's implicit default would be), `shardsim.rw_concern_defaults`.  When
the cluster listens, every member gets its own TCP endpoint (bound here, at
once, so that its host string is known before `config.shards` names it):
with a fixed `--port p`, members take consecutive ports after the routers'
(config server first, then shard00's members, shard01's, ...); with port 0,
each takes a free one.  A member's endpoint follows its life: a killed member
stops listening and its connections close; a restarted one listens on the
same port again; a member that rolls back closes its connections.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Any

import trio

from mongosim.router import handshake
from mongosim.router.replset import ReplSetFrontend
from mongosim.router.server import serve_listeners
from mongosim.shardsim import topology_coordinator
from mongosim.shardsim.initial_sync import initial_sync
from mongosim.shardsim.node import Node
from mongosim.shardsim.replica_set import Member, ReplicaSet
from mongosim.shardsim.rw_concern_defaults import RWConcernDefaults

if TYPE_CHECKING:
    from mongosim.core import ClusterCore


class MemberEndpoint:
    """One member's listener and connections."""

    def __init__(self, core: "ClusterCore", port: int) -> None:
        self.core = core
        self.port = port
        self.frontend: ReplSetFrontend | None = None
        self._listener: Any = None  # bound, not yet served
        self._serving: Any = None  # the listener being served
        self._scope: trio.CancelScope | None = None
        self._connections: set[trio.CancelScope] = set()
        self.bind()

    def bind(self) -> None:
        """Bind the port now (synchronously: the member's host string needs it)."""
        family = socket.AF_INET6 if ":" in self.core.opts.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.core.opts.host, self.port))
        sock.listen(128)
        self.port = sock.getsockname()[1]
        listener: Any = trio.SocketListener(trio.socket.from_stdlib_socket(sock))
        ssl_context = self.core._ssl_context()
        if ssl_context is not None:
            listener = trio.SSLListener(listener, ssl_context, https_compatible=False)
        self._listener = listener

    async def _serve(self, listener: Any) -> None:
        with self._scope:
            await serve_listeners(self.frontend, [listener], self._connections)

    def start(self) -> None:
        if self._listener is None:
            self.bind()
        listener, self._listener = self._listener, None
        self._serving = listener
        self._scope = trio.CancelScope()
        self.core.nursery.start_soon(self._serve, listener, name=f"member-{self.port}")

    def stop(self) -> None:
        """Stop listening (the port is free at once); every connection closes."""
        self.close_connections()
        if self._scope is not None:
            self._scope.cancel()
            self._scope = None
        if self._serving is not None:
            listener = getattr(self._serving, "transport_listener", self._serving)
            listener.socket.close()
            self._serving = None

    def close_connections(self) -> None:
        """Close every connection, keep listening."""
        for scope in list(self._connections):
            scope.cancel()


def _member_port(core: "ClusterCore") -> int:
    if core.opts.port == 0:
        return 0
    port = core.opts.port + getattr(core.opts, "routers", 1) + core.member_ports_used
    core.member_ports_used += 1
    return port


def new_member_node(core: "ClusterCore", name: str, host: str, *, is_config: bool, initiate: bool) -> Node:
    opts = core.opts
    node = Node(name, core.time, oplog_bytes=core.oplog_bytes, skew=opts.skews.get(name, 0.0), is_config=is_config,
                noop_interval=opts.noop_interval, instant_hwm=opts.instant_hwm and initiate, host=host,
                initiate=initiate)
    if opts.event_cache <= 0:
        node.event_cache = None
    else:
        node.event_cache.capacity = opts.event_cache
    core.nursery.start_soon(node.run_noop_writer, name=f"noop-writer-{name}-{host}")
    core.nursery.start_soon(node.run_transaction_reaper, name=f"transaction-reaper-{name}-{host}")
    return node


def _attach(core: "ClusterCore", rs: ReplicaSet, m: Member, endpoint: MemberEndpoint | None) -> None:
    """The member's front door (and endpoint, when the cluster listens)."""
    ident = handshake.ServerIdentity(host=core.public_host, is_mongos=False, set_name=rs.name)
    if endpoint is not None:
        ident.port = endpoint.port
    frontend = ReplSetFrontend(m, ident)
    frontend.faults = core.faults
    core.member_frontends[m.host] = frontend
    if endpoint is not None:
        endpoint.frontend = core._wrap_service(frontend)  # (--data-dir, serve -v)
        m.on_kill = endpoint.stop
        m.on_restart = endpoint.start
        m.on_close_connections = endpoint.close_connections
        endpoint.start()


def add_member(core: "ClusterCore", rs: ReplicaSet, name: str, host: str | None = None,
               member_id: int | None = None, *, is_config: bool = False, arbiter: bool = False) -> Member:
    """A new member of `rs` (at creation, or by replSetReconfig): it starts by initial sync (an
    arbiter: empty, for good)."""
    endpoint = None
    if core.opts.listen:
        port = int(host.rsplit(":", 1)[1]) if host else _member_port(core)
        endpoint = MemberEndpoint(core, port)
        host = f"{core.public_host}:{endpoint.port}"
    elif host is None:
        core.member_ports_used += 1
        host = f"localhost:{27018 + core.member_ports_used}"
    first = not rs.members
    node = new_member_node(core, name, host, is_config=is_config, initiate=first)
    m = rs.add_member(node, host, member_id, arbiter=arbiter)
    if first:
        rs.initiate()
    elif arbiter:
        if rs.started:
            topology_coordinator.start(rs, core.nursery)
    else:
        source = rs.primary or rs.members[0]
        initial_sync(m, source)
        if rs.started:
            topology_coordinator.start(rs, core.nursery)
    _attach(core, rs, m, endpoint)
    return m


def build_replica_set(core: "ClusterCore", name: str, *, is_config: bool = False,
                      set_name: str | None = None) -> ReplicaSet:
    """The replica set `name` with the cluster's number of members, running."""
    opts = core.opts
    rs = ReplicaSet(set_name or name, election_timeout=opts.election_timeout,
                    heartbeat_interval=opts.heartbeat_interval)
    rs.instant_hwm = opts.instant_hwm
    for _ in range(max(int(opts.members), 1)):
        add_member(core, rs, name, is_config=is_config)
    for _ in range(0 if is_config else int(opts.arbiters)):
        add_member(core, rs, name, arbiter=True)
    rs.member_factory = lambda host, mid, arbiter=False: add_member(core, rs, name, host, mid, is_config=is_config,
                                                                    arbiter=arbiter)
    rs.is_config = is_config
    rs.in_sharded_cluster = opts.topology == "sharded" and not is_config
    rs.defaults = cluster_defaults(core)
    core.replica_sets[name] = rs
    topology_coordinator.start(rs, core.nursery)
    return rs


def cluster_defaults(core: "ClusterCore") -> RWConcernDefaults:
    """The deployment's read/write concern defaults: one object, shared by every set of a sharded
    cluster (the config server keeps it; mongos applies it) — with arbiters, the cluster-wide write
    concern starts at {w: 1}."""
    if core.rw_defaults is None:
        core.rw_defaults = RWConcernDefaults()
        if core.opts.arbiters and core.opts.topology == "sharded":
            core.rw_defaults.write_concern = {"w": 1, "wtimeout": 0}
    return core.rw_defaults
