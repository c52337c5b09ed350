"""Flat shapes of legacy coordinates (the server's shapes.cpp): points, `$box`, `$polygon`, `$center`, and
their distances, as a `2d` index and the legacy query operators see the plane.

Boundaries count as inside (Box::inside, Polygon::contains with the edge test first,
distanceWithin).  Distances are Euclidean in the coordinates' own units.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

Point = tuple[float, float]


def distance(a: Point, b: Point) -> float:
    return math.hypot(a[0] - b[0], a[1] - b[1])


@dataclass(frozen=True)
class Box:
    lo: Point
    hi: Point

    @classmethod
    def of(cls, a: Point, b: Point) -> "Box":
        """Box::init: the corners in any order."""
        return cls((min(a[0], b[0]), min(a[1], b[1])), (max(a[0], b[0]), max(a[1], b[1])))

    def inside(self, p: Point) -> bool:
        return self.lo[0] <= p[0] <= self.hi[0] and self.lo[1] <= p[1] <= self.hi[1]


@dataclass(frozen=True)
class Circle:
    center: Point
    radius: float

    def contains(self, p: Point) -> bool:
        return distance(self.center, p) <= self.radius


@dataclass(frozen=True)
class FlatPolygon:
    points: tuple[Point, ...]

    def contains(self, p: Point) -> bool:
        """Polygon::contains: on an edge counts as inside; otherwise the even-odd rule."""
        pts = self.points
        n = len(pts)
        inside = False
        for i in range(n):
            (x1, y1), (x2, y2) = pts[i], pts[(i + 1) % n]
            if _on_segment(p, (x1, y1), (x2, y2)):
                return True
            if (y1 > p[1]) != (y2 > p[1]):
                x = x1 + (p[1] - y1) * (x2 - x1) / (y2 - y1)
                if x > p[0]:
                    inside = not inside
        return inside


def _on_segment(p: Point, a: Point, b: Point) -> bool:
    cr = (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0])
    if abs(cr) > 1e-12 * max(1.0, abs(b[0] - a[0]) + abs(b[1] - a[1])):
        return False
    return min(a[0], b[0]) <= p[0] <= max(a[0], b[0]) and min(a[1], b[1]) <= p[1] <= max(a[1], b[1])
