"""config.changelog: what migrations, splits, shardCollection, addShard, removeShard, movePrimary and the
AutoMerger write, in the server's document shape (ShardingLogging / ChangeLogType); config.version, the cluster's identity."""

from __future__ import annotations

import re

import pytest
from bson import ObjectId

ID = re.compile(r"^.+:\d+-\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00-[0-9a-f]{24}$")


@pytest.mark.mongosim(isolated=True, shards=2)
def test_the_changelog_of_a_collection_s_life(mongosim_client):
    c = mongosim_client
    c.admin.command("enableSharding", "cl", primaryShard="shard00")
    c.admin.command("shardCollection", "cl.c", key={"k": 1})
    c.cl.c.insert_many([{"_id": i, "k": i * 10} for i in range(10)])
    c.admin.command("split", "cl.c", middle={"k": 50})
    c.admin.command("moveChunk", "cl.c", find={"k": 50}, to="shard01")
    c.cl.other.insert_one({"_id": 1})
    c.admin.command("movePrimary", "cl", to="shard01")
    c.admin.command("addShard", "shard02")
    assert c.admin.command("removeShard", "shard02")["state"] == "started"
    assert c.admin.command("removeShard", "shard02")["state"] == "completed"
    entries = list(c.config.changelog.find())  # natural order: as they were logged
    # first the balancer's AutoMerger, on at startup: enabled, and its first round (nothing to merge)
    assert [(e["what"], e["shard"], e["ns"], e["details"]) for e in entries[:3]] == [
        ("autoMerge.enable", "config", "", {}), ("autoMerge.start", "config", "", {}),
        ("autoMerge.end", "config", "", {})]
    entries = [e for e in entries if not e["what"].startswith("autoMerge.")]
    assert [(e["what"], e["shard"], e["ns"]) for e in entries] == [
        ("shardCollection.start", "shard00", "cl.c"), ("shardCollection.end", "shard00", "cl.c"),
        ("split", "config", "cl.c"),
        ("moveChunk.start", "shard00", "cl.c"), ("moveChunk.to", "shard01", "cl.c"),
        ("moveChunk.commit", "shard00", "cl.c"), ("moveChunk.from", "shard00", "cl.c"),
        ("movePrimary.start", "shard00", "cl"), ("movePrimary.commit", "shard00", "cl"),
        ("addShard", "config", ""), ("removeShard.start", "config", ""), ("removeShard", "config", ""),
    ]
    for e in entries:
        assert list(e) == ["_id", "server", "shard", "clientAddr", "time", "what", "ns", "details"]
        assert ID.match(e["_id"]) and e["_id"].startswith(e["server"] + "-"), e["_id"]
    by = {e["what"]: e["details"] for e in entries}
    assert by["shardCollection.start"] == {"shardKey": {"k": 1}, "collection": "cl.c", "primary": "shard00"}
    end = by["shardCollection.end"]
    assert list(end) == ["uuid", "placementVersion", "empty", "numChunks"] and end["empty"] is True
    assert end["placementVersion"].startswith("1|0||") and end["numChunks"] == 1
    split = by["split"]
    assert split["left"]["min"] == split["before"]["min"] and split["left"]["max"] == {"k": 50}
    assert split["right"]["min"] == {"k": 50} and split["right"]["max"] == split["before"]["max"]
    assert split["owningShard"] == "shard00"
    assert [split[k]["lastmod"]["v"].inc for k in ("before", "left", "right")] == [0, 1, 2]
    assert list(split["right"]["lastmod"]) == ["e", "t", "v"]
    bounds = {"min": {"k": 50}, "max": split["before"]["max"], "from": "shard00", "to": "shard01"}
    assert by["moveChunk.start"] == bounds
    commit = by["moveChunk.commit"]
    assert {k: commit[k] for k in bounds} == bounds and commit["counts"]["cloned"] == 5
    frm = by["moveChunk.from"]
    assert list(frm) == [f"step {i} of 6" for i in range(1, 7)] + ["min", "max", "to", "from", "note"]
    assert frm["note"] == "success" and frm["to"] == "shard01" and frm["from"] == "shard00"
    to = by["moveChunk.to"]
    assert list(to)[:8] == [f"step {i} of 8" for i in range(1, 9)] and to["note"] == "success"
    assert by["movePrimary.start"] == {"database": "cl", "from": "shard00", "to": "shard01"}
    assert by["addShard"]["name"] == "shard02" and by["addShard"]["host"].startswith("shard02/")
    assert by["removeShard"] == {"shard": "shard02"}
    options = c.config.command("listCollections", filter={"name": "changelog"})["cursor"]["firstBatch"][0]["options"]
    assert options["capped"] is True and options["size"] == 200 * 1024 * 1024


@pytest.mark.mongosim(topology="sharded")
def test_config_version_names_the_cluster(mongosim_client):
    (doc,) = list(mongosim_client.config.version.find())
    assert list(doc) == ["_id", "clusterId"] and doc["_id"] == 1 and isinstance(doc["clusterId"], ObjectId)
