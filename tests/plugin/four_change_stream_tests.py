"""A user's test file: four change-stream tests on the `mongosim_client` fixture (not collected here:
tests/plugin/test_pytest_plugin.py runs it with pytester, benchmarks/bench_fixtures.py times it)."""

def test_insert_event(mongosim_client):
    orders = mongosim_client.shop.orders
    with orders.watch() as stream:
        orders.insert_one({"_id": 1, "total": 10})
        event = stream.next()
    assert event["operationType"] == "insert" and event["fullDocument"] == {"_id": 1, "total": 10}

def test_update_event(mongosim_client):
    orders = mongosim_client.shop.orders
    orders.insert_one({"_id": 1, "total": 10})
    with orders.watch(full_document="updateLookup") as stream:
        orders.update_one({"_id": 1}, {"$set": {"total": 12}})
        event = stream.next()
    assert event["updateDescription"]["updatedFields"] == {"total": 12}

def test_sharded_collection_events_in_order(mongosim_client):
    admin = mongosim_client.admin
    admin.command("enableSharding", "shop")
    admin.command("shardCollection", "shop.orders", key={"_id": "hashed"})
    orders = mongosim_client.shop.orders
    with orders.watch() as stream:
        orders.insert_many([{"_id": i} for i in range(10)])
        ids = [stream.next()["documentKey"]["_id"] for _ in range(10)]
    assert sorted(ids) == list(range(10))

def test_resume_after_a_token(mongosim_client):
    orders = mongosim_client.shop.orders
    with orders.watch() as stream:
        orders.insert_one({"_id": 1})
        token = stream.next()["_id"]
        orders.insert_one({"_id": 2})
    with orders.watch(resume_after=token) as stream:
        assert stream.next()["documentKey"] == {"_id": 2}
