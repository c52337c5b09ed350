"""Through pymongo: a router that missed a migration gets StaleConfig from the shard, refreshes and
answers correctly."""

from __future__ import annotations

import pymongo
import pytest

import mongosim


@pytest.fixture(scope="module")
def cluster():
    with mongosim.Cluster(shards=3, port=0, routers=2, instant_hwm=True) as c:
        yield c


def _shard_of(cluster, db: str, coll: str, _id) -> list[str]:
    return sorted(name for name, node in cluster.core.shards.items()
                  if (c := node.catalog.collection(db, coll)) is not None and c.get(_id) is not None)


def test_a_stale_router_answers_correctly(cluster):
    a_uri, b_uri = cluster.router_uris
    a = pymongo.MongoClient(a_uri, directConnection=True)
    b = pymongo.MongoClient(b_uri, directConnection=True)
    a.admin.command("enableSharding", "st", primaryShard="shard00")
    a.admin.command("shardCollection", "st.c", key={"k": 1})
    a.admin.command("split", "st.c", middle={"k": 100})
    a.admin.command("moveChunk", "st.c", find={"k": 100}, to="shard01")
    a.st.c.insert_many([{"_id": i, "k": i * 20} for i in range(10)])
    assert sorted(d["_id"] for d in b.st.c.find({"k": {"$gte": 100}})) == [5, 6, 7, 8, 9]  # b knows this layout

    a.admin.command("moveChunk", "st.c", find={"k": 100}, to="shard02")  # b misses it
    b_router = cluster.core.routers[1]
    assert b_router.catalog.routing("st.c").shard_for((150,)) == "shard01"
    assert sorted(d["_id"] for d in b.st.c.find({"k": {"$gte": 100}})) == [5, 6, 7, 8, 9]
    assert b_router.catalog.routing("st.c").shard_for((150,)) == "shard02"  # it refreshed

    a.admin.command("moveChunk", "st.c", find={"k": 100}, to="shard01")  # and again
    b.st.c.insert_one({"_id": 100, "k": 150})
    assert _shard_of(cluster, "st", "c", 100) == ["shard01"]
    assert b.st.c.update_one({"k": 160}, {"$set": {"x": 1}}).matched_count == 1  # _id 8
    assert b.st.c.count_documents({"x": 1}) == 1
    a.close()
    b.close()


def test_a_shard_refuses_a_stale_version_with_stale_config(cluster):
    """What the router meets: the shard's StaleConfig (code, codeName and extra info), seen on the wire
    by sending a shard version the way a router does (through the router's own remote)."""
    a = pymongo.MongoClient(cluster.router_uris[0], directConnection=True)
    a.admin.command("enableSharding", "sv", primaryShard="shard00")
    a.admin.command("shardCollection", "sv.c", key={"k": 1})
    r = cluster.core.router.catalog.routing("sv.c")
    old = {"e": r.epoch, "t": r.timestamp, "v": r.placement["shard00"]}
    a.admin.command("split", "sv.c", middle={"k": 0})
    a.admin.command("moveChunk", "sv.c", find={"k": 0}, to="shard01")
    reply = cluster.call(_ask, cluster.core.shards["shard00"], {"find": "c", "shardVersion": old})
    assert reply["code"] == 13388 and reply["codeName"] == "StaleConfig"
    assert reply["errmsg"] == "placement version mismatch detected for sv.c"
    assert reply["ns"] == "sv.c" and reply["vReceived"] == old and reply["shardId"] == "shard00"
    assert reply["vWanted"]["v"].time == old["v"].time + 1
    a.close()


async def _ask(node, cmd):
    from mongosim.oplog.errors import MongoError

    try:
        return await node.run_command("sv", cmd, from_router=True)
    except MongoError as err:
        return err.to_reply()
