"""System namespaces in database and cluster streams: excluded by default, the server's few shown with
`showSystemEvents` (kRegexAllCollectionsShowSystemEvents)."""

from __future__ import annotations

import pytest

from mongosim.shardsim.changestream.context import NamespaceFilter
from mongosim.shardsim.changestream.spec import CLUSTER, DATABASE
from tests.corners.conftest import BOTH, read


def _stream(client, level: str, show_system: bool):
    spec = {"showSystemEvents": True} if show_system else {}
    if level == "cluster":
        return client.admin.aggregate([{"$changeStream": {**spec, "allChangesForCluster": True}}], maxAwaitTimeMS=50)
    return client.sysdb.aggregate([{"$changeStream": spec}], maxAwaitTimeMS=50)


@BOTH
@pytest.mark.parametrize("level", ["database", "cluster"])
@pytest.mark.parametrize("show_system", [False, True])
def test_system_js_only_with_show_system_events(mongosim_client, topology, level, show_system):
    db = mongosim_client.sysdb
    db.plain.insert_one({"_id": 0})  # the database exists before the streams open
    with _stream(mongosim_client, level, show_system) as cursor:
        db["system.js"].insert_one({"_id": "f", "value": 1})
        db["system.js"].update_one({"_id": "f"}, {"$set": {"value": 2}})
        db["system.js"].delete_one({"_id": "f"})
        db.plain.insert_one({"_id": 1})
        events = read(cursor, 4 if show_system else 1)
    seen = [(e["operationType"], e["ns"]["coll"]) for e in events]
    if show_system:
        assert seen == [("insert", "system.js"), ("update", "system.js"), ("delete", "system.js"), ("insert", "plain")]
    else:
        assert seen == [("insert", "plain")]


@pytest.mark.parametrize("level", [DATABASE, CLUSTER])
def test_the_server_regex_for_system_collections(level):
    db = "sysdb" if level == DATABASE else "admin"
    shown = NamespaceFilter(level, db, None, show_system=True)
    hidden = NamespaceFilter(level, db, None)
    for coll in ("system.js", "system.resharding.0a1b", "system.buckets.weather", "system.views"):
        assert shown.ns(f"sysdb.{coll}") and not hidden.ns(f"sysdb.{coll}")
    for coll in ("system.profile", "system.jsx", "system.views2", "system.users", "$cmd", "system.js.x"):
        assert not shown.ns(f"sysdb.{coll}") and not hidden.ns(f"sysdb.{coll}")
    assert shown.ns("sysdb.c") and hidden.ns("sysdb.c")
    assert not shown.ns("config.system.js") and not hidden.ns("config.x")
    assert shown.ns("other.system.js") == (level == CLUSTER)
