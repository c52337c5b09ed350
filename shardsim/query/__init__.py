"""The document layer: BSON value order, query matching, updates with the server's
`$v:2` diff, projections, aggregation stages, sorting and index keys.

Public modules (see each docstring): `values`, `paths`, `matcher`,
`expressions`, `update`, `diff`, `projection`, `stages` (with `accumulators`,
`pipeline_context`, `process_interface`, and the stages of `document_sources/`
registered in `stage_registry`), `sorting`, `index_keys`.
"""

from mongosim.shardsim.query import document_sources  # noqa: F401  (registers the stages of its modules)
from mongosim.shardsim.query.diff import apply_diff, compute_diff, update_description
from mongosim.shardsim.query.matcher import Matcher
from mongosim.shardsim.query.update import UpdateResult, apply_update, classify_update
from mongosim.shardsim.query.values import MISSING, compare, hashable, sort_key, type_name

__all__ = [
    "MISSING", "Matcher", "UpdateResult", "apply_diff", "apply_update", "classify_update", "compare",
    "compute_diff", "hashable", "sort_key", "type_name", "update_description",
]
