"""Spherical geometry against references: point-in-polygon against the planar even-odd rule on small
polygons (where the sphere is nearly flat), distances (symmetry, triangle inequality, the haversine formula,
distance to an edge against sampling), loop normalization, and the geometry parser's rules."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.geo import spherical as S
from mongosim.shardsim.geo.geo_expression import geo_test, parse_near
from mongosim.shardsim.geo.geoparser import parse_from_storage
from mongosim.shardsim.geo.shapes import FlatPolygon
from tests.query._settings import QUERY_SETTINGS

lngs = st.floats(-179.0, 179.0)
lats = st.floats(-80.0, 80.0)


def star_polygon(center, radii, size):
    """A simple polygon: vertices at increasing angles around `center`, at varying distances."""
    n = len(radii)
    return [(center[0] + size * r * math.cos(2 * math.pi * k / n), center[1] + size * r * math.sin(2 * math.pi * k / n))
            for k, r in enumerate(radii)]


def planar_contains(poly, p) -> bool:
    return FlatPolygon(tuple(poly)).contains(p)


def planar_edge_distance(poly, p) -> float:
    best = math.inf
    for i in range(len(poly)):
        (x1, y1), (x2, y2) = poly[i], poly[(i + 1) % len(poly)]
        dx, dy = x2 - x1, y2 - y1
        t = max(0.0, min(1.0, ((p[0] - x1) * dx + (p[1] - y1) * dy) / (dx * dx + dy * dy)))
        best = min(best, math.hypot(p[0] - x1 - t * dx, p[1] - y1 - t * dy))
    return best


@QUERY_SETTINGS
@given(center=st.tuples(st.floats(-170, 170), st.floats(-60, 60)),
       radii=st.lists(st.floats(0.3, 1.0), min_size=3, max_size=8),
       size=st.floats(0.01, 0.3), offsets=st.lists(st.tuples(st.floats(-1.2, 1.2), st.floats(-1.2, 1.2)),
                                                    min_size=1, max_size=10),
       clockwise=st.booleans())
def test_point_in_small_polygon_matches_the_plane(center, radii, size, offsets, clockwise):
    poly = star_polygon(center, radii, size)
    if clockwise:
        poly.reverse()
    ring = [list(v) for v in poly] + [list(poly[0])]
    try:
        test = geo_test("$geoWithin", {"$geometry": {"type": "Polygon", "coordinates": [ring]}})
    except MongoError:
        assume(False)  # (a degenerate star: crossing edges)
    for ox, oy in offsets:
        p = (center[0] + size * ox, center[1] + size * oy)
        assume(planar_edge_distance(poly, p) > 0.02 * size)  # away from the edges (great circles bow a little)
        assert test({"type": "Point", "coordinates": list(p)}) == planar_contains(poly, p), (poly, p)


points = st.tuples(lngs, lats).map(lambda t: S.from_lng_lat(*t))


@QUERY_SETTINGS
@given(a=points, b=points, c=points)
def test_distance_is_a_metric(a, b, c):
    assert S.angle(a, b) == pytest.approx(S.angle(b, a), abs=1e-15)
    assert S.angle(a, a) == pytest.approx(0.0, abs=1e-15)
    assert S.angle(a, c) <= S.angle(a, b) + S.angle(b, c) + 1e-12
    assert 0 <= S.angle(a, b) <= math.pi


@QUERY_SETTINGS
@given(p=st.tuples(lngs, lats), q=st.tuples(lngs, lats))
def test_distance_equals_haversine(p, q):
    (l1, f1), (l2, f2) = [(math.radians(x), math.radians(y)) for x, y in (p, q)]
    h = math.sin((f2 - f1) / 2) ** 2 + math.cos(f1) * math.cos(f2) * math.sin((l2 - l1) / 2) ** 2
    expect = 2 * math.asin(min(1.0, math.sqrt(h)))
    assert S.angle(S.from_lng_lat(*p), S.from_lng_lat(*q)) == pytest.approx(expect, abs=1e-9)


@QUERY_SETTINGS
@given(a=points, b=points, p=points)
def test_distance_to_an_edge_is_its_closest_point(a, b, p):
    assume(1e-3 < S.angle(a, b) < math.pi - 1e-3)
    d = S.distance_to_edge(p, a, b)
    ab = S.angle(a, b)
    n = S.normalize(S.cross(S.cross(a, b), a))  # the direction from a toward b
    samples = [S.angle(p, tuple(math.cos(t) * a[i] + math.sin(t) * n[i] for i in range(3)))
               for t in (ab * k / 400 for k in range(401))]
    assert d <= min(samples) + 1e-9
    assert d >= min(samples) - ab / 400  # (the sampling's step)


@QUERY_SETTINGS
@given(center=st.tuples(st.floats(-170, 170), st.floats(-60, 60)),
       radii=st.lists(st.floats(0.3, 1.0), min_size=3, max_size=7), size=st.floats(0.5, 20), p=points)
def test_a_loop_and_its_reverse_normalize_to_the_same_region(center, radii, size, p):
    loop = S.Loop([S.from_lng_lat(x, max(-89.0, min(89.0, y))) for x, y in star_polygon(center, radii, size)])
    assume(loop.validation_error() is None)
    assume(loop.distance(p) > 1e-6)
    back = S.Loop(list(reversed(loop.vertices)))
    assert loop.normalized().contains(p) == back.normalized().contains(p)
    # exactly one of a loop and its reverse holds p
    assert loop.contains(p) != back.contains(p)


def test_near_units_and_parser_rules():
    near = parse_near("loc", {"$nearSphere": [10, 20], "$maxDistance": 0.5})
    assert near.units_are_radians and near.spherical and near.max_distance == 0.5
    near = parse_near("loc", {"$near": {"$geometry": {"type": "Point", "coordinates": [1, 2]}, "$minDistance": 5}})
    assert not near.units_are_radians and near.spherical and near.min_distance == 5
    near = parse_near("loc", {"$near": [1, 2, 3]})
    assert not near.spherical and near.max_distance == 3
    with pytest.raises(MongoError) as e:
        parse_from_storage({"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [0, 0]]]})
    assert "Loop must have at least 3 different vertices" in e.value.errmsg
    with pytest.raises(MongoError) as e:
        parse_from_storage({"type": "Polygon", "coordinates": [[[0, 0], [4, 0], [4, 4], [0, 4], [0, 0]],
                                                               [[5, 5], [6, 5], [6, 6], [5, 5]]]})
    assert "Secondary loops not contained by first exterior loop" in e.value.errmsg
    g = parse_from_storage({"type": "Polygon", "coordinates": [[[0, 0], [4, 0], [4, 4], [0, 4], [0, 0]],
                                                               [[1, 1], [2, 1], [2, 2], [1, 1]]]})
    assert g.polygons[0].contains(S.from_lng_lat(3, 3)) and not g.polygons[0].contains(S.from_lng_lat(1.7, 1.2))
    assert parse_from_storage({"x": 1, "y": 2}).flat == (1.0, 2.0)


def test_big_polygon_and_the_hemisphere_rule():
    # a GeoJSON polygon is the smaller region its ring bounds, whatever the winding
    ring = [[0, 0], [0, 10], [10, 10], [10, 0], [0, 0]]
    for r in (ring, list(reversed(ring))):
        t = geo_test("$geoIntersects", {"$geometry": {"type": "Polygon", "coordinates": [r]}})
        assert t({"type": "Point", "coordinates": [5, 5]}) and not t({"type": "Point", "coordinates": [100, 5]})
    # with the strict winding CRS the interior is on the left: clockwise, everything outside the square
    crs = {"type": "name", "properties": {"name": "urn:x-mongodb:crs:strictwinding:EPSG:4326"}}
    t = geo_test("$geoWithin", {"$geometry": {"type": "Polygon", "coordinates": [ring], "crs": crs}})
    assert t({"type": "Point", "coordinates": [100, 5]}) and not t({"type": "Point", "coordinates": [5, 5]})
