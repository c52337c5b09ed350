"""A shard remote: how the router reaches one node, and where faults are injected.

The router never touches a node's state directly; it sends commands through
its `ShardRemote`, which gossips cluster time both ways (the router's
`$clusterTime` advances the node's clock before the command; the node's clock
advances the router's after) and applies the faults set on it:

- `delay`: seconds to wait before every command reaches the node (a slow shard);
- `fail(times, code, labels)`: the next commands fail with that error;
- `drop(times)`: the next commands fail as if the connection dropped
  (a network error; HostUnreachable on the router);
- `partition`: every command fails with a network error until cleared.

The delay is applied before the node computes its answer, so a cancelled
request never loses a batch that was already read from a cursor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import trio

from mongosim.oplog.errors import MongoError

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node


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


class ShardRemote:
    def __init__(self, name: str, node: "Node", clock: Any, faults: Faults | None = None) -> None:
        self.name = name
        self.node = node
        self._clock = clock  # the router's cluster clock (has .key / .advance)
        self.faults = faults if faults is not None else Faults()  # the shard's link faults, shared by routers
        self.commands_sent = 0

    async def command(self, db: str, cmd: dict, *, cluster_time: int | None = None, learn: bool = True) -> dict:
        """Run `cmd` on the node; raise MongoError (or ShardNetworkError) on failure.

        `cluster_time` (a ts key) is the `$clusterTime` to gossip, when the caller
        sends one command to several shards "at once" (default: the router's now);
        with `learn=False` the caller takes the node's time itself, after all replies.
        """
        f = self.faults
        self.commands_sent += 1
        if f.delay:
            await trio.sleep(f.delay)
        name = next(iter(cmd))
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
        self.node.clock.advance(self._clock.key if cluster_time is None else cluster_time)
        try:
            return await self.node.run_command(db, cmd, from_router=True)
        finally:
            if learn:
                self._clock.advance(self.node.clock.key)

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
