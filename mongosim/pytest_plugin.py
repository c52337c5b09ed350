"""pytest plugin (entry point `mongosim`): a `mongosim_cluster` fixture."""

from __future__ import annotations

import pytest


@pytest.fixture
def mongosim_cluster():
    """A running 2-shard cluster on a free port for the duration of one test."""
    from mongosim import Cluster

    with Cluster(shards=2, port=0) as cluster:
        yield cluster
