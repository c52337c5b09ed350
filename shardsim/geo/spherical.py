"""Geometry on the unit sphere, as the server's S2 library does it: points, great-circle distances, edge
crossings, loops and their interiors, caps.

Hand-written because no maintained pure-Python library does S2's geometry: `s2sphere` is a
2017 partial port without loops or polygons, `shapely` and `spherical-geometry` are native
code (and planar, or not S2's semantics), and the server's rules - a loop's interior is the
smaller of the two regions it bounds, distances are angles times the Earth's radius
6378.1 km - are a few lines each here.

A point is a unit vector `(x, y, z)` from (longitude, latitude) in degrees.  An edge is the
shorter great-circle arc between two points.  A loop's interior is on the left of its
edges (S2Loop); `Loop.normalized` flips a loop whose left side is more than a hemisphere
(S2Loop::Normalize, which GeoJSON polygons get).
"""

from __future__ import annotations

import math
from typing import Sequence

Vec = tuple[float, float, float]

RADIUS_OF_EARTH_METERS = 6378.1 * 1000  # kRadiusOfEarthInMeters (geoconstants.h)
EPSILON = 1e-10  # radians: "touching" (S2's leaf cells are ~1e-9 radians wide)


def from_lng_lat(lng: float, lat: float) -> Vec:
    """S2LatLng::FromDegrees(lat, lng).ToPoint()."""
    phi = math.radians(lat)
    theta = math.radians(lng)
    c = math.cos(phi)
    return (c * math.cos(theta), c * math.sin(theta), math.sin(phi))


def to_lng_lat(p: Vec) -> tuple[float, float]:
    x, y, z = p
    return math.degrees(math.atan2(y, x)), math.degrees(math.atan2(z, math.hypot(x, y)))


def dot(a: Vec, b: Vec) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def cross(a: Vec, b: Vec) -> Vec:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def norm(a: Vec) -> float:
    return math.sqrt(dot(a, a))


def normalize(a: Vec) -> Vec:
    n = norm(a)
    return (a[0] / n, a[1] / n, a[2] / n) if n else a


def angle(a: Vec, b: Vec) -> float:
    """The angle between two points (S1Angle(a, b)): atan2(|a x b|, a . b), accurate at every size."""
    return math.atan2(norm(cross(a, b)), dot(a, b))


def ccw(a: Vec, b: Vec, c: Vec) -> float:
    """The orientation of the triangle abc: > 0 counterclockwise, < 0 clockwise (the triple product)."""
    return dot(cross(a, b), c)


def simple_crossing(a: Vec, b: Vec, c: Vec, d: Vec) -> bool:
    """S2EdgeUtil::SimpleCrossing: the edges ab and cd cross at a point interior to both."""
    ab = cross(a, b)
    acb = -dot(ab, c)
    bda = dot(ab, d)
    if acb * bda <= 0:
        return False
    cd = cross(c, d)
    cbd = -dot(cd, b)
    dac = dot(cd, a)
    return acb * cbd > 0 and acb * dac > 0


def distance_to_edge(p: Vec, a: Vec, b: Vec) -> float:
    """The angle from p to the closest point of the edge ab."""
    n = cross(a, b)
    nn = norm(n)
    if nn > 1e-300:
        n = (n[0] / nn, n[1] / nn, n[2] / nn)
        s = dot(p, n)
        c = (p[0] - s * n[0], p[1] - s * n[1], p[2] - s * n[2])  # p projected on the great circle
        if dot(cross(a, c), n) > 0 and dot(cross(c, b), n) > 0:
            return math.asin(min(1.0, abs(s)))
    return min(angle(p, a), angle(p, b))


def edges_touch(a: Vec, b: Vec, c: Vec, d: Vec) -> bool:
    """The edges ab and cd cross or come within EPSILON of each other."""
    if simple_crossing(a, b, c, d):
        return True
    return min(distance_to_edge(a, c, d), distance_to_edge(b, c, d), distance_to_edge(c, a, b),
               distance_to_edge(d, a, b)) <= EPSILON


def turn_angle(a: Vec, b: Vec, c: Vec) -> float:
    """S2::TurnAngle: the signed exterior angle at b of the path a, b, c (positive: a left turn)."""
    x = angle(cross(a, b), cross(b, c))
    return x if ccw(a, b, c) > 0 else -x


