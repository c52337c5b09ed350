"""Sharded time-series collections on the router (global_catalog/README_timeseries.md).

`shardCollection` names the time-series collection (creating it when given `timeseries`
options); what is sharded is its buckets collection `system.buckets.<coll>`, on the user's key
translated (`timeseries_index_conversion.bucket_key`: `{m: 1, t: 1}` -> `{meta: 1,
control.min.t: 1}`), and `config.collections` holds the buckets' entry with `timeseriesFields`.
The key may only name the meta field (or its subfields) and the time field, the time field last
and ascending.

Writes name the time-series collection; when its buckets are sharded, mongos sends them on the
buckets namespace with `isTimeseriesNamespace: true` (the shard runs them as time-series writes):
a measurement goes where the bucket it starts would (its normalized meta value, its time rounded
down as `control.min.<t>`), an update or delete where its bucket-level predicate targets
(getBucketLevelPredicateForRouting).  Index commands and drops go to every shard holding buckets.
Reads need nothing: the primary shard resolves the view onto the sharded buckets.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.timeseries import BUCKETS, normalize_options, options_of
from mongosim.shardsim.timeseries_index_conversion import InvalidSpec, bucket_key
from mongosim.shardsim.timeseries_predicates import BucketSpec, bucket_predicate, split_meta
from mongosim.shardsim.timeseries_write_util import normalize_metadata, round_time
from mongosim.shardsim.view_catalog import definition

if TYPE_CHECKING:
    from mongosim.router.catalog_cache import CollectionRouting
    from mongosim.router.mongos import Router
    from mongosim.router.request import Request

__all__ = ["BUCKETS", "ShardedTimeseries", "prepare_shard_collection", "sharded_buckets", "bucket_key_values",
           "routing_query"]


@dataclass
class ShardedTimeseries:
    name: str  # the time-series collection
    user_key: dict  # the shard key as the user gave it
    bucket_key: dict  # ... on the buckets
    fields: dict  # config.collections' timeseriesFields


async def prepare_shard_collection(router: Router, req: Request, db: str, name: str,
                                   primary: str) -> ShardedTimeseries | None:
    """shardCollection of a time-series collection (None when `db.name` is not one): the collection
    created if the command gives `timeseries` and it does not exist, the key checked and translated."""
    requested = req.cmd.get("timeseries")
    pnode = router.shard(primary).node
    view = definition(pnode, db, name)
    existing = options_of(pnode, db, view) if view is not None else None
    if existing is None and requested is None:
        return None
    if requested is not None:
        wanted = normalize_options(db, name, {"timeseries": requested})["timeseries"]
        if existing is None:
            if pnode.catalog.collection(db, name) is not None:
                raise MongoError("NamespaceExists", f"Namespace {db}.{name} already exists")
            create: dict[str, Any] = {"create": name, "timeseries": requested}
            if "collation" in req.cmd:
                create["collation"] = req.cmd["collation"]
            await router.shard(primary).command(db, create)
            existing = options_of(pnode, db, definition(pnode, db, name))
        elif existing["timeseries"] != wanted:
            raise MongoError("InvalidOptions", "the 'timeseries' spec provided must match that of exists "
                                               f"'{db}.{name}' collection")
    ts = existing["timeseries"]
    key = req.cmd.get("key")
    _check_key(ts, key)
    try:
        translated = bucket_key(ts, key, shard_key=True)
    except InvalidSpec as err:
        raise MongoError("BadValue", str(err).split(": ", 1)[1]) from None
    return ShardedTimeseries(name, dict(key), translated, dict(ts))


def _check_key(ts: dict, key: dict) -> None:
    """validateTimeseriesShardKey: only the meta field (and subfields) and the time field, the time last."""
    time_field, meta = ts["timeField"], ts.get("metaField")
    fields = list(key)
    for i, field in enumerate(fields):
        if meta is not None and (field == meta or field.startswith(meta + ".")):
            continue
        if field == time_field:
            if i != len(fields) - 1:
                raise MongoError(5914000, f"the timeseries timeField '{time_field}' can only be the last field in the "
                                          "shard key pattern")
            continue
        raise MongoError(5914001, "only the timeseries timeField or metaField (or subfields of the metaField) may be "
                                  f"in the shard key pattern of a time-series collection, found '{field}'")


# -- writes ------------------------------------------------------------------------------------------
def sharded_buckets(router: Router, db: str, coll: Any) -> tuple[str, CollectionRouting] | None:
    """(the buckets' name, their routing) when `db.coll` is a time-series collection with sharded buckets."""
    if not isinstance(coll, str) or coll.startswith(BUCKETS):
        return None
    routing = router.catalog.routing(f"{db}.{BUCKETS}{coll}")
    if routing is None or routing.timeseries_fields is None:
        return None
    return BUCKETS + coll, routing


def bucket_key_values(routing: CollectionRouting, measurement: Any) -> tuple:
    """The shard key values of the bucket `measurement` would start (its meta normalized, its time
    rounded down): the shard it goes to."""
    ts = routing.timeseries_fields
    probe: dict[str, Any] = {}
    if isinstance(measurement, dict):
        meta = ts.get("metaField")
        if meta is not None and meta in measurement:
            probe["meta"] = normalize_metadata(measurement[meta])
        when = measurement.get(ts["timeField"])
        if isinstance(when, datetime.datetime):
            probe["control"] = {"min": {ts["timeField"]: round_time(when, ts)}}
    return routing.pattern.extract(probe)


def routing_query(routing: CollectionRouting, q: Any) -> dict:
    """getBucketLevelPredicateForRouting: the meta-only part renamed, the time bounds; {} targets all."""
    if not isinstance(q, dict) or not q:
        return {}
    spec = BucketSpec(routing.timeseries_fields)
    meta, rest = split_meta(q, spec)
    out: dict[str, Any] = dict(meta or {})
    loose = bucket_predicate(rest, spec) if rest is not None else None
    for k, v in (loose or {}).items():
        out[k] = out[k] + v if k == "$and" and k in out else v  # (fields side by side: equalities stay visible)
    return out
