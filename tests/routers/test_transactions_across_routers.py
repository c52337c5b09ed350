"""Transactions belong to the router that ran them; another router learns the outcome from the
recovery shard the recoveryToken names (a commit retried on another mongos)."""

from __future__ import annotations

import os

import bson
import pytest

from mongosim.core import open_cluster
from mongosim.testing import AsyncClient, CommandError

EPOCH = 1_700_000_000


def _session():
    return {"lsid": {"id": bson.Binary(os.urandom(16), 4)}, "txnNumber": 1, "autocommit": False}


async def test_the_recovery_token_names_the_first_shard_that_wrote(autojump_clock):
    async with open_cluster(shards=2, routers=2, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.router)
        await c.admin({"enableSharding": "db", "primaryShard": "shard01"})
        t = _session()
        r = await c.command("db", {"find": "c", "filter": {}, "startTransaction": True, **t})
        assert r["recoveryToken"] == {}  # read-only so far
        r = await c.command("db", {"insert": "c", "documents": [{"_id": 1}], **t})
        assert r["recoveryToken"] == {"recoveryShardId": "shard01"}
        r = await c.command("admin", {"commitTransaction": 1, **t})
        assert r["recoveryToken"] == {"recoveryShardId": "shard01"}


async def test_a_commit_retried_on_another_router_finds_it_committed(autojump_clock):
    async with open_cluster(shards=2, routers=2, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        a, b = AsyncClient(core.router), AsyncClient(core.routers[1])
        t = _session()
        r = await a.command("db", {"insert": "c", "documents": [{"_id": 1}], "startTransaction": True, **t})
        token = r["recoveryToken"]
        await a.command("admin", {"commitTransaction": 1, **t})
        r = await b.command("admin", {"commitTransaction": 1, "recoveryToken": token, **t})
        assert r["ok"] == 1.0
        # without a token, the other router knows nothing of it
        with pytest.raises(CommandError) as info:
            await b.command("admin", {"commitTransaction": 1, **t})
        assert info.value.code_name == "NoSuchTransaction"


async def test_a_commit_that_never_ran_is_aborted_by_the_recovery(autojump_clock):
    async with open_cluster(shards=2, routers=2, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        a, b = AsyncClient(core.router), AsyncClient(core.routers[1])
        t = _session()
        r = await a.command("db", {"insert": "c", "documents": [{"_id": 1}], "startTransaction": True, **t})
        with pytest.raises(CommandError) as info:
            await b.command("admin", {"commitTransaction": 1, "recoveryToken": r["recoveryToken"], **t})
        err = info.value
        assert err.code_name == "NoSuchTransaction"
        assert err.reply["errmsg"] == "Recovering the transaction's outcome found the transaction aborted"
        assert "TransientTransactionError" in err.labels and "UnknownTransactionCommitResult" not in err.labels
        assert await a.find("db", "c", {}) == []
        with pytest.raises(CommandError):  # the router that ran it finds it aborted on the shard
            await a.command("admin", {"commitTransaction": 1, **t})


async def test_an_empty_token_is_refused(autojump_clock):
    async with open_cluster(shards=2, routers=2, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        b = AsyncClient(core.routers[1])
        with pytest.raises(CommandError) as info:
            await b.command("admin", {"commitTransaction": 1, "recoveryToken": {}, **_session()})
        assert info.value.code_name == "NoSuchTransaction"
        assert "only performed reads" in info.value.reply["errmsg"]


async def test_a_router_stopping_under_a_waiting_get_more_fails_it_resumably(autojump_clock):
    """A getMore parked in the merge when its router stops gets InterruptedAtShutdown (resumable), not
    an empty last batch with cursor id 0 (which a driver reads as the end of the stream)."""
    import trio

    async with open_cluster(shards=2, routers=2, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        c = AsyncClient(core.routers[1])
        await c.insert("db", "c", [{"_id": 0}])
        reply = await c.command("db", {"aggregate": "c", "pipeline": [{"$changeStream": {}}], "cursor": {}})
        cid = reply["cursor"]["id"]
        got = []

        async def get_more():
            got.append(await c.command("db", {"getMore": cid, "collection": "c", "maxTimeMS": 5000}, check=False))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(get_more)
            await trio.sleep(1)
            core.routers[1].stop()
        assert got[0]["ok"] == 0 and got[0]["code"] == 11600
        assert "ResumableChangeStreamError" in got[0].get("errorLabels", [])
