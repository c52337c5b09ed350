"""Geospatial queries through pymongo, both topologies (and a collection sharded over two shards):
2dsphere and 2d indexes, `$geoWithin`, `$geoIntersects`, `$near`/`$nearSphere`, `$geoNear`, their units,
their errors and their plans."""

from __future__ import annotations

import math

import pytest
from pymongo.errors import OperationFailure, WriteError

R = 6378100.0  # meters (the server's kRadiusOfEarthInMeters)
DEG = math.pi / 180


def point(lng, lat):
    return {"type": "Point", "coordinates": [lng, lat]}


SQUARE = {"type": "Polygon", "coordinates": [[[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]]]}


@pytest.fixture
def places(client, request):
    db = client[f"geo_{request.node.name.split('[')[0][-24:]}"]
    client.drop_database(db.name)
    c = db.places
    c.create_index([("loc", "2dsphere")])
    c.insert_many([{"_id": i, "loc": point(i, 0), "kind": "even" if i % 2 == 0 else "odd"} for i in range(-5, 16)])
    c.insert_many([
        {"_id": "line", "loc": {"type": "LineString", "coordinates": [[2, 2], [3, 3]]}},
        {"_id": "crossing", "loc": {"type": "LineString", "coordinates": [[5, -5], [5, 20]]}},
        {"_id": "poly", "loc": {"type": "Polygon", "coordinates": [[[1, 1], [2, 1], [2, 2], [1, 2], [1, 1]]]}},
        {"_id": "legacy", "loc": [4.5, 4.5]},
        {"_id": "multi", "loc": {"type": "MultiPoint", "coordinates": [[20, 20], [8, 8]]}},
        {"_id": "none"},
        {"_id": "null", "loc": None},
    ])
    return c


def ids(cursor) -> list:
    return sorted(str(d["_id"]) for d in cursor)


