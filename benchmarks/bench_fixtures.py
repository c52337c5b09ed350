"""The pytest plugin: how long a reset between tests takes, and a user's test file of four change-stream tests.

``reset_ms``: `Cluster.reset()` (what the fixtures run before each test) on a 2-shard cluster after
a test-sized mess — a database with a hashed-sharded collection of 200 documents and an unsharded
one, an open change stream and an open find cursor, a shard fault and a failpoint. Median of the
rounds (goal <= 20 ms); the p95 is printed beside it.

``plugin_four_tests_s``: `pytest` in a fresh process on a file of four change-stream tests that use
`mongosim_client` (an insert event, an update with updateLookup, ten inserts into a sharded
collection, a resume): the session time pytest reports, which includes starting the cluster
(goal <= 2 s). The process's whole wall time, interpreter and imports included, is printed beside it.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
import time
from pathlib import Path

import pymongo

from benchmarks import harness as H

# the user's test file of the pytest plugin's own test
FOUR_TESTS = (H.ROOT / "tests" / "plugin" / "four_change_stream_tests.py").read_text()


def _mess(client: pymongo.MongoClient, cluster, i: int) -> tuple:
    db = f"bench{i}"
    client.admin.command("enableSharding", db)
    client.admin.command("shardCollection", f"{db}.orders", key={"_id": "hashed"})
    client[db].orders.insert_many([{"_id": j, "pad": "x" * 100} for j in range(200)])
    client[db].plain.insert_one({"_id": 1})
    stream = client[db].orders.watch()
    stream.try_next()
    cursor = client[db].orders.find(batch_size=10)
    next(cursor)
    cluster.faults.delay("shard01", 0.0001)
    client.admin.command("configureFailPoint", "failCommand", mode={"times": 1},
                         data={"failCommands": ["count"], "errorCode": 2})
    return stream, cursor


def run_fixtures(rounds: int, results: dict) -> None:
    import mongosim

    H.say(f"fixtures: Cluster.reset() after a test-sized mess, {rounds} rounds; four change-stream tests in pytest")
    times = []
    with mongosim.Cluster(shards=2, instant_hwm=True) as cluster:
        client = pymongo.MongoClient(cluster.uri)
        for i in range(rounds):
            held = _mess(client, cluster, i)
            t0 = time.perf_counter()
            dropped = cluster.reset()
            times.append((time.perf_counter() - t0) * 1000)
            assert dropped == [f"bench{i}"], dropped
            del held
        client.close()
    times.sort()
    p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
    results["reset_ms"] = round(H.median(times), 2)
    results["reset_p95_ms"] = round(p95, 2)
    H.say(f"  reset median {results['reset_ms']} ms, p95 {results['reset_p95_ms']} ms   (goal <= 20 ms)")

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "test_orders.py").write_text(FOUR_TESTS)
        t0 = time.perf_counter()
        proc = subprocess.run([H.PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_orders.py"],
                              cwd=tmp, capture_output=True, text=True, timeout=300)
        wall = time.perf_counter() - t0
    m = re.search(r"(\d+) passed in ([\d.]+)s", proc.stdout)
    if proc.returncode or not m or m.group(1) != "4":
        raise RuntimeError(f"the four tests did not pass:\n{proc.stdout}\n{proc.stderr}")
    results["plugin_four_tests_s"] = float(m.group(2))
    results["plugin_four_tests_wall_s"] = round(wall, 2)
    H.say(f"  four change-stream tests: {m.group(2)} s as pytest reports it (cluster start included);"
          f" {wall:.2f} s for the whole process   (goal <= 2 s)")
