"""replSetSyncFrom: a secondary told which member to replicate from (db/repl/repl_set_commands.cpp,
TopologyCoordinator::prepareSyncFromResponse).

`{replSetSyncFrom: "host:port"}` (admin only) parses its argument as a
HostAndPort (a missing port is 27017; a value that is not a string is parsed as
"", FailedToParse) and checks, in the server's order:

- the member is in the config (NotSecondary "Removed and uninitialized nodes do
  not sync"), not an arbiter (NotSecondary "arbiters don't sync") and not the
  primary (NotSecondary "primaries don't sync");
- the target is a member of the config (NodeNotFound), not this member
  (InvalidOptions "I cannot sync from myself"), not an arbiter, a voter if this
  member votes (InvalidOptions 'Cannot sync from "h:p" because it is ...'), and
  reachable (HostUnreachable "I cannot reach the requested member: h:p").
  A hidden or delayed member may be chosen.

It answers `{syncFromRequested: "h:p", [warning], [prevSyncTarget], ok: 1}`:
`warning` when the target's newest optime is more than 10 seconds older than
this member's ('requested member "h:p" is more than 10 seconds behind us' —
not an error), `prevSyncTarget` the sync source it had.  The member then
syncs from the target (shardsim/replication.py `sync_source`) for as long as
the server's fetcher would keep it (shouldChangeSyncSource): while it is
reachable, a primary or secondary, holds this member's newest entry, and is
the primary, or is ahead of this member, or has a sync source of its own (not
this member).  Otherwise, or when this member is elected, restarted, rolls
back or is removed, the request is dropped and the usual choice resumes
(`replication.keeps_requested_source`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mongosim.oplog.clock import key_ts
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.command_registry import command
from mongosim.shardsim.replica_set import PRIMARY, REMOVED
from mongosim.shardsim.repl_commands import member_of

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node
    from mongosim.shardsim.operation_context import OpCtx
    from mongosim.shardsim.replica_set import Member, ReplicaSet

__all__ = ["parse_host_and_port"]

DEFAULT_PORT = 27017
BEHIND_WARNING_SECS = 10


def _port(text: str, whole: str) -> int:
    """parseNumberFromStringWithBase(.., 10) of the port, then its range check."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits:
        raise MongoError("FailedToParse", "No digits")
    n = 0
    for ch in digits:
        if not "0" <= ch <= "9":
            raise MongoError("FailedToParse", "Did not consume whole string.")
        n = n * 10 + ord(ch) - 48
    port = -n if text[:1] == "-" else n
    if port > 2**31 - 1 or port < -(2**31):
        raise MongoError("Overflow", "Overflow")
    if port <= 0:
        raise MongoError("FailedToParse", f'Port number {port} out of range parsing HostAndPort from "{whole}"')
    return port


def parse_host_and_port(s: str) -> tuple[str, int]:
    """HostAndPort::initialize: (host, port), the port 27017 when none is given."""
    colon = s.rfind(":")
    host = s[:colon] if colon >= 0 else s
    open_b, close_b = s.find("["), s.find("]")
    if open_b >= 0:
        if open_b != 0:
            raise MongoError("FailedToParse", f"'[' present, but not first character in {s}")
        if close_b < 0:
            raise MongoError("FailedToParse", f"ipv6 address is missing closing ']' in hostname in {s}")
        host = s[1:close_b]
        if colon < close_b:
            colon = -1
        elif colon != close_b + 1:
            raise MongoError("FailedToParse", f"Extraneous characters between ']' and pre-port ':' in {s}")
    elif close_b >= 0:
        raise MongoError("FailedToParse", f"']' present without '[' in {s}")
    elif s.find(":") != colon:
        raise MongoError("FailedToParse", "More than one ':' detected. If this is an ipv6 address, it needs to be "
                                          f"surrounded by '[' and ']'; {s}")
    if not host:
        raise MongoError("FailedToParse", f'Empty host component parsing HostAndPort from "{s}"')
    return host, (_port(s[colon + 1:], s) if colon >= 0 else DEFAULT_PORT)


def _host_string(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _member_at(rs: ReplicaSet, target: tuple[str, int]) -> Member | None:
    for m in rs.members:
        if m.state == REMOVED:
            continue
        try:
            if parse_host_and_port(m.host) == target:
                return m
        except MongoError:
            continue
    return None


@command("replSetSyncFrom")
def cmd_repl_set_sync_from(node: Node, ctx: OpCtx) -> dict:
    if ctx.db != "admin":
        raise MongoError("Unauthorized", "replSetSyncFrom may only be run against the admin database.")
    me = member_of(node)
    rs = me.rs
    arg: Any = ctx.cmd["replSetSyncFrom"]
    target = parse_host_and_port(arg if isinstance(arg, str) else "")
    requested = _host_string(*target)
    if me.state == REMOVED:
        raise MongoError("NotSecondary", "Removed and uninitialized nodes do not sync")
    if me.arbiter:
        raise MongoError("NotSecondary", "arbiters don't sync")
    if me.state == PRIMARY:
        raise MongoError("NotSecondary", "primaries don't sync")
    src = _member_at(rs, target)
    if src is None:
        raise MongoError("NodeNotFound", f'Could not find member "{requested}" in replica set')
    if src is me:
        raise MongoError("InvalidOptions", "I cannot sync from myself")
    if src.arbiter:
        raise MongoError("InvalidOptions", f'Cannot sync from "{requested}" because it is an arbiter')
    if me.votes and not src.votes:
        raise MongoError("InvalidOptions", f'Cannot sync from "{requested}" because it is not a voter')
    if not rs.can_talk(me, src):
        raise MongoError("HostUnreachable", f"I cannot reach the requested member: {requested}")
    reply: dict[str, Any] = {"syncFromRequested": requested}
    if key_ts(src.last_key).time + BEHIND_WARNING_SECS < key_ts(me.last_key).time:
        reply["warning"] = f'requested member "{requested}" is more than 10 seconds behind us'
    if me.sync_source is not None:
        reply["prevSyncTarget"] = me.sync_source.host
    me.sync_from = src
    # its replication task looks again (parked on its source's oplog, or for a source); no state of the
    # set changed, so no topologyVersion moves
    me.wakeup.unpark_all()
    if me.sync_source is not None:
        me.sync_source.node.oplog.wake_readers()
    reply["ok"] = 1.0
    return reply
