"""mongos's stages that start a pipeline from the cluster's state ($indexStats, $planCacheStats, $currentOp).

Each is registered as `source(router, req, coll, spec) -> [documents]` (`coll` is
None for `{aggregate: 1}`) by router/cluster_source_stages.py; router/cluster_aggregate.py
runs the rest of the pipeline on them.  (A registry both import: no cycle.)
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

__all__ = ["ROUTER_SOURCES", "register_router_source"]

ROUTER_SOURCES: dict[Any, Callable[..., Awaitable[list[dict]]]] = {}


def register_router_source(name: str):
    def deco(fn):
        ROUTER_SOURCES[name] = fn
        return fn

    return deco
