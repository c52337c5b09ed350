"""convertToCapped and cloneCollectionAsCapped on a node (the server's catalog/capped_utils.cpp).

cloneCollectionAsCapped copies a collection into a new capped one: the target is created with the
source's options plus `capped: true, size` (and `temp: true` for convertToCapped's temporary
collection) — no index but `_id` —, then every document is inserted in natural order, each its own
insert entry, the capped collection evicting its oldest as it fills.  Documents that could not fit
anyway are skipped first: while the source's data size exceeds twice the capped size, each skipped
document takes four times its size off the excess.

convertToCapped clones into `tmpXXXXX.convertToCapped.<name>` (five random letters or digits), then
renames that over the collection (`dropTarget`, not `stayTemp`): a change stream sees the create,
the inserts into the temporary collection, and a rename over the original.  Through mongos a sharded
collection is refused (cluster_convert_to_capped_cmd.cpp); an unsharded one converts on its primary
shard.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

from bson import Decimal128, Int64

from mongosim.oplog import bsonutil
from mongosim.oplog.errors import MongoError
from mongosim.shardsim import view_catalog
from mongosim.shardsim.capped import normalize_options
from mongosim.shardsim.command_registry import command
from mongosim.shardsim.create_collection import check_namespace, create_collection
from mongosim.shardsim.operation_context import OpCtx
from mongosim.shardsim.query.idl_errors import wrong_type
from mongosim.shardsim.rename_collection import _TMP_ALPHABET, insert_copied, rename_within_database

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node


def _size(cmd: dict, command_name: str) -> int:
    """The IDL's `size: double` (required), as a long."""
    if "size" not in cmd:
        raise MongoError(40414, f"BSON field '{command_name}.size' is missing but a required field")
    size = cmd["size"]
    if isinstance(size, bool) or not isinstance(size, (int, float, Int64, Decimal128)):
        raise wrong_type(f"{command_name}.size", size, ("long", "int", "decimal", "double"))
    number = float(size.to_decimal()) if isinstance(size, Decimal128) else float(size)
    if number != number:
        return 0
    return int(max(min(number, 2.0**63 - 1), -2.0**63))


def clone_as_capped(node: Node, ctx: OpCtx, db: str, source_name: str, target_name: str, size: int,
                    temp: bool) -> Any:
    """Copy `db.source_name` into a new capped `db.target_name` (see the module doc); the new collection."""
    source = node.catalog.collection(db, source_name)
    if source is None:
        if view_catalog.definition(node, db, source_name) is not None:
            raise MongoError("CommandNotSupportedOnView",
                             f"cloneCollectionAsCapped not supported for views: {db}.{source_name}")
        raise MongoError("NamespaceNotFound", f"source collection {db}.{source_name} does not exist")
    if node.catalog.collection(db, target_name) is not None:
        raise MongoError("NamespaceExists", f"cloneCollectionAsCapped failed - destination collection "
                                            f"{db}.{target_name} already exists. source collection: {db}.{source_name}")
    options: dict[str, Any] = {"capped": True, "size": size}
    if "max" in source.options:
        options["max"] = source.options["max"]
    if temp:
        options["temp"] = True
    options.update((k, v) for k, v in source.options.items() if k not in ("capped", "size", "max", "temp"))
    target = create_collection(node, ctx, db, target_name, normalize_options(options))
    docs = [doc for _seq, doc in source.capped.live(source)] if source.capped is not None else list(source.scan())
    sizes = [len(bsonutil.encode(doc)) for doc in docs]
    excess = sum(sizes) - 2 * size  # (what cannot fit anyway: allocatedSpaceGuess is twice the size)
    for doc, n in zip(docs, sizes):
        if excess > 0:
            excess -= 4 * n
            continue
        insert_copied(node, ctx, target, [doc])
    return target


@command("cloneCollectionAsCapped")
def cmd_clone_collection_as_capped(node: Node, ctx: OpCtx) -> dict:
    source = check_namespace(ctx.db, ctx.cmd["cloneCollectionAsCapped"])
    target = ctx.cmd.get("toCollection")
    if target is None:
        raise MongoError(40414, "BSON field 'cloneCollectionAsCapped.toCollection' is missing but a required field")
    if not isinstance(target, str):
        raise wrong_type("cloneCollectionAsCapped.toCollection", target, "string")
    target = check_namespace(ctx.db, target)
    size = _size(ctx.cmd, "cloneCollectionAsCapped")
    clone_as_capped(node, ctx, ctx.db, source, target, size, temp=False)
    return {"ok": 1.0}


@command("convertToCapped")
def cmd_convert_to_capped(node: Node, ctx: OpCtx) -> dict:
    name = check_namespace(ctx.db, ctx.cmd["convertToCapped"])
    size = _size(ctx.cmd, "convertToCapped")
    if node.catalog.db(ctx.db) is None:
        raise MongoError("NamespaceNotFound", f"database {ctx.db} not found")
    while True:
        tmp_name = "tmp" + "".join(secrets.choice(_TMP_ALPHABET) for _ in range(5)) + ".convertToCapped." + name
        if node.catalog.collection(ctx.db, tmp_name) is None:
            break
    tmp = clone_as_capped(node, ctx, ctx.db, name, tmp_name, size, temp=True)
    rename_within_database(node, ctx, tmp, name, drop_target=True, stay_temp=False)
    return {"ok": 1.0}
