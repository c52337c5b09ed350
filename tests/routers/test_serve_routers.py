"""`mongosim serve --shards 3 --routers 2`, tried as a new user would, through pymongo.

A writer and a `watch()` run while one router is restarted twice and one shard
is drained and removed: the stream holds every acknowledged write exactly once,
in order; afterwards `listShards` no longer names the shard and its chunks and
databases live elsewhere.
"""

from __future__ import annotations

import re
import threading
import time

import pymongo
import pytest
from pymongo.errors import PyMongoError

from tests.reliability.proc import ServerProcess


@pytest.fixture(scope="module")
def server():
    with ServerProcess("--shards", "3", "--routers", "2", "--instant-hwm") as proc:
        yield proc


def _router_uris(proc: ServerProcess) -> dict[str, str]:
    uris = {}
    for line in proc.output:
        m = re.match(r"\s+(router\d\d): (\S+)", line)
        if m:
            uris[m.group(1)] = m.group(2)
    return uris


def test_the_cli_prints_every_router_and_config_mongos_lists_them(server):
    uris = _router_uris(server)
    assert sorted(uris) == ["router00", "router01"]
    ports = [int(u.rsplit(":", 1)[1].strip("/")) for u in uris.values()]
    assert server.uri == "mongodb://" + ",".join(f"127.0.0.1:{p}" for p in ports) + "/"
    with pymongo.MongoClient(server.uri) as client:
        mongos = {d["_id"]: d for d in client.config.mongos.find()}
        assert sorted(mongos) == sorted(f"127.0.0.1:{p}" for p in ports)
        for doc in mongos.values():
            assert doc["waiting"] is True and doc["mongoVersion"] == "8.0.4" and "ping" in doc and "up" in doc
    for uri in uris.values():  # each router is its own mongos
        with pymongo.MongoClient(uri, directConnection=True) as one:
            assert one.admin.command("hello")["msg"] == "isdbgrid"


def test_a_cursor_belongs_to_its_router(server):
    uris = _router_uris(server)
    with pymongo.MongoClient(uris["router00"]) as a, pymongo.MongoClient(uris["router01"]) as b:
        a.cur.c.insert_many([{"_id": i} for i in range(10)])
        cid = a.cur.command("find", "c", batchSize=2)["cursor"]["id"]
        with pytest.raises(pymongo.errors.OperationFailure) as info:
            b.cur.command("getMore", cid, collection="c")
        assert info.value.code == 43  # CursorNotFound
        assert len(a.cur.command("getMore", cid, collection="c")["cursor"]["nextBatch"]) == 8


