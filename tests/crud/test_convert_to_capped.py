"""convertToCapped (and a member's cloneCollectionAsCapped): the collection becomes capped with its
documents, through a temporary collection renamed over it — as a change stream sees — and the
server's errors (capped_utils.cpp, cluster_convert_to_capped_cmd.cpp)."""

from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure


@pytest.fixture
def db(client, request):
    db = client[f"cap2_{request.node.name.split('[')[0][-20:]}"]
    client.drop_database(db.name)
    return db


def test_convert_to_capped_keeps_the_documents_and_caps_them(db):
    db.c.insert_many([{"_id": i, "pad": "x" * 100} for i in range(20)])
    db.c.create_index("pad")
    with db.watch(show_expanded_events=True) as stream:
        assert db.command("convertToCapped", "c", size=100_000)["ok"] == 1
        events = [stream.next() for _ in range(1 + 20 + 1)]
    opts = db.c.options()
    assert opts["capped"] is True and opts["size"] == 100_000 and "temp" not in opts
    assert [d["_id"] for d in db.c.find()] == list(range(20))
    assert [ix["name"] for ix in db.c.list_indexes()] == ["_id_"]  # (the clone has the _id index only)
    assert db.list_collection_names() == ["c"]
    kinds = [e["operationType"] for e in events]
    assert kinds == ["create"] + ["insert"] * 20 + ["rename"]
    tmp = events[0]["ns"]["coll"]
    assert tmp.startswith("tmp") and tmp.endswith(".convertToCapped.c") and len(tmp) == len("tmpXXXXX.convertToCapped.c")
    assert events[-1]["to"] == {"db": db.name, "coll": "c"}
    # a small size: the oldest documents go
    db.d.insert_many([{"_id": i, "pad": "y" * 1000} for i in range(50)])
    db.command("convertToCapped", "d", size=4096)
    kept = [d["_id"] for d in db.d.find()]
    assert 0 < len(kept) < 10 and kept == list(range(50 - len(kept), 50))


def test_convert_to_capped_errors(db, client):
    with pytest.raises(OperationFailure) as e:
        db.command("convertToCapped", "c", size=1000)
    assert e.value.code == 26 and e.value.details["errmsg"] == f"database {db.name} not found"
    db.c.insert_one({"_id": 1})
    with pytest.raises(OperationFailure) as e:
        db.command("convertToCapped", "nope", size=1000)
    assert e.value.code == 26 and e.value.details["errmsg"] == f"source collection {db.name}.nope does not exist"
    db.create_collection("v", viewOn="c", pipeline=[])
    with pytest.raises(OperationFailure) as e:
        db.command("convertToCapped", "v", size=1000)
    assert e.value.code == 166 and "cloneCollectionAsCapped not supported for views" in e.value.details["errmsg"]
    with pytest.raises(OperationFailure) as e:
        db.command("convertToCapped", "c")
    assert e.value.code == 40414 and e.value.details["errmsg"] == \
        "BSON field 'convertToCapped.size' is missing but a required field"
    with pytest.raises(OperationFailure) as e:
        db.command("convertToCapped", "c", size="big")
    assert e.value.code == 14
    assert db.c.find_one() == {"_id": 1} and "capped" not in db.c.options()  # nothing changed


def test_a_sharded_collection_is_refused(sharded_client):
    sharded_client.drop_database("cap2_sharded")
    sharded_client.admin.command("shardCollection", "cap2_sharded.s", key={"_id": 1})
    with pytest.raises(OperationFailure) as e:
        sharded_client.cap2_sharded.command("convertToCapped", "s", size=1000)
    assert e.value.code == 20 and e.value.details["errmsg"] == "You can't convertToCapped a sharded collection"


def test_clone_collection_as_capped_on_a_member(replset_client):
    db = replset_client.cap2_clone
    replset_client.drop_database(db.name)
    db.src.insert_many([{"_id": i} for i in range(5)])
    db.command("cloneCollectionAsCapped", "src", toCollection="dst", size=10_000)
    assert db.dst.options()["capped"] is True and [d["_id"] for d in db.dst.find()] == list(range(5))
    assert "capped" not in db.src.options()
    with pytest.raises(OperationFailure) as e:
        db.command("cloneCollectionAsCapped", "src", toCollection="dst", size=10_000)
    assert e.value.code == 48 and e.value.details["errmsg"] == (
        f"cloneCollectionAsCapped failed - destination collection {db.name}.dst already exists. source collection: "
        f"{db.name}.src")
