"""A replica-set member's front door: one member answering the wire protocol as its mongod.

Every member of every replica set (each shard's, the config server's, or a
`--topology replset` deployment's) listens on its own port, so that
`mongodb://h:p1,h:p2,h:p3/?replicaSet=shard00` reaches a shard the way a
driver or a DBA reaches a real one.  Drivers classify the member from `hello`:
`setName`, `hosts`, `primary`, `me`, `isWritablePrimary` / `secondary`,
`electionId` (on the primary: the term), `setVersion`, `lastWrite`, and a
`topologyVersion` whose counter moves with every change of the set, so a
streaming `hello` (topologyVersion + maxAwaitTimeMS) answers at once when a
primary steps down or is elected.  Every member lists the set's `arbiters`;
an arbiter answers `arbiterOnly: true` (neither primary nor secondary), and
each member its own `tags` (drivers select members by them for a read
preference's tag sets).  An arbiter's clock is not a cluster clock: its
replies gossip no `$clusterTime` and carry no `operationTime`.

Server-information and test commands are shared with the mongos
(`router.commands_admin`); everything else runs on the member through
`shardsim.service_entry_point` (role checks, read and write concern).  A
member that is killed closes its connections; a retryable write whose
writeConcernError is retryable gets the RetryableWriteError label, as the
server adds it (error_labels.cpp).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import trio
from bson import Int64, Timestamp
from mongosim.oplog.clock import key_ts, ts_key
from mongosim.oplog.errors import MongoError, in_category
from mongosim.router import authn, handshake
from mongosim.router.commands import ROUTER_COMMANDS
from mongosim.router.commands_admin import answer_hello
from mongosim.router.error_labels import change_stream_labels, label_write_concern_error
from mongosim.router.failpoints import (
    CloseConnection,
    app_name_of,
    apply_fail_command,
    attach_write_concern_error,
    fail_get_more_after_checkout,
)
from mongosim.router.request import Request
from mongosim.router.server import ConnState
from mongosim.router.server_status import ServerCounters
from mongosim.router.transactions import transaction_labels
from mongosim.shardsim import service_entry_point
from mongosim.shardsim.generic_args import check_generic_arguments
from mongosim.shardsim.node import Node
from mongosim.shardsim.replica_set import PRIMARY, REMOVED, SECONDARY, Member, ReplicaSet, election_id, optime
from mongosim.shardsim.write_concern import MemberGone

ADMIN_COMMANDS = {
    "ping", "buildInfo", "buildinfo", "getParameter", "getCmdLineOpts",
    "serverStatus", "connectionStatus", "whatsmyuri", "endSessions", "killSessions", "refreshSessions",
    "killAllSessions", "killAllSessionsByPattern", "startSession", "configureFailPoint", "getDefaultRWConcern",
    "setDefaultRWConcern",
    "hostInfo", "logout", "listCommands", "saslStart", "saslContinue", "mongosimFault",
    "refreshLogicalSessionCacheNow", "getLog", "clearLog", "setParameter", "setFeatureCompatibilityVersion",
}
HELLO = handshake.HELLO_NAMES
_EPOCH = datetime(1970, 1, 1)


def _member_of(target: Node | Member, set_name: str, address: str) -> Member:
    if isinstance(target, Member):
        return target
    if target.member is None:  # a node on its own: a one-member set around it
        rs = ReplicaSet(set_name)
        rs.add_member(target, address)
        rs.initiate()
    return target.member


def _is_not_primary_error(reply: dict) -> bool:
    """The reply fails with a NotPrimaryError-category code, or its writeConcernError does."""
    wce = reply.get("writeConcernError")
    return ((reply.get("ok") == 0 and in_category(reply.get("code"), "NotPrimaryError"))
            or (isinstance(wce, dict) and in_category(wce.get("code"), "NotPrimaryError")))


# the user and role management commands: usersInfo and rolesInfo read (kOptIn on a secondary), the
# others write (kNever)
_AUTH_READS = frozenset({"usersInfo", "rolesInfo"})
_AUTH_WRITES = authn.USER_MANAGEMENT_COMMANDS - _AUTH_READS


def _secondary_ok(cmd: dict) -> bool:
    rp = cmd.get("$readPreference")
    return isinstance(rp, dict) and rp.get("mode", "primary") != "primary"


class ReplSetFrontend:
    def __init__(self, target: Node | Member, identity: handshake.ServerIdentity) -> None:
        self.identity = identity
        self.member = _member_of(target, identity.set_name or "rs0", identity.address)
        self.connections: set[int] = set()
        self.started_at = trio.current_time()
        self.counters = ServerCounters()  # serverStatus's opcounters, network, asserts (router/server_status.py)
        self.auth = authn.make_auth(False)
        self.txns = None
        self.faults: Any = None  # the cluster's FaultInjector (mongosimFault)

    @property
    def node(self) -> Node:
        return self.member.node

    @property
    def cursors(self):
        return self.member.node.cursors

    @property
    def session_cache(self):
        """A member's sessions are its node's."""
        return self.member.node.session_cache

    @property
    def failpoints(self):
        """A member's failpoints are its node's (configureFailPoint on this port sets them)."""
        return self.member.node.failpoints

    @failpoints.setter
    def failpoints(self, value) -> None:
        self.member.node.failpoints = value

    # -- hello ------------------------------------------------------------------------------
    def replica_set_fields(self) -> dict:
        """This member's part of `hello`, in the server's field order (hello_response.cpp)."""
        m = self.member
        rs = m.rs
        tv = {"processId": m.process_id, "counter": Int64(m.topology_counter)}
        if m.state == REMOVED:
            return {"topologyVersion": tv, "isWritablePrimary": False, "secondary": False,
                    "info": "Does not have a valid replica set config", "isreplicaset": True}
        r: dict[str, Any] = {"topologyVersion": tv, "hosts": rs.hosts()}
        passives = rs.passives()
        if passives:
            r["passives"] = passives
        arbiters = rs.arbiter_hosts()
        if arbiters:
            r["arbiters"] = arbiters
        r["setName"] = rs.name
        r["setVersion"] = rs.config_version
        r["isWritablePrimary"] = m.state == PRIMARY
        r["secondary"] = m.state == SECONDARY
        p = rs.primary_seen_by(m)
        if p is not None:
            r["primary"] = p.host
        if m.arbiter:
            r["arbiterOnly"] = True
        elif m.priority == 0:
            r["passive"] = True
        if m.secondary_delay:
            r["secondaryDelaySecs"] = Int64(m.secondary_delay)
        if m.hidden:
            r["hidden"] = True
        if m.tags:
            r["tags"] = dict(m.tags)
        r["me"] = m.host
        if m.state == PRIMARY:
            r["electionId"] = election_id(m.election_term)
        if m.arbiter:  # its lastApplied is the commit point it heard of; it keeps no committed snapshot
            term, key = optime(m)
            r["lastWrite"] = {"opTime": {"ts": key_ts(key), "t": Int64(term if key else -1)},
                              "lastWriteDate": self._date_of_key(key)}
            return r
        last = m.last_key
        commit = min(m.known_commit_key, last) if rs.multi else last
        r["lastWrite"] = {"opTime": {"ts": key_ts(last), "t": Int64(m.term_at(last))},
                          "lastWriteDate": self._date(last),
                          "majorityOpTime": {"ts": key_ts(commit), "t": Int64(m.term_at(commit))},
                          "majorityWriteDate": self._date(commit)}
        return r

    @staticmethod
    def _date_of_key(key: int) -> datetime:
        """lastWriteDate from an optime's seconds (what the server's hello appends)."""
        return _EPOCH + timedelta(seconds=key >> 32)

    def _date(self, key: int) -> datetime:
        e = self.member.node.oplog.find_by_key(key) if key else None
        wall = e["wall"] if e is not None else _EPOCH
        return wall - timedelta(microseconds=wall.microsecond)  # appendTimeT: whole seconds

    def hello(self, req: Request) -> dict:
        return answer_hello(self, req, self.replica_set_fields())

    async def await_hello(self, cmd: dict, conn: ConnState) -> None:
        m = self.member
        tv = cmd.get("topologyVersion") or {}
        if tv.get("processId") != m.process_id or tv.get("counter") != m.topology_counter:
            return
        with trio.move_on_after(max(float(cmd.get("maxAwaitTimeMS") or 0), 0) / 1000.0):
            await m.hello_changed.wait()

    # -- commands ---------------------------------------------------------------------------
    async def run_command(self, db: str, cmd: dict, conn: ConnState) -> dict:
        if not cmd:
            raise MongoError("FailedToParse", "Empty command object")
        if not self.member.alive:
            raise CloseConnection()
        name = next(iter(cmd))
        self.connections.add(conn.id)
        check_generic_arguments(name, cmd)
        ct = cmd.get("$clusterTime")
        if isinstance(ct, dict) and isinstance(ct.get("clusterTime"), Timestamp):
            self.node.clock.advance(ts_key(ct["clusterTime"]))
        authn.authorize(self, db, cmd, conn)
        cmd = authn.resolve_session(self, cmd, conn)
        req = Request(db, cmd, conn, name)
        is_cs = self._is_change_stream(name, cmd)
        try:
            # failCommand applies to every command it names, hello and ping included (only
            # configureFailPoint is exempt: commands.cpp shouldActivateFailCommandFailPoint)
            await apply_fail_command(self.failpoints, req)
            if name in HELLO:
                if handshake.is_streaming_hello(name, cmd):
                    await self.await_hello(cmd, conn)
                return self.hello(req)
            if authn.is_user_command(name):  # (admin.system.users/roles: written on the primary only)
                service_entry_point.check_role(self.member, name, _secondary_ok(cmd), writes=_AUTH_WRITES,
                                               reads=_AUTH_READS)
                return await ROUTER_COMMANDS[name](self, req)
            if name in ADMIN_COMMANDS:
                return await ROUTER_COMMANDS[name](self, req)
            if name == "getMore":
                fail_get_more_after_checkout(self.failpoints, self.node.cursors, db, cmd, app_name_of(conn.client))
            client = authn.client_info(self, conn) if self.node.profiler.levels else None  # (for the profiler)
            try:
                reply = await service_entry_point.run_command(self.member, db, cmd, secondary_ok=_secondary_ok(cmd),
                                                              client=client)
            except MemberGone:
                raise CloseConnection() from None
            authn.note_cursor_owner(self, reply, conn)
            return reply
        except MongoError as err:
            explicit = err.extra.pop("_explicitLabels", None)
            injected = err.extra.pop("_failCommand", False)
            if explicit is not None:
                err.labels = list(explicit)
            else:
                if is_cs:
                    for label in change_stream_labels(err.code, resumable_candidate=not (injected and name == "getMore")):
                        err.add_label(label)
                transaction_labels(err, name, cmd)
            raise

    def _is_change_stream(self, name: str, cmd: dict) -> bool:
        if name == "aggregate":
            p = cmd.get("pipeline")
            return isinstance(p, list) and bool(p) and isinstance(p[0], dict) and "$changeStream" in p[0]
        if name == "getMore":
            cid = cmd.get("getMore")
            cur = self.node.cursors._cursors.get(cid) if isinstance(cid, int) else None
            return getattr(cur, "is_change_stream", False)
        return False

    def decorate(self, reply: dict, db: str, cmd: dict, conn: ConnState) -> dict:
        op_key = reply.pop("_opTimeKey", 0) or self.node.clock.key
        if not attach_write_concern_error(reply, conn) and cmd:
            label_write_concern_error(reply, next(iter(cmd)), cmd)
        if _is_not_primary_error(reply):
            # a member's NotPrimary errors carry its topologyVersion after the labels (the
            # server's appendErrorLabelsAndTopologyVersion): a driver then ignores a hello
            # older than the error instead of taking the member for primary again
            m = self.member
            reply["topologyVersion"] = {"processId": m.process_id, "counter": Int64(m.topology_counter)}
        if self.member.arbiter:  # (its vector clock is off: it gossips no time)
            return reply
        reply["operationTime"] = key_ts(op_key)
        reply["$clusterTime"] = handshake.cluster_time_doc(self.node.clock.now())
        return reply

    def connection_closed(self, conn: ConnState) -> None:
        self.connections.discard(conn.id)
