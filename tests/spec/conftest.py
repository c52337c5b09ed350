"""Fixtures of the unified-format spec suite: one cluster per topology per session, and the tally.

The spec files are an unmodified copy kept in `tests/spec/data/` (see its
README for source and licence), so a clean clone runs them; `$MONGOSIM_SPEC_TESTS`
points the suite at another checkout.  When the shared checkout next to the repo
(`<repo>/../shared/spec-tests`) exists, test_spec_copy_matches_shared_checkout checks the copy still matches it.

The runner finds the mongos routers of a sharded cluster in the connection
string's host list (as a driver's test runner does with its MONGODB_URI): a
cluster with several routers lists them all in `cluster.uri`.

Files that need authentication on (`auth: true`) run against a second cluster
of the same topology started with `--auth` (only when such a test runs).

The tally at the end of the run gives, per topology: tests passed, skipped by
requirement (by the kind of requirement), known failures (xfail, by cause),
and failures.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

TOPOLOGIES = ("sharded", "replset")
REQUIREMENT_PREFIX = "requirement:"
KIND_SEPARATOR = " -- "

DATA = Path(__file__).resolve().parent / "data"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "spec-tests"


def spec_root() -> Path:
    env = os.environ.get("MONGOSIM_SPEC_TESTS")
    return Path(env) if env else DATA


# The user of the auth-enabled deployments (files whose runOnRequirements say `auth: true`).
AUTH_USER = {"createUser": "spec", "pwd": "spec-password", "roles": ["root"]}


def needs_auth(spec: dict, test: dict) -> bool:
    """The file or the test runs only with authentication on (every runOnRequirement says auth: true)."""
    return any(reqs and all(r.get("auth") is True for r in reqs)
               for reqs in (spec.get("runOnRequirements"), test.get("runOnRequirements")))


# Read preference modes that a one-member replica set cannot serve (no secondary to select).
SECONDARY_MODES = frozenset({"secondary", "secondaryPreferred", "nearest"})


def needs_secondaries(spec: dict, test: dict) -> bool:
    """The test (or an entity of its file) names a read preference that would select a secondary.

    Such tests run against a three-member replica set; every other replica-set test runs against
    one member, where a timing-sensitive test (error-labels-blockConnection: a 150 ms block
    against a 100 ms socket timeout) cannot be slowed by a commit waiting for the majority."""
    def walk(node) -> bool:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "readPreference" and isinstance(value, dict) and value.get("mode") in SECONDARY_MODES:
                    return True
                if key == "readPreference" and isinstance(value, str) and value in SECONDARY_MODES:  # a URI option
                    return True
                if walk(value):
                    return True
        elif isinstance(node, list):
            return any(walk(v) for v in node)
        return False
    return walk(test) or walk(spec.get("createEntities", []))


def _runner(topology: str, users_dir: Path | None = None, members: int = 1):
    from mongosim import Cluster
    from tests.spec.runner import SpecRunner

    options: dict = {}
    if users_dir is not None:
        users = users_dir / "users.json"
        users.write_text(json.dumps([AUTH_USER]))
        options = {"auth": True, "users_file": str(users)}
    if topology == "sharded":  # two mongos: the tests of useMultipleMongoses run (the runner reads them from the URI)
        options["routers"] = 2
    if members > 1:
        options["members"] = members
    cluster = Cluster(shards=2, port=0, topology=topology, instant_hwm=True, **options).start()
    try:
        uri = cluster.uri
        if users_dir is not None:
            uri = uri.replace("mongodb://", f"mongodb://{AUTH_USER['createUser']}:{AUTH_USER['pwd']}@", 1)
        runner = SpecRunner(uri, auth=users_dir is not None)
    except BaseException:
        cluster.stop()
        raise
    return cluster, runner


def _deployment(topology: str, users_dir: Path | None = None, members: int = 1):
    cluster, runner = _runner(topology, users_dir, members)
    yield runner
    runner.close()
    cluster.stop()


@pytest.fixture(scope="session")
def sharded_runner():
    yield from _deployment("sharded")


@pytest.fixture(scope="session")
def replset_runner():
    yield from _deployment("replset")


@pytest.fixture(scope="session")
def replset_secondaries_runner():
    """A three-member replica set, for the tests that read from a secondary (needs_secondaries)."""
    yield from _deployment("replset", members=3)


@pytest.fixture(scope="session")
def sharded_auth_runner(tmp_path_factory):
    yield from _deployment("sharded", tmp_path_factory.mktemp("sharded-auth"))


@pytest.fixture(scope="session")
def replset_auth_runner(tmp_path_factory):
    yield from _deployment("replset", tmp_path_factory.mktemp("replset-auth"))


def pytest_runtest_logreport(report):
    """With $MONGOSIM_SPEC_REPORT set, one JSON line per spec test (id, outcome, duration, failure message):
    the raw material of tests/spec/TRIAGE.md and known_failures.py."""
    path = os.environ.get("MONGOSIM_SPEC_REPORT")
    if not path or _topology_of(report) is None or (report.when != "call" and not report.failed):
        return
    crash = getattr(report.longrepr, "reprcrash", None)
    line = {"id": report.nodeid.split("[", 1)[1][:-1], "outcome": report.outcome, "when": report.when,
            "duration": round(report.duration, 3), "message": crash.message if crash else None,
            "xfail": getattr(report, "wasxfail", None)}
    with open(path, "a") as f:
        f.write(json.dumps(line) + "\n")


def _topology_of(report) -> str | None:
    for key, value in getattr(report, "user_properties", ()):
        if key == "spec_topology":
            return value
    return None


def _skip_kind(report) -> str:
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    reason = reason.removeprefix("Skipped: ")
    if reason.startswith(REQUIREMENT_PREFIX):
        return "skipped by requirement: " + reason.removeprefix(REQUIREMENT_PREFIX).split(KIND_SEPARATOR)[0].strip()
    return "skipped for another reason: " + reason


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    tally: dict[str, Counter] = {}
    for outcome in ("passed", "failed", "skipped", "error", "xfailed", "xpassed"):
        for report in terminalreporter.stats.get(outcome, []):
            topo = _topology_of(report)
            if topo is None or (outcome == "passed" and report.when != "call"):
                continue
            if outcome == "skipped":
                key = _skip_kind(report)
            elif outcome == "xfailed":
                key = "known failure: " + getattr(report, "wasxfail", "")
            else:
                key = {"error": "failed", "xpassed": "failed"}.get(outcome, outcome)
            tally.setdefault(topo, Counter())[key] += 1
    if not tally:
        return
    terminalreporter.section("unified spec tests: tally")
    for topo in TOPOLOGIES:
        if topo not in tally:
            continue
        c = tally[topo]
        skipped = sum(n for k, n in c.items() if k.startswith("skipped"))
        known = sum(n for k, n in c.items() if k.startswith("known failure"))
        terminalreporter.write_line(f"{topo}: {c['passed']} passed, {skipped} skipped, {known} known failures, "
                                    f"{c['failed']} failed")
        for key, n in sorted(c.items(), key=lambda kv: (not kv[0].startswith("skipped"), -kv[1], kv[0])):
            if key.startswith(("skipped", "known failure")):
                terminalreporter.write_line(f"    {n:5d}  {key}")
