"""$planCacheStats on a node: the entries of a collection's plan cache — none here.

mongosim plans every query afresh (`query_planner`), so it caches no plan: the
stage validates its spec (an object; `allHosts` a bool, nothing else:
IDLUnknownField) and yields no documents, as a server whose cache is empty does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.idl_errors import wrong_type
from mongosim.shardsim.query.values import type_name
from mongosim.shardsim.source_stage_registry import register_source

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node
    from mongosim.shardsim.operation_context import OpCtx


def check_plan_cache_stats(spec: Any) -> None:
    if not isinstance(spec, dict):
        raise MongoError("FailedToParse", f"$planCacheStats value must be an object. Found: {type_name(spec)}")
    for k, v in spec.items():
        if k != "allHosts":
            raise MongoError("IDLUnknownField", f"BSON field '$planCacheStats.{k}' is an unknown field.")
        if not isinstance(v, bool):
            raise wrong_type("$planCacheStats.allHosts", v, "bool")


@register_source("$planCacheStats")
def _source(node: Node, ctx: OpCtx, coll: str | None, spec: Any) -> list[dict]:
    check_plan_cache_stats(spec)
    return []
