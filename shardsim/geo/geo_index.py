"""What a `2dsphere` or `2d` index demands of a document's geometry (the server's S2 and 2d key
generation: getS2Keys, get2DKeys), and the locations a `$near` / `$geoNear` measures.

**2dsphere** (index version 3): the values at the field's path - arrays along the path
expanded, an array at its end kept whole (it may be a legacy pair) - must each parse as a
geometry (`geoparser.parse_from_storage`), a legacy pair being a valid longitude and
latitude; a missing field, null, undefined or `[]` is no geometry (the index is sparse).
Anything else refuses the write: 16755 "Can't extract geo keys: <document>  <reason>".

**2d**: the location - a pair `[x, y]` / `{a: x, b: y}`, or an array or object of such
pairs - must be two numbers within the index's `[min, max)` (default [-180, 180)).

The keys themselves (S2 cell ids, geohashes) are not kept: geo predicates are checked on
the documents (see geo_near.py), which answers the same documents.
"""

from __future__ import annotations

from typing import Any

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.geo.geometry_container import FLAT, GeometryContainer
from mongosim.shardsim.geo.geoparser import is_number, parse_from_storage
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.values import MISSING


def values_along(doc: Any, parts: list[str], i: int = 0) -> list:
    """extractAllElementsAlongPath without expanding an array at the end of the path."""
    if i == len(parts):
        return [doc]
    if isinstance(doc, dict):
        v = doc.get(parts[i], MISSING)
        if v is MISSING:
            return []
        if type(v) is list and i + 1 < len(parts):
            out = []
            for e in v:
                out += values_along(e, parts, i + 1)
            return out
        return values_along(v, parts, i + 1)
    return []


def _num(x) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else repr(x)


class GeoIndex:
    """The geo fields of an index spec and the checks they make."""

    def __init__(self, spec: dict) -> None:
        self.spec = spec
        self.sphere_fields = [f for f, v in spec["key"].items() if v == "2dsphere"]
        self.flat_fields = [f for f, v in spec["key"].items() if v == "2d"]
        self.min = float(spec.get("min", -180.0))
        self.max = float(spec.get("max", 180.0))

    @property
    def field(self) -> str:
        return (self.sphere_fields or self.flat_fields)[0]

    def check(self, doc: dict) -> None:
        for path in self.sphere_fields:
            self.sphere_geometries(doc, path)
        for path in self.flat_fields:
            self.flat_locations(doc, path)

    def sphere_geometries(self, doc: dict, path: str) -> list[GeometryContainer]:
        values = values_along(doc, path.split("."))
        if len(values) == 1 and (values[0] is None or values[0] == [] or values[0] == {}):
            return []
        out = []
        for v in values:
            try:
                g = parse_from_storage(v)
                if g.crs == FLAT and g.on_sphere() is None:
                    lng, lat = g.flat
                    raise MongoError("BadValue", f"longitude/latitude is out of bounds, lng: {lng:g} lat: {lat:g}")
            except MongoError as err:
                raise MongoError(16755, f"Can't extract geo keys: {bson_str(doc)}  {err.errmsg}") from None
            out.append(g)
        return out

    def flat_locations(self, doc: dict, path: str) -> list[tuple[float, float]]:
        out = []
        for geo in values_along(doc, path.split(".")):
            if type(geo) not in (list, dict) or not geo:
                continue
            items = list(geo.values()) if type(geo) is dict else geo
            single = is_number(items[0])
            for loc in ([geo] if single else items):
                if not single:
                    if type(loc) not in (list, dict):
                        raise MongoError(16804, "location object expected, location array not in correct format")
                    if not loc:
                        continue
                out.append(self._point(loc, doc))
        return out

    def _point(self, loc: Any, doc: dict) -> tuple[float, float]:
        items = list(loc.values()) if type(loc) is dict else list(loc)
        caused = f" :: caused by :: {bson_str(doc)}"
        if not items:
            raise MongoError(13067, "geo field is empty" + caused)
        if len(items) < 2:
            raise MongoError(13068, "geo field only has 1 element" + caused)
        x, y = items[0], items[1]
        if not (is_number(x) and is_number(y)) or isinstance(x, bool) or isinstance(y, bool):
            raise MongoError(13026, "geo values must be 'legacy coordinate pairs' for 2d indexes" + caused)
        fx, fy = float(x), float(y)
        if not (self.min <= fx < self.max and self.min <= fy < self.max):
            raise MongoError(13027, f"point not in interval of [ {_num(self.min)}, {_num(self.max)} )" + caused)
        return fx, fy
