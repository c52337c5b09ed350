"""listDatabases: mongod's entries, and mongos's sum of every shard's and the config server's
(cluster_list_databases_cmd.cpp: `admin` from the config server only, `local` never, the `filter` applied by
each holder to its own entries, `shards` naming each holder's part)."""

from __future__ import annotations

import pytest
from bson import Int64
from pymongo.errors import OperationFailure

from mongosim.oplog import bsonutil
from tests.crud.conftest import shard_two_ways


def _list(client, **kw) -> dict:
    """The reply's lists and sizes (pymongo decodes an int64 as `Int64`: the test sees the wire's types)."""
    reply = client.admin.command("listDatabases", **kw)
    return {k: v for k, v in reply.items() if k in ("databases", "totalSize", "totalSizeMb")}


def _size(docs) -> int:
    return sum(len(bsonutil.encode(d)) for d in docs)


def test_the_entries_of_a_replica_set(replset_client):
    client = replset_client
    client.ld.a.insert_many([{"_id": i, "v": "x" * i} for i in range(5)])
    client.ld.create_collection("empty")
    out = _list(client)
    (entry,) = [d for d in out["databases"] if d["name"] == "ld"]
    assert entry == {"name": "ld", "sizeOnDisk": Int64(_size(client.ld.a.find())), "empty": False}
    assert type(entry["sizeOnDisk"]) is Int64 and type(out["totalSize"]) is Int64
    assert out["totalSize"] == sum(d["sizeOnDisk"] for d in out["databases"])
    assert _list(client, filter={"name": "ld"})["databases"] == [entry]
    assert _list(client, filter={"sizeOnDisk": {"$gt": 10 ** 9}})["databases"] == []
    named = _list(client, nameOnly=True)
    assert {"name": "ld"} in named["databases"] and "totalSize" not in named


def test_mongos_sums_the_shards_and_names_them(sharded_client):
    client = sharded_client
    shard_two_ways(client, "ld.c")
    low = [{"_id": i, "k": i} for i in range(3)]
    high = [{"_id": 10 + i, "k": 100 + i, "pad": "y" * 40} for i in range(4)]
    client.ld.c.insert_many(low + high)
    client.ld.create_collection("no_documents")  # (on the primary shard: still a database there)
    out = _list(client)
    names = [d["name"] for d in out["databases"]]
    assert names == sorted(names) and "local" not in names and "config" in names
    (entry,) = [d for d in out["databases"] if d["name"] == "ld"]
    assert entry == {"name": "ld", "sizeOnDisk": Int64(_size(low) + _size(high)), "empty": False,
                     "shards": {"shard00": Int64(_size(low)), "shard01": Int64(_size(high))}}
    (config,) = [d for d in out["databases"] if d["name"] == "config"]
    assert "config" in config["shards"] and config["sizeOnDisk"] == sum(config["shards"].values())
    assert out["totalSize"] == sum(d["sizeOnDisk"] for d in out["databases"])
    assert _list(client, nameOnly=True) == {"databases": [{"name": n} for n in names]}


def test_mongos_passes_the_filter_to_each_holder(sharded_client):
    client = sharded_client
    shard_two_ways(client, "lf.c")
    client.lf.c.insert_many([{"_id": 1, "k": 1}, {"_id": 2, "k": 200, "pad": "z" * 500}])
    part = _size([{"_id": 2, "k": 200, "pad": "z" * 500}])
    # each shard matches its own entry: only shard01's part of lf is over 400 bytes
    (entry,) = [d for d in _list(client, filter={"sizeOnDisk": {"$gt": 400}})["databases"] if d["name"] == "lf"]
    assert entry["shards"] == {"shard01": Int64(part)} and entry["sizeOnDisk"] == part
    assert [d["name"] for d in _list(client, filter={"name": "lf"})["databases"]] == ["lf"]


def test_mongos_lists_the_config_servers_admin(sharded_client):
    """`admin` is the config server's (its system.version), listed and filtered like any other database."""
    client = sharded_client
    (admin,) = [d for d in _list(client)["databases"] if d["name"] == "admin"]
    assert list(admin["shards"]) == ["config"] and admin["sizeOnDisk"] == admin["shards"]["config"] > 0
    assert [d["name"] for d in _list(client, filter={"name": "admin"})["databases"]] == ["admin"]
    assert "admin" in client.list_database_names()


def test_a_database_without_a_collection_is_not_listed(sharded_client):
    sharded_client.admin.command("enableSharding", "no_collections")
    assert "no_collections" not in sharded_client.list_database_names()
    assert sharded_client.config.databases.find_one({"_id": "no_collections"}) is not None


def test_a_filter_of_the_wrong_type(client):
    with pytest.raises(OperationFailure) as info:
        client.admin.command("listDatabases", filter=1)
    assert info.value.code == 14
    assert info.value.details["errmsg"] == "BSON field 'listDatabases.filter' is the wrong type 'int', expected type " \
                                           "'object'"
