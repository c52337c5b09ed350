"""One cluster per topology for the CRUD tests (module scope is enough: they are quick to start)."""

from __future__ import annotations

import pymongo
import pytest

from mongosim import Cluster


@pytest.fixture(scope="module", params=["sharded", "replset"])
def client(request):
    with Cluster(shards=2, port=0, topology=request.param, instant_hwm=True) as cluster:
        c = pymongo.MongoClient(cluster.uri)
        yield c
        c.close()
