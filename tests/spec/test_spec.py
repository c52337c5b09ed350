"""The driver specifications' unified test files, against the sharded and the replica-set topology.

One test item per (topology, file, test).  A test is skipped only when its
own or its file's runOnRequirements exclude the deployment (the reason says
which requirement); a failing test fails the suite, unless it is a known
failure (tests/spec/known_failures.py), which is an xfail that must keep
failing.  Files that need authentication run against an auth-enabled cluster of
the same topology.  The tally per topology is printed at the end of the run
(tests/spec/conftest.py).
"""

from __future__ import annotations

import pytest

from tests.spec.conftest import (DATA, KIND_SEPARATOR, REQUIREMENT_PREFIX, SHARED, TOPOLOGIES, needs_auth,
                                 needs_secondaries, spec_root)
from tests.spec.errors import RequirementsNotMet, SkippedByFile
from tests.spec.known_failures import KNOWN_FAILURES
from tests.spec.runner import load_spec_file, spec_files

ROOT = spec_root()
FILES = {path.relative_to(ROOT).as_posix(): load_spec_file(path) for path in spec_files(ROOT)} if ROOT.is_dir() else {}


def case_ids() -> list[tuple[str, str, int, str]]:
    """(topology, file, index, id) of every test; a description repeated in a file gets " #2", " #3"."""
    out = []
    for topology in TOPOLOGIES:
        for name, spec in FILES.items():
            seen: dict[str, int] = {}
            for index, test in enumerate(spec["tests"]):
                desc = test["description"]
                seen[desc] = seen.get(desc, 0) + 1
                suffix = f" #{seen[desc]}" if seen[desc] > 1 else ""
                out.append((topology, name, index, f"{topology}/{name}/{desc}{suffix}"))
    return out


CASE_IDS = case_ids()
CASES = [
    pytest.param(topology, name, index, id=case_id,
                 marks=[pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[case_id])]
                 if case_id in KNOWN_FAILURES else [])
    for topology, name, index, case_id in CASE_IDS
]


def test_spec_files_found():
    assert FILES, f"no unified spec files under {ROOT} (set MONGOSIM_SPEC_TESTS)"


def test_known_failures_name_existing_tests():
    """Every entry of the known-failure list is a test of the suite (no stale entries)."""
    ids = {case_id for *_, case_id in CASE_IDS}
    assert [k for k in KNOWN_FAILURES if k not in ids] == []
    assert all(cause.strip() for cause in KNOWN_FAILURES.values())


@pytest.mark.skipif(not SHARED.is_dir(), reason="no shared spec checkout next to the repo to compare with")
def test_spec_copy_matches_shared_checkout():
    """The copy in tests/spec/data is the shared checkout's files, unmodified."""
    ours = {p.relative_to(DATA).as_posix(): p.read_bytes() for p in DATA.rglob("*") if p.is_file()}
    theirs = {p.relative_to(SHARED).as_posix(): p.read_bytes() for p in SHARED.rglob("*") if p.is_file()}
    assert sorted(ours) == sorted(theirs)
    assert [name for name in ours if ours[name] != theirs[name]] == []


@pytest.mark.parametrize(("topology", "file", "index"), CASES)
def test_spec(topology: str, file: str, index: int, request) -> None:
    request.node.user_properties.append(("spec_topology", topology))
    spec = FILES[file]
    test = spec["tests"][index]
    if needs_auth(spec, test):
        fixture = f"{topology}_auth_runner"
    elif topology == "replset" and needs_secondaries(spec, test):
        fixture = "replset_secondaries_runner"
    else:
        fixture = f"{topology}_runner"
    runner = request.getfixturevalue(fixture)
    try:
        runner.run_test(spec, test)
    except RequirementsNotMet as exc:
        pytest.skip(f"{REQUIREMENT_PREFIX} {exc.kind}{KIND_SEPARATOR}{exc.detail}")
    except SkippedByFile as exc:  # counted apart in the tally ("skipped for another reason")
        pytest.skip(f"skipReason: {exc}")
    except AssertionError as exc:
        # A failed expectation: its message says what differs and where; the runner's and pymongo's stack
        # frames add nothing, and formatting them for hundreds of known failures costs minutes.
        pytest.fail(str(exc), pytrace=False)
