"""What the stages of one pipeline share: the server's ExpressionContext for a pipeline.

A pipeline compiles once into stage functions (`stages.compile_pipeline`); the
context it compiles in carries

- `variables`: the command's variables ($$NOW, $$CLUSTER_TIME, `let`), the dict the
  compiled expressions read when they run (None for an unchecked pipeline: unit
  tests and update pipelines, where `$$names` are not checked when compiled);
- `collator`: strings compare under it (None: the simple collation);
- `process`: the process interface (`process_interface.MongoProcessInterface`) through
  which `$lookup`, `$graphLookup` and `$unionWith` read other collections;
- `db`: the database the pipeline runs in (foreign collections are named in it);
- `depth` and `inside`: how deep in sub-pipelines ($lookup, $facet, $unionWith) the
  pipeline stands, and in which, for the stages a sub-pipeline refuses.

A sub-pipeline gets a context of its own (`sub`), one level deeper: the server allows
20 levels (MaxSubPipelineDepthExceeded beyond).
"""

from __future__ import annotations

from typing import Any

from mongosim.oplog.errors import MongoError

__all__ = ["PipelineContext", "MAX_SUB_PIPELINE_DEPTH"]

MAX_SUB_PIPELINE_DEPTH = 20  # the server's internalMaxSubPipelineViewDepth / kMaxSubPipelineDepth


class PipelineContext:
    __slots__ = ("variables", "checked", "collator", "process", "db", "depth", "inside")

    def __init__(self, variables: dict | None = None, *, collator: Any = None, process: Any = None,
                 db: str | None = None, depth: int = 0, inside: str | None = None,
                 checked: bool | None = None) -> None:
        self.variables = variables
        self.checked = variables is not None if checked is None else checked
        self.collator = collator
        self.process = process
        self.db = db
        self.depth = depth
        self.inside = inside

    def sub(self, inside: str, variables: dict | None = None) -> PipelineContext:
        """The context of a sub-pipeline of the stage `inside`: with its own variables if given (a
        `$lookup`'s, which it sets per input document), else sharing this pipeline's."""
        if self.depth + 1 > MAX_SUB_PIPELINE_DEPTH:
            raise MongoError("MaxSubPipelineDepthExceeded",
                             f"Maximum number of nested sub-pipelines exceeded. Limit is {MAX_SUB_PIPELINE_DEPTH}")
        if variables is None:
            return PipelineContext(self.variables, collator=self.collator, process=self.process, db=self.db,
                                   depth=self.depth + 1, inside=inside, checked=self.checked)
        return PipelineContext(variables, collator=self.collator, process=self.process, db=self.db,
                               depth=self.depth + 1, inside=inside, checked=True)

    def require_process(self, stage: str) -> Any:
        """The process interface, for a stage that reads another collection."""
        if self.process is None:
            raise MongoError("NotImplemented", f"{stage} needs a collection source (run it through a node or a router)")
        return self.process
