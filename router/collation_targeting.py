"""Targeting under a collation: when a shard-key equality cannot pick one shard.

Chunks are ranges of shard-key values in the simple (binary) order, so an equality on a
shard-key field pins one chunk only if the query compares that value the same way.  Under a
non-simple collation a string (or an object or array, which may hold strings) equals other
strings too ("abc" == "ABC" at strength 2) that may live in any chunk: mongos then asks every
shard (the server's ChunkManager targeting with CollationIndexKey::isCollatableType).
Numbers, dates, ObjectIds ... compare alike under every collation and still target one shard.
"""

from __future__ import annotations

from typing import Any

from mongosim.shardsim.query.collation import make_collator

__all__ = ["collation_sensitive"]


def _value(query: dict, path: str) -> Any:
    if path in query:
        return query[path]
    cur: Any = query
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def collation_sensitive(fields: Any, query: dict | None, collation: Any) -> bool:
    """Whether `query`'s shard-key equalities depend on `collation` (a command's collation field)."""
    if collation is None or not query or make_collator(collation) is None:
        return False
    for f in fields:
        v = _value(query, f)
        if isinstance(v, dict) and len(v) == 1 and "$eq" in v:
            v = v["$eq"]
        if isinstance(v, (str, dict, list)):
            return True
    return False
