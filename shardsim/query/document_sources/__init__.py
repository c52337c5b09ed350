"""The aggregation stages beyond the document-at-a-time ones, one module per server DocumentSource.

Importing this package registers every stage in `shardsim.query.stage_registry`
(`shardsim/query/__init__.py` imports it, so any use of the query layer has them):
`$lookup`, `$unionWith`, `$graphLookup`, `$facet`, `$bucket`, `$bucketAuto`,
`$sample`, `$setWindowFields`, `$densify`, `$fill`.  Helpers: `lookup_hash_table`
(the join's hash table), `sub_pipeline` (shared argument checks),
`granularity_rounder` ($bucketAuto's series).
"""

from mongosim.shardsim.query.document_sources import (  # noqa: F401
    bucket,
    bucket_auto,
    densify,
    facet,
    fill,
    graph_lookup,
    lookup,
    sample,
    set_window_fields,
    union_with,
)
