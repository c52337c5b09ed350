"""The geo query operators (the server's GeoExpression, GeoNearExpression, GeoMatchExpression).

`{path: {$geoWithin: {<specifier>: ...}}}` (`$within` is its old name) and
`{path: {$geoIntersects: {$geometry: ...}}}` match a document when a geometry at `path`
(each element of an array is tried, then the array as a legacy pair) parses and is
within / touches the query's.  A `$geoWithin` region must be able to contain
(`$box`, `$polygon`, `$center`, `$centerSphere`, a GeoJSON (Multi)Polygon); a
`$geoIntersects` geometry is always taken on the sphere.  They need no index.

`{path: {$near | $nearSphere: <point>, $minDistance, $maxDistance}}` - the point a legacy
pair (or `[x, y, maxDistance]`), a GeoJSON point, or `{$geometry: <GeoJSON point>,
$minDistance, $maxDistance}` - sorts the documents by distance and needs a geo index
(shardsim/geo/geo_near.py).  Units: a GeoJSON point measures meters on the sphere;
`$nearSphere` with a legacy pair radians; `$near` with a legacy pair the plane's units.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.geo.geometry_container import FLAT, SPHERE, STRICT_SPHERE, GeometryContainer
from mongosim.shardsim.geo.geoparser import bad, is_number, parse_from_query, parse_from_storage, parse_query_point
from mongosim.shardsim.query.extensions_callback import register_path_operator
from mongosim.shardsim.query.fmt import bson_str

WITHIN_OPS = frozenset({"$geoWithin", "$within"})
GEO_OPS = frozenset({"$geoWithin", "$within", "$geoIntersects"})
NEAR_OPS = frozenset({"$near", "$nearSphere", "$geoNear"})


def parse_geo(op: str, arg: Any) -> GeometryContainer:
    """GeoExpression::parseFrom: the query geometry of $geoWithin / $geoIntersects."""
    obj = {op: arg}
    if type(arg) is not dict:
        raise bad("geometry must be an object")
    container = None
    for name, value in arg.items():
        if name == "$uniqueDocs":
            continue
        container = parse_from_query(name, value)
    if container is None:
        raise bad("geometry not found")
    within = op in WITHIN_OPS
    if within and not container.supports_contains():
        raise bad(f"$within not supported with provided geometry: {bson_str(obj)}")
    if container.crs == STRICT_SPHERE and container.big_polygon is None:
        raise bad("only polygon supported with strict winding order")
    if not within and container.crs == FLAT:
        projected = container.on_sphere()
        if projected is None:
            raise bad(f"$geoIntersect not supported with provided geometry: {bson_str(obj)}")
        container = projected
    return container


def geo_test(op: str, arg: Any) -> Callable[[Any], bool]:
    """GeoMatchExpression::matchesSingleElement for one value at the path."""
    query = parse_geo(op, arg)
    within = op in WITHIN_OPS
    cache: dict[int, tuple[Any, GeometryContainer | None]] = {}

    def test(v: Any) -> bool:
        if type(v) not in (list, dict):
            return False
        hit = cache.get(id(v))
        if hit is not None and hit[0] is v:
            geometry = hit[1]
        else:
            try:
                geometry = parse_from_storage(v)
            except MongoError:
                geometry = None
            if len(cache) < 4096:
                cache[id(v)] = (v, geometry)
        if geometry is None or geometry.crs == STRICT_SPHERE:
            return False
        return query.contains(geometry) if within else query.intersects(geometry)

    return test


@dataclass
class GeoNearExpression:
    """A parsed $near / $nearSphere."""

    path: str
    centroid: GeometryContainer  # FLAT (a legacy pair) or SPHERE (a GeoJSON point)
    near_sphere: bool
    min_distance: float = 0.0
    max_distance: float = math.inf
    spherical: bool = False  # distances on the sphere
    units_are_radians: bool = False  # (else meters on the sphere, plane units when flat)


def _number(v: Any, code_type: int, code_neg: int, name: str) -> float:
    if not is_number(v) or isinstance(v, bool):
        raise MongoError(code_type, f"{name} must be a number")
    x = float(v.to_decimal()) if hasattr(v, "to_decimal") else float(v)
    if not x >= 0.0:
        raise MongoError(code_neg, f"{name} must be non-negative")
    return x


def parse_near(path: str, ops: dict) -> GeoNearExpression:
    """GeoNearExpression::parseFrom over the operators of `{path: ops}`."""
    centroid = None
    near_sphere = False
    min_d, max_d = 0.0, math.inf
    legacy_form = False
    for name, value in ops.items():
        if name in ("$near", "$nearSphere"):
            if type(value) not in (list, dict):
                raise bad(f"{name} must be an array or object")
            near_sphere = name == "$nearSphere"
            if type(value) is dict and "$geometry" in value:
                continue
            legacy_form = True
            items = list(value.values()) if type(value) is dict else value
            if len(items) == 3 and all(is_number(x) for x in items) and type(value) is list:
                centroid = GeometryContainer("legacy", FLAT, flat=(float(items[0]), float(items[1])))
                max_d = float(items[2])
                if not max_d >= 0:
                    raise MongoError(18522, "max distance must be non-negative")
            else:
                centroid = parse_query_point(value)
        elif name == "$minDistance":
            min_d = _number(value, 16893, 16894, "$minDistance")
        elif name == "$maxDistance":
            max_d = _number(value, 16895, 16896, "$maxDistance")
        elif name == "$uniqueDocs":
            continue
    if centroid is None and not legacy_form:
        op = next((k for k in ops if k in ("$near", "$nearSphere")), None)
        if len(ops) > 1:
            extra = next(k for k in ops if k != op)
            raise bad("geo near accepts just one argument when querying for a GeoJSON point. Extra field found: "
                      f"{extra}: {bson_str(ops[extra])}")
        arg = ops[op]
        for name, value in arg.items():
            if name == "$geometry":
                if type(value) in (list, dict):
                    try:
                        centroid = parse_query_point(value)
                    except MongoError as err:
                        raise bad(f"invalid point in geo near query $geometry argument: {bson_str(value)}  "
                                  f"{err.errmsg}") from None
                    if centroid.crs != SPHERE:
                        raise MongoError(16681, f"$near requires geojson point, given {bson_str(value)}")
            elif name == "$minDistance":
                min_d = _number(value, 16897, 16898, "$minDistance")
            elif name == "$maxDistance":
                max_d = _number(value, 16899, 16900, "$maxDistance")
        if centroid is None:
            raise bad("$geometry is required for geo near query")
    if centroid is None:
        raise bad("invalid point in geo near query")
    expr = GeoNearExpression(path, centroid, near_sphere, min_d, max_d)
    if near_sphere:
        if centroid.crs == FLAT and centroid.on_sphere() is None:
            raise MongoError(17444, "Legacy point is out of bounds for spherical query")
        expr.units_are_radians = centroid.crs != SPHERE
        expr.spherical = True
    else:
        expr.spherical = centroid.crs == SPHERE
    return expr


def find_near(flt: Any, top: bool = True) -> tuple[list[tuple[str, dict]], bool]:
    """The `{path: {$near...}}` clauses of a filter, and whether one is below the top level (or a top-level
    $and)."""
    found: list[tuple[str, dict]] = []
    nested = False
    if type(flt) is not dict:
        return found, nested
    for k, v in flt.items():
        if k == "$and" and type(v) is list:
            for sub in v:
                f, n = find_near(sub, top)
                found += f
                nested = nested or n
        elif k in ("$or", "$nor") and type(v) is list:
            for sub in v:
                f, _n = find_near(sub, False)
                found += f
                nested = nested or bool(f)
        elif not k.startswith("$") and type(v) is dict and v and next(iter(v)).startswith("$"):
            if any(op in NEAR_OPS for op in v):
                found.append((k, v))
                nested = nested or not top
            elif "$elemMatch" in v:
                f, _n = find_near(v["$elemMatch"], False)
                found += f
                nested = nested or bool(f)
    return found, nested




def _compile_geo(op: str, arg: Any):
    return geo_test(op, arg), True


def _always(v: Any) -> bool:
    return True


def _compile_near(op: str, arg: Any):
    """In a filter $near (and its $minDistance / $maxDistance) matches every document: the GEO_NEAR stage
    finds, filters and orders them (GeoNearMatchExpression::matchesSingleElement)."""
    return _always, False


for _name in GEO_OPS:
    register_path_operator(_name, _compile_geo)
for _name in ("$near", "$nearSphere", "$minDistance", "$maxDistance"):
    register_path_operator(_name, _compile_near)