class Loop:
    """A closed chain of distinct vertices; its interior is on the left of its edges."""

    __slots__ = ("vertices", "_refs")

    def __init__(self, vertices: Sequence[Vec]) -> None:
        self.vertices = list(vertices)
        self._refs: list[Vec] | None = None

    def edges(self):
        v = self.vertices
        n = len(v)
        for i in range(n):
            yield v[i], v[(i + 1) % n]

    def turning_angle(self) -> float:
        v = self.vertices
        n = len(v)
        return sum(turn_angle(v[i - 1], v[i], v[(i + 1) % n]) for i in range(n))

    def is_normalized(self) -> bool:
        """S2Loop::IsNormalized: the interior is at most a hemisphere."""
        return self.turning_angle() >= -1e-14

    def normalized(self) -> "Loop":
        return self if self.is_normalized() else Loop(list(reversed(self.vertices)))

    def _reference_points(self) -> list[Vec]:
        """Points just inside the loop: left of the middle of each of its first edges."""
        if self._refs is None:
            refs = []
            for a, b in list(self.edges())[:4]:
                n = normalize(cross(a, b))
                m = normalize((a[0] + b[0], a[1] + b[1], a[2] + b[2]))
                step = min(1e-7, angle(a, b) * 1e-3)  # (well inside, however small the loop)
                refs.append(normalize((m[0] + step * n[0], m[1] + step * n[1], m[2] + step * n[2])))
            self._refs = refs
        return self._refs

    def contains(self, p: Vec) -> bool:
        """Whether p is in the interior: the parity of the edges crossed on the way from a point known to be
        inside (a path through a vertex is retried from another reference point)."""
        for ref in self._reference_points():
            n = cross(ref, p)
            nn = norm(n)
            if nn == 0.0:
                return dot(ref, p) > 0
            crossings = 0
            degenerate = False
            for a, b in self.edges():
                if abs(dot(n, a)) <= 1e-15 * nn and dot(cross(ref, a), n) >= 0 and dot(cross(a, p), n) >= 0:
                    degenerate = True  # (the path passes through a vertex: try another)
                    break
                if simple_crossing(ref, p, a, b):
                    crossings += 1
            if not degenerate:
                return crossings % 2 == 0
        return False

    def distance(self, p: Vec) -> float:
        """The angle from p to the loop's boundary."""
        return min(distance_to_edge(p, a, b) for a, b in self.edges())

    def validation_error(self) -> str | None:
        """S2Loop::IsValid's complaint, or None."""
        v = self.vertices
        n = len(v)
        if n < 3:
            return "Degenerate loop"
        seen: dict[Vec, int] = {}
        for i, p in enumerate(v):
            if p in seen:
                return f"Duplicate vertices: {seen[p]} and {i}"
            seen[p] = i
        for i in range(n):
            a, b = v[i], v[(i + 1) % n]
            for j in range(i + 2, n):
                if i == 0 and j == n - 1:
                    continue  # (adjacent through the closing edge)
                c, d = v[j], v[(j + 1) % n]
                if simple_crossing(a, b, c, d):
                    return (f"Edges {i} and {j} cross. Edge locations in degrees: {_deg(a)}-{_deg(b)} and "
                            f"{_deg(c)}-{_deg(d)}")
        return None


def _deg(p: Vec) -> str:
    lng, lat = to_lng_lat(p)
    return f"[{lat:.6f}, {lng:.6f}]"


class Polygon:
    """A GeoJSON polygon on the sphere: an exterior loop and holes, each normalized."""

    __slots__ = ("loops",)

    def __init__(self, loops: list[Loop]) -> None:
        self.loops = loops

    def contains(self, p: Vec) -> bool:
        if not self.loops[0].contains(p):
            return False
        return not any(h.contains(p) for h in self.loops[1:])

    def boundary_distance(self, p: Vec) -> float:
        return min(loop.distance(p) for loop in self.loops)

    def covers(self, p: Vec) -> bool:
        """Contains p, or p is on the boundary (S2Polygon::MayIntersect of its leaf cell)."""
        return self.contains(p) or self.boundary_distance(p) <= EPSILON

    def distance(self, p: Vec) -> float:
        return 0.0 if self.contains(p) else self.boundary_distance(p)

    def edges(self):
        for loop in self.loops:
            yield from loop.edges()

    def vertices(self):
        for loop in self.loops:
            yield from loop.vertices


def polyline_distance(p: Vec, line: Sequence[Vec]) -> float:
    if len(line) == 1:
        return angle(p, line[0])
    return min(distance_to_edge(p, line[i], line[i + 1]) for i in range(len(line) - 1))


def polyline_edges(line: Sequence[Vec]):
    for i in range(len(line) - 1):
        yield line[i], line[i + 1]


def polylines_intersect(a: Sequence[Vec], b: Sequence[Vec]) -> bool:
    if len(a) == 1 or len(b) == 1:
        one, other = (a, b) if len(a) == 1 else (b, a)
        return polyline_distance(one[0], other) <= EPSILON
    return any(edges_touch(p, q, r, s) for p, q in polyline_edges(a) for r, s in polyline_edges(b))


def polygon_intersects_polyline(poly: Polygon, line: Sequence[Vec]) -> bool:
    if any(poly.covers(p) for p in line):
        return True
    return any(edges_touch(p, q, r, s) for p, q in polyline_edges(line) for r, s in poly.edges())


def polygon_contains_polyline(poly: Polygon, line: Sequence[Vec]) -> bool:
    if not all(poly.covers(p) for p in line):
        return False
    return not any(simple_crossing(p, q, r, s) for p, q in polyline_edges(line) for r, s in poly.edges())


def polygons_intersect(a: Polygon, b: Polygon) -> bool:
    if any(a.covers(p) for p in b.loops[0].vertices) or any(b.covers(p) for p in a.loops[0].vertices):
        return True
    return any(edges_touch(p, q, r, s) for p, q in a.edges() for r, s in b.edges())


def polygon_contains_polygon(a: Polygon, b: Polygon) -> bool:
    """S2Polygon::Contains: b's exterior inside a, no edges crossing, none of a's holes inside b."""
    if not all(a.covers(p) for p in b.loops[0].vertices):
        return False
    if any(simple_crossing(p, q, r, s) for p, q in b.edges() for r, s in a.edges()):
        return False
    return not any(b.contains(p) for hole in a.loops[1:] for p in hole.vertices)
