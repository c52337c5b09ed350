"""Clustered collections: documents stored in `_id` order, the `_id` index being the collection itself.

`create {clusteredIndex: {key: {_id: 1}, unique: true, name?}}` (clustered_util):
`unique` must be true (5979700), the key `{_id: 1}` (InvalidIndexSpecificationOption),
and the spec is stored as ClusteredIndexSpec serializes it, `{v: 2, key, name, unique}`
(`name` defaults to `_id_`).  There is then no separate `_id` index: listIndexes
shows the clustered index with `clustered: true`, listCollections has no
`idIndex`, and the create oplog entry carries no `idIndex` either.
`expireAfterSeconds` (a TTL on the `_id` dates) is only accepted with a clustered
index or on a time-series collection.  A time-series buckets collection is
clustered with the legacy form `clusteredIndex: true`.
"""

from __future__ import annotations

from typing import Any

from bson import Int64

from mongosim.oplog.errors import MongoError


def normalize_options(opts: dict) -> dict:
    """The clusteredIndex and expireAfterSeconds checks of `create`; the spec as stored."""
    if "expireAfterSeconds" in opts and "clusteredIndex" not in opts and "timeseries" not in opts:
        raise MongoError("InvalidOptions", "'expireAfterSeconds' is only supported on time-series collections or "
                                           "when the 'clusteredIndex' option is specified")
    if "expireAfterSeconds" in opts:
        ttl = opts["expireAfterSeconds"]
        if isinstance(ttl, bool) or not isinstance(ttl, (int, float, Int64)):
            raise MongoError("TypeMismatch", "BSON field 'create.expireAfterSeconds' is the wrong type, expected type "
                                             "'[long, int, decimal, double]'")
        if ttl < 0:
            raise MongoError("InvalidOptions", "TTL index 'expireAfterSeconds' option must be within an acceptable "
                                               "range, try a non-negative value")
    spec = opts.get("clusteredIndex")
    if spec is None or spec is True:
        return opts
    if not isinstance(spec, dict):
        raise MongoError("TypeMismatch", "BSON field 'create.clusteredIndex' is the wrong type, expected types "
                                         "'[bool, object]'")
    for field in spec:
        if field not in ("key", "unique", "name", "v"):
            raise MongoError(40415, f"BSON field 'ClusteredIndexSpec.{field}' is an unknown field.")
    if "key" not in spec:
        raise MongoError(40414, "BSON field 'ClusteredIndexSpec.key' is missing but a required field")
    if "unique" not in spec:
        raise MongoError(40414, "BSON field 'ClusteredIndexSpec.unique' is missing but a required field")
    if spec["unique"] is not True:
        raise MongoError(5979700, "The clusteredIndex option requires unique: true to be specified")
    if spec["key"] != {"_id": 1}:
        raise MongoError("InvalidIndexSpecificationOption", "The clusteredIndex option is only supported for key: "
                                                            "{_id: 1}")
    if "name" in spec and not isinstance(spec["name"], str):
        raise MongoError("TypeMismatch", "BSON field 'ClusteredIndexSpec.name' is the wrong type, expected type "
                                         "'string'")
    stored = {"v": int(spec.get("v", 2)), "key": {"_id": 1}, "name": spec.get("name", "_id_"), "unique": True}
    return {k: (stored if k == "clusteredIndex" else v) for k, v in opts.items()}


def is_clustered(options: dict) -> bool:
    return "clusteredIndex" in options


def index_specs(options: dict, indexes: list[dict]) -> list[dict]:
    """listIndexes: the clustered index (with `clustered: true`) in place of the `_id` index (none for a
    time-series buckets collection, clustered in the legacy form)."""
    spec = options.get("clusteredIndex")
    if spec is None:
        return [dict(s) for s in indexes]
    if spec is True:
        return [dict(s) for s in indexes if s.get("name") != "_id_"]
    clustered: dict[str, Any] = ({**spec, "clustered": True} if isinstance(spec, dict)
                                 else {"v": 2, "key": {"_id": 1}, "name": "_id_", "unique": True, "clustered": True})
    return [clustered if s.get("name") == "_id_" else dict(s) for s in indexes]
