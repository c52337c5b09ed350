"""Which tests apply to a deployment: schemaVersion and runOnRequirements.

A runOnRequirement is met when every field in it is met; a list of them is
met when any one is (unified test format, "runOnRequirement").  A list that
is not met names the kind of requirement that excluded the test, so the
suite's tally can say why each skipped test does not apply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from tests.spec.errors import RequirementsNotMet, UnsupportedByRunner

# The newest schema version this runner implements (schema 1.21 added expectedError.writeErrors and
# writeConcernErrors for clientBulkWrite).
SUPPORTED_SCHEMA = (1, 21)


def parse_version(text: str) -> tuple[int, int, int]:
    """`<major>[.<minor>[.<patch>]]`, anything after the numbers discarded ("4.9.0-alpha4" is 4.9.0)."""
    parts = [int(re.match(r"\d+", p).group()) for p in str(text).split(".")[:3]]
    while len(parts) < 3:
        parts.append(0)
    return tuple(parts)  # type: ignore[return-value]


def check_schema_version(doc: dict) -> None:
    major, minor, _ = parse_version(doc["schemaVersion"])
    if major != SUPPORTED_SCHEMA[0] or minor > SUPPORTED_SCHEMA[1]:
        raise UnsupportedByRunner(f"schemaVersion {doc['schemaVersion']} not supported (runner supports "
                                  f"{SUPPORTED_SCHEMA[0]}.0-{SUPPORTED_SCHEMA[0]}.{SUPPORTED_SCHEMA[1]})")


@dataclass
class Deployment:
    """What the runner learned about the deployment it tests (and how it was told to describe it)."""

    version: tuple[int, int, int]
    topology: str  # single | replicaset | sharded
    routers: list[str] = field(default_factory=list)  # mongos addresses "host:port" (sharded)
    shards_are_replsets: bool = True
    serverless: bool = False
    auth: bool = False
    csfle: bool = False  # the runner has no client-side encryption
    parameter: Callable[[str], Any] = lambda name: KeyError  # getParameter, KeyError when unknown

    @property
    def version_text(self) -> str:
        return ".".join(map(str, self.version))


def requirement_problem(dep: Deployment, req: dict) -> tuple[str, str] | None:
    """(kind, why) for the first field of one runOnRequirement the deployment does not meet, or None."""
    for key, value in req.items():
        if key == "minServerVersion":
            if dep.version < parse_version(value):
                return "server version", f"{dep.version_text} < minServerVersion {value}"
        elif key == "maxServerVersion":
            if dep.version > parse_version(value):
                return "server version", f"{dep.version_text} > maxServerVersion {value}"
        elif key == "topologies":
            ok = dep.topology in value or (
                dep.topology == "sharded" and "sharded-replicaset" in value and dep.shards_are_replsets)
            if not ok:
                return "topology", f"{dep.topology} not in {value}"
        elif key == "serverless":
            if (value == "require" and not dep.serverless) or (value == "forbid" and dep.serverless):
                return "serverless", f"serverless: {value}"
        elif key == "auth":
            if bool(value) != dep.auth:
                return "auth", f"auth: {value} (deployment {'with' if dep.auth else 'without'} auth)"
        elif key == "authMechanism":
            offered = dep.parameter("authenticationMechanisms") if dep.auth else KeyError
            if offered is KeyError or value.lower() not in (m.lower() for m in offered):
                return "auth", f"authMechanism {value} not offered"
        elif key == "csfle":
            if bool(value) != dep.csfle:
                return "csfle", f"csfle: {value}"
        elif key == "serverParameters":
            for name, expected in value.items():
                actual = dep.parameter(name)
                if actual is KeyError or not _same_parameter(expected, actual):
                    return "serverParameters", f"{name}={actual!r}, wanted {expected!r}"
        else:
            raise UnsupportedByRunner(f"unknown runOnRequirement field {key!r}")
    return None


def _same_parameter(expected: Any, actual: Any) -> bool:
    """Flexible numeric comparison (int, long and double equal when their values are)."""
    numbers = (int, float)
    if isinstance(expected, numbers) and isinstance(actual, numbers) \
            and not isinstance(expected, bool) and not isinstance(actual, bool):
        return expected == actual
    return type(expected) is type(actual) and expected == actual


def check_requirements(dep: Deployment, reqs: list | None, where: str) -> None:
    """Raise RequirementsNotMet unless one of the runOnRequirements is met (none given: met)."""
    if not reqs:
        return
    problems = [requirement_problem(dep, r) for r in reqs]
    if all(p is not None for p in problems):
        kinds = " / ".join(sorted({p[0] for p in problems}))  # type: ignore[index]
        raise RequirementsNotMet(kinds, f"{where}: " + "; ".join(p[1] for p in problems))  # type: ignore[index]
