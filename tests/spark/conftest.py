"""Spark tests: one SparkSession and one mongosim cluster for the whole run.

The session never calls `mongosim.spark.register`: Spark finds both formats
itself through the installed `pyspark_*` modules (`spark-plugin/`), so every
test here also checks the static registration.

Skipped only when pyspark is not importable (`make test` installs the `spark`
extra, so they run there).  The Spark reader processes connect to the cluster
over loopback; each test works in its own database.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.spark.helpers import STREAMS, checkpoint_offsets, committed, drain, transactions, workload

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")


@pytest.fixture(scope="session")
def spark():
    # Spark's Python workers must run this interpreter (the venv with mongosim installed).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("mongosim-spark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def cluster():
    import mongosim

    with mongosim.Cluster(shards=2, port=0, instant_hwm=True) as c:
        yield c


@pytest.fixture(scope="session")
def client(cluster):
    import pymongo

    c = pymongo.MongoClient(cluster.uri)
    yield c
    c.close()


def wait_for(pred, timeout: float = 60.0, interval: float = 0.1, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)


def now_token(client, db: str | None = None) -> str:
    """A high-water-mark token at the cluster's current time: a start point before the next writes."""
    target = client[db] if db else client
    with target.watch(max_await_time_ms=50) as cs:
        return cs.resume_token["_data"]


@pytest.fixture(scope="session")
def recorded(cluster, client, tmp_path_factory):
    """`helpers.workload` run on the cluster: the start token, the dumps, and what the router streamed."""
    with client.watch(max_await_time_ms=50) as cs:
        start = cs.resume_token["_data"]
    from mongosim.spark.oplog_source import dump_oplogs

    workload(client, cluster)
    dumps = tmp_path_factory.mktemp("dumps")
    dump_oplogs(cluster, dumps)
    streamed = {name: drain(cluster.uri, start, target, kw) for name, target, kw, _ in STREAMS}
    return start, dumps, streamed


@pytest.fixture(scope="session")
def three():
    """A cluster of three shards (one joins in mid-stream in the shards-mode test), `s.c` sharded across
    them on _id: shard00 < 100 <= shard01 < 200 <= shard02; [300, max) is a chunk of its own."""
    import mongosim
    import pymongo

    with mongosim.Cluster(shards=3, port=0, instant_hwm=True) as c:
        client = pymongo.MongoClient(c.uri)
        client.admin.command("enableSharding", "s", primaryShard="shard00")
        client.admin.command("shardCollection", "s.c", key={"_id": 1})
        for k in (1, 2, 3):
            client.admin.command("split", "s.c", middle={"_id": 100 * k})
        for k in (1, 2):
            client.admin.command("moveChunk", "s.c", find={"_id": 100 * k}, to=f"shard0{k}")
        yield c, client
        client.close()


DRIVER = Path(__file__).with_name("stream_driver.py")


@pytest.fixture(scope="session")
def killed_driver(cluster, client, three, tmp_path_factory):
    """One Spark driver in its own process (`stream_driver.py`: one JVM for both, the costly part) runs
    two queries, 5 events per batch — router mode on the cluster's database `kill` (80 inserts) and
    shards mode on `three`'s database `s` (inserts on three shards and two transactions) — and is
    SIGKILLed once both are in the middle of a batch (planned, not committed).
    -> {"router" | "shards": (start token, checkpoint, sink, killed batch id, its planned offset)}"""
    work = tmp_path_factory.mktemp("killed")
    r_start = now_token(client)
    client.kill.c.insert_many([{"_id": i} for i in range(80)])
    c3, client3 = three
    s_start = now_token(client3)
    client3.s.c.insert_many([{"_id": i, "v": i} for i in range(0, 300, 9)])  # 34 events over three shards
    transactions(client3, c3, client3.s.c, [9, 18, 27], [108])
    runs = {"router": (cluster.uri, "kill", r_start), "shards": (c3.uri, "s", s_start)}
    specs = [{"uri": uri, "database": db, "start": start, "checkpoint": str(work / f"{name}-ck"),
              "sink": str(work / f"{name}-out"), "mode": name} for name, (uri, db, start) in runs.items()]
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    proc = subprocess.Popen([sys.executable, str(DRIVER), json.dumps(specs)], env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def mid_batch(ck: Path):
        offs, done = checkpoint_offsets(ck), committed(ck)
        pending = set(offs) - done
        return (len(done) >= 2 and pending) and (max(pending), dict(offs[max(pending)]))

    def both_mid_batch():
        assert proc.poll() is None, f"the driver died: {proc.stdout.read().decode()}"
        got = [mid_batch(Path(s["checkpoint"])) for s in specs]
        return all(got) and got

    try:
        killed = wait_for(both_mid_batch, 240, 0.005, "both queries in the middle of a batch")
        os.killpg(proc.pid, signal.SIGKILL)  # the driver, its JVM and its Python workers
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    return {s["mode"]: SimpleNamespace(start=s["start"], checkpoint=Path(s["checkpoint"]), sink=Path(s["sink"]),
                                       batch=b, planned=p) for s, (b, p) in zip(specs, killed)}
