"""The stages that start a pipeline from a node's own state rather than a collection's documents.

`$indexStats`, `$planCacheStats` (first in an aggregate on a collection) and
`$currentOp` (first in `{aggregate: 1}` on admin) produce their
documents from the node — its catalog, its sessions, its cursors.  Each module
registers `source(node, ctx, coll, spec) -> [documents]` here (`coll` is None for
`{aggregate: 1}`); the aggregate command (`reads.py`) runs the rest of the pipeline
on them.  The router has its own registry (router/source_stage_registry.py).
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["NODE_SOURCES", "register_source", "shard_name"]

NODE_SOURCES: dict[str, Callable[..., list[dict]]] = {}


def register_source(name: str):
    def deco(fn):
        NODE_SOURCES[name] = fn
        return fn

    return deco


def shard_name(node: Any) -> str | None:
    """The node's shard name when it serves as a shard of a cluster (None on a plain replica set)."""
    return node.name if getattr(node, "filtering", None) is not None and not node.is_config else None
