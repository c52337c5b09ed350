"""How pipeline stages read collections other than their input (the server's MongoProcessInterface).

`$lookup`, `$graphLookup` and `$unionWith` name a foreign collection of the same
database.  They ask the pipeline's process interface for its documents:

- `documents(db, coll, pctx)`: the namespace's documents as a read would see them —
  a view's through its pipeline (the view definitions resolve as the server's
  ResolvedView does: the view's pipeline runs first, then the stage's own match and
  sub-pipeline) — computed once per command and shared by every stage that reads it;
- `is_sharded(db, coll)`: a stage refuses a sharded foreign collection inside a
  multi-document transaction, as 8.0 does.

A node answers from its catalog (shardsim/mongod_process_interface.py: indexes
serve the equality `$lookup`); mongos gathers each foreign namespace from the
shards that own it before the pipeline runs and answers from memory
(router/mongos_process_interface.py), as `InMemoryProcessInterface` here does for
tests.
"""

from __future__ import annotations

from typing import Any

from mongosim.oplog.errors import MongoError

__all__ = ["MongoProcessInterface", "InMemoryProcessInterface", "MAX_VIEW_DEPTH"]

MAX_VIEW_DEPTH = 20


class MongoProcessInterface:
    """The interface; `in_transaction` is set for a statement of a multi-document transaction."""

    in_transaction = False

    def __init__(self) -> None:
        self._docs: dict[tuple[str, str], list[dict]] = {}

    def documents(self, db: str, coll: str, pctx: Any) -> list[dict]:
        """The namespace's documents, read (`_read`) once per command."""
        key = (db, coll)
        found = self._docs.get(key)
        if found is None:
            found = self._docs[key] = self._read(db, coll, pctx)
        return found

    def _read(self, db: str, coll: str, pctx: Any) -> list[dict]:  # pragma: no cover - interface
        raise NotImplementedError

    def is_sharded(self, db: str, coll: str) -> bool:
        return False

    def equality_matches(self, db: str, coll: str, path: str, values: list, flt: dict, pctx: Any
                         ) -> list[dict] | None:
        """The documents of a collection matching `flt`, an equality of `path` with one of `values`, when
        an index can find them (in its order, as the server's plan returns them); None when the caller
        should match `documents` itself."""
        return None

    def check_foreign(self, stage: str, db: str, coll: str) -> None:
        """$lookup and $graphLookup refuse a sharded foreign collection in a transaction (8.0's
        foreignShardedLookupAllowed)."""
        if self.in_transaction and self.is_sharded(db, coll):
            code = 3904801 if stage == "$graphLookup" else 3904800
            raise MongoError(code, f"Cannot run {stage} with a sharded foreign collection in a transaction")


class InMemoryProcessInterface(MongoProcessInterface):
    """Collections held in memory: `{(db, coll): [docs]}`, views `{(db, name): (backing, pipeline)}`."""

    def __init__(self, collections: dict | None = None, views: dict | None = None, sharded: set | None = None,
                 in_transaction: bool = False) -> None:
        self.collections = dict(collections or {})
        self.views = dict(views or {})
        self.sharded = set(sharded or ())
        self.in_transaction = in_transaction
        super().__init__()

    def _read(self, db: str, coll: str, pctx: Any) -> list[dict]:
        pipelines: list[list] = []
        name = coll
        while (db, name) in self.views:
            if len(pipelines) >= MAX_VIEW_DEPTH:
                raise MongoError("ViewDepthLimitExceeded",
                                 f"View depth too deep or view cycle detected; maximum depth is {MAX_VIEW_DEPTH}")
            name, pipeline = self.views[(db, name)]
            pipelines.append(list(pipeline))
        docs = list(self.collections.get((db, name), ()))
        if not pipelines:
            return docs
        from mongosim.shardsim.query.stages import run_pipeline_in

        stages = [stage for p in reversed(pipelines) for stage in p]
        return list(run_pipeline_in(docs, stages, pctx))

    def is_sharded(self, db: str, coll: str) -> bool:
        return (db, coll) in self.sharded
