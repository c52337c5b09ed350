"""Tools the tests install into the clone on first use (mongosh, the Node.js driver, pymongo's own suite):
one rule for a tool that is not there.

An install raises `ToolMissing` saying why.  The test then skips with that reason, unless the tool was
asked for and cannot be had: a failed install under CI (`CI` set: there the tool is part of the suite,
so a broken install must not pass as a skip), or a misconfiguration the user made (a path that names
nothing) fails it.
"""

from __future__ import annotations

import os
from typing import Callable, TypeVar

import pytest

T = TypeVar("T")


class ToolMissing(Exception):
    def __init__(self, why: str, *, tried_install: bool = False, misconfigured: bool = False) -> None:
        super().__init__(why)
        self.tried_install = tried_install
        self.misconfigured = misconfigured


def installed(install: Callable[[], T], what: str) -> T:
    """`install()`, or the test's skip (or failure, as above) saying why `what` is not available."""
    try:
        return install()
    except ToolMissing as err:
        if err.misconfigured or (err.tried_install and os.environ.get("CI")):
            pytest.fail(str(err))
        pytest.skip(f"{what} is not available: {err}")
