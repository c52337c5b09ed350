"""The driver specifications' unified change-stream tests, against the sharded and the replica-set topology.

One test item per (topology, file, test).  A test is skipped only when its
own or its file's runOnRequirements exclude the deployment (the reason says
which requirement); a failing test fails the suite.  The tally per topology
is printed at the end of the run (tests/spec/conftest.py).
"""

from __future__ import annotations

import pytest

from tests.spec.conftest import DATA, REQUIREMENT_PREFIX, SHARED, TOPOLOGIES, spec_root
from tests.spec.runner import RequirementsNotMet, SkippedByFile, load_spec_file, spec_files

ROOT = spec_root()
FILES = {path.relative_to(ROOT).as_posix(): load_spec_file(path) for path in spec_files(ROOT)} if ROOT.is_dir() else {}

CASES = [
    pytest.param(topology, name, index, id=f"{topology}/{name}/{test['description']}")
    for topology in TOPOLOGIES
    for name, spec in FILES.items()
    for index, test in enumerate(spec["tests"])
]


def test_spec_files_found():
    assert FILES, f"no unified spec files under {ROOT} (set MONGOSIM_SPEC_TESTS)"


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
    runner = request.getfixturevalue(f"{topology}_runner")
    spec = FILES[file]
    try:
        runner.run_test(spec, spec["tests"][index])
    except RequirementsNotMet as exc:
        pytest.skip(f"{REQUIREMENT_PREFIX} {exc}")
    except SkippedByFile as exc:  # counted apart in the tally ("skipped for another reason")
        pytest.skip(f"skipReason: {exc}")
