"""Zones: shard-key ranges pinned to sets of shards (sh.addShardToZone, sh.updateZoneKeyRange).

A zone is a name; a shard belongs to the zones listed in its `config.shards` document's `tags`
array, and a collection's zone ranges are `config.tags` documents `{_id, ns, min, max, tag}`.  The
balancer then keeps every chunk that lies in a zone range on a shard of that zone
(router/zone_info.py; router/balancer.py runs it), after splitting chunks at the ranges' bounds so that each
chunk lies in one zone or none.

The commands, as 8.0's mongos forwards them to the config server (ShardingCatalogManager's
addShardToZone / removeShardFromZone / assignKeyRangeToZone / removeKeyRangeFromZone,
sharding_catalog_manager_zone_operations.cpp):

- `addShardToZone: <shard>, zone` — `$addToSet` the zone; ShardNotFound for an unknown shard.
- `removeShardFromZone: <shard>, zone` — ZoneStillInUse if the shard is the zone's last one and the
  zone still has a range.
- `updateZoneKeyRange: <ns>, min, max, zone` — assign the range (ZoneNotFound if no shard is in the
  zone; on a sharded collection the bounds must be shard-key prefixes, extended to the whole key with
  MinKey; a range may not overlap another: RangeOverlapConflict, unless it is the same range and
  zone); `zone: null` removes the range with exactly these bounds.

A dropped collection's ranges go with it (router/commands_ddl.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bson import Int64, MaxKey, MinKey, ObjectId

from mongosim.oplog.errors import MongoError
from mongosim.router.command_registry import router_command
from mongosim.router.request import Request
from mongosim.router.sharding import _split_ns, admin_only, config_write
from mongosim.router.zone_info import ZoneRange, _config_docs, zone_ranges
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.values import describe_type, sort_key

if TYPE_CHECKING:
    from mongosim.router.mongos import Router


# -- the commands ---------------------------------------------------------------------------
def _wake_balancer(router: Router) -> None:
    balancer = router.manager.balancer
    if balancer is not None:
        balancer.wake()


def _field(req: Request, field: str, kind: type = str) -> Any:
    """A required field of type `kind` (str or dict) as bsonExtract*Field checks it."""
    v = req.cmd.get(field)
    if v is None:
        raise MongoError("NoSuchKey", f"Missing expected field \"{field}\"")
    if not isinstance(v, kind):
        raise MongoError("TypeMismatch", f"\"{field}\" had the wrong type. Expected "
                                         f"{'string' if kind is str else 'object'}, found {describe_type(v)}")
    return v


def _shard_doc(router: Router, shard: str) -> dict | None:
    return next((d for d in _config_docs(router, "shards") if d["_id"] == shard), None)


@router_command("addShardToZone", "addshardtozone")
async def cmd_add_shard_to_zone(router: Router, req: Request) -> dict:
    admin_only(req)
    shard, zone = _field(req, req.name), _field(req, "zone")
    if _shard_doc(router, shard) is None:
        raise MongoError("ShardNotFound", f"shard {shard} does not exist")
    await config_write(router, {"update": "shards", "updates": [{"q": {"_id": shard},
                                                                 "u": {"$addToSet": {"tags": zone}}}]})
    _wake_balancer(router)
    return {"ok": 1.0}


@router_command("removeShardFromZone", "removeshardfromzone")
async def cmd_remove_shard_from_zone(router: Router, req: Request) -> dict:
    admin_only(req)
    shard, zone = _field(req, req.name), _field(req, "zone")
    doc = _shard_doc(router, shard)
    if doc is None:
        raise MongoError("ShardNotFound", f"shard {shard} does not exist")
    others = [d for d in _config_docs(router, "shards") if d["_id"] != shard and zone in (d.get("tags") or [])]
    if zone in (doc.get("tags") or []) and not others and any(d.get("tag") == zone for d in _config_docs(router, "tags")):
        raise MongoError("ZoneStillInUse", "cannot remove a shard from zone if a chunk range is associated with it")
    await config_write(router, {"update": "shards", "updates": [{"q": {"_id": shard}, "u": {"$pull": {"tags": zone}}}]})
    return {"ok": 1.0}


def _full_range(router: Router, ns: str, lo: dict, hi: dict) -> tuple[dict, dict]:
    """The range over the whole shard key of a sharded `ns` (includeFullShardKey: each bound a prefix of
    the key, the missing fields MinKey); a range of an unsharded namespace stays as given."""
    routing = router.catalog.routing(ns)
    if routing is None:
        return lo, hi
    fields = routing.pattern.fields
    key = routing.pattern.key
    for name, bound in (("min", lo), ("max", hi)):
        if list(bound) != fields[:len(bound)]:
            raise MongoError("ShardKeyNotFound", f"{name}: {bson_str(bound)} is not a prefix of the shard key "
                                                 f"{bson_str(key)} of ns: {ns}")
    lo, hi = ({f: b.get(f, MinKey()) for f in fields} for b in (lo, hi))
    for f in routing.pattern.hashed:
        if not all(isinstance(b[f], (Int64, MinKey, MaxKey)) for b in (lo, hi)):
            raise MongoError("InvalidOptions", f"there exists a field in the range {bson_str(lo)} -->> {bson_str(hi)} "
                                               "not of type NumberLong, MinKey, or MaxKey which corresponds to a "
                                               f"hashed field in the shard key pattern {bson_str(key)}")
    return lo, hi


def _check_overlap(existing: list[ZoneRange], new: ZoneRange) -> bool:
    """ZoneInfo::addRangeToZone over the existing ranges: RangeOverlapConflict for an overlap; True if
    the very same range and zone is there already."""
    lo, hi = new.keys()
    for r in existing:
        rlo, rhi = r.keys()
        if rlo < hi and lo < rhi:
            if (rlo, rhi) == (lo, hi) and r.zone == new.zone:
                return True
            raise MongoError("RangeOverlapConflict", f"Zone range: {new} is overlapping with existing: {r}")
    return False


@router_command("updateZoneKeyRange", "updatezonekeyrange")
async def cmd_update_zone_key_range(router: Router, req: Request) -> dict:
    admin_only(req)
    ns = _field(req, req.name)
    _split_ns(ns)
    lo, hi = dict(_field(req, "min", dict)), dict(_field(req, "max", dict))
    if [sort_key(v) for v in lo.values()] >= [sort_key(v) for v in hi.values()]:
        raise MongoError("FailedToParse", f"min: {bson_str(lo)} should be less than max: {bson_str(hi)}")
    if "zone" not in req.cmd:
        raise MongoError("NoSuchKey", "Missing expected field \"zone\"")
    zone = req.cmd["zone"]
    if zone is not None and not isinstance(zone, str):
        raise MongoError("TypeMismatch", f"\"zone\" had the wrong type. Expected string or null, found "
                                         f"{describe_type(zone)}")
    async with router._ddl_lock:
        router.refresh_catalog()
        lo, hi = _full_range(router, ns, lo, hi)
        if zone is None:  # removeKeyRangeFromZone: exactly this range
            await config_write(router, {"delete": "tags", "deletes": [
                {"q": {"ns": ns, "min": lo, "max": hi}, "limit": 0}]})
            return {"ok": 1.0}
        if not any(zone in (d.get("tags") or []) for d in _config_docs(router, "shards")):
            raise MongoError("ZoneNotFound", f"zone {zone} does not exist")
        new = ZoneRange(lo, hi, zone)
        if not _check_overlap(zone_ranges(router, ns), new):
            await config_write(router, {"insert": "tags", "documents": [
                {"_id": ObjectId(), "ns": ns, "min": lo, "max": hi, "tag": zone}]})
    _wake_balancer(router)
    return {"ok": 1.0}
