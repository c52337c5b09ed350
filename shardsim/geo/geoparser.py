"""Geometry parsing, with the server's messages (GeoParser, GeometryContainer::parseFrom*).

Stored values (`parse_from_storage`): a legacy coordinate pair - an array `[x, y]` or an
object whose first field is a number, `{lng: x, lat: y}` (extra fields allowed) - or a
GeoJSON object: Point, LineString, Polygon, MultiPoint, MultiLineString, MultiPolygon,
GeometryCollection, with an optional `crs` (EPSG:4326 / CRS84, or MongoDB's strict winding
CRS for a big polygon).  GeoJSON coordinates are `[longitude, latitude]` within
[-180, 180] x [-90, 90]; a polygon's loops must be closed, have three distinct vertices,
not cross themselves, and its holes lie inside its first loop.

Query geometries (`parse_from_query`): `$geometry` (GeoJSON, or a legacy point), `$box`,
`$polygon`, `$center` (flat), `$centerSphere` ([center, radius in radians]).

Every failure is BadValue with the reason the server gives ("Point must only contain
numeric elements", "Loop is not closed: ...", ...); the index layer wraps it in
"Can't extract geo keys" (16755).
"""

from __future__ import annotations

import math
from typing import Any

from bson import Decimal128, Int64

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.geo import spherical as S
from mongosim.shardsim.geo.geometry_container import (
    FLAT,
    SPHERE,
    STRICT_SPHERE,
    Cap,
    GeometryContainer,
    valid_lng_lat,
)
from mongosim.shardsim.geo.shapes import Box, Circle, FlatPolygon
from mongosim.shardsim.query.fmt import bson_str

CRS_CRS84 = "urn:ogc:def:crs:OGC:1.3:CRS84"
CRS_EPSG_4326 = "EPSG:4326"
CRS_STRICT_WINDING = "urn:x-mongodb:crs:strictwinding:EPSG:4326"
GEOJSON_TYPES = ("Point", "LineString", "Polygon", "MultiPoint", "MultiLineString", "MultiPolygon",
                 "GeometryCollection")


def bad(reason: str) -> MongoError:
    return MongoError("BadValue", reason)


def num(x: float) -> str:
    """A double as the server's streams print it (6 significant digits)."""
    return f"{x:g}"


def is_number(v: Any) -> bool:
    return type(v) in (int, float, Int64) or isinstance(v, Decimal128)


def _float(v: Any) -> float:
    return float(v.to_decimal()) if isinstance(v, Decimal128) else float(v)


def _values(v: Any) -> list:
    return list(v.values()) if type(v) is dict else list(v)


def parse_flat_point(v: Any, allow_extra: bool = False) -> tuple[float, float]:
    """parseFlatPoint: an array or object of two numbers (GeoJSON coordinates may carry more)."""
    if type(v) not in (list, dict):
        raise bad("Point must be an array or object")
    items = _values(v)
    if len(items) < 1 or not is_number(items[0]):
        raise bad("Point must only contain numeric elements")
    if len(items) < 2 or not is_number(items[1]):
        raise bad("Point must only contain numeric elements")
    if not allow_extra and len(items) > 2:
        raise bad("Point must only contain two numeric elements")
    x, y = _float(items[0]), _float(items[1])
    if not (math.isfinite(x) and math.isfinite(y)):
        raise bad("Point coordinates must be finite numbers")
    return x, y


def _to_point(lng: float, lat: float) -> S.Vec:
    if not valid_lng_lat(lng, lat):
        raise bad(f"longitude/latitude is out of bounds, lng: {num(lng)} lat: {num(lat)}")
    return S.from_lng_lat(lng, lat)


def _coordinate(v: Any) -> tuple[S.Vec, tuple[float, float]]:
    if type(v) is not list:
        raise bad("GeoJSON coordinates must be an array")
    x, y = parse_flat_point(v, True)
    return _to_point(x, y), (x, y)


def _coordinates(v: Any) -> list[S.Vec]:
    if type(v) is not list:
        raise bad("GeoJSON coordinates must be an array of coordinates")
    return [_coordinate(c)[0] for c in v]


def _dedup(points: list[S.Vec]) -> list[S.Vec]:
    out: list[S.Vec] = []
    for p in points:
        if not out or out[-1] != p:
            out.append(p)
    return out


