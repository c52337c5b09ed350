"""pytest plugin (entry point `mongosim`): a `mongosim_cluster` fixture.

`pytest --mongosim-members 3` makes every shard (and the config server) of
the fixture's cluster a replica set of three members.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--mongosim-members", type=int, default=1,
                     help="members of each replica set in the mongosim_cluster fixture (default 1)")


@pytest.fixture
def mongosim_cluster(request: pytest.FixtureRequest):
    """A running 2-shard cluster on a free port for the duration of one test."""
    from mongosim import Cluster

    with Cluster(shards=2, port=0, members=request.config.getoption("--mongosim-members")) as cluster:
        yield cluster
