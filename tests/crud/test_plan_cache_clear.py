"""planCacheClear (mongosh's `db.c.getPlanCache().clear()`): nothing is cached, but the arguments are
checked as the server checks them, on mongod and through mongos."""

from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure


def test_plan_cache_clear(client):
    client.drop_database("pcc")
    db = client.pcc
    db.c.insert_one({"a": 1})
    assert db.command("planCacheClear", "c")["ok"] == 1
    assert db.command("planCacheClear", "c", query={"a": 1}, sort={"a": 1}, projection={"_id": 0})["ok"] == 1
    assert db.command("planCacheClear", "missing")["ok"] == 1  # (nothing to clear)
    assert list(db.c.aggregate([{"$planCacheStats": {}}])) == []
    for kwargs, message in (({"sort": {"a": 1}}, "sort or projection provided without query"),
                            ({"query": 1}, "required field query must be an object"),
                            ({"query": {}, "sort": 1}, "optional field sort must be an object")):
        with pytest.raises(OperationFailure) as e:
            db.command("planCacheClear", "c", **kwargs)
        assert e.value.code == 2 and e.value.details["errmsg"] == message
    with pytest.raises(OperationFailure) as e:
        db.command("planCacheClear", "c", query={"a": {"$bogus": 1}})
    assert e.value.code == 2 and "$bogus" in e.value.details["errmsg"]
