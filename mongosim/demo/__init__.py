"""`mongosim demo SCENARIO`: deterministic runs on virtual time, one per concept of the merge.

Each scenario (`scenarios/`) drives a traced in-process cluster (`base.py`);
the trace (`mongosim.trace`) is replayed into a story (`story.py`), told in
the terminal (`terminal.py`) and drawn as an HTML timeline (`timeline.py`).
"""

from __future__ import annotations

from mongosim.demo.base import DemoResult, Scenario, run_scenario  # noqa: F401
from mongosim.demo.scenarios import (
    cold_shard,
    failover,
    interleaved,
    invalidate,
    new_shard,
    removed_shard,
    resume,
    slow_shard,
    transaction,
)

SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        interleaved.SCENARIO,
        slow_shard.SCENARIO,
        cold_shard.COLD,
        cold_shard.INSTANT,
        new_shard.SCENARIO,
        removed_shard.SCENARIO,
        transaction.SCENARIO,
        invalidate.SCENARIO,
        resume.SCENARIO,
        failover.SCENARIO,
    )
}


def run(name: str) -> DemoResult:
    """Run the scenario called `name` (see SCENARIOS)."""
    return run_scenario(SCENARIOS[name])
