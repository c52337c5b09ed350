"""validate: check a collection's documents and indexes, and count the documents its validator rejects.

mongosim's documents and indexes are kept consistent by construction, so the
checks always pass (`valid: true`, no errors, `keysPerIndex` the entries each
index holds); what validate does report is the schema: since 6.2 each
document that fails the collection's validator is counted in
`nNonCompliantDocuments` and logged (id 5363500), with a warning in the reply
— the collection stays valid.  A view is refused (CommandNotSupportedOnView,
through shardsim.views), a missing collection is NamespaceNotFound.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from bson import Int64

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.command_registry import command
from mongosim.shardsim.create_collection import check_namespace
from mongosim.shardsim.operation_context import OpCtx

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

log = logging.getLogger("mongosim.storage")
NON_COMPLIANT = ("Detected one or more documents not compliant with the collection's schema. Check logs for log id "
                 "5363500.")


def _number(n: int) -> Any:
    return n if n < 2**31 else Int64(n)


@command("validate")
def cmd_validate(node: Node, ctx: OpCtx) -> dict:
    name = check_namespace(ctx.db, ctx.cmd["validate"])
    if ctx.cmd.get("full") and ctx.cmd.get("background"):
        raise MongoError("InvalidOptions", "Running the validate command with both { background: true } and "
                                           "{ full: true } is not supported.")
    coll = node.catalog.collection(ctx.db, name)
    if coll is None:
        raise MongoError("NamespaceNotFound", f"Collection '{ctx.db}.{name}' does not exist to validate.")
    docs = list(coll.scan())
    non_compliant = 0
    validator = coll.validator
    for doc in docs:
        if validator is not None and validator.fails(doc):
            non_compliant += 1
            log.warning("Document is not compliant with the collection's schema",
                        extra={"component": "STORAGE", "log_id": 5363500,
                               "attr": {"namespace": coll.ns, "recordId": str(doc.get("_id")),
                                        "reason": validator.error(doc).extra["errInfo"]}})
    keys = {}
    for spec in coll.indexes:
        ix = coll.index_access(spec["name"]) if spec["name"] != "_id_" else None
        keys[spec["name"]] = len(ix.entries) if ix is not None and ix.entries is not None else len(docs)
    return {
        "ns": coll.ns, "uuid": coll.uuid, "nInvalidDocuments": 0, "nNonCompliantDocuments": non_compliant,
        "nrecords": _number(len(docs)), "nIndexes": len(coll.indexes),
        "keysPerIndex": {k: _number(v) for k, v in keys.items()},
        "indexDetails": {spec["name"]: {"valid": True} for spec in coll.indexes},
        "valid": True, "repaired": False, "warnings": [NON_COMPLIANT] if non_compliant else [], "errors": [],
        "extraIndexEntries": [], "missingIndexEntries": [], "corruptRecords": [], "ok": 1.0,
    }