def _crs(obj: dict, allow_strict: bool = False) -> str:
    if "crs" not in obj:
        return SPHERE
    crs = obj["crs"]
    if type(crs) is not dict:
        raise bad("GeoJSON CRS must be an object")
    if crs.get("type") != "name":
        raise bad('GeoJSON CRS must have field "type": "name"')
    props = crs.get("properties")
    if type(props) is not dict:
        raise bad('CRS must have field "properties" which is an object')
    name = props.get("name")
    if type(name) is not str:
        raise bad('In CRS, "properties.name" must be a string')
    if name in (CRS_CRS84, CRS_EPSG_4326):
        return SPHERE
    if name == CRS_STRICT_WINDING:
        if not allow_strict:
            raise bad("Strict winding order is only supported by polygon")
        return STRICT_SPHERE
    raise bad(f"Unknown CRS name: {name}")


def _loop(v: Any, skip_validation: bool) -> S.Loop:
    points = _coordinates(v)
    if not points:
        raise bad(f"Loop has no vertices: {bson_str(v)}")
    if points[0] != points[-1]:
        raise bad(f"Loop is not closed: {bson_str(v)}")
    points = _dedup(points)[:-1]
    if len(points) < 3:
        raise bad(f"Loop must have at least 3 different vertices: {bson_str(v)}")
    loop = S.Loop(points)
    if not skip_validation:
        err = loop.validation_error()
        if err:
            raise bad(f"Loop is not valid: {bson_str(v)} {err}")
    return loop


def _polygon(v: Any, skip_validation: bool = False) -> S.Polygon:
    if type(v) is not list:
        raise bad("Polygon coordinates must be an array")
    loops: list[S.Loop] = []
    for ring in v:
        loop = _loop(ring, skip_validation).normalized()
        if loops and not all(loops[0].contains(p) or loops[0].distance(p) <= S.EPSILON for p in loop.vertices):
            raise bad("Secondary loops not contained by first exterior loop - secondary loops must be holes: "
                      f"{bson_str(ring)} first loop: {bson_str(v[0])}")
        loops.append(loop)
    if not loops:
        raise bad("Polygon has no loops.")
    if not skip_validation:
        for i in range(1, len(loops)):
            for j in range(i + 1, len(loops)):
                if any(S.simple_crossing(a, b, c, d) for a, b in loops[i].edges() for c, d in loops[j].edges()):
                    raise bad(f"Polygon isn't valid: Loop {i} crosses loop {j} {bson_str(v)}")
                if any(loops[i].contains(p) for p in loops[j].vertices) or \
                        any(loops[j].contains(p) for p in loops[i].vertices):
                    raise bad(f"Polygon interior loops cannot be nested: {bson_str(v)}")
    return S.Polygon(loops)


def _big_polygon(v: Any) -> S.Loop:
    if type(v) is not list:
        raise bad("Coordinates of polygon must be an array")
    if len(v) != 1:
        raise bad(f"Only one simple loop is allowed in a big polygon: {bson_str(v)}")
    return _loop(v[0], False)


def _line(v: Any, skip_validation: bool = False) -> list[S.Vec]:
    points = _dedup(_coordinates(v))
    if not skip_validation and len(points) < 2:
        raise bad(f"GeoJSON LineString must have at least 2 vertices: {bson_str(v)}")
    return points


def geojson_type(obj: dict) -> str | None:
    t = obj.get("type")
    return t if type(t) is str and t in GEOJSON_TYPES else None


