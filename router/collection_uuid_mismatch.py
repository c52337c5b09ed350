"""mongos completes a CollectionUUIDMismatch a shard could not: the name of the collection that has
the UUID (src/mongo/s/collection_uuid_mismatch.cpp populateCollectionUUIDMismatch).

A shard answers `actualCollection: null` when none of its collections has the UUID, which may only
mean that the collection lives elsewhere (a sharded collection whose chunks are all on other shards).
mongos then asks the database's primary shard — `listCollections` with the filter
`{"info.uuid": <uuid>}` — and puts the name it finds there in the error.  A command error is
completed so; a write command's write errors too, the primary shard being asked at most once per
command (batch_write_exec.cpp: the name found serves every write error of the batch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mongosim.oplog.errors import MongoError

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

CODE = 361  # CollectionUUIDMismatch


async def _actual_collection(router: Router, db: Any, uuid: Any) -> str | None:
    primary = router.catalog.primary_of(db) if isinstance(db, str) else None
    if primary is None or primary not in router.shards:
        return None
    reply = await router.shard(primary).command(db, {"listCollections": 1, "filter": {"info.uuid": uuid},
                                                     "nameOnly": False})
    batch = reply.get("cursor", {}).get("firstBatch") or []
    return batch[0].get("name") if batch else None


async def complete_error(router: Router, err: MongoError) -> MongoError:
    """`err` with its actualCollection filled in from the primary shard where a shard left it null
    (an error of that request, if it fails)."""
    if err.code != CODE or err.extra.get("actualCollection") is not None:
        return err
    try:
        name = await _actual_collection(router, err.extra.get("db"), err.extra.get("collectionUUID"))
    except MongoError as failed:
        return failed
    if name is not None:
        err.extra["actualCollection"] = name
    return err


async def complete_write_errors(router: Router, reply: dict) -> None:
    """The same for the CollectionUUIDMismatch write errors of a write command's reply."""
    errors = reply.get("writeErrors")
    if not errors:
        return
    found: str | None = None
    asked = False
    for e in errors:
        if e.get("code") != CODE or e.get("actualCollection") is not None:
            continue
        if not asked:
            asked = True
            try:
                found = await _actual_collection(router, e.get("db"), e.get("collectionUUID"))
            except MongoError:
                return
        if found is not None:
            e["actualCollection"] = found
