"""The shard registry: the shards of the cluster, shared by every router.

A real mongos keeps a ShardRegistry loaded from `config.shards` and reloads it
when a shard is added or removed.  mongosim's routers live in one process and
share one registry, so a shard added or removed through any router (or by the
balancer) is known to all at once; what each router may see stale is its
catalog cache (router/catalog_cache.py), not the list of shards.

Each router reaches a shard through its own `ShardRemote` (its own cluster
clock); the link faults are the shard's (a slow or partitioned shard is slow
or partitioned for every router): one `Faults` object per shard, held here and
shared by every router's remote to it.

A shard that joins gets its filtering metadata (shardsim/filtering_metadata.py),
read from the config server.  A removed shard is *retired*, not forgotten: as
the real mongod goes on running after `removeShard` completes, its node stays
up, and a change stream opened before its removal keeps its cursor on it (its
events before the removal belong to that stream).  A stream opened after the
removal, resumed from before it or not, targets the current shards only, as
8.0's mongos does (router/merge/cluster_change_stream.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from mongosim.router.remote import Faults
from mongosim.shardsim.filtering_metadata import FilteringMetadata

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node


@dataclass
class RetiredShard:
    node: "Node"
    faults: Faults
    removed_key: int  # the cluster time (ts key) its config.shards document was deleted at


class ShardRegistry:
    def __init__(self, config: "Node", shards: dict[str, "Node"],
                 shard_factory: Callable[[str], "Node"] | None = None) -> None:
        self.config = config
        self.config_faults = Faults()
        self.nodes: dict[str, Node] = {}
        self.faults: dict[str, Faults] = {}
        self.retired: dict[str, RetiredShard] = {}
        self.shard_factory = shard_factory
        self.version = 0  # bumped at every change; routers rebuild their remotes when it moves
        self._all: list[Node] = []
        self._all_version = -1
        for name, node in shards.items():
            self.register(name, node)

    def config_primary(self) -> "Node":
        """The config server replica set's current primary."""
        rs = self.config.replica_set
        p = rs.primary if rs is not None else None
        return p.node if p is not None else self.config

    def topology_changed(self) -> None:
        """A replica set's primary changed: the nodes to gossip to are asked again."""
        self._all_version = -1

    def register(self, name: str, node: "Node") -> None:
        """A shard joins: every router can reach it, and it filters by the config server's metadata."""
        self.retired.pop(name, None)
        self.nodes[name] = node
        self.faults.setdefault(name, Faults())
        node.filtering = FilteringMetadata(name, self.config_primary)
        node.owns = node.filtering.owns
        node.shard_node = self.node_of
        self.version += 1

    def node_of(self, name: str) -> "Node | None":
        """A shard's node by name (a removed shard's too: it still runs)."""
        node = self.nodes.get(name)
        if node is None and name in self.retired:
            node = self.retired[name].node
        return node

    def retire(self, name: str, removed_key: int) -> None:
        """A shard leaves (removeShard completed): no router targets it any more."""
        node = self.nodes.pop(name)
        self.retired[name] = RetiredShard(node, self.faults.pop(name), removed_key)
        self.version += 1

    def all_nodes(self) -> list["Node"]:
        """Every node a router may still talk to: the config server, the shards, the retired shards
        (kept until the registry changes: instant-HWM gossip asks at every advance of cluster time)."""
        if self._all_version != self.version:
            self._all = [_primary(n) for n in (self.config, *self.nodes.values(), *(r.node for r in self.retired.values()))]
            self._all_version = self.version
        return self._all


def _primary(node: "Node") -> "Node":
    """The current primary of `node`'s replica set (`node` itself when it has none)."""
    rs = node.replica_set
    p = rs.primary if rs is not None else None
    return p.node if p is not None else node
