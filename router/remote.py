"""A shard remote: how the router reaches one shard (a replica set), and where faults are injected.

The router never touches a shard's state directly; it sends commands through
its `ShardRemote`, which gossips cluster time both ways (the router's
`$clusterTime` advances the member's clock before the command; the member's
clock advances the router's after) and applies the link faults set on it:

- `delay`: seconds to wait before every command reaches the shard (a slow shard);
- `fail(times, code, labels)`: the next commands fail with that error;
- `drop(times)`: the next commands fail as if the connection dropped
  (a network error; HostUnreachable on the router);
- `partition`: every command fails with a network error until cleared.

The delay is applied before the member computes its answer, so a cancelled
request never loses a batch that was already read from a cursor.

Targeting (the router's replica-set monitor): each command goes to the
shard's current primary — or, for a read whose read preference allows it, to
a secondary (`nearest`, `secondary`, `secondaryPreferred`, `primaryPreferred`,
within `maxStalenessSeconds`); a getMore or killCursors goes to the member
holding the cursor (a cursor opened on a primary that stepped down keeps
working there).  While the shard has no primary the command waits for one
(FailedToSatisfyReadPreference after 20 s).  A read or a retryable write
that fails because its member stepped down or died is sent again to the new
primary (up to 3 times), as mongos retries idempotent shard requests; the
member's session table answers a retried statement that had already run.

Each request's read preference and the shards' writeConcernErrors travel in
a context variable set by the router per client command (`begin_request`);
the router merges the errors into its reply as mongos does.
"""

from __future__ import annotations

import math
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import trio
from bson import Int64

from mongosim.oplog.errors import MongoError, in_category
from mongosim.shardsim import service_entry_point
from mongosim.shardsim.replica_set import PRIMARY, SECONDARY
from mongosim.shardsim.write_concern import MemberGone

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node
    from mongosim.shardsim.replica_set import Member

FIND_HOST_TIMEOUT_S = 20.0  # how long a command waits for the shard to have a primary
MAX_RETRIES = 3  # Shard::kOnErrorNumRetries
_EPOCH = datetime(1970, 1, 1)
_READS = frozenset({"find", "aggregate", "count", "distinct", "listCollections", "listIndexes", "dbStats",
                    "collStats", "_migrateClone", "_shardsvrCountInRange"})


class ShardNetworkError(MongoError):
    """The router lost its connection to a shard."""

    def __init__(self, shard: str, detail: str = "connection closed") -> None:
        super().__init__("HostUnreachable", f"Connection to {shard} failed: {detail}")
        self.shard = shard


@dataclass
class Faults:
    delay: float = 0.0
    fail_times: int = 0
    fail_code: int = 0
    fail_labels: list[str] | None = None
    fail_commands: set[str] | None = None
    drop_times: int = 0
    partition: bool = False

    def clear(self) -> None:
        """Back to no faults, in place: every router's remote to the shard shares this object."""
        self.__init__()  # type: ignore[misc]


class ShardRequest:
    """What one client command carries to every shard it reaches, and brings back.

    `deadline` (trio time, or None): when the client's maxTimeMS runs out.  Every command sent to a
    shard for it then carries the time left as `maxTimeMSOpOnly` (a long, last), as the server's
    network interface appends it to a request made under an operation with a deadline
    (network_interface_tl.cpp), so the shards stop at the client's limit; getMore and killCursors
    are sent without (a getMore's maxTimeMS is its own).  The request ends at the reply: tasks it
    started that outlive it no longer carry its deadline."""

    __slots__ = ("read_preference", "write_concern_errors", "deadline")

    def __init__(self, read_preference: dict | None = None, deadline: float | None = None) -> None:
        self.read_preference = read_preference
        self.write_concern_errors: list[tuple[str, dict]] = []
        self.deadline = deadline


_REQUEST: ContextVar[ShardRequest | None] = ContextVar("mongosim_shard_request", default=None)
_NO_OP_ONLY_TIME = frozenset({"getMore", "killCursors"})


def begin_request(cmd: dict, max_time_ms: int | None = None) -> Any:
    rp = cmd.get("$readPreference")
    deadline = trio.current_time() + max_time_ms / 1000.0 if max_time_ms else None
    return _REQUEST.set(ShardRequest(rp if isinstance(rp, dict) else None, deadline))


def end_request(token: Any) -> list[tuple[str, dict]]:
    """The writeConcernErrors the shards reported for this request."""
    req = _REQUEST.get()
    _REQUEST.reset(token)
    if req is None:
        return []
    req.deadline = None
    return req.write_concern_errors


