"""Property: after replication, every member of a replica set gives the same dbHash for any random writes (the
hashes cover each document's BSON in `_id` order, so a secondary that applied the oplog in another order of
storage still agrees), and one more write changes the primary's."""

from __future__ import annotations

import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from mongosim.core import open_cluster
from mongosim.testing import AsyncClient
from tests.replset.conftest import EPOCH, member_client

IDS = st.one_of(st.integers(-5, 20), st.sampled_from(["a", "b", "B", "zz"]))
OPS = st.lists(st.one_of(
    st.tuples(st.just("insert"), st.sampled_from(["c", "d", "cap"]), IDS, st.integers(0, 9)),
    st.tuples(st.just("update"), st.sampled_from(["c", "d"]), IDS, st.integers(0, 9)),
    st.tuples(st.just("delete"), st.sampled_from(["c", "d"]), IDS, st.just(0)),
    st.tuples(st.just("drop"), st.sampled_from(["d"]), st.just(0), st.just(0)),
), min_size=1, max_size=12)


@settings(max_examples=25, deadline=None)
@given(ops=OPS)
def test_members_agree_on_db_hash(ops):
    async def run() -> None:
        async with open_cluster(topology="replset", members=3, listen=False, epoch=EPOCH) as core:
            rs = core.replica_sets["shard00"]
            c = AsyncClient(core.frontend)
            await c.command("h", {"create": "cap", "capped": True, "size": 300})  # (small: inserts evict)
            await c.command("h", {"create": "ci", "collation": {"locale": "en", "strength": 2}})
            for op, coll, _id, v in ops:
                if op == "insert":
                    await c.command("h", {"insert": coll, "documents": [{"_id": _id, "v": v, "pad": "x" * v}]},
                                    check=False)  # (a duplicate _id fails: nothing written)
                elif op == "update":
                    await c.command("h", {"update": coll, "updates": [{"q": {"_id": _id}, "u": {"$set": {"v": v}},
                                                                        "upsert": True}]})
                elif op == "delete":
                    await c.command("h", {"delete": coll, "deletes": [{"q": {"_id": _id}, "limit": 1}]})
                else:
                    await c.command("h", {"drop": coll}, check=False)
            await c.command("h", {"insert": "ci", "documents": [{"_id": "b"}, {"_id": "A"}]})
            await trio.sleep(2)
            hashes = []
            for m in rs.members:
                reply = await member_client(core, m).command("h", {"dbHash": 1})
                assert reply["host"] == m.host
                hashes.append({k: reply[k] for k in ("collections", "capped", "uuids", "md5")})
            assert hashes[0] == hashes[1] == hashes[2]
            assert hashes[0]["capped"] == ["cap"]
            await c.command("h", {"insert": "c", "documents": [{"_id": "new"}]})
            changed = await c.command("h", {"dbHash": 1})
            assert changed["md5"] != hashes[0]["md5"]
            assert changed["collections"]["c"] != hashes[0]["collections"].get("c")

    trio.run(run, clock=trio.testing.MockClock(autojump_threshold=0))
