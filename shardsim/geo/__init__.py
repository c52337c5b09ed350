"""Geospatial queries (the server's src/mongo/db/geo/ and index/s2_*, 2d_*): geometry parsing, spherical
and flat geometry, `$geoWithin`/`$geoIntersects`, `$near`/`$nearSphere`, the `$geoNear` stage, and what
2dsphere / 2d indexes check at every write."""

from mongosim.shardsim.geo import geo_expression  # noqa: F401  (registers the geo operators with the matcher)
