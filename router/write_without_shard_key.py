"""A single-document write with a `sort` that several shards may satisfy: find the first, then write it.

An updateOne (or a bulkWrite update op, multi: false) whose filter does not
pin one shard must change exactly the document its `sort` puts first across
the whole collection.  mongos does this with the server's two-phase write
without shard key (write_without_shard_key_util): phase one asks every
candidate shard for its first matching document in sort order and keeps the
first of those; phase two sends the write to the shard holding it, with the
filter narrowed to that document's `_id` (the original filter kept beside it,
so positional updates still see what it matched).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mongosim.router.collation_targeting import effective_collation
from mongosim.router.request import Request
from mongosim.router.shard_versioning import with_versions
from mongosim.shardsim.collation import command_collator
from mongosim.shardsim.query.sorting import sort_key_fn

if TYPE_CHECKING:
    from mongosim.router.mongos import Router


async def first_in_sort_order(router: Router, req: Request, db: str, coll: str, q: dict, sort: dict,
                              shards: list[str], let: dict | None = None,
                              collation: Any = None) -> tuple[str, dict] | None:
    """(shard, document) of the first document matching `q` in `sort` order on `shards`, or None
    (`collation`: the statement's, which both the shards' finds and the comparison here use)."""
    key = sort_key_fn(sort, command_collator(effective_collation(router.catalog.routing(f"{db}.{coll}"), collation),
                                             None))
    best: tuple[str, dict] | None = None
    for shard in shards:
        cmd: dict[str, Any] = {"find": coll, "filter": q, "sort": sort, "limit": 1, "singleBatch": True}
        if let is not None:
            cmd["let"] = let
        if collation is not None:
            cmd["collation"] = collation
        cmd = with_versions(router, req, db, cmd, shard)
        if req.cmd.get("autocommit") is False:
            reply = await router.txns.run_in_transaction(req, shard, db, cmd)
        else:
            reply = await router.shard(shard).command(db, cmd)
        docs = reply["cursor"]["firstBatch"]
        if docs and (best is None or key(docs[0]) < key(best[1])):
            best = (shard, docs[0])
    return best


def narrowed(q: dict, doc: dict) -> dict:
    """Phase two's filter: the original one and the chosen document's `_id`."""
    return {"$and": [q, {"_id": doc["_id"]}]}