def with_time_left(name: str, cmd: dict) -> dict:
    """`cmd` with the current request's time left as `maxTimeMSOpOnly` (see ShardRequest);
    MaxTimeMSExpired if none is left."""
    req = _REQUEST.get()
    if req is None or req.deadline is None or name in _NO_OP_ONLY_TIME or "maxTimeMSOpOnly" in cmd:
        return cmd
    left = req.deadline - trio.current_time()
    if left <= 0:
        raise MongoError("MaxTimeMSExpired", "operation exceeded time limit")
    return {**cmd, "maxTimeMSOpOnly": Int64(math.ceil(left * 1000))}


def merge_write_concern_errors(errors: list[tuple[str, dict]]) -> dict:
    """mongos's merge of its shards' writeConcernErrors (batch_write_op's mergeWriteConcernErrors):
    the first error's code, a message naming each shard."""
    first = errors[0][1]
    parts = [f"{e.get('codeName', '')}: {e.get('errmsg', '')} at {shard}" for shard, e in errors]
    msg = ("Multiple errors reported :: " if len(errors) > 1 else "") + " :: and :: ".join(parts)
    out = {"code": first["code"], "codeName": first.get("codeName"), "errmsg": msg}
    if "errInfo" in first:
        out["errInfo"] = first["errInfo"]
    return out


def _retryable(name: str, cmd: dict) -> bool:
    """Reads, change-stream opening and retryable writes may be sent again to a new primary."""
    if "autocommit" in cmd:
        return False
    return name in _READS or ("txnNumber" in cmd and name in ("insert", "update", "delete", "findAndModify"))


def _retargetable(err: MongoError) -> bool:
    return in_category(err.code, "NotPrimaryError") or isinstance(err, ShardNetworkError) or \
        in_category(err.code, "ShutdownError")


