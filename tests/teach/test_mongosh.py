"""mongosh, for learners: the real mongosh 2.x against a mongosim cluster — `sh.status()`, every `sh.*` read
helper, `db.c.getShardDistribution()`, `db.c.watch()` and `mergeChunks` through `db.adminCommand`.

Finding mongosh: `$MONGOSIM_MONGOSH` (the path of a mongosh binary), a `mongosh` on PATH, or one installed
earlier into the clone's `.tools/mongosh` (ignored by git).  Otherwise, when `npm` is on PATH, the test
installs it there (`npm install --prefix .tools/mongosh mongosh@2`: about 2 minutes once per clone, reused
after); a failed install fails the tests under CI (`CI` set) and skips them elsewhere, as
does a machine without npm — saying why.  A `$MONGOSIM_MONGOSH` that names no executable fails them: the
user asked for that mongosh.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pymongo
import pytest
from bson import MaxKey, MinKey, Timestamp, json_util

from tests.tool_install import ToolMissing, installed

REPO = Path(__file__).resolve().parents[2]
PREFIX = REPO / ".tools" / "mongosh"
INSTALLED = PREFIX / "node_modules" / ".bin" / "mongosh"


class MongoshMissing(ToolMissing):
    """No mongosh 2.x (`tried_install`: npm ran and failed; `misconfigured`: $MONGOSIM_MONGOSH names none)."""


def find_mongosh() -> str:
    env = os.environ.get("MONGOSIM_MONGOSH")
    if env:
        if not os.access(env, os.X_OK):
            raise MongoshMissing(f"$MONGOSIM_MONGOSH={env} is not an executable file", misconfigured=True)
        return env
    on_path = shutil.which("mongosh")
    if on_path:
        return on_path
    if INSTALLED.exists():
        return str(INSTALLED)
    npm = shutil.which("npm")
    if npm is None:
        raise MongoshMissing("no mongosh ($MONGOSIM_MONGOSH, PATH, or .tools/mongosh) and no npm to "
                             "install it with")
    try:
        subprocess.run([npm, "install", "--prefix", str(PREFIX), "--no-audit", "--no-fund", "--loglevel=error",
                        "--fetch-retries=2", "mongosh@2"], check=True, capture_output=True, text=True, timeout=600)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        stderr = getattr(exc, "stderr", None) or str(exc)  # bytes from a TimeoutExpired, even with text=True
        if isinstance(stderr, bytes):
            stderr = stderr.decode(errors="replace")
        detail = stderr.strip().splitlines()[-1:] or [str(exc)]
        raise MongoshMissing(f"npm install mongosh@2 into {PREFIX} failed: {detail[0]}", tried_install=True) \
            from None
    if not INSTALLED.exists():
        raise MongoshMissing(f"npm installed mongosh@2 but {INSTALLED} is missing", tried_install=True)
    return str(INSTALLED)


@pytest.fixture(scope="module")
def mongosh() -> str:
    return installed(find_mongosh, "mongosh 2.x")


def run_js(mongosh: str, uri: str, script: str) -> dict:
    """Run `script` in mongosh against `uri`; it prints one canonical Extended JSON document, returned parsed."""
    proc = subprocess.run([mongosh, "--quiet", "--norc", uri, "--eval", script], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "MONGOSH_NO_UPDATE_CHECK": "1"})
    assert proc.returncode == 0, proc.stderr or proc.stdout
    last = proc.stdout.strip().splitlines()[-1]
    return json_util.loads(last)


def _plain(value):
    """Extended JSON numbers (Long, Int32) as Python ints, for comparisons."""
    return json.loads(json_util.dumps(value, json_options=json_util.RELAXED_JSON_OPTIONS))


@pytest.fixture
def shop(mongosim_cluster):
    """shop.orders sharded on {k: 1}: shard00 holds k < 100 (3 documents), shard01 k >= 100 (2), after one
    split and one migration."""
    client = pymongo.MongoClient(mongosim_cluster.uri)
    client.admin.command("enableSharding", "shop", primaryShard="shard00")
    client.admin.command("shardCollection", "shop.orders", key={"k": 1})
    client.shop.orders.insert_many([{"_id": i, "k": k} for i, k in enumerate([5, 50, 70, 150, 160])])
    client.admin.command("split", "shop.orders", middle={"k": 100})
    client.admin.command("moveChunk", "shop.orders", find={"k": 100}, to="shard01")
    yield client
    client.close()


STATUS_JS = """
const out = {
  status: sh.status().value,
  balancerState: sh.getBalancerState(),
  balancerRunning: sh.isBalancerRunning(),
  collectionStatus: sh.balancerCollectionStatus("shop.orders"),
  dataDistribution: sh.getShardedDataDistribution().toArray(),
  autoMerger: sh.isAutoMergerEnabled(),
  shards: sh.listShards(),
  configShard: sh.isConfigShardEnabled(),
  shardDistribution: db.getSiblingDB("shop").orders.getShardDistribution().value,
};
print(EJSON.stringify(out, {relaxed: false}));
"""


@pytest.mark.mongosim(isolated=True, shards=2)
def test_sh_status_and_the_read_helpers(mongosh, mongosim_cluster, shop):
    out = _plain(run_js(mongosh, mongosim_cluster.uri, STATUS_JS))
    status = out["status"]
    assert set(status["shardingVersion"]) == {"_id", "clusterId"}
    assert [s["_id"] for s in status["shards"]] == ["shard00", "shard01"]
    assert status["active mongoses"] == [{"8.0.4": 1}]
    balancer = status["balancer"]
    assert balancer["Currently enabled"] == "yes" and balancer["Currently running"] == "no"
    assert balancer["Migration Results for the last 24 hours"] == {"1": "Success"}  # config.changelog
    (shop_db,) = [d for d in status["databases"] if d["database"]["_id"] == "shop"]
    orders = shop_db["collections"]["shop.orders"]
    assert orders["shardKey"] == {"k": 1} and orders["balancing"] is True
    assert orders["chunkMetadata"] == [{"shard": "shard00", "nChunks": 1}, {"shard": "shard01", "nChunks": 1}]
    assert [c["on shard"] for c in orders["chunks"]] == ["shard00", "shard01"]
    distribution = {s["shardName"]: s for s in status["shardedDataDistribution"][0]["shards"]}
    assert {n: s["numOwnedDocuments"] for n, s in distribution.items()} == {"shard00": 3, "shard01": 2}
    assert all(s["numOrphanedDocs"] == 0 for s in distribution.values())
    assert out["dataDistribution"] == status["shardedDataDistribution"]
    assert out["balancerState"] is True
    assert out["balancerRunning"]["mode"] == "full" and out["balancerRunning"]["inBalancerRound"] is False
    assert out["collectionStatus"]["balancerCompliant"] is True and out["collectionStatus"]["chunkSize"] == 128
    assert out["autoMerger"] is True
    assert [s["_id"] for s in out["shards"]] == ["shard00", "shard01"]
    assert out["configShard"] == {"enabled": False}
    dist = out["shardDistribution"]
    assert dist["Totals"]["docs"] == 5 and dist["Totals"]["chunks"] == 2
    shard_parts = {k: v for k, v in dist.items() if k.startswith("Shard ")}
    assert sorted((v["docs"], v["chunks"]) for v in shard_parts.values()) == [(2, 1), (3, 1)]


WATCH_JS = """
const c = db.getSiblingDB("shop").orders;
const cs = c.watch([], {fullDocument: "updateLookup"});
c.insertOne({_id: 10, k: 120});
c.updateOne({_id: 10, k: 120}, {$set: {v: 1}});
const first = cs.next(), second = cs.next();
const token = cs.getResumeToken();
cs.close();
print(EJSON.stringify({first, second, token}, {relaxed: false}));
"""


@pytest.mark.mongosim(isolated=True, shards=2)
def test_watch_in_mongosh(mongosh, mongosim_cluster, shop):
    out = run_js(mongosh, mongosim_cluster.uri, WATCH_JS)
    first, second = out["first"], out["second"]
    assert first["operationType"] == "insert" and first["documentKey"] == {"k": 120, "_id": 10}
    assert second["operationType"] == "update" and second["fullDocument"] == {"_id": 10, "k": 120, "v": 1}
    assert out["token"]["_data"] >= second["_id"]["_data"]  # the batch's postBatchResumeToken, or the event's
    # the same events, resumed through pymongo from mongosh's first token
    with shop.shop.orders.watch(resume_after=first["_id"]) as stream:
        again = stream.try_next()
        while again is None:
            again = stream.try_next()
    assert again["_id"] == second["_id"]


REPLICATION_JS = """
const info = db.getReplicationInfo();
const primary = rs.printReplicationInfo();
const secondaries = rs.printSecondaryReplicationInfo();
print(EJSON.stringify({info: info, primary: primary.value, secondaries: secondaries.value},
                      {relaxed: false}));
