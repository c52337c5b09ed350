"""`$near` / `$nearSphere` plans (the server's GeoNear2DSphereStage, GeoNear2DStage): the documents in order
of distance from a point, with the distance and the location as metadata.

Which index serves (QueryPlannerIXSelect's geo rules): a `2dsphere` index on the path for a
GeoJSON point or any `$nearSphere`; a `2d` index on the path for a legacy pair.  Without one
the query fails as the server's planner does: "unable to find index for $geoNear query".

The distance of a document is the least distance from the point to any geometry at the
path (a polygon containing the point: 0): on the sphere in meters (GeoJSON point) or
radians (`$nearSphere` with a legacy pair), on a 2d index's plane in its units (`$near`
with a legacy pair; `$nearSphere` on a 2d index measures the sphere in radians).  Those
within [$minDistance, $maxDistance] and matching the rest of the filter come out nearest
first (ties in natural order).  The server searches growing annuli of the index; the
documents and their order are the same.
"""

from __future__ import annotations

import math
from typing import Any

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.geo import spherical as S
from mongosim.shardsim.geo.geo_expression import GeoNearExpression
from mongosim.shardsim.geo.geo_index import GeoIndex, values_along
from mongosim.shardsim.geo.geometry_container import SPHERE
from mongosim.shardsim.plan_executor import ExecContext, PlanStage
from mongosim.shardsim.query.document_metadata import GEO_NEAR_DISTANCE, GEO_NEAR_POINT, with_meta
from mongosim.shardsim.geo.geoparser import is_number, parse_from_storage


def find_geo_index(coll, near: GeoNearExpression):
    """The index a $near can use (None if none)."""
    if coll is None:
        return None
    for spec in coll.indexes:
        key = spec.get("key", {})
        kind = key.get(near.path)
        if spec.get("hidden"):
            continue
        if kind == "2dsphere" and (near.centroid.crs == SPHERE or near.near_sphere):
            return spec
        if kind == "2d" and near.centroid.crs != SPHERE and next(iter(key)) == near.path:
            return spec
    return None


class GeoNear(PlanStage):
    """GEO_NEAR_2DSPHERE / GEO_NEAR_2D."""

    def __init__(self, spec: dict, near: GeoNearExpression, matcher, shown_filter: dict | None) -> None:
        super().__init__()
        self.spec = spec
        self.index = GeoIndex(spec)
        self.near = near
        self.matcher = matcher
        self.shown_filter = shown_filter
        self.flat = spec["key"][near.path] == "2d"
        self.stage = "GEO_NEAR_2D" if self.flat else "GEO_NEAR_2DSPHERE"
        self.docs_examined = 0

    def explain(self, stats: bool = False) -> dict:
        out: dict[str, Any] = {"stage": self.stage}
        if self.shown_filter:
            out["filter"] = self.shown_filter
        if stats:
            body = PlanStage.explain(self, True)
            for k in ("stage", "filter"):
                body.pop(k, None)
            out.update(body)
            out["docsExamined"] = self.docs_examined
        out["keyPattern"] = dict(self.spec["key"])
        out["indexName"] = self.spec["name"]
        out["indexVersion"] = int(self.spec.get("v", 2))
        return out

    def distance(self, doc: dict) -> tuple[float, Any] | None:
        """(distance in the query's units, the location that gave it), None without a location."""
        near = self.near
        if self.flat:
            best = None
            for raw, loc in _flat_locations(doc, near.path):
                if near.near_sphere:
                    d = S.angle(S.from_lng_lat(*near.centroid.flat), S.from_lng_lat(*loc))
                else:
                    d = math.hypot(loc[0] - near.centroid.flat[0], loc[1] - near.centroid.flat[1])
                if best is None or d < best[0]:
                    best = (d, raw)
            return best
        center = near.centroid.on_sphere().points[0]
        best = None
        for raw in values_along(doc, near.path.split(".")):
            try:
                g = parse_from_storage(raw).on_sphere()
            except MongoError:
                continue
            if g is None:
                continue
            d = g.distance(center)
            if best is None or d < best[0]:
                best = (d, raw)
        if best is None:
            return None
        d, raw = best
        return (d if near.units_are_radians else d * S.RADIUS_OF_EARTH_METERS), raw

    def rows(self, ctx: ExecContext):
        near = self.near
        m = self.matcher.matches if self.matcher is not None and self.matcher.filter else None
        found = []
        for i, doc in enumerate(ctx.scan()):
            r = self.distance(doc)
            if r is None:
                continue
            d, raw = r
            if d < near.min_distance or d > near.max_distance:
                continue
            self.docs_examined += 1
            if m is not None and not m(doc):
                self.need_time += 1
                continue
            found.append((d, i, doc, raw))
        found.sort(key=lambda t: (t[0], t[1]))
        for d, _i, doc, raw in found:
            yield with_meta(doc, **{GEO_NEAR_DISTANCE: d, GEO_NEAR_POINT: raw})


def _flat_locations(doc: dict, path: str):
    """A 2d index's locations of a document: (the raw pair, (x, y)) - bad ones skipped."""
    for geo in values_along(doc, path.split(".")):
        if type(geo) not in (list, dict) or not geo:
            continue
        items = list(geo.values()) if type(geo) is dict else geo
        single = is_number(items[0])
        for loc in ([geo] if single else items):
            if type(loc) not in (list, dict) or not loc:
                continue
            xy = list(loc.values()) if type(loc) is dict else loc
            if len(xy) >= 2 and is_number(xy[0]) and is_number(xy[1]):
                yield loc, (float(xy[0]), float(xy[1]))