def test_a_stream_across_router_restarts_and_a_shard_leaving(server):
    uris = _router_uris(server)
    client = pymongo.MongoClient(server.uri, retryWrites=True, serverSelectionTimeoutMS=20000)
    admin = pymongo.MongoClient(uris["router00"]).admin
    admin.command("enableSharding", "shop", primaryShard="shard02")
    admin.command("shardCollection", "shop.orders", key={"k": 1})
    for i, to in ((1, "shard01"), (2, "shard02"), (3, "shard02")):
        admin.command("split", "shop.orders", middle={"k": 100 * i})
        admin.command("moveChunk", "shop.orders", find={"k": 100 * i}, to=to)

    events: list[dict] = []
    failures: list[BaseException] = []
    stop_reading = threading.Event()

    reopened: list[BaseException] = []

    def reader(stream) -> None:
        """Read like a careful application: pymongo resumes once by itself after a network error; when
        its one retry meets a router that is restarting too, open the stream again from its token."""
        try:
            while not stop_reading.is_set():
                try:
                    ev = stream.try_next()
                except (pymongo.errors.ConnectionFailure, pymongo.errors.ServerSelectionTimeoutError) as exc:
                    reopened.append(exc)
                    token = stream.resume_token
                    stream = client.shop.watch(max_await_time_ms=200, resume_after=token)
                    continue
                if ev is not None:
                    events.append(ev)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            failures.append(exc)

    stream = client.shop.watch(max_await_time_ms=200)
    reading = threading.Thread(target=reader, args=(stream,), daemon=True)
    reading.start()

    acked: list[int] = []  # acknowledged, in the order they were acknowledged
    tried: set[int] = set()
    stop_writing = threading.Event()

    def writer() -> None:
        i = 0
        while not stop_writing.is_set():
            i += 1
            tried.add(i)
            try:
                if i % 5 == 0:
                    client.shop.notes.insert_one({"_id": i})
                else:
                    client.shop.orders.insert_one({"_id": i, "k": (i * 37) % 400})
            except PyMongoError:
                continue  # not acknowledged: it may or may not have happened
            acked.append(i)
            time.sleep(0.005)

    writing = threading.Thread(target=writer, daemon=True)
    writing.start()

    def restart_router01() -> None:
        admin.command({"mongosimFault": "router01", "restart": True})
        time.sleep(0.5)

    time.sleep(0.5)
    restart_router01()
    started = admin.command("removeShard", "shard02")
    assert started["state"] == "started" and started["dbsToMove"] == ["shop"]
    deadline = time.time() + 60
    restarted_again = False
    while True:
        r = admin.command("removeShard", "shard02")
        if r["state"] == "completed":
            break
        if r["remaining"]["chunks"] == 0 and r["dbsToMove"]:
            admin.command("movePrimary", "shop", to="shard00")
        if not restarted_again:
            restart_router01()
            restarted_again = True
        assert time.time() < deadline, r
        time.sleep(0.2)
    time.sleep(0.5)
    stop_writing.set()
    writing.join(30)
    client.shop.orders.insert_one({"_id": "end", "k": 1})
    deadline = time.time() + 30
    while not any(e["documentKey"]["_id"] == "end" for e in events if "documentKey" in e):
        assert not failures, f"the stream failed: {failures[0]!r}"
        assert time.time() < deadline, (f"the stream did not reach the end: {len(events)} events, last "
                                        f"{events[-1:]}, acked {len(acked)} (last {acked[-3:]}), reopened {reopened}")
        time.sleep(0.05)
    stop_reading.set()
    reading.join(30)

    inserts = [e for e in events if e["operationType"] == "insert"]
    ids = [e["documentKey"]["_id"] for e in inserts]
    assert ids[-1] == "end"
    ids = ids[:-1]
    assert len(ids) == len(set(ids)), "an event arrived twice"
    assert set(ids) <= tried and set(acked) <= set(ids), "an acknowledged write is missing"
    assert [i for i in ids if i in set(acked)] == acked, "out of order"
    tokens = [e["_id"]["_data"] for e in inserts]
    assert tokens == sorted(tokens)
    assert len(acked) > 50
    assert len(reopened) <= 2, reopened  # (pymongo resumed by itself otherwise)

    shards = [s["_id"] for s in admin.command("listShards")["shards"]]
    assert shards == ["shard00", "shard01"]
    assert client.config.chunks.count_documents({"shard": "shard02"}) == 0
    assert client.config.databases.find_one({"_id": "shop"})["primary"] == "shard00"
    assert client.shop.orders.count_documents({}) == len([i for i in ids if i % 5]) + 1
    client.close()


def test_a_removed_shard_stays_removed_across_a_restart(tmp_path):
    import mongosim

    d = str(tmp_path / "data")
    with mongosim.Cluster(shards=3, port=0, instant_hwm=True, data_dir=d) as cluster:
        client = pymongo.MongoClient(cluster.uri)
        client.admin.command("enableSharding", "keep", primaryShard="shard02")
        client.keep.c.insert_one({"_id": 1})
        deadline = time.time() + 30
        while client.admin.command("removeShard", "shard02")["state"] != "completed":
            r = client.admin.command("removeShard", "shard02")
            if r["state"] == "ongoing" and r["dbsToMove"]:
                client.admin.command("movePrimary", "keep", to="shard00")
            assert time.time() < deadline
            time.sleep(0.1)
        client.close()
    with mongosim.Cluster(shards=3, port=0, instant_hwm=True, data_dir=d) as cluster:
        client = pymongo.MongoClient(cluster.uri)
        assert [s["_id"] for s in client.admin.command("listShards")["shards"]] == ["shard00", "shard01"]
        assert sorted(cluster.core.router.shards) == ["shard00", "shard01"]
        assert client.keep.c.find_one() == {"_id": 1}
        client.keep.c.insert_one({"_id": 2})
        client.close()
