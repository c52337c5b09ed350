"""Merging shards' results that carry metadata: text scores and `$near` / `$geoNear` distances (the server's
transformQueryForShards in cluster_find.cpp, and the shards' `needsMerge` output for aggregations).

A find whose order depends on what only the shards know - a sort by `{$meta: "textScore"}`,
a `$near` without a sort - cannot be merged from the documents alone.  As mongos does, the
router asks each shard for the sort key with the documents: the projection gains
`$sortKey: {$meta: "sortKey"}` (an array of the sort's values, the score among them) when
there is a sort, `$sortKey: {$meta: "geoNearDistance"}` for a `$near` without one; the
shards apply the user's projection (a `{$meta: ...}` in it needs their metadata) and the
router merges by `$sortKey` - textScore highest first, distance nearest first - then drops it.

An aggregation starting with a `$text` `$match` or a `$geoNear` runs that part on the shards
with `needsMerge`: the documents come back with their metadata as `$textScore`, `$dis`,
`$pt`; the router takes it out again (`document_metadata.from_wire`), orders `$geoNear`'s
documents by distance, and runs the rest of the pipeline with the metadata at hand.
"""

from __future__ import annotations

from typing import Any

from mongosim.shardsim.query.collation import comparison_keys
from mongosim.shardsim.query.document_metadata import GEO_NEAR_DISTANCE, from_wire, meta_of
from mongosim.shardsim.query.extensions_callback import NEAR_OPS, TEXT_OPS, mentions
from mongosim.shardsim.query.sorting import Reversed, parse_sort

_DESCENDING_META = frozenset({"textScore", "searchScore", "vectorSearchScore", "score"})


def needs_sort_key(flt: dict, sort: Any, projection: Any) -> bool:
    """Whether a find's merge needs the shards' metadata."""
    if isinstance(sort, dict) and any(isinstance(v, dict) for v in sort.values()):
        return True
    if isinstance(projection, dict) and any(isinstance(v, dict) and "$meta" in v for v in projection.values()):
        return True
    return mentions(flt, TEXT_OPS) or mentions(flt, NEAR_OPS)


def shard_projection(cmd: dict) -> tuple[dict, list[int] | None]:
    """The projection the shards get, and the directions of `$sortKey`'s values (None: a distance)."""
    proj = dict(cmd.get("projection") or {})
    sort = cmd.get("sort")
    if sort and "$natural" not in sort:
        parse_sort(sort)
        proj["$sortKey"] = {"$meta": "sortKey"}
        dirs = [(-1 if v.get("$meta") in _DESCENDING_META else 1) if isinstance(v, dict) else (1 if v >= 0 else -1)
                for v in sort.values()]
        return proj, dirs
    if mentions(cmd.get("filter") or {}, NEAR_OPS):
        proj["$sortKey"] = {"$meta": "geoNearDistance"}
        return proj, None
    return proj, []


def merge(results: list[dict], directions: list[int] | None, collator=None) -> list[dict]:
    """The shards' documents in `$sortKey` order (stable), `$sortKey` removed."""
    if directions == []:
        return results
    value_key = comparison_keys.sort_key_for(collator)

    def key(doc):
        sk = doc.get("$sortKey")
        if directions is None:
            return value_key(sk)
        return tuple(value_key(v) if d > 0 else Reversed(value_key(v))
                     for v, d in zip(sk if isinstance(sk, list) else [sk], directions))

    results.sort(key=key)
    for doc in results:
        doc.pop("$sortKey", None)
    return results


def starts_with_metadata(pipeline: list) -> int:
    """How many leading stages of a pipeline the shards must run with `needsMerge` (a `$geoNear`, or the
    leading `$match` stages when one holds a `$text`); 0 when none."""
    if pipeline and isinstance(pipeline[0], dict) and list(pipeline[0]) == ["$geoNear"]:
        return 1
    k = 0
    while k < len(pipeline) and isinstance(pipeline[k], dict) and list(pipeline[k]) == ["$match"]:
        k += 1
    if k and any(mentions(st["$match"], TEXT_OPS) for st in pipeline[:k]):
        return k
    return 0


def merged_with_metadata(docs: list[dict], by_distance: bool) -> list[dict]:
    """Documents a shard sent with `needsMerge`, their metadata restored (ordered by distance for $geoNear)."""
    out = [from_wire(d) for d in docs]
    if by_distance:
        out.sort(key=lambda d: meta_of(d).get(GEO_NEAR_DISTANCE, 0.0))
    return out