def test_geo_within_polygon_and_center_sphere(places):
    within = ids(places.find({"loc": {"$geoWithin": {"$geometry": SQUARE}}}))
    assert within == sorted(["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "line", "poly", "legacy"])
    # a cap of 1.5 degrees around (0, 0): points only
    got = ids(places.find({"loc": {"$geoWithin": {"$centerSphere": [[0, 0], 1.5 * DEG]}}}))
    assert got == ["-1", "0", "1"]


def test_legacy_shapes_match_points_only(places):
    assert ids(places.find({"loc": {"$geoWithin": {"$box": [[3, -1], [5, 5]]}}})) == ["3", "4", "5", "legacy"]
    assert ids(places.find({"loc": {"$geoWithin": {"$center": [[0, 0], 2]}}})) == ["-1", "-2", "0", "1", "2"]
    tri = [[0, -1], [6, -1], [3, 5]]
    assert ids(places.find({"loc": {"$geoWithin": {"$polygon": tri}}})) == ["1", "2", "3", "4", "5"]


def test_geo_intersects(places):
    line = {"type": "LineString", "coordinates": [[1.5, -1], [1.5, 3]]}
    assert ids(places.find({"loc": {"$geoIntersects": {"$geometry": line}}})) == ["poly"]
    got = ids(places.find({"loc": {"$geoIntersects": {"$geometry": SQUARE}}}))
    assert "crossing" in got and "multi" in got and "20" not in got and "11" not in got


def test_near_orders_by_meters_with_min_and_max(places):
    near = {"$geometry": point(3.2, 0), "$maxDistance": 2.5 * DEG * R, "$minDistance": 0.1 * DEG * R}
    got = [d["_id"] for d in places.find({"loc": {"$near": near}, "kind": {"$exists": True}})]
    assert got == [3, 4, 2, 5, 1]
    first = places.find_one({"loc": {"$nearSphere": [14.9, 0]}})
    assert first["_id"] == 15


def test_geo_near_stage_distances_and_options(places):
    out = list(places.aggregate([
        {"$geoNear": {"near": point(0, 0), "distanceField": "dist.m", "maxDistance": 2.1 * DEG * R,
                      "query": {"kind": "even"}, "includeLocs": "where"}},
    ]))
    assert [d["_id"] for d in out] == [0, -2, 2] or [d["_id"] for d in out] == [0, 2, -2]
    assert out[0]["dist"]["m"] == 0 and out[1]["dist"]["m"] == pytest.approx(2 * DEG * R, rel=1e-9)
    assert out[1]["where"] == out[1]["loc"]
    rad = list(places.aggregate([{"$geoNear": {"near": [0, 0], "spherical": True, "distanceField": "d",
                                               "maxDistance": 1.01 * DEG}}]))
    assert sorted(d["_id"] for d in rad) == [-1, 0, 1] and rad[1]["d"] == pytest.approx(DEG)
    km = list(places.aggregate([{"$geoNear": {"near": point(0, 0), "distanceField": "d",
                                              "distanceMultiplier": 0.001}}, {"$limit": 2}]))
    assert km[1]["d"] == pytest.approx(DEG * R / 1000, rel=1e-9)


def test_flat_2d_index(client, request):
    db = client[f"geo2d_{request.node.name.split('[')[0][-20:]}"]
    client.drop_database(db.name)
    c = db.grid
    c.create_index([("p", "2d")])
    c.insert_many([{"_id": i, "p": [i % 5, i // 5]} for i in range(25)])
    got = [d["_id"] for d in c.find({"p": {"$near": [2.1, 2.1], "$maxDistance": 1.0}})]
    assert got[0] == 12 and sorted(got[1:]) == [13, 17]  # (7 and 11 are 1.1 away)
    out = list(c.aggregate([{"$geoNear": {"near": [0, 0], "distanceField": "d"}}, {"$limit": 3}]))
    assert [d["_id"] for d in out][0] == 0 and out[1]["d"] == pytest.approx(1.0)
    with pytest.raises(WriteError) as e:
        c.insert_one({"_id": 99, "p": [200, 0]})
    assert e.value.code == 13027
    with pytest.raises(WriteError) as e:
        c.insert_one({"_id": 98, "p": ["a", "b"]})  # (not numbers first: a list of locations, of which "a" is none)
    assert e.value.code == 16804
    with pytest.raises(WriteError) as e:
        c.insert_one({"_id": 97, "p": [["a", 1]]})
    assert e.value.code == 13026


def test_writes_refuse_bad_geometry(places):
    cases = [
        ({"type": "Point", "coordinates": [200, 0]}, "longitude/latitude is out of bounds, lng: 200 lat: 0"),
        ({"type": "Point", "coordinates": ["a", 0]}, "Point must only contain numeric elements"),
        ({"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1]]]}, "Loop is not closed"),
        ({"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]]}, "Edges 0 and 2 cross"),
        ({"type": "LineString", "coordinates": [[0, 0]]}, "GeoJSON LineString must have at least 2 vertices"),
        ({"type": "Blob", "coordinates": [0, 0]}, "unknown GeoJSON type"),
        ("here", "geo element must be an array or object"),
    ]
    for loc, reason in cases:
        with pytest.raises(WriteError) as e:
            places.insert_one({"_id": "bad", "loc": loc})
        assert e.value.code == 16755 and e.value.details["errmsg"].startswith("Can't extract geo keys: {")
        assert reason in e.value.details["errmsg"], loc
    with pytest.raises(WriteError) as e:
        places.update_one({"_id": 1}, {"$set": {"loc.coordinates": [0, 95]}})
    assert e.value.code == 16755
    assert places.find_one({"_id": 1})["loc"] == point(1, 0)


def test_index_build_refuses_bad_documents(client, request):
    db = client[f"geob_{request.node.name.split('[')[0][-20:]}"]
    client.drop_database(db.name)
    db.c.insert_many([{"_id": 1, "loc": point(1, 1)}, {"_id": 2, "loc": [500, 0]}])
    with pytest.raises(OperationFailure) as e:
        db.c.create_index([("loc", "2dsphere")])
    assert e.value.code == 16755
    info = db.c.index_information()
    assert "loc_2dsphere" not in info
    db.c.delete_one({"_id": 2})
    db.c.create_index([("loc", "2dsphere")])
    spec = [s for s in db.c.list_indexes() if s["name"] == "loc_2dsphere"][0]
    assert spec["2dsphereIndexVersion"] == 3


def test_query_errors(places):
    db = places.database
    db.plain.insert_one({"loc": [0, 0]})
    with pytest.raises(OperationFailure) as e:
        list(db.plain.find({"loc": {"$near": [0, 0]}}))
    assert e.value.code == 291 and e.value.details["errmsg"].endswith("unable to find index for $geoNear query")
    cases = [
        ({"loc": {"$geoWithin": {"$geometry": point(0, 0)}}}, 2, "$within not supported with provided geometry"),
        ({"loc": {"$geoWithin": {"$foo": [0, 0]}}}, 2, "unknown geo specifier"),
        ({"loc": {"$near": {"$geometry": point(0, 0), "$maxDistance": -1}}}, 16900, "$maxDistance must be non-negative"),
        ({"loc": {"$near": {"$geometry": [0, 0]}}}, 16681, "$near requires geojson point"),
        ({"$or": [{"loc": {"$near": [0, 0]}}, {"a": 1}]}, 2, "geoNear must be top-level expr"),
        ({"loc": {"$nearSphere": [0, 100]}}, 17444, "Legacy point is out of bounds for spherical query"),
    ]
    for flt, code, msg in cases:
        with pytest.raises(OperationFailure) as e:
            list(places.find(flt))
        assert e.value.code == code and msg in e.value.details["errmsg"], flt
    with pytest.raises(OperationFailure) as e:
        places.count_documents({"loc": {"$near": [0, 0]}})
    assert e.value.details["errmsg"] == "$geoNear, $near, and $nearSphere are not allowed in this context"
    with pytest.raises(OperationFailure) as e:
        list(places.aggregate([{"$match": {}}, {"$geoNear": {"near": [0, 0], "distanceField": "d"}}]))
    assert e.value.code == 40603
    with pytest.raises(OperationFailure) as e:
        list(places.aggregate([{"$geoNear": {"near": [0, 0]}}]))
    assert e.value.code == 16606
    with pytest.raises(OperationFailure) as e:
        list(places.aggregate([{"$geoNear": {"near": [0, 0], "distanceField": "d", "limit": 3}}]))
    assert e.value.code == 50858


def test_explain_shows_geo_near(places):
    plan = places.find({"loc": {"$near": {"$geometry": point(0, 0)}}}).explain()
    wp = plan["queryPlanner"]["winningPlan"]
    wp = wp["shards"][0]["winningPlan"] if "shards" in wp else wp
    while wp["stage"] in ("SHARDING_FILTER", "FETCH"):
        wp = wp["inputStage"]
    assert wp["stage"] == "GEO_NEAR_2DSPHERE" and wp["indexName"] == "loc_2dsphere"
    assert wp["keyPattern"] == {"loc": "2dsphere"}


def test_sharded_near_merges_by_distance(sharded_client):
    db = sharded_client.geo_sharded
    sharded_client.drop_database(db.name)
    sharded_client.admin.command("enableSharding", db.name)
    sharded_client.admin.command("shardCollection", f"{db.name}.p", key={"_id": 1})
    sharded_client.admin.command("split", f"{db.name}.p", middle={"_id": 50})
    shards = [s["_id"] for s in sharded_client.admin.command("listShards")["shards"]]
    sharded_client.admin.command("moveChunk", f"{db.name}.p", find={"_id": 60}, to=shards[1])
    c = db.p
    c.create_index([("loc", "2dsphere")])
    # _id i at longitude (i * 37) % 100 / 10: neighbours by distance alternate between the shards
    c.insert_many([{"_id": i, "loc": point((i * 37) % 100 / 10, 0)} for i in range(100)])
    expect = sorted(range(100), key=lambda i: (abs((i * 37) % 100 / 10 - 5.051), i))
    got = [d["_id"] for d in c.find({"loc": {"$near": {"$geometry": point(5.051, 0)}}}).limit(12)]
    assert got == expect[:12] and {i for i in got if i >= 50} and {i for i in got if i < 50}
    out = list(c.aggregate([{"$geoNear": {"near": point(5.051, 0), "distanceField": "d"}}, {"$limit": 12}]))
    assert [d["_id"] for d in out] == expect[:12]
    assert [d["d"] for d in out] == sorted(d["d"] for d in out)
