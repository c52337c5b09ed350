"""checkMetadataConsistency: mongos compares the config server's metadata with what each shard holds.

`{checkMetadataConsistency: 1}` on a database checks its collections
(on `admin`, every database); `{checkMetadataConsistency: "<coll>"}` one
collection.  The answer is a cursor (on `<db>.$cmd.aggregate`) of
inconsistencies, empty when the metadata is consistent.  mongosim looks for
the two a cluster of its own can get into:

* MisplacedCollection: an unsharded collection on a shard other than its
  database's primary shard;
* CollectionUUIDMismatch: a shard's copy of a sharded collection with another
  UUID than the config server's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mongosim.oplog.errors import MongoError
from mongosim.router.command_registry import router_command
from mongosim.router.commands_crud import _serve
from mongosim.router.request import GENERIC_FIELDS, Request

if TYPE_CHECKING:
    from mongosim.router.mongos import Router

_OPTIONS = ("checkIndexes", "cursor")


def _inconsistencies(router: Router, db: str, only: str | None) -> list[dict]:
    out: list[dict] = []
    primary = router.catalog.primary_of(db)
    for shard, remote in sorted(router.shards.items()):
        database = remote.node.catalog.db(db)
        if database is None:
            continue
        for name, coll in database.collections.items():
            if name.startswith("system.") or (only is not None and name != only):
                continue
            routing = router.catalog.routing(f"{db}.{name}")
            if routing is None and shard != primary:
                out.append({"type": "MisplacedCollection",
                            "description": "Unsharded collection found on shard different from database primary "
                                           "shard",
                            "details": {"namespace": f"{db}.{name}", "shard": shard, "localUUID": coll.uuid}})
            elif routing is not None and bytes(coll.uuid) != bytes(routing.uuid):
                out.append({"type": "CollectionUUIDMismatch",
                            "description": "Found collection on non primary shard with mismatching UUID",
                            "details": {"namespace": f"{db}.{name}", "shard": shard, "localUUID": coll.uuid,
                                        "uuid": routing.uuid}})
    return out


@router_command("checkMetadataConsistency")
async def cmd_check_metadata_consistency(router: Router, req: Request) -> dict:
    target: Any = req.cmd["checkMetadataConsistency"]
    for key in req.cmd:
        if key != "checkMetadataConsistency" and key not in GENERIC_FIELDS and key not in _OPTIONS:
            raise MongoError(40415, f"BSON field 'checkMetadataConsistency.{key}' is an unknown field.")
    if "checkIndexes" in req.cmd and not isinstance(req.cmd["checkIndexes"], bool):
        raise MongoError("TypeMismatch", "BSON field 'checkMetadataConsistency.checkIndexes' is the wrong type, "
                                         "expected type 'bool'")
    only = None
    if isinstance(target, str):
        only = target
    elif target != 1:
        raise MongoError("InvalidNamespace", "Invalid namespace specified for checkMetadataConsistency: "
                                             f"{target!r}")
    if req.db == "admin":
        if only is not None:
            raise MongoError("InvalidNamespace", "Collection level checkMetadataConsistency is not allowed on the "
                                                 "admin database")
        dbs = sorted({name for remote in router.shards.values() for name in remote.node.catalog.databases
                      if name not in ("admin", "config", "local")})
    else:
        dbs = [req.db]
    found = [i for db in dbs for i in _inconsistencies(router, db, only)]
    batch_size = (req.cmd.get("cursor") or {}).get("batchSize")
    return _serve(router, f"{req.db}.$cmd.aggregate", found, batch_size)