"""


def test_replication_info_helpers_on_a_replica_set(mongosh):
    import mongosim

    with mongosim.Cluster(topology="replset", members=3, port=0, instant_hwm=True) as cluster:
        with pymongo.MongoClient(cluster.uri) as client:
            client.shop.orders.insert_one({"_id": 1})
            hosts = {m["name"] for m in client.admin.command("replSetGetStatus")["members"] if m["state"] == 2}
        out = _plain(run_js(mongosh, cluster.uri, REPLICATION_JS))
    info = out["info"]
    assert (info["configuredLogSizeMB"], info["logSizeMB"]) == (990, 990)
    assert 0 < info["usedMB"] < 1 and info["timeDiff"] >= 0 and info["tFirst"] and info["tLast"]
    primary = out["primary"]
    assert primary["configured oplog size"] == "990 MB" and primary["actual oplog size"] == "990 MB"
    assert set(primary) == {"actual oplog size", "configured oplog size", "log length start to end",
                            "oplog first event time", "oplog last event time", "now"}
    assert set(out["secondaries"]) == {f"source: {h}" for h in hosts}
    for lag in out["secondaries"].values():
        assert lag["replLag"].endswith("behind the primary ") and "syncedTo" in lag


TIMESERIES_STATS_JS = """
const d = db.getSiblingDB("tsstats");
d.createCollection("t", {timeseries: {timeField: "ts", metaField: "m"}});
d.t.insertOne({ts: new Date(), m: {s: 1}});
const s = d.t.stats();
print(EJSON.stringify({ns: s.ns, timeseries: s.timeseries, sharded: s.sharded}, {relaxed: false}));
"""


def test_stats_of_a_time_series_collection(mongosh, mongosim_cluster):
    out = _plain(run_js(mongosh, mongosim_cluster.uri, TIMESERIES_STATS_JS))
    assert out["ns"] == "tsstats.t" and out["sharded"] is False
    assert out["timeseries"]["bucketsNs"] == "tsstats.system.buckets.t"
    assert out["timeseries"]["bucketCount"] == 1


ZONES_JS = """
sh.addShardToZone("shard01", "high");
sh.addShardTag("shard00", "low");
sh.updateZoneKeyRange("shop.orders", {k: 100}, {k: MaxKey}, "high");
sh.addTagRange("shop.orders", {k: MinKey}, {k: 50}, "low");
let refused = null;
try { sh.moveChunk("shop.orders", {k: 150}, "shard00"); } catch (e) { refused = e.message; }
const status = sh.status().value;
sh.removeRangeFromZone("shop.orders", {k: MinKey}, {k: 50});
sh.removeShardFromZone("shard00", "low");
const tags = db.getSiblingDB("config").tags.find({}, {_id: 0}).toArray();
print(EJSON.stringify({status, refused, tags}, {relaxed: false}));
"""


@pytest.mark.mongosim(isolated=True, shards=2)
def test_zones_in_mongosh(mongosh, mongosim_cluster, shop):
    """sh.addShardToZone / addShardTag, updateZoneKeyRange / addTagRange, removeRangeFromZone,
    removeShardFromZone, and sh.status() listing each shard's zones and the collection's ranges."""
    out = _plain(run_js(mongosh, mongosim_cluster.uri, ZONES_JS))
    status = out["status"]
    assert {s["_id"]: s.get("tags") for s in status["shards"]} == {"shard00": ["low"], "shard01": ["high"]}
    (shop_db,) = [d for d in status["databases"] if d["database"]["_id"] == "shop"]
    orders = shop_db["collections"]["shop.orders"]
    assert [t["tag"] for t in orders["tags"]] == ["low", "high"]
    assert out["refused"] == "shard00 is not in the correct zone high"
    assert [t["tag"] for t in out["tags"]] == ["high"]


MERGE_JS = """
sh.splitAt("shop.orders", {k: 50});
const split = sh.status().value;
const merged = db.adminCommand({mergeChunks: "shop.orders", bounds: [{k: MinKey}, {k: 100}]});
const status = sh.status().value;
const version = db.adminCommand({getShardVersion: "shop.orders", fullMetadata: true});
const map = db.adminCommand({getShardMap: 1});
print(EJSON.stringify({split, merged, status, version, map}, {relaxed: false}));
"""


@pytest.mark.mongosim(isolated=True, shards=2)
def test_merge_chunks_from_mongosh(mongosh, mongosim_cluster, shop):
    """mongosh has no sh.* helper for mergeChunks: `db.adminCommand` runs it, and sh.status() lists the
    merged chunk; getShardVersion's chunks and getShardMap's map as mongosh receives them."""
    out = run_js(mongosh, mongosim_cluster.uri, MERGE_JS)

    def chunks(status) -> list:
        (shop_db,) = [d for d in status["databases"] if d["database"]["_id"] == "shop"]
        return _plain(shop_db["collections"]["shop.orders"]["chunkMetadata"])

    assert chunks(out["split"]) == [{"shard": "shard00", "nChunks": 2}, {"shard": "shard01", "nChunks": 1}]
    assert out["merged"]["ok"] == 1
    assert chunks(out["status"]) == [{"shard": "shard00", "nChunks": 1}, {"shard": "shard01", "nChunks": 1}]
    assert [[b["k"] for b in c] for c in out["version"]["chunks"]] == [[MinKey(), 100], [100, MaxKey()]]
    assert isinstance(out["version"]["version"], Timestamp)  # (a Timestamp, as the server appends it)
    assert list(out["map"]["map"]) == ["shard00", "shard01", "config"]
    chunk_docs = list(shop.config.chunks.find({}, sort=[("lastmod", -1)]))
    assert out["version"]["version"] == chunk_docs[0]["lastmod"]


AUTOMERGER_JS = """
const config = db.getSiblingDB("config");
const stopped = sh.stopAutoMerger();
const off = sh.isAutoMergerEnabled();
const started = sh.startAutoMerger();
const on = sh.isAutoMergerEnabled();
const disabled = sh.disableAutoMerger("shop.orders");
const collOff = config.collections.findOne({_id: "shop.orders"}).enableAutoMerge;
const enabled = sh.enableAutoMerger("shop.orders");
const collOn = "enableAutoMerge" in config.collections.findOne({_id: "shop.orders"});
const configured = db.adminCommand({configureCollectionBalancing: "shop.orders", chunkSize: 64});
const status = sh.balancerCollectionStatus("shop.orders");
let refused = null;
try { db.adminCommand({configureCollectionBalancing: "shop.orders", chunkSize: 4096}); }
catch (e) { refused = {codeName: e.codeName, message: e.message}; }
print(EJSON.stringify({stopped, off, started, on, disabled, collOff, enabled, collOn, configured, status, refused},
                      {relaxed: false}));
