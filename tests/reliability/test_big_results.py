"""Results larger than one 16 MB message come in several batches, never as BSONObjectTooLarge.

Found while bounding the change-stream batches: find and aggregate batches had
no size limit, so a 40 MB result failed with "reply too large" (10334) unless
the client asked for small batches; and the router's unsharded aggregate read
only the shard's first batch.
"""

from __future__ import annotations

import pymongo
import pytest

from mongosim import Cluster


@pytest.mark.parametrize("topology", ["sharded", "replset"])
def test_forty_megabytes_of_results(topology):
    with Cluster(shards=2, port=0, instant_hwm=True, topology=topology) as cluster:
        client = pymongo.MongoClient(cluster.uri)
        coll = client.big.c
        for i in range(40):
            coll.insert_one({"_id": i, "pad": "x" * 1_000_000})
        assert [d["_id"] for d in coll.find()] == list(range(40))
        assert len(list(coll.find().batch_size(1000))) == 40
        assert len(list(coll.aggregate([{"$match": {}}], batchSize=1000))) == 40
        assert len(list(coll.aggregate([{"$sort": {"_id": -1}}]))) == 40
        client.close()
