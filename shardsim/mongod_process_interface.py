"""A node's process interface: what `$lookup`, `$graphLookup` and `$unionWith` read on a mongod.

The server's CommonMongodProcessInterface: a foreign namespace of the aggregate is
read from this node's catalog, as the command's own reads see it (a statement of a
transaction reads its snapshot: `ctx.view`); a view is resolved (`view_catalog.resolve`)
and its pipeline run over its backing collection.  Each namespace is read once per
command.  An equality `$lookup` whose foreignField leads an index (of the query's
collation) is answered by the planner from that index, in index order, as the
server's per-document `$match` is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mongosim.shardsim import get_executor, view_catalog
from mongosim.shardsim.query.matcher import Matcher
from mongosim.shardsim.query.process_interface import MongoProcessInterface

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node
    from mongosim.shardsim.operation_context import OpCtx

__all__ = ["MongodProcessInterface"]


class MongodProcessInterface(MongoProcessInterface):
    def __init__(self, node: Node, ctx: OpCtx) -> None:
        self.node = node
        self.ctx = ctx
        self.in_transaction = ctx.txn is not None
        super().__init__()

    def _read(self, db: str, coll: str, pctx: Any) -> list[dict]:
        resolved = view_catalog.resolve(self.node, db, coll)
        backing, pipeline = resolved if resolved is not None else (coll, [])
        c = self.node.catalog.collection(db, backing)
        if c is None:
            docs: list[dict] = []
        else:
            view = self.ctx.view
            docs = list(view.scan(c)) if view is not None else list(c.docs.values())
        if not pipeline:
            return docs
        from mongosim.shardsim.query.stages import run_pipeline_in

        return list(run_pipeline_in(docs, pipeline, pctx))

    def is_sharded(self, db: str, coll: str) -> bool:
        c = self.node.catalog.collection(db, coll)
        return c is not None and bool(c.shard_key)

    def equality_matches(self, db: str, coll: str, path: str, values: list, flt: dict, pctx: Any
                         ) -> list[dict] | None:
        if (db, coll) in self._docs or pctx.collator is not None:
            return None
        c = self.node.catalog.collection(db, coll)
        if c is None or not any(_leads(spec, path) for spec in c.indexes):
            return None
        if view_catalog.resolve(self.node, db, coll) is not None:
            return None
        return get_executor.matching(c, flt, Matcher(flt, pctx.variables if pctx.checked else None), self.ctx.view)


def _leads(spec: dict, path: str) -> bool:
    key = spec.get("key") or {}
    return bool(key) and next(iter(key)) == path and "collation" not in spec and "partialFilterExpression" not in spec