"""


@pytest.mark.mongosim(isolated=True, shards=2)
def test_auto_merger_helpers_in_mongosh(mongosh, mongosim_cluster, shop):
    """sh.stopAutoMerger / startAutoMerger / isAutoMergerEnabled (config.settings {_id: "automerge"}),
    sh.disableAutoMerger / enableAutoMerger (config.collections' enableAutoMerge), and
    configureCollectionBalancing's chunk size as sh.balancerCollectionStatus reports it."""
    out = _plain(run_js(mongosh, mongosim_cluster.uri, AUTOMERGER_JS))
    assert (out["stopped"]["acknowledged"], out["stopped"]["upsertedCount"]) == (True, 1)
    assert (out["off"], out["on"]) == (False, True)
    assert out["started"]["modifiedCount"] == 1
    assert (out["disabled"]["modifiedCount"], out["collOff"]) == (1, False)
    assert (out["enabled"]["modifiedCount"], out["collOn"]) == (1, False)
    assert out["configured"]["ok"] == 1
    assert out["status"]["chunkSize"] == 64
    assert out["refused"] == {"codeName": "InvalidOptions", "message": "Chunk size '4096' out of range [1MB, 1GB]"}
    assert shop.config.settings.find_one({"_id": "automerge"}) == {"_id": "automerge", "enabled": True}


SYNC_FROM_JS = """
const first = rs.syncFrom(%(target)s);
let refused = null;
try { rs.syncFrom(%(me)s); } catch (e) { refused = {codeName: e.codeName, message: e.message}; }
print(EJSON.stringify({first, refused, source: rs.status().syncSourceHost}, {relaxed: false}));
"""


def test_rs_sync_from_on_a_secondary(mongosh):
    """rs.syncFrom(host) on a secondary: the member then syncs from that host; naming itself is refused."""
    import mongosim

    with mongosim.Cluster(topology="replset", members=3, port=0, instant_hwm=True) as cluster:
        with pymongo.MongoClient(cluster.uri) as client:
            client.shop.orders.insert_one({"_id": 1})
            members = client.admin.command("replSetGetStatus")["members"]
        primary = next(m["name"] for m in members if m["state"] == 1)
        target, me = [m["name"] for m in members if m["state"] == 2]
        script = SYNC_FROM_JS % {"target": json.dumps(target), "me": json.dumps(me)}
        out = _plain(run_js(mongosh, f"mongodb://{me}/?directConnection=true", script))
    assert out["first"]["syncFromRequested"] == target and out["first"]["prevSyncTarget"] == primary
    assert out["first"]["ok"] == 1
    assert out["refused"] == {"codeName": "InvalidOptions", "message": "I cannot sync from myself"}
    assert out["source"] == target
