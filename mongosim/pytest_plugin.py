"""pytest plugin (entry point `mongosim`): a `mongosim_cluster` fixture."""

from __future__ import annotations

import pytest


def pytest_addoption(parser) -> None:
    parser.addoption("--mongosim-routers", type=int, default=1,
                     help="mongos routers of the mongosim_cluster fixture (default 1)")


@pytest.fixture
def mongosim_cluster(request):
    """A running 2-shard cluster on a free port for the duration of one test
    (`--mongosim-routers R`: with R routers; `cluster.uri` names them all)."""
    from mongosim import Cluster

    with Cluster(shards=2, port=0, routers=request.config.getoption("--mongosim-routers")) as cluster:
        yield cluster
