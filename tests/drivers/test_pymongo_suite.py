"""pymongo's own tests against mongosim, as against a real cluster: its change-stream suite.

The driver specification's unified files (tests/spec) test the wire behaviour the specification
fixes; pymongo's own `test/test_change_stream.py` also tests what the driver builds on it: resume
after errors and after a killed cursor, `startAfter`/`resumeAfter` with the tokens the server gives,
post-batch resume tokens, batch sizes, `try_next`, full-document lookups, collection/database/cluster
streams.  It runs unchanged (the sdist's file, `pymongo_suite.py`) against a sharded cluster through
mongos and against a three-member replica set; its own requirement decorators skip what does not apply
to a topology (a mongos cannot be invalidated by a drop of its cluster stream; direct-to-mongod
tests).  Every test must pass, and as many as the locked suite runs there (so that a server that
made the suite skip itself, e.g. one it could not reach, fails here).
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from tests.drivers.pymongo_suite import run_suite, suite_home

# (topology, options of mongosim.Cluster, tests that pass there with pymongo 4.20.0's suite)
TOPOLOGIES = {
    "sharded": ({"shards": 2, "instant_hwm": True}, 105),
    "replset": ({"topology": "replset", "members": 3, "noop_interval": 1}, 129),
}


@pytest.fixture(scope="module")
def home():
    return suite_home()


@pytest.mark.parametrize("topology", sorted(TOPOLOGIES))
def test_pymongos_change_stream_suite(home, topology):
    import mongosim

    options, expected = TOPOLOGIES[topology]
    with mongosim.Cluster(port=0, **options) as cluster:
        first = urlsplit(cluster.uri).netloc.split(",")[0]
        host, _, port = first.rpartition(":")
        counts = run_suite(home, ["test/test_change_stream.py"], host, int(port))
    out = counts.pop("output")
    assert not counts.get("failed") and not counts.get("error") and not counts.get("errors"), out
    assert counts.get("passed", 0) >= expected, out
