"""The replica-set front door: one node answering the wire protocol as a primary.

In replica-set mode (`mongosim serve --topology replset`) there is no router:
drivers talk to the node directly and classify it from `hello` (`setName`,
`hosts`, `primary`, `me`).  Server-information and test commands are shared
with the mongos (`router.commands_admin`); everything else goes to the node.
"""

from __future__ import annotations

import trio
from bson import Timestamp
from mongosim.oplog.clock import key_ts, ts_key
from mongosim.oplog.errors import MongoError
from mongosim.router import authn, handshake
from mongosim.router.commands import ROUTER_COMMANDS
from mongosim.router.error_labels import change_stream_labels, label_write_concern_error
from mongosim.router.failpoints import (
    app_name_of,
    apply_fail_command,
    attach_write_concern_error,
    fail_get_more_after_checkout,
)
from mongosim.router.request import Request
from mongosim.router.server import ConnState
from mongosim.router.transactions import transaction_labels
from mongosim.shardsim.generic_args import check_generic_arguments
from mongosim.shardsim.node import Node

ADMIN_COMMANDS = {
    "hello", "isMaster", "ismaster", "ping", "buildInfo", "buildinfo", "getParameter", "getCmdLineOpts",
    "serverStatus", "connectionStatus", "whatsmyuri", "endSessions", "killSessions", "refreshSessions",
    "killAllSessions", "killAllSessionsByPattern", "startSession", "configureFailPoint", "getDefaultRWConcern",
    "hostInfo", "logout", "listCommands", "saslStart", "saslContinue", "refreshLogicalSessionCacheNow",
}


class ReplSetFrontend:
    def __init__(self, node: Node, identity: handshake.ServerIdentity) -> None:
        self.node = node
        self.identity = identity
        self.failpoints = node.failpoints  # a member's failpoints are its node's
        self.connections: set[int] = set()
        self.started_at = trio.current_time()
        self.hello_changed = trio.Event()
        self.auth = authn.make_auth(False)
        self.txns = None
        self.cursors = node.cursors
        self.session_cache = node.session_cache  # a member's sessions are its node's

    async def run_command(self, db: str, cmd: dict, conn: ConnState) -> dict:
        if not cmd:
            raise MongoError("FailedToParse", "Empty command object")
        name = next(iter(cmd))
        self.connections.add(conn.id)
        check_generic_arguments(name, cmd)
        ct = cmd.get("$clusterTime")
        if isinstance(ct, dict) and isinstance(ct.get("clusterTime"), Timestamp):
            self.node.clock.advance(ts_key(ct["clusterTime"]))
        authn.authorize(self, db, cmd, conn)
        cmd = authn.with_session(self, cmd, conn)
        authn.vivify_session(self, cmd, conn)
        req = Request(db, cmd, conn, name)
        if name in ADMIN_COMMANDS or authn.is_user_command(name):
            return await ROUTER_COMMANDS[name](self, req)
        is_cs = self._is_change_stream(name, cmd)
        try:
            await apply_fail_command(self.failpoints, req)  # same failpoint semantics as mongos
            if name == "getMore":
                fail_get_more_after_checkout(self.failpoints, self.node.cursors, db, cmd, app_name_of(conn.client))
            client = authn.client_info(self, conn) if self.node.profiler.levels else None  # (for the profiler)
            reply = await self.node.run_command(db, cmd, client=client)
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
        reply["operationTime"] = key_ts(op_key)
        reply["$clusterTime"] = handshake.cluster_time_doc(self.node.clock.now())
        return reply

    async def await_hello(self, cmd: dict, conn: ConnState) -> None:
        tv = cmd.get("topologyVersion") or {}
        if tv.get("processId") != self.identity.process_id or tv.get("counter") != self.identity.topology_counter:
            return
        with trio.move_on_after(max(float(cmd.get("maxAwaitTimeMS") or 0), 0) / 1000.0):
            await self.hello_changed.wait()

    def connection_closed(self, conn: ConnState) -> None:
        self.connections.discard(conn.id)
