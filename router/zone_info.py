"""Zones as the balancer and the migration commands see them (the server's ZoneInfo and
BalancerPolicy::isShardSuitableReceiver): a collection's zone ranges, the shards of a zone, the zone
a chunk lies in, where chunks must split, and which chunks sit outside their zone.  The commands
that define zones are in router/zones.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mongosim.oplog.errors import MongoError
from mongosim.router.catalog_cache import Chunk, CollectionRouting
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.shard_key import ShardKeyPattern

if TYPE_CHECKING:
    from mongosim.router.mongos import Router


@dataclass
class ZoneRange:
    min: dict
    max: dict
    zone: str

    def keys(self) -> tuple[tuple, tuple]:
        """The bounds as comparable keys (their values in field order, as chunk bounds compare)."""
        return (ShardKeyPattern.comparable(tuple(self.min.values())),
                ShardKeyPattern.comparable(tuple(self.max.values())))

    def __str__(self) -> str:  # ZoneRange::toString
        return f"{bson_str(self.min)} -->> {bson_str(self.max)}  on  {self.zone}"


# -- reading the config server's catalog --------------------------------------------------
def _config_docs(router: Router, name: str) -> list[dict]:
    coll = router.config.catalog.collection("config", name)
    return list(coll.docs.values()) if coll is not None else []


def zone_ranges(router: Router, ns: str) -> list[ZoneRange]:
    """`ns`'s zone ranges, in shard-key order."""
    ranges = [ZoneRange(d["min"], d["max"], d["tag"]) for d in _config_docs(router, "tags") if d.get("ns") == ns]
    return sorted(ranges, key=lambda r: r.keys()[0])


def zone_shards(router: Router, zone: str) -> list[str]:
    """The shards in `zone` (none draining), by name."""
    return sorted(d["_id"] for d in _config_docs(router, "shards")
                  if zone in (d.get("tags") or []) and not d.get("draining"))


def zone_of(ranges: list[ZoneRange], chunk: Chunk) -> str:
    """The zone a chunk lies in ("" if none, or if it straddles a range's bound: ZoneInfo::getZoneForRange)."""
    for r in ranges:
        lo, hi = r.keys()
        if lo <= chunk.min_key and chunk.max_key <= hi:
            return r.zone
    return ""


def split_points(routing: CollectionRouting, ranges: list[ZoneRange]) -> list[tuple[Chunk, dict]]:
    """(chunk, bound) for every zone range bound strictly inside a chunk: where the balancer splits."""
    out = []
    for r in ranges:
        for bound in (r.min, r.max):
            key = ShardKeyPattern.comparable(tuple(bound.values()))
            chunk = routing.chunk_for(tuple(bound.values()))
            if chunk.min_key < key < chunk.max_key:
                out.append((chunk, bound))
    return out


def violations(router: Router, routing: CollectionRouting, ranges: list[ZoneRange]) -> list[tuple[Chunk, str]]:
    """(chunk, zone) for every chunk in a zone but on a shard outside it, when the zone has a shard to
    go to (the balancer's zoneViolation)."""
    shards = {r.zone: zone_shards(router, r.zone) for r in ranges}
    out = []
    for chunk in routing.chunks:
        zone = zone_of(ranges, chunk)
        if zone and shards[zone] and chunk.shard not in shards[zone]:
            out.append((chunk, zone))
    return out


def check_receiver(router: Router, routing: CollectionRouting, chunk: Chunk, to: str) -> None:
    """May `to` receive `chunk` (BalancerPolicy::isShardSuitableReceiver, as moveChunk / moveRange check
    it)?  Not while it drains, nor outside the chunk's zone (IllegalOperation)."""
    doc = next((d for d in _config_docs(router, "shards") if d["_id"] == to), None)
    if doc is None:
        return  # (the migration's own ShardNotFound)
    if doc.get("draining"):
        raise MongoError("IllegalOperation", f"{to} is currently draining.")
    zone = zone_of(zone_ranges(router, routing.ns), chunk)
    if zone and zone not in (doc.get("tags") or []):
        raise MongoError("IllegalOperation", f"{to} is not in the correct zone {zone}")
