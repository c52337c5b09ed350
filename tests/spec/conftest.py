"""Fixtures of the unified-format spec suite: one cluster per topology per session, and the tally.

The spec files are an unmodified copy kept in `tests/spec/data/` (see its
README for source and licence), so a clean clone runs them; `$MONGOSIM_SPEC_TESTS`
points the suite at another checkout.  When the shared checkout next to the repo
(`<repo>/../shared/spec-tests`) exists, test_spec_copy_matches_shared_checkout checks the copy still matches it.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

TOPOLOGIES = ("sharded", "replset")
REQUIREMENT_PREFIX = "requirement:"


DATA = Path(__file__).resolve().parent / "data"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "spec-tests"


def spec_root() -> Path:
    env = os.environ.get("MONGOSIM_SPEC_TESTS")
    return Path(env) if env else DATA


def _runner(topology: str):
    from mongosim import Cluster
    from tests.spec.runner import SpecRunner

    cluster = Cluster(shards=2, port=0, topology=topology, instant_hwm=True).start()
    try:
        runner = SpecRunner(cluster.uri)
    except BaseException:
        cluster.stop()
        raise
    return cluster, runner


@pytest.fixture(scope="session")
def sharded_runner():
    cluster, runner = _runner("sharded")
    yield runner
    runner.close()
    cluster.stop()


@pytest.fixture(scope="session")
def replset_runner():
    cluster, runner = _runner("replset")
    yield runner
    runner.close()
    cluster.stop()


def _topology_of(report) -> str | None:
    for key, value in getattr(report, "user_properties", ()):
        if key == "spec_topology":
            return value
    return None


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    tally: dict[str, Counter] = {}
    for outcome in ("passed", "failed", "skipped", "error"):
        for report in terminalreporter.stats.get(outcome, []):
            topo = _topology_of(report)
            if topo is None:
                continue
            if outcome == "skipped":
                reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
                reason = reason.removeprefix("Skipped: ")
                outcome_key = "skipped by requirement" if reason.startswith(REQUIREMENT_PREFIX) else "skipped (other)"
            elif outcome == "error":
                outcome_key = "failed"
            else:
                outcome_key = outcome
            if report.when != "call" and outcome == "passed":
                continue
            tally.setdefault(topo, Counter())[outcome_key] += 1
    if not tally:
        return
    terminalreporter.section("unified spec tests: tally")
    for topo in TOPOLOGIES:
        if topo not in tally:
            continue
        c = tally[topo]
        line = (f"{topo:8s}: {c['passed']} passed, {c['skipped by requirement']} skipped by requirement, "
                f"{c['failed']} failed")
        if c["skipped (other)"]:
            line += f", {c['skipped (other)']} skipped for another reason"
        terminalreporter.write_line(line)
