"""pymongo's own tests against mongosim, as against a real cluster.

The driver specification's unified files (tests/spec) test the wire behaviour the specification
fixes; pymongo's own suite also tests what the driver builds on it, the way an application uses it:
collections, databases, cursors (the getMores a batch size and a limit take), bulk writes, sessions,
transactions, GridFS buckets, causal consistency, read concern, the manual's examples, and its
change streams (resume after errors and after a
killed cursor, `startAfter`/`resumeAfter` with the tokens the server gives, post-batch resume tokens,
batch sizes, `try_next`, full-document lookups, collection/database/cluster streams).  The files run
unchanged (the sdist's, `pymongo_suite.py`), in one pytest session per topology as pymongo's CI runs
them, against a sharded cluster through mongos and against a three-member replica set; their own
requirement decorators skip what does not apply to a topology (a cluster stream is not invalidated
by a drop; direct-to-mongod tests through mongos).  Every test must pass, and as many as the locked
suite runs there (so that a server that made the suite skip itself, e.g. one it could not reach,
fails here).  Files left out: `test_retryable_writes.py`
(its error-propagation tests connect to localhost:27017 whatever DB_PORT says), `test_client.py`
(its handshake tests expect a machine that is not in a container).
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from tests.drivers.pymongo_suite import run_suite, suite_home

FILES = ["test_change_stream.py", "test_collection.py", "test_database.py", "test_bulk.py", "test_session.py",
         "test_transactions.py", "test_examples.py", "test_gridfs_bucket.py", "test_causal_consistency.py",
         "test_read_concern.py", "test_cursor.py"]
# topology -> (options of mongosim.Cluster, tests of FILES that pass there with pymongo 4.20.0's suite)
TOPOLOGIES = {
    "sharded": ({"shards": 2, "instant_hwm": True}, 455),
    "replset": ({"topology": "replset", "members": 3, "noop_interval": 1}, 492),
}


@pytest.fixture(scope="module")
def home():
    return suite_home()


@pytest.mark.parametrize("topology", sorted(TOPOLOGIES))
def test_pymongos_own_suite(home, topology):
    import mongosim

    options, expected = TOPOLOGIES[topology]
    with mongosim.Cluster(port=0, **options) as cluster:
        first = urlsplit(cluster.uri).netloc.split(",")[0]
        host, _, port = first.rpartition(":")
        counts = run_suite(home, [f"test/{f}" for f in FILES], host, int(port))
    out = counts.pop("output")
    assert not counts.get("failed") and not counts.get("error") and not counts.get("errors"), out
    assert counts.get("passed", 0) >= expected, (counts, out)
