"""mongos's batch targeting of an insert by the bytes of a hashed `_id` gives each document the
shard the per-document path gives it (and both the shard of the decoded document's hashed key)."""

from __future__ import annotations

from bson import Int64, ObjectId
from hypothesis import given, settings
from hypothesis import strategies as st

from mongosim.oplog import bsonutil
from mongosim.router.insert_targeting import HashedTargeting
from mongosim.shardsim.shard_key import hash64

_INT64 = st.integers(-(2**63), 2**63 - 1).map(Int64)
_INT32 = st.integers(-(2**31), 2**31 - 1)
_OID = st.binary(min_size=12, max_size=12).map(ObjectId)
# a batch of one `_id` type (the uniform path) or of mixed ones (document by document)
batches = st.one_of(st.lists(_INT32, min_size=2, max_size=40), st.lists(_INT64, min_size=2, max_size=40),
                    st.lists(_OID, min_size=2, max_size=40),
                    st.lists(st.one_of(_INT32, _INT64, _OID, st.text(max_size=3)), min_size=1, max_size=20))
tables = st.lists(st.integers(-(2**63), 2**63 - 1), max_size=6, unique=True).flatmap(
    lambda bounds: st.lists(st.sampled_from(["s0", "s1", "s2"]), min_size=len(bounds) + 1,
                            max_size=len(bounds) + 1).map(lambda shards: (sorted(bounds), shards)))


@given(ids=batches, table=tables, other_field=st.booleans())
@settings(max_examples=300, deadline=None)
def test_the_batch_targets_each_document_as_the_per_document_path(ids, table, other_field):
    bounds, shards = table
    targeting = HashedTargeting("_id", [-(2**64), *bounds], shards)
    raws = [bsonutil.encode({"_id": i, "x": 1}) if not other_field else bsonutil.encode_in_order({"x": 1, "_id": i})
            for i in ids]
    each = targeting._shards_of_each(raws)
    assert targeting.shards_of(raws) == each
    if not other_field:
        for i, shard in zip(ids, each):
            h = hash64(i)
            pos = max(k for k, b in enumerate([-(2**64), *bounds]) if b <= h)
            assert shard == shards[pos]
    else:
        assert each == [None] * len(ids)  # not the first field: targeted from the decoded document
