"""The `$geoNear` aggregation stage (the server's DocumentSourceGeoNear): a pipeline's first stage, run as
a `$near` query.

    {$geoNear: {near: <GeoJSON point | legacy pair>, distanceField: <path>, spherical: <bool>,
                minDistance, maxDistance, query: <filter>, includeLocs: <path>,
                distanceMultiplier: <number>, key: <indexed path>}}

It becomes the query `{...query, <key>: {$nearSphere (spherical) | $near: near, $minDistance,
$maxDistance}}` (DocumentSourceGeoNear::asNearQuery), planned like a find's `$near`
(shardsim/geo/geo_near.py), and each document gets its distance (times
`distanceMultiplier`) at `distanceField` and, with `includeLocs`, the location that gave
it.  Without `key` the collection's one 2d index is used, else its one 2dsphere index.
Through mongos each shard runs it and the router merges the shards' documents by
distance.
"""

from __future__ import annotations

from typing import Any

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.canonical_query import CanonicalQuery
from mongosim.shardsim.geo.geoparser import is_number
from mongosim.shardsim.get_executor import execute
from mongosim.shardsim.query.document_metadata import GEO_NEAR_DISTANCE, GEO_NEAR_POINT, meta_of
from mongosim.shardsim.query.matcher import Matcher
from mongosim.shardsim.query.values import describe_type


def _number(options: dict, name: str) -> float | None:
    if name not in options:
        return None
    v = options[name]
    if not is_number(v) or isinstance(v, bool):
        raise MongoError("TypeMismatch", f"{name} must be a number")
    x = float(v.to_decimal()) if hasattr(v, "to_decimal") else float(v)
    if not x >= 0:
        raise MongoError("BadValue", f"{name} must be nonnegative")
    return x


class GeoNearStage:
    """A parsed `$geoNear`."""

    def __init__(self, options: Any) -> None:
        if type(options) is not dict:
            raise MongoError(10065, f"invalid parameter: expected an object ($geoNear)")
        if "collation" in options:
            raise MongoError(40227, "$geoNear does not accept the 'collation' parameter. Instead, specify a "
                                    "collation for the entire aggregation command.")
        if "limit" in options:
            raise MongoError(50858, "$geoNear no longer supports the 'limit' parameter. Use a $limit stage instead.")
        if "num" in options:
            raise MongoError(50857, "$geoNear no longer supports the 'num' parameter. Use a $limit stage instead.")
        if "start" in options:
            raise MongoError(50856, "$geoNear no longer supports the 'start' argument.")
        if "near" not in options:
            raise MongoError(5860400, "$geoNear requires a 'near' argument")
        self.near = options["near"]
        if type(options.get("distanceField")) is not str:
            raise MongoError(16606, "$geoNear requires a 'distanceField' option as a String")
        self.distance_field = options["distanceField"]
        self.max_distance = _number(options, "maxDistance")
        self.min_distance = _number(options, "minDistance")
        self.multiplier = _number(options, "distanceMultiplier")
        self.query: dict = {}
        if "query" in options:
            if type(options["query"]) is not dict:
                raise MongoError("TypeMismatch", "query must be an object")
            self.query = options["query"]
        self.spherical = _truthy(options.get("spherical", False))
        self.include_locs = None
        if "includeLocs" in options:
            if type(options["includeLocs"]) is not str:
                raise MongoError(16607, "$geoNear requires that 'includeLocs' option is a String")
            self.include_locs = options["includeLocs"]
        self.key = None
        if "key" in options:
            key = options["key"]
            if type(key) is not str:
                raise MongoError("TypeMismatch", f"$geoNear parameter 'key' must be of type string but found type: "
                                                 f"{describe_type(key)}")
            if not key:
                raise MongoError("BadValue", "$geoNear parameter 'key' cannot be the empty string")
            self.key = key
        if type(self.near) not in (dict, list):
            raise MongoError(5860401, "$geoNear requires near argument to be a GeoJSON object or a legacy point(array)")

    def key_field(self, coll, ns: str) -> str:
        """The geo field: `key`, else the collection's one 2d index's, else its one 2dsphere index's."""
        if self.key is not None:
            return self.key
        if coll is None:
            raise MongoError("IndexNotFound", f"$geoNear requires a geo index to run, but {ns} does not exist")
        for kind in ("2d", "2dsphere"):
            found = [s for s in coll.indexes if kind in s["key"].values()]
            if len(found) > 1:
                raise MongoError("IndexNotFound", f"There is more than one {kind} index on {ns}; unsure which to use "
                                                  "for $geoNear")
            if found:
                return next(f for f, v in found[0]["key"].items() if v == kind)
        raise MongoError("IndexNotFound", "$geoNear requires a 2d or 2dsphere index, but none were found")

    def as_near_query(self, key: str) -> dict:
        near: dict[str, Any] = {"$nearSphere" if self.spherical else "$near": self.near}
        if self.min_distance is not None:
            near["$minDistance"] = self.min_distance
        if self.max_distance is not None:
            near["$maxDistance"] = self.max_distance
        return {**self.query, key: near}

    def output(self, doc: dict) -> dict:
        meta = meta_of(doc)
        d = meta.get(GEO_NEAR_DISTANCE)
        if self.multiplier is not None and d is not None:
            d *= self.multiplier
        out = type(doc)(doc, meta) if meta else dict(doc)
        _set_path(out, self.distance_field, d)
        if self.include_locs is not None:
            _set_path(out, self.include_locs, meta.get(GEO_NEAR_POINT))
        return out

    def run(self, coll, ns: str, view, variables: dict | None, collator) -> list[dict]:
        key = self.key_field(coll, ns)
        flt = self.as_near_query(key)
        cq = CanonicalQuery(ns, flt, Matcher(flt, variables, collator), variables=variables, collator=collator)
        if coll is None:
            return []
        docs, _sol, _ctx = execute(coll, cq, view)
        return [self.output(d) for d in docs]


def _truthy(v: Any) -> bool:
    if v is None or v is False:
        return False
    if is_number(v):
        return float(v.to_decimal() if hasattr(v, "to_decimal") else v) != 0
    return True


def _set_path(doc: dict, path: str, value: Any) -> None:
    *parents, last = path.split(".")
    cur = doc
    for p in parents:
        nxt = cur.get(p)
        if type(nxt) is not dict:
            nxt = cur[p] = {}
        cur = nxt
    cur[last] = value
