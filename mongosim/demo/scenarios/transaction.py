"""transaction: a multi-shard transaction comes out as one block, in order.

A transaction writes on shard00 and shard01 and commits through the router
(two-phase commit): every participant commits at the same cluster time.
Each shard's unwind-transaction stage turns its part into events that share
that cluster time and count `txnOpIndex` from 0; the router interleaves the
parts by resume token (clusterTime, then txnOpIndex, then document key), so
the transaction's events leave together, with nothing from other writes in
between.
"""

from __future__ import annotations

from bson import Binary, Int64

from mongosim.demo.base import Demo, Scenario


async def run(d: Demo) -> None:
    await d.watch("db", "c")
    await d.at(1.0)
    await d.insert({"_id": 1, "k": 5})
    await d.at(2.0)
    lsid = {"id": Binary(bytes(range(16)), 4)}
    txn = {"lsid": lsid, "txnNumber": Int64(1), "autocommit": False}
    d.did("starts a transaction (session 1, txnNumber 1)")
    await d.insert({"_id": 10, "k": 10}, **txn, startTransaction=True)
    await d.insert({"_id": 11, "k": 110}, **txn)
    await d.insert({"_id": 12, "k": 12}, **txn)
    await d.insert({"_id": 13, "k": 113}, **txn)
    await d.at(3.0)
    d.did("commits the transaction (commitTransaction: two-phase commit over shard00 and shard01)")
    await d.client.command("admin", {"commitTransaction": 1, **txn})
    await d.at(4.0)
    await d.insert({"_id": 2, "k": 105})
    await d.wait_for_events(6, within=60)
    await d.at(5.0)


SCENARIO = Scenario(
    name="transaction",
    title="A multi-shard transaction",
    lesson="A transaction over several shards commits at one cluster time on each; each shard unwinds its part "
           "and the router interleaves the parts by (clusterTime, txnOpIndex), so the transaction comes out whole.",
    setup="2 shards; db.c sharded on k (k < 100 on shard00, k >= 100 on shard01); --instant-hwm (see cold-shard).",
    run=run,
    options={"instant_hwm": True},
    modules=("shardsim/changestream/unwind_transaction.py", "router/merge/async_results_merger.py"),
)
