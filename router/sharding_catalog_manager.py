"""The sharding authority every router of a cluster shares (the config server's ShardingCatalogManager).

On a real cluster, metadata changes are not the router's to serialize: DDL
runs under DDL locks taken on the config server and the primary shard, shard
membership changes under the config server's shard-membership lock, and a
migrating collection's critical section is held on the donor shard, so writes
from *any* router wait for it.  mongosim's routers run those operations
themselves, so what serializes them is shared here, once per cluster:

- `ddl_lock`: one DDL or migration at a time, from whichever router;
- `critical_sections`: namespaces whose writes wait (a migration between its
  clone and its commit, resharding);
- `registry`: the shards (router/shard_registry.py);
- the balancer's settings (router/balancer.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import trio

from mongosim.router.shard_registry import ShardRegistry

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node


class CriticalSections:
    """Per-namespace critical sections: writes to a namespace wait while one is held on it, or on
    its whole database (`"<db>.*"`, movePrimary)."""

    def __init__(self) -> None:
        self._held: dict[str, trio.Event] = {}

    async def wait(self, ns: str) -> None:
        if not self._held:
            return
        whole_db = ns.split(".", 1)[0] + ".*"
        while True:
            ev = self._held.get(ns)
            if ev is None:
                ev = self._held.get(whole_db)
                if ev is None:
                    return
            await ev.wait()

    def held(self, ns: str) -> bool:
        return ns in self._held

    def acquire(self, ns: str) -> None:
        self._held[ns] = trio.Event()

    def release(self, ns: str) -> None:
        ev = self._held.pop(ns, None)
        if ev is not None:
            ev.set()


class ShardingCatalogManager:
    def __init__(self, config: "Node", shards: dict[str, "Node"],
                 shard_factory: Callable[[str], "Node"] | None = None) -> None:
        self.registry = ShardRegistry(config, shards, shard_factory)
        self.ddl_lock = trio.Lock()
        self.critical_sections = CriticalSections()
        self.balancer: Any = None  # router.balancer.Balancer, when the cluster runs one
