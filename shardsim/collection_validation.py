"""`validate` on a node: a collection's records and indexes checked (the server's CollectionValidation).

mongosim's documents are valid BSON by construction and its indexes are
derived from them, so the checks that find corruption on a server find none
here; what the command reports is computed from the collection as it is:

- `nrecords`: its documents; `nInvalidDocuments`: 0 (no corrupt BSON);
- `nNonCompliantDocuments`: documents its `validator` rejects (schema
  validation applied to documents written before the validator, or with
  validationLevel off/moderate), with the server's warning when there are any;
- `keysPerIndex` / `indexDetails` (by index name, as the server's map orders
  them): the keys each index holds (the `_id` index one per document; a
  multikey, sparse or partial index what its key generation gives, a wildcard
  index its `(path, value)` keys plus one metadata key per multikey path; text
  and geo indexes, whose keys mongosim does not generate, one per document) and
  `{valid: true, spec}`.

The reply has the server's fields in its order: `valid, repaired,
repairMode, ns, uuid, warnings, errors, extraIndexEntries,
missingIndexEntries, nInvalidDocuments, nNonCompliantDocuments, nrecords,
corruptRecords, nIndexes, keysPerIndex, indexDetails`.  The option checks
are the server's (full with background, repair on a replica set, metadata
with anything else: InvalidOptions).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.command_registry import command
from mongosim.shardsim.create_collection import check_namespace
from mongosim.shardsim.operation_context import OpCtx
from mongosim.shardsim.query.matcher import Matcher

if TYPE_CHECKING:
    from mongosim.shardsim.catalog import Collection
    from mongosim.shardsim.node import Node

NON_COMPLIANT_WARNING = ("Detected one or more documents not compliant with the collection's schema. "
                         "Check logs for log id 5363500.")


def _bad_options(msg: str) -> MongoError:
    return MongoError("InvalidOptions", f"Running the validate command with {msg}")


def check_options(cmd: dict) -> None:
    """The server's refusals of option combinations (this node is always a replica-set member)."""
    background, full = bool(cmd.get("background")), bool(cmd.get("full"))
    repair, metadata = bool(cmd.get("repair")), bool(cmd.get("metadata"))
    enforce_fast_count = bool(cmd.get("enforceFastCount"))
    check_bson = bool(cmd.get("checkBSONConformance"))
    if background and full:
        raise _bad_options("both { background: true } and { full: true } is not supported.")
    if background and enforce_fast_count:
        raise _bad_options("both { background: true } and { enforceFastCount: true } is not supported.")
    if "checkBSONConformance" in cmd and not check_bson and (full or enforce_fast_count):
        raise MongoError("InvalidOptions", "Cannot explicitly set 'checkBSONConformance: false' with full validation set.")
    if background and repair:
        raise _bad_options("both { background: true } and { repair: true } is not supported.")
    if enforce_fast_count and repair:
        raise _bad_options("both { enforceFastCount: true } and { repair: true } is not supported.")
    if check_bson and repair:
        raise _bad_options("both { checkBSONConformance: true } and { repair: true } is not supported.")
    if repair:
        raise _bad_options("{ repair: true } can only be performed in standalone mode.")
    if metadata and (background or full or enforce_fast_count or check_bson):
        raise _bad_options("{ metadata: true } is not supported with any other options")


def _keys_of(coll: Collection, spec: dict) -> int:
    if spec.get("name") == "_id_":
        return len(coll)
    ix = coll.access.get(spec["name"])
    if ix is not None and ix.wildcard is not None:
        n = sum(len(ix.keys(doc)) for doc in coll.docs.values())
        return n + len(ix.wildcard_multikey)
    if ix is None or not ix.usable:
        return len(coll)
    return sum(len(ix.keys(doc)) for doc in coll.docs.values())


def _non_compliant(coll: Collection) -> int:
    validator = coll.options.get("validator")
    if not validator:
        return 0
    try:
        matcher = Matcher(validator)
    except MongoError:  # a validator this build cannot evaluate: nothing to report
        return 0
    return sum(1 for doc in coll.docs.values() if not matcher.matches(doc))


def validate_collection(coll: Collection) -> dict[str, Any]:
    non_compliant = _non_compliant(coll)
    specs = sorted(coll.indexes, key=lambda s: s["name"])
    return {
        "valid": True, "repaired": False, "repairMode": "None", "ns": coll.ns, "uuid": coll.uuid,
        "warnings": [NON_COMPLIANT_WARNING] if non_compliant else [], "errors": [],
        "extraIndexEntries": [], "missingIndexEntries": [],
        "nInvalidDocuments": 0, "nNonCompliantDocuments": non_compliant, "nrecords": len(coll),
        "corruptRecords": [], "nIndexes": len(specs),
        "keysPerIndex": {s["name"]: _keys_of(coll, s) for s in specs},
        "indexDetails": {s["name"]: {"valid": True, "spec": dict(s)} for s in specs},
        "ok": 1.0,
    }


@command("validate")
def cmd_validate(node: Node, ctx: OpCtx) -> dict:
    name = check_namespace(ctx.db, ctx.cmd["validate"])
    check_options(ctx.cmd)
    coll = node.catalog.collection(ctx.db, name)
    if coll is None:
        views = node.catalog.collection(ctx.db, "system.views")
        if views is not None and views.get(f"{ctx.db}.{name}") is not None:
            raise MongoError("CommandNotSupportedOnView", "Cannot validate a view")
        raise MongoError("NamespaceNotFound", f"Collection '{ctx.db}.{name}' does not exist to validate.")
    return validate_collection(coll)  # (full, background, metadata: the same report here)
