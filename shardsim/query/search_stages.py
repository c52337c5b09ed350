"""Atlas Search stages in a pipeline on a deployment without search: the server's refusal.

`$search`, `$searchMeta`, `$vectorSearch` and `$listSearchIndexes` need a search index manager
(`mongot`), which only Atlas and AtlasCLI local deployments configure; a community 8.0 server
fails them with SearchNotEnabled (31082).  The commands' side is shardsim/search_indexes.py,
which shares these messages.  (Kept in the query layer, which imports nothing above it.)
"""

from __future__ import annotations

from mongosim.oplog.errors import MongoError

SEARCH_INDEX_COMMANDS_REFUSED = (
    "Using Atlas Search Database Commands and the $listSearchIndexes aggregation stage requires additional "
    "configuration. Please connect to Atlas or an AtlasCLI local deployment to enable. For more information "
    "on how to connect, see https://dochub.mongodb.org/core/atlas-cli-deploy-local-reqs.")
# (sic: the server's message has no space after "enable.")
SEARCH_STAGES_REFUSED = (
    "Using $search and $vectorSearch aggregation stages requires additional configuration. Please connect "
    "to Atlas or an AtlasCLI local deployment to enable.For more information on how to connect, see "
    "https://dochub.mongodb.org/core/atlas-cli-deploy-local-reqs.")
SEARCH_STAGES = frozenset({"$search", "$searchMeta", "$vectorSearch"})


def refuse_search_stage(stage_name: str) -> None:
    """A search stage in a pipeline: SearchNotEnabled (the $listSearchIndexes stage says so as the commands do)."""
    if stage_name == "$listSearchIndexes":
        raise MongoError("SearchNotEnabled", SEARCH_INDEX_COMMANDS_REFUSED)
    if stage_name in SEARCH_STAGES:
        raise MongoError("SearchNotEnabled", SEARCH_STAGES_REFUSED)
