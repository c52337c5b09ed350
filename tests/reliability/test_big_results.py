"""Results larger than one 16 MB message come in several batches, never as BSONObjectTooLarge.

Found while bounding the change-stream batches: find and aggregate batches had
no size limit, so a 40 MB result failed with "reply too large" (10334) unless
the client asked for small batches; and the router's unsharded aggregate read
only the shard's first batch.
"""

from __future__ import annotations

import pytest


# isolated: a cluster of its own, stopped after the test, so 40 MB of oplog does not stay in the shared one
@pytest.mark.parametrize("topology", [pytest.param(t, marks=pytest.mark.mongosim(topology=t, isolated=True))
                                      for t in ("sharded", "replset")])
def test_forty_megabytes_of_results(topology, mongosim_client):
    coll = mongosim_client.big.c
    for i in range(40):
        coll.insert_one({"_id": i, "pad": "x" * 1_000_000})
    assert [d["_id"] for d in coll.find()] == list(range(40))
    assert len(list(coll.find().batch_size(1000))) == 40
    assert len(list(coll.aggregate([{"$match": {}}], batchSize=1000))) == 40
    assert len(list(coll.aggregate([{"$sort": {"_id": -1}}]))) == 40
