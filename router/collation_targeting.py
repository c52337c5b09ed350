"""Targeting under a collation: when a shard-key equality cannot pick one shard.

Chunks are ranges of shard-key values in the simple (binary) order, so an equality on a
shard-key field pins one chunk only if the query compares that value the same way.  Under a
non-simple collation a string (or an object or array, which may hold strings) equals other
strings too ("abc" == "ABC" at strength 2) that may live in any chunk: mongos then asks every
shard (the server's ChunkManager targeting with CollationIndexKey::isCollatableType).
Numbers, dates, ObjectIds ... compare alike under every collation and still target one shard.
A sharded collection's default collation (config.collections' defaultCollation) applies to
commands that name none; sharding such a collection needs `collation: {locale: "simple"}`
(the shard-key index must be a simple one) as the server's shardCollection says.
"""

from __future__ import annotations

from typing import Any

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.collation import given
from mongosim.shardsim.query.collation import make_collator
from mongosim.shardsim.query.collation.comparison_keys import collatable
from mongosim.shardsim.query.fmt import bson_str

__all__ = ["collation_sensitive", "effective_collation", "check_shard_collection_collation",
           "check_default_collation"]


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
        if collatable(v):
            return True
    return False


def effective_collation(routing: Any, collation: Any) -> Any:
    """The collation a command on a sharded collection runs with: its own (`{}` is none), else the collection's
    default."""
    collation = given(collation)
    if collation is not None or routing is None:
        return collation
    return routing.default_collation


def check_shard_collection_collation(collation: Any) -> None:
    """shardCollection's `collation` may only be the simple one (chunks are ranges in binary order)."""
    if collation is None:
        return
    if not isinstance(collation, dict):
        raise MongoError("TypeMismatch", "BSON field 'shardCollection.collation' is the wrong type, expected type "
                                         "'object'")
    if make_collator(collation) is not None:
        raise MongoError("BadValue", "The collation for shardCollection must be {locale: 'simple'}, but found: "
                                     f"{bson_str(collation)}")


def check_default_collation(default: Any, requested: Any) -> None:
    """A collection with a default collation is sharded only when the command asks for the simple one."""
    if default and requested is None:
        raise MongoError("BadValue", f"Collection has default collation: {bson_str(default)}. Must specify "
                                     "collation {locale: 'simple'}")
