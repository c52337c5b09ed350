"""What a collection's options make of it: the state derived from `Collection.options`.

The options are what `create` and `collMod` set and `listCollections` shows;
some of them change how the collection behaves on every write, and that is
compiled once here, when the options change (create, collMod, a restart),
rather than looked up on each write: `coll.validator`
(shardsim.document_validation), `coll.capped` (shardsim.capped).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mongosim.shardsim import capped
from mongosim.shardsim.document_validation import validator_for

if TYPE_CHECKING:
    from mongosim.shardsim.catalog import Collection

# CollectionOptions::appendBSON's order: how the server writes options back after a collMod
# (listCollections, the collMod entry's `collectionOptions_old`)
_ORDER = ("capped", "size", "max", "autoIndexId", "temp", "recordPreImages", "changeStreamPreAndPostImages",
          "storageEngine", "indexOptionDefaults", "validator", "validationLevel", "validationAction", "collation",
          "clusteredIndex", "expireAfterSeconds", "viewOn", "pipeline", "idIndex", "timeseries", "encryptedFields")


def canonical(options: dict) -> dict:
    """`options` in the order the server serializes them (fields it does not know last, as they were)."""
    out = {k: options[k] for k in _ORDER if k in options}
    out.update((k, v) for k, v in options.items() if k not in out)
    return out


def refresh(coll: Collection) -> Collection:
    """Recompute the state `coll.options` implies (after they were set or changed)."""
    coll.validator = validator_for(coll.ns, coll.options)
    if coll.capped is None:
        coll.capped = capped.state_for(coll.options)
        if coll.capped is not None and coll.docs:
            capped.rebuild(coll)
    return coll
