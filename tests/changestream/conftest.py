import pytest
import trio

from mongosim.core import open_cluster
from mongosim.testing import AsyncClient

EPOCH = 1_700_000_000


@pytest.fixture
async def replset(autojump_clock):
    """A replica-set node and an in-process client, on virtual time."""
    async with open_cluster(topology="replset", listen=False, epoch=EPOCH) as core:
        yield core, AsyncClient(core.frontend)


@pytest.fixture
async def sharded(autojump_clock):
    async with open_cluster(shards=3, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        yield core, AsyncClient(core.router)


async def drain(cs, n: int, limit: float = 120.0) -> list[dict]:
    out = []
    t0 = trio.current_time()
    while len(out) < n:
        ev = await cs.try_next()
        if ev is not None:
            out.append(ev)
        if cs.closed:
            break
        assert trio.current_time() - t0 < limit, f"only {len(out)} of {n} events"
    return out