class ShardRemote:
    def __init__(self, name: str, node: "Node", clock: Any, faults: Faults | None = None) -> None:
        self.name = name
        self._node = node
        self.registered = node  # the node the shard registry knows (its first primary)
        self._rs = node.replica_set
        self._clock = clock  # the router's cluster clock (has .key / .advance)
        self.faults = faults if faults is not None else Faults()  # the shard's link faults, shared by routers
        self.commands_sent = 0
        self._cursor_members: dict[int, "Member"] = {}

    @property
    def node(self) -> "Node":
        """The shard's current primary (or the last one, while it has none)."""
        rs = self._rs
        if rs is not None:
            p = rs.primary
            if p is not None:
                self._node = p.node
        return self._node

    @property
    def replica_set(self):
        return self._rs

    async def command(self, db: str, cmd: dict, *, cluster_time: int | None = None, learn: bool = True) -> dict:
        """Run `cmd` on the shard; raise MongoError (or ShardNetworkError) on failure.

        `cluster_time` (a ts key) is the `$clusterTime` to gossip, when the caller
        sends one command to several shards "at once" (default: the router's now);
        with `learn=False` the caller takes the shard's time itself, after all replies.
        """
        f = self.faults
        self.commands_sent += 1
        if f.delay:
            await trio.sleep(f.delay)
        name = next(iter(cmd))
        cmd = with_time_left(name, cmd)
        if f.partition:
            raise ShardNetworkError(self.name, "network partition")
        if f.drop_times > 0:
            f.drop_times -= 1
            raise ShardNetworkError(self.name)
        if f.fail_times > 0 and (f.fail_commands is None or name in f.fail_commands):
            f.fail_times -= 1
            err = MongoError(f.fail_code, f"Failing command on {self.name} via mongosim fault injection")
            if f.fail_labels is not None:
                err.extra["_explicitLabels"] = list(f.fail_labels)
            raise err
        if self._rs is None:  # a bare node (no replica set around it)
            node = self._node
            node.clock.advance(self._clock.key if cluster_time is None else cluster_time)
            try:
                return await node.run_command(db, cmd, from_router=True)
            finally:
                if learn:
                    self._clock.advance(node.clock.key)
        attempt = 0
        while True:
            member = await self._target(name, cmd)
            node = member.node
            node.clock.advance(self._clock.key if cluster_time is None else cluster_time)
            try:
                reply = await service_entry_point.run_command(member, db, cmd, from_router=True,
                                                              secondary_ok=member.state != PRIMARY)
            except MemberGone:
                err: MongoError = ShardNetworkError(self.name, f"{member.host}: connection closed")
            except MongoError as e:
                err = e
            else:
                self._after(member, name, cmd, reply)
                return reply
            finally:
                if learn:
                    self._clock.advance(node.clock.key)
            if attempt < MAX_RETRIES and _retargetable(err) and _retryable(name, cmd):
                attempt += 1
                continue
            raise err

    def _after(self, member: "Member", name: str, cmd: dict, reply: dict) -> None:
        cur = reply.get("cursor")
        if isinstance(cur, dict) and cur.get("id"):
            self._cursor_members[int(cur["id"])] = member
        elif name == "getMore" and isinstance(cur, dict):
            self._cursor_members.pop(int(cmd.get("getMore") or 0), None)
        wce = reply.get("writeConcernError")
        if wce is not None:
            req = _REQUEST.get()
            if req is not None:
                req.write_concern_errors.append((self.name, wce))

    def cursor_node(self, cursor_id: int) -> "Node":
        """The node holding a cursor this remote opened (to release it)."""
        m = self._cursor_members.pop(int(cursor_id), None)
        return m.node if m is not None else self.node

    async def _target(self, name: str, cmd: dict) -> "Member":
        rs = self._rs
        if name in ("getMore", "killCursors"):
            ids = [cmd.get("getMore")] if name == "getMore" else list(cmd.get("cursors") or [])
            for cid in ids:
                if isinstance(cid, int) and cid in self._cursor_members:
                    m = self._cursor_members[cid]
                    if not m.alive:
                        self._cursor_members.pop(cid, None)
                        raise ShardNetworkError(self.name, f"{m.host}: connection closed")
                    return m
        if name in _READS:
            req = _REQUEST.get()
            rp = cmd.get("$readPreference") or (req.read_preference if req is not None else None)
            if isinstance(rp, dict) and rp.get("mode", "primary") != "primary":
                chosen = self._by_read_preference(rp)
                if chosen is not None:
                    return chosen
        p = rs.primary
        if p is not None:
            return p
        with trio.move_on_after(FIND_HOST_TIMEOUT_S):
            while rs.primary is None:
                await rs.changed.park()
            return rs.primary
        raise MongoError("FailedToSatisfyReadPreference", "Could not find host matching read preference "
                         f"{{ mode: \"primary\" }} for set {rs.name}")

    def _by_read_preference(self, rp: dict) -> "Member | None":
        rs = self._rs
        mode = rp.get("mode")
        p = rs.primary
        stale = rp.get("maxStalenessSeconds")
        secondaries = [m for m in rs.members if m.alive and m.state == SECONDARY]
        if isinstance(stale, (int, float)) and stale > 0 and p is not None:
            limit = float(stale)
            newest = p.node.wall.now()
            secondaries = [m for m in secondaries
                           if newest - _applied_time(m) + rs.heartbeat_interval <= limit]
        tag_sets = rp.get("tags")
        if isinstance(tag_sets, list) and tag_sets:
            secondaries = matching_tag_set(secondaries, tag_sets)
        if mode in ("secondary", "secondaryPreferred") and secondaries:
            return min(secondaries, key=lambda m: (-m.last_key, m.id))
        if mode == "nearest":
            candidates = secondaries + ([p] if p is not None else [])
            return min(candidates, key=lambda m: m.id) if candidates else None
        if mode == "primaryPreferred" and p is None and secondaries:
            return secondaries[0]
        if mode == "secondary" and not secondaries:
            raise MongoError("FailedToSatisfyReadPreference", "Could not find host matching read preference "
                             f"{{ mode: \"secondary\" }} for set {rs.name}")
        return None

    # -- fault API ---------------------------------------------------------------------
    def set_delay(self, seconds: float) -> None:
        self.faults.delay = seconds

    def fail(self, times: int, code: int, labels: list[str] | None = None, commands: list[str] | None = None) -> None:
        f = self.faults
        f.fail_times, f.fail_code, f.fail_labels = times, code, labels
        f.fail_commands = set(commands) if commands else None

    def drop_connection(self, times: int = 1) -> None:
        self.faults.drop_times = times

    def clear_faults(self) -> None:
        self.faults.clear()


def matching_tag_set(members: list, tag_sets: list) -> list:
    """The members the read preference's tag sets select: those matching the first tag set that any
    of them matches (`{}` matches every member), as the server selection specification orders them."""
    for tags in tag_sets:
        if not isinstance(tags, dict):
            continue
        chosen = [m for m in members if all(m.tags.get(k) == v for k, v in tags.items())]
        if chosen:
            return chosen
    return []


def _applied_time(m: "Member") -> float:
    """Wall seconds of the member's newest entry."""
    e = m.node.oplog.find_by_key(m.last_key)
    return (e["wall"] - _EPOCH).total_seconds() if e is not None else 0.0
