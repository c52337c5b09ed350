"""How one unified-format test can end other than by passing.

- `RequirementsNotMet`: the test (or its file) does not apply to this deployment;
  its `kind` names the requirement (server version, topology, serverless, ...).
- `SkippedByFile`: the test file itself says to skip the test (`skipReason`).
- `UnsupportedByRunner`: the file uses something this runner does not
  implement, or breaks the format's rules (unknown argument, missing entity).
  It is reported as a failure, never as a pass or a skip.
- `MissingFeature`: the test needs something mongosim could offer but the
  deployment lacks (several mongos routers for `useMultipleMongoses: true`):
  a failure of the emulator, not a requirement that does not apply.
"""

from __future__ import annotations


class RequirementsNotMet(Exception):
    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


class SkippedByFile(Exception):
    pass


class UnsupportedByRunner(Exception):
    pass


class MissingFeature(AssertionError):
    pass
