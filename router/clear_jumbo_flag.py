"""clearJumboFlag: clear a chunk's `jumbo` flag (cluster_clear_jumbo_flag_cmd.cpp and the config server's
ShardingCatalogManager::clearJumboFlag).

`{clearJumboFlag: <ns>, find: <shard key query>}` names the chunk holding a shard key; `bounds: [min, max]`
names a chunk by its exact bounds.  The router checks, in this order: the collection is sharded
(NamespaceNotSharded), `bounds` has two elements, not both `find` and `bounds`, one of them (InvalidOptions);
a `find` without an equality on the whole shard key is 51260, bounds that are no chunk's 51261.  The config
server then finds the chunk (51262 if gone) and, if it is jumbo, `$unset`s the flag and gives it the next
major version (so its shard's placement version moves and stale routers refresh); a chunk that is not
jumbo is left as it is.  mongosim's balancer never marks a chunk jumbo; a flag set by hand is cleared.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bson import Timestamp

from mongosim.oplog.errors import MongoError
from mongosim.router.command_registry import router_command
from mongosim.router.merge_chunks import (bound_key, chunk_docs, collection_version, idl_field, idl_ns, is_shard_key,
                                          normalize, range_str, sharded_routing)
from mongosim.router.request import Request
from mongosim.router.sharding import admin_only, config_write
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.idl_errors import wrong_type

if TYPE_CHECKING:
    from mongosim.router.mongos import Router


@router_command("clearJumboFlag")
async def cmd_clear_jumbo_flag(router: Router, req: Request) -> dict:
    admin_only(req)
    ns = idl_ns(req)
    find = idl_field(req, "find", dict, "object")
    bounds = idl_field(req, "bounds", list, "array")
    for i, b in enumerate(bounds or ()):
        if not isinstance(b, dict):
            raise wrong_type(f"{req.name}.bounds.{i}", b, "object")
    async with router._ddl_lock:
        router.refresh_catalog()
        r = sharded_routing(router, ns)
        if bounds is not None and len(bounds) != 2:
            raise MongoError("InvalidOptions", "bounds can only have exactly 2 elements")
        if find is not None and bounds is not None:
            raise MongoError("InvalidOptions", "cannot specify bounds and find at the same time")
        if find is None and bounds is None:
            raise MongoError("InvalidOptions", "need to specify find or bounds")
        if find is not None:
            values = r.pattern.extract_from_query(find)
            if values is None:
                raise MongoError(51260, f"no shard key found in chunk query {bson_str(find)}")
            chunk = r.chunk_for(values)
        else:
            lo, hi = bounds
            if not (is_shard_key(r.pattern, lo) and is_shard_key(r.pattern, hi)):
                raise MongoError(51261, f"no chunk found with the shard key bounds {range_str(lo, hi)}")
            lo, hi = normalize(r.pattern, lo), normalize(r.pattern, hi)
            chunk = r.chunk_for(r.pattern.values_of_bound(lo))
            if chunk.min_key != bound_key(r, lo) or chunk.max_key != bound_key(r, hi):
                raise MongoError(51261, f"no chunk found with the shard key bounds {range_str(lo, hi)}")
        docs = chunk_docs(router, r)
        doc = next((d for d in docs
                    if bound_key(r, d["min"]) == chunk.min_key and bound_key(r, d["max"]) == chunk.max_key), None)
        if doc is None:
            raise MongoError(51262, f"Unable to locate chunk {range_str(chunk.min, chunk.max)} from ns: {ns}")
        if doc.get("jumbo") is True:
            version = collection_version(docs)
            await config_write(router, {"update": "chunks", "updates": [{"q": {"_id": doc["_id"]}, "u": {
                "$unset": {"jumbo": ""}, "$set": {"lastmod": Timestamp(version.time + 1, 0)}}}]})
            router.refresh_catalog()
    return {"ok": 1.0}
