"""Spark tests: one SparkSession and one mongosim cluster for the whole run.

The session never calls `mongosim.spark.register`: Spark finds both formats
itself through the installed `pyspark_*` modules (`spark-plugin/`), so every
test here also checks the static registration.

Skipped only when pyspark is not importable (`make test` installs the `spark`
extra, so they run there).  The Spark reader processes connect to the cluster
over loopback; each test works in its own database.
"""

from __future__ import annotations

import os
import sys
import time

import pytest

from tests.spark.helpers import STREAMS, drain, workload

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


