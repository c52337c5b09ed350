"""Property: with arbiters, the commit point is the newest optime held by writeMajorityCount voting
data-bearing members, and the implicit default write concern follows the documented formula.

For any set of 1-4 data-bearing members and 0-2 arbiters, any subset of secondaries with replication
stopped, and a few w: 1 writes, once replication settles:

- `writeMajorityCount` = min(majorityVoteCount, voting data-bearing members), majorityVoteCount
  counting the arbiters' votes;
- the commit point is the writeMajorityCount-th newest optime among the voting data-bearing members
  (an arbiter never counts towards it), and no change stream shows an entry past it;
- getDefaultRWConcern reports w: "majority" unless (#arbiters > 0 and #data-bearing voters <=
  majority of the voters), then no default write concern (the implicit w: 1).
"""

from __future__ import annotations

import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from mongosim.core import open_cluster
from mongosim.oplog.clock import ts_key
from mongosim.testing import AsyncClient
from tests.replset.conftest import EPOCH


@st.composite
def deployments(draw):
    members = draw(st.integers(1, 4))
    arbiters = draw(st.integers(0, 2))
    stopped = draw(st.sets(st.integers(1, members - 1))) if members > 1 else set()
    writes = draw(st.integers(1, 4))
    return members, arbiters, stopped, writes


@settings(max_examples=30, deadline=None)
@given(deployment=deployments())
def test_commit_point_and_default_follow_the_data_bearing_majority(deployment):
    members, arbiters, stopped, writes = deployment

    async def run() -> None:
        async with open_cluster(topology="replset", members=members, arbiters=arbiters, listen=False,
                                epoch=EPOCH) as core:
            rs = core.replica_sets["shard00"]
            c = AsyncClient(core.frontend)
            cs = c.watch("db", "c", max_await_time_ms=50)
            await cs.open()
            await trio.sleep(1)
            for i in stopped:
                core.faults.stop_replication("shard00", i)
            for i in range(writes):
                await c.insert("db", "c", [{"_id": i}], writeConcern={"w": 1})
            await trio.sleep(2)
            voters = len(rs.members)
            majority = voters // 2 + 1
            write_majority = min(majority, members)
            status = await c.command("admin", {"replSetGetStatus": 1})
            assert (status["majorityVoteCount"], status["writeMajorityCount"]) == (majority, write_majority)
            assert status["writableVotingMembersCount"] == members and status["votingMembersCount"] == voters
            held = sorted((m.last_key for m in rs.data_bearing), reverse=True)
            commit = rs.commit_key if rs.multi else rs.primary.last_key  # (one member: committed as written)
            assert commit == held[write_majority - 1]
            seen = []
            for _ in range(writes + 2):
                ev = await cs.try_next()
                if ev is not None:
                    assert ts_key(ev["clusterTime"]) <= commit
                    seen.append(ev["documentKey"]["_id"])
            everyone = len(stopped) <= members - write_majority  # enough members still replicate
            assert seen == (list(range(writes)) if everyone else [])
            default = await c.command("admin", {"getDefaultRWConcern": 1})
            w1 = arbiters > 0 and members <= majority
            assert ("defaultWriteConcern" not in default) == w1

    trio.run(run, clock=trio.testing.MockClock(autojump_threshold=0))
