"""Replica sets on virtual time: a three-member set (no router) and a sharded cluster of three-member shards."""

from __future__ import annotations

import pytest
import trio

from mongosim.core import open_cluster
from mongosim.testing import AsyncClient

EPOCH = 1_700_000_000


@pytest.fixture
async def rs3(autojump_clock):
    """A `--topology replset --members 3` deployment and a client of its first member (the primary)."""
    async with open_cluster(topology="replset", members=3, listen=False, epoch=EPOCH) as core:
        yield core, AsyncClient(core.frontend)


@pytest.fixture
async def sharded3(autojump_clock):
    """Two shards of three members each (and a three-member config server), a router client."""
    async with open_cluster(shards=2, members=3, listen=False, epoch=EPOCH, instant_hwm=True,
                            noop_interval=1.0) as core:
        yield core, AsyncClient(core.router)


def member_client(core, m, *, secondary_ok: bool = False) -> AsyncClient:
    """An in-process client of one member's own front door."""
    return AsyncClient(core.member_frontends[m.host])


def secondary_read(cmd: dict) -> dict:
    return {**cmd, "$readPreference": {"mode": "secondaryPreferred"}}


def member_state(m) -> dict:
    """A member's data, comparable across members: {ns: {_id key: document}} plus its oplog bytes."""
    data = {c.ns: dict(c.docs) for c in m.node.catalog.all_collections()}
    oplog = m.node.oplog
    return {"data": data, "oplog": [oplog.raw_at(p) for p in range(oplog.start, oplog.end)]}


async def settle(rs, seconds: float = 0.5) -> None:
    """Let replication run (virtual time)."""
    await trio.sleep(seconds)


def next_ids(stream, n: int, seconds: float = 10.0) -> list:
    """The `_id`s of a pymongo change stream's next `n` events (real time: give up after `seconds`)."""
    import time

    got: list = []
    deadline = time.time() + seconds
    while len(got) < n and time.time() < deadline:
        ev = stream.try_next()
        if ev is not None:
            got.append(ev["documentKey"]["_id"])
    return got
