"""$indexStats on a node: how often each index of a collection was used (document_source_index_stats.cpp).

One document per index, in the catalog's order: `{name, key, host, accesses:
{ops, since}, shard (on a shard of a cluster), spec}` — `ops` counts the queries
whose plan used the index (recorded by `get_executor.execute`, the server's
CollectionIndexUsageTracker), `since` when this node started tracking it (its first
use or report).  The spec takes no options (`{}`: 28803 otherwise).  A missing
collection has no indexes: no documents.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bson import Int64

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.source_stage_registry import register_source, shard_name

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node
    from mongosim.shardsim.operation_context import OpCtx

__all__ = ["index_stats"]


def index_stats(node: Node, db: str, name: str) -> list[dict]:
    coll = node.catalog.collection(db, name)
    if coll is None:
        return []
    now = node.wall.wall()
    shard = shard_name(node)
    out = []
    for spec in coll.indexes:
        usage = coll.index_usage.setdefault(spec["name"], [0, None])
        if usage[1] is None:
            usage[1] = now
        doc: dict[str, Any] = {"name": spec["name"], "key": dict(spec["key"]), "host": node.host,
                               "accesses": {"ops": Int64(usage[0]), "since": usage[1]}}
        if shard is not None:
            doc["shard"] = shard
        doc["spec"] = dict(spec)
        out.append(doc)
    return out


@register_source("$indexStats")
def _source(node: Node, ctx: OpCtx, coll: str | None, spec: Any) -> list[dict]:
    if not isinstance(spec, dict) or spec:
        raise MongoError(28803, "The $indexStats stage specification must be an empty object")
    return index_stats(node, ctx.db, coll)
