"""Atlas Search on a deployment without search: the server's SearchNotEnabled (31082), both topologies."""

from __future__ import annotations

import pymongo
import pytest
from pymongo.errors import OperationFailure
from pymongo.operations import SearchIndexModel

from mongosim import Cluster
from mongosim.shardsim.search_indexes import SEARCH_INDEX_COMMANDS_REFUSED, SEARCH_STAGES_REFUSED


@pytest.fixture(scope="module", params=["sharded", "replset"])
def coll(request):
    with Cluster(shards=2, port=0, topology=request.param, instant_hwm=True) as cluster:
        client = pymongo.MongoClient(cluster.uri)
        c = client.search_db.items
        c.insert_one({"_id": 1})
        yield c
        client.close()


def _refused(excinfo, message=SEARCH_INDEX_COMMANDS_REFUSED):
    err = excinfo.value
    assert (err.code, err.details["codeName"], err.details["errmsg"]) == (31082, "SearchNotEnabled", message)


def test_search_index_helpers_are_refused(coll):
    with pytest.raises(OperationFailure) as e:
        coll.create_search_index({"definition": {"mappings": {"dynamic": True}}})
    _refused(e)
    with pytest.raises(OperationFailure) as e:
        coll.create_search_indexes([SearchIndexModel({"mappings": {"dynamic": True}}, name="a")])
    _refused(e)
    with pytest.raises(OperationFailure) as e:
        coll.update_search_index("a", {"mappings": {"dynamic": False}})
    _refused(e)
    with pytest.raises(OperationFailure) as e:
        coll.drop_search_index("a")
    _refused(e)
    with pytest.raises(OperationFailure) as e:
        list(coll.list_search_indexes())  # the $listSearchIndexes stage
    _refused(e)


def test_the_command_is_parsed_before_it_is_refused(coll):
    db = coll.database
    with pytest.raises(OperationFailure) as e:
        db.command({"createSearchIndexes": "items"})
    assert e.value.code == 40414 and "createSearchIndexes.indexes" in str(e.value)
    with pytest.raises(OperationFailure) as e:
        db.command({"updateSearchIndex": "items", "name": "a", "definition": "x"})
    assert e.value.code == 14


@pytest.mark.parametrize("stage", ["$search", "$searchMeta", "$vectorSearch"])
def test_search_stages_are_refused(coll, stage):
    with pytest.raises(OperationFailure) as e:
        list(coll.aggregate([{stage: {}}]))
    _refused(e, SEARCH_STAGES_REFUSED)
