"""A parsed geometry, stored in a document or given in a query (the server's GeometryContainer), and the
relations geo queries ask of it: contains, intersects, distance.

A geometry has a coordinate reference system: FLAT (legacy coordinate pairs, `$box`,
`$polygon`, `$center`), SPHERE (GeoJSON, `$centerSphere`) or STRICT_SPHERE (a GeoJSON
polygon with MongoDB's strict-winding CRS: a "big polygon", its interior on the left of
its edges, possibly more than a hemisphere).  A stored geometry is reduced to its parts:
points, polylines and polygons on the sphere, and - for a single point - its flat
coordinates.

The rules are GeometryContainer's:
* a FLAT region (`$box`, `$polygon`, `$center`) contains only single points (legacy
  pairs, or GeoJSON points by their coordinates);
* a `$centerSphere` cap contains points (and multipoints) only;
* a (multi)polygon contains points on its boundary too, a polyline when no edge leaves it,
  a polygon when its exterior is inside and no edges cross;
* `$geoIntersects` is true when any part touches any part.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mongosim.shardsim.geo import spherical as S
from mongosim.shardsim.geo.shapes import Box, Circle, FlatPolygon, Point

FLAT, SPHERE, STRICT_SPHERE = "flat", "sphere", "strict"


@dataclass
class Cap:
    center: S.Vec
    radius: float  # radians

    def contains(self, p: S.Vec) -> bool:
        return S.angle(self.center, p) <= self.radius + S.EPSILON


@dataclass
class GeometryContainer:
    kind: str  # "Point", "LineString", ..., "GeometryCollection", "legacy", "$box", "$center", "$polygon",
    #            "$centerSphere"
    crs: str = SPHERE
    flat: Point | None = None  # a single point's coordinates
    points: list = field(default_factory=list)  # sphere points
    lines: list = field(default_factory=list)  # polylines (lists of points)
    polygons: list = field(default_factory=list)  # spherical Polygons
    box: Box | None = None
    circle: Circle | None = None
    flat_polygon: FlatPolygon | None = None
    cap: Cap | None = None
    big_polygon: S.Loop | None = None

    # -- kinds ----------------------------------------------------------------------------
    @property
    def single_point(self) -> bool:
        return self.kind in ("Point", "legacy")

    def supports_contains(self) -> bool:
        """GeometryContainer::supportsContains: a region a $geoWithin can use."""
        return self.kind in ("Polygon", "MultiPolygon", "$box", "$center", "$polygon", "$centerSphere") or \
            (self.kind == "GeometryCollection" and bool(self.polygons))

    def sphere_point(self) -> S.Vec | None:
        """A single point on the sphere (a legacy pair only if it is a valid longitude/latitude)."""
        if self.points:
            return self.points[0] if self.single_point else None
        if self.kind == "legacy" and self.flat is not None and valid_lng_lat(*self.flat):
            return S.from_lng_lat(*self.flat)
        return None

    def on_sphere(self) -> "GeometryContainer | None":
        """The geometry projected into SPHERE (None when it cannot be: a legacy pair off the globe)."""
        if self.crs != FLAT:
            return self
        if self.kind == "legacy":
            p = self.sphere_point()
            if p is None:
                return None
            return GeometryContainer("legacy", SPHERE, flat=self.flat, points=[p])
        return None

    # -- relations ------------------------------------------------------------------------
    def contains(self, other: "GeometryContainer") -> bool:
        """Whether this query region contains the stored geometry `other` ($geoWithin)."""
        if self.kind in ("$box", "$polygon", "$center"):
            if not other.single_point or other.flat is None:
                return False
            if self.box is not None:
                return self.box.inside(other.flat)
            if self.flat_polygon is not None:
                return self.flat_polygon.contains(other.flat)
            return self.circle.contains(other.flat)
        other = other.on_sphere()
        if other is None:
            return False
        if self.cap is not None:
            if other.lines or other.polygons:
                return False
            return all(self.cap.contains(p) for p in other.points)
        if self.big_polygon is not None:
            loop = self.big_polygon
            return all(_loop_covers(loop, p) for p in other.points) and \
                all(all(_loop_covers(loop, p) for p in line) and not _crosses_loop(loop, line) for line in other.lines) \
                and all(all(_loop_covers(loop, p) for p in poly.loops[0].vertices) for poly in other.polygons)
        regions = self.polygons
        if not regions:
            return False
        return all(any(r.covers(p) for r in regions) for p in other.points) and \
            all(any(S.polygon_contains_polyline(r, line) for r in regions) for line in other.lines) and \
            all(any(S.polygon_contains_polygon(r, poly) for r in regions) for poly in other.polygons)

    def intersects(self, other: "GeometryContainer") -> bool:
        """Whether this query geometry and the stored geometry `other` touch ($geoIntersects)."""
        other = other.on_sphere()
        if other is None:
            return False
        if self.big_polygon is not None:
            loop = self.big_polygon
            return any(_loop_covers(loop, p) for p in other.points) or \
                any(any(_loop_covers(loop, p) for p in line) or _crosses_loop(loop, line) for line in other.lines) or \
                any(any(_loop_covers(loop, p) for p in poly.loops[0].vertices) or
                    any(poly.covers(v) for v in loop.vertices) for poly in other.polygons)
        return _parts_intersect(self, other)

    def distance(self, p: S.Vec) -> float:
        """The angle from p to the nearest part of this (stored) geometry."""
        best = float("inf")
        for q in self.points:
            best = min(best, S.angle(p, q))
        for line in self.lines:
            best = min(best, S.polyline_distance(p, line))
        for poly in self.polygons:
            best = min(best, poly.distance(p))
        return best


def valid_lng_lat(lng: float, lat: float) -> bool:
    return -90.0 <= lat <= 90.0 and -180.0 <= lng <= 180.0


def _loop_covers(loop: S.Loop, p: S.Vec) -> bool:
    return loop.contains(p) or loop.distance(p) <= S.EPSILON


def _crosses_loop(loop: S.Loop, line) -> bool:
    return any(S.simple_crossing(p, q, r, s) for p, q in S.polyline_edges(line) for r, s in loop.edges())


def _parts_intersect(a: GeometryContainer, b: GeometryContainer) -> bool:
    for p in a.points:
        if any(S.angle(p, q) <= S.EPSILON for q in b.points) or \
                any(S.polyline_distance(p, line) <= S.EPSILON for line in b.lines) or \
                any(poly.covers(p) for poly in b.polygons):
            return True
    for line in a.lines:
        if any(S.polyline_distance(q, line) <= S.EPSILON for q in b.points) or \
                any(S.polylines_intersect(line, other) for other in b.lines) or \
                any(S.polygon_intersects_polyline(poly, line) for poly in b.polygons):
            return True
    for poly in a.polygons:
        if any(poly.covers(q) for q in b.points) or \
                any(S.polygon_intersects_polyline(poly, line) for line in b.lines) or \
                any(S.polygons_intersect(poly, other) for other in b.polygons):
            return True
    return False
