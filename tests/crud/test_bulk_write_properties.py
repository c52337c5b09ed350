"""bulkWrite does what the same ops do one by one (a differential property test, both topologies).

Random ops over two namespaces and a small `_id` space (so they collide:
duplicate keys, updates that match nothing, upserts, deletes of what is gone)
run once as a bulkWrite and once as single insert/update/delete commands on a
twin pair of collections; the per-op outcomes (ok or error code, n, nModified,
upserted _id) and the final documents must agree.  On the sharded cluster one
namespace is sharded over both shards: mongos keeps each shard's ops in the
client's order, also unordered, and a single op without the shard key waits
for what came before it (the server's targetWriteOps), so the outcomes match.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.crud.conftest import shard_two_ways
from tests.driver_version import RAW_BULK_WRITE

KS = [1, 150]  # shard keys on either shard
_ids = st.integers(0, 4)
_op = st.one_of(
    st.builds(lambda ns, i, k: ("insert", ns, {"_id": i, "k": k}), st.integers(0, 1), _ids, st.sampled_from(KS)),
    st.builds(lambda ns, i, k, multi, upsert: ("update", ns, {"q": {"_id": i, "k": k}, "u": {"$inc": {"n": 1}},
                                                              "multi": multi, "upsert": upsert}),
              st.integers(0, 1), _ids, st.sampled_from(KS), st.booleans(), st.booleans()),
    st.builds(lambda ns, i, multi: ("delete", ns, {"q": {"_id": {"$lte": i}} if multi else {"_id": i},
                                                   "limit": 0 if multi else 1}),
              st.integers(0, 1), _ids, st.booleans()),
)


def _bulk_op(kind: str, ns: int, spec: dict) -> dict:
    if kind == "insert":
        return {"insert": ns, "document": spec}
    if kind == "update":
        return {"update": ns, "filter": spec["q"], "updateMods": spec["u"], "multi": spec["multi"],
                "upsert": spec["upsert"]}
    return {"delete": ns, "filter": spec["q"], "multi": spec["limit"] == 0}


def _one_by_one(db, names: list[str], ops: list, ordered: bool) -> list[tuple]:
    out = []
    for kind, ns, spec in ops:
        coll = names[ns]
        if kind == "insert":
            r = db.command({"insert": coll, "documents": [spec]})
        elif kind == "update":
            r = db.command({"update": coll, "updates": [spec]})
        else:
            r = db.command({"delete": coll, "deletes": [spec]})
        if r.get("writeErrors"):
            out.append(("error", r["writeErrors"][0]["code"]))
            if ordered:
                break
        else:
            upserted = (r.get("upserted") or [{}])[0].get("_id")
            out.append(("ok", r["n"], r.get("nModified"), upserted))
    return out


def _outcomes(items: list[dict]) -> list[tuple]:
    return [("error", i["code"]) if not i["ok"] else ("ok", i["n"], i.get("nModified"), i.get("upserted", {}).get("_id"))
            for i in items]


@RAW_BULK_WRITE
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_op, min_size=1, max_size=8), ordered=st.booleans())
def test_bulk_write_equals_single_writes(client, ops, ordered):
    sharded = client.topology_name == "sharded"
    db = client.bwp
    if sharded and "bwp.a" not in {c["_id"] for c in client.config.collections.find()}:
        shard_two_ways(client, "bwp.a", split=100)
        shard_two_ways(client, "bwp.twin_a", split=100)
    for name in ("a", "b", "twin_a", "twin_b"):
        db[name].delete_many({})
    reply = client.admin.command({"bulkWrite": 1, "ops": [_bulk_op(*op) for op in ops],
                                  "nsInfo": [{"ns": "bwp.a"}, {"ns": "bwp.b"}], "ordered": ordered})
    expected = _one_by_one(db, ["twin_a", "twin_b"], ops, ordered)
    assert _outcomes(reply["cursor"]["firstBatch"]) == expected
    assert sorted(map(str, db.a.find())) == sorted(map(str, db.twin_a.find()))
    assert sorted(map(str, db.b.find())) == sorted(map(str, db.twin_b.find()))
    assert reply["nErrors"] == sum(1 for e in expected if e[0] == "error")