def parse_geojson(obj: dict, skip_validation: bool = False, nested: bool = False) -> GeometryContainer:
    """GeometryContainer::parseFromGeoJSON."""
    kind = geojson_type(obj)
    if kind is None:
        raise bad(f"unknown GeoJSON type: {bson_str(obj)}")
    coords = obj.get("coordinates")
    if kind == "Point":
        crs = _crs(obj)
        x, y = parse_flat_point(coords, True)
        return GeometryContainer("Point", crs, flat=(x, y), points=[_to_point(x, y)])
    if kind == "LineString":
        return GeometryContainer(kind, _crs(obj), lines=[_line(coords, skip_validation)])
    if kind == "Polygon":
        crs = _crs(obj, allow_strict=True)
        if crs == STRICT_SPHERE:
            return GeometryContainer(kind, crs, big_polygon=_big_polygon(coords))
        return GeometryContainer(kind, crs, polygons=[_polygon(coords, skip_validation)])
    if kind == "MultiPoint":
        crs = _crs(obj)
        points = _coordinates(coords)
        if not points:
            raise bad("MultiPoint coordinates must have at least 1 element")
        return GeometryContainer(kind, crs, points=points)
    if kind == "MultiLineString":
        crs = _crs(obj)
        if type(coords) is not list:
            raise bad("MultiLineString coordinates must be an array")
        lines = [_line(c, skip_validation) for c in coords]
        if not lines:
            raise bad("MultiLineString coordinates must have at least 1 element")
        return GeometryContainer(kind, crs, lines=lines)
    if kind == "MultiPolygon":
        crs = _crs(obj)
        if type(coords) is not list:
            raise bad("MultiPolygon coordinates must be an array")
        polygons = [_polygon(c, skip_validation) for c in coords]
        if not polygons:
            raise bad("MultiPolygon coordinates must have at least 1 element")
        return GeometryContainer(kind, crs, polygons=polygons)
    geometries = obj.get("geometries")
    if type(geometries) is not list:
        raise bad("GeometryCollection geometries must be an array")
    if not geometries:
        raise bad("GeometryCollection geometries must have at least 1 element")
    out = GeometryContainer("GeometryCollection", SPHERE)
    for i, g in enumerate(geometries):
        if type(g) is not dict:
            raise bad(f'Element {i} of "geometries" is not an object')
        t = geojson_type(g)
        if t is None:
            raise bad(f"Unknown GeoJSON type: {bson_str(g)}")
        if t == "GeometryCollection":
            raise bad(f"GeometryCollections cannot be nested: {bson_str(g)}")
        part = parse_geojson(g, skip_validation, nested=True)
        if part.big_polygon is not None:
            raise bad("only polygon supported with strict winding order")
        out.points += part.points
        out.lines += part.lines
        out.polygons += part.polygons
    return out


def parse_from_storage(value: Any) -> GeometryContainer:
    """GeometryContainer::parseFromStorage: a document's geometry."""
    if type(value) not in (list, dict):
        raise bad(f"geo element must be an array or object: {bson_str(value)}")
    if type(value) is list or (value and is_number(next(iter(value.values())))):
        x, y = parse_flat_point(value, True)
        return GeometryContainer("legacy", FLAT, flat=(x, y))
    return parse_geojson(value)


def parse_query_point(value: Any) -> GeometryContainer:
    """GeoParser::parseQueryPoint: a legacy pair (exactly two numbers) or a GeoJSON point."""
    if type(value) not in (list, dict):
        raise bad("Point must be an array or object")
    if type(value) is list or (value and is_number(next(iter(value.values())))):
        x, y = parse_flat_point(value)
        return GeometryContainer("legacy", FLAT, flat=(x, y))
    if value.get("type") != "Point":
        raise bad(f"unknown GeoJSON type: {bson_str(value)}") if geojson_type(value) is None else \
            bad("Point must be a GeoJSON point")
    return parse_geojson(value)


def parse_from_query(name: str, value: Any) -> GeometryContainer:
    """GeometryContainer::parseFromQuery: one geo specifier of $geoWithin / $geoIntersects."""
    if name not in ("$box", "$center", "$polygon", "$centerSphere", "$geometry") or type(value) not in (list, dict):
        raise bad(f"unknown geo specifier: {name}: {bson_str(value)}")
    items = _values(value)
    if name == "$box":
        if len(items) < 2:
            raise bad("Point must be an array or object")
        return GeometryContainer("$box", FLAT, box=Box.of(parse_flat_point(items[0]), parse_flat_point(items[1])))
    if name == "$polygon":
        points = tuple(parse_flat_point(p) for p in items)
        if len(points) < 3:
            raise bad("Polygon must have at least 3 points")
        return GeometryContainer("$polygon", FLAT, flat_polygon=FlatPolygon(points))
    if name in ("$center", "$centerSphere"):
        if not items:
            raise bad("Point must be an array or object")
        center = parse_flat_point(items[0])
        point = _to_point(*center) if name == "$centerSphere" else None
        radius = items[1] if len(items) > 1 else None
        if radius is None or not is_number(radius) or not (_float(radius) >= 0):
            raise bad("radius must be a non-negative number")
        if len(items) > 2:
            raise bad("Only 2 fields allowed for circular region")
        r = _float(radius)
        if name == "$center":
            return GeometryContainer("$center", FLAT, circle=Circle(center, r))
        return GeometryContainer("$centerSphere", SPHERE, cap=Cap(point, r))
    if type(value) is list or (value and is_number(next(iter(value.values())))):
        x, y = parse_flat_point(value)
        return GeometryContainer("legacy", FLAT, flat=(x, y))
    return parse_geojson(value)
