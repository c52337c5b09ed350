"""The split of a change-stream pipeline between the shards and the router.

mongos sends every shard the shards' part: the `$changeStream` stage with the
client's options, the user's stages that can run on a shard, and
`$_needsMerge: true` (the shard then adds the sort key and keeps the events
the merge needs); it keeps the merging part (the AsyncResultsMerger,
topology changes, EnsureResumeTokenPresent) for itself.
"""

from __future__ import annotations


def shard_command(req_cmd: dict, spec_bson: dict, user_stages: list) -> dict:
    """The aggregate sent to each shard: same options, the user's stages, and $_needsMerge."""
    return {
        "aggregate": req_cmd["aggregate"],
        "pipeline": [{"$changeStream": spec_bson}, *user_stages],
        "cursor": {"batchSize": 0},
        "$_needsMerge": True,
    }
