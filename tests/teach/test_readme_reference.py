"""The README's reference is complete: every public name of `Cluster`, every `ClusterOptions` field, every
fault method and `mongosimFault` argument, every fixture and ini option of the pytest plugin, every
command and flag of the CLI is documented there (a new one fails this test until it is)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from mongosim import pytest_plugin
from mongosim.cli import build_parser
from mongosim.cluster import Cluster
from mongosim.core import ClusterOptions
from mongosim.faults import FaultInjector, _FAIL_FIELDS

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    """The README text from the heading `title` to the next heading of the same or a higher level."""
    m = re.search(rf"^(#+) {re.escape(title)}\n", README, re.M)
    assert m, f"README has no section {title!r}"
    level = len(m.group(1))
    end = re.compile(rf"^#{{1,{level}}} ", re.M).search(README, m.end())
    return README[m.end(): end.start() if end else len(README)]


def documented(text: str, name: str) -> bool:
    return re.search(rf"`{re.escape(name)}[`(=\s]", text) is not None or f"`{name}`" in text


def test_cluster_is_documented():
    text = section("`mongosim.Cluster`")
    public = [n for n in dir(Cluster) if not n.startswith("_")] + ["options", "core"]
    assert [n for n in public if not documented(text, n)] == []
    assert "async with Cluster" in text and "with Cluster" in text


def test_cluster_options_are_documented():
    text = section("`mongosim.ClusterOptions`")
    fields = [f.name for f in dataclasses.fields(ClusterOptions)]
    assert [f for f in fields if not documented(text, f)] == []


def test_fault_api_is_documented():
    text = section("Fault injection: `cluster.faults` (`mongosim.faults.FaultInjector`)")
    methods = [n for n in dir(FaultInjector) if not n.startswith("_")]
    assert [m for m in methods if not documented(text, m)] == []
    for arg in ("delay", "fail", "drop", "restart", "pauseNoop", "skew", "clear", *_FAIL_FIELDS):
        assert arg in text, arg


def test_pytest_plugin_is_documented():
    text = section("Testing with pytest")
    fixtures = [n for n in vars(pytest_plugin) if n.startswith("mongosim_")]
    assert set(fixtures) >= {"mongosim_cluster", "mongosim_uri", "mongosim_client", "mongosim_async_client"}
    assert [f for f in fixtures if not documented(text, f)] == []
    assert [i for i in pytest_plugin._INI if not documented(text, i)] == []
    assert "reset=" in text and "isolated=True" in text and "@pytest.mark.mongosim(" in text


@pytest.mark.parametrize("command", ["serve", "status", "fault", "demo", "explain"])
def test_cli_is_documented(command):
    text = section("Command line")
    parser = build_parser().commands[command]
    assert f"mongosim {command}" in text
    flags = [o for a in parser._actions for o in a.option_strings if o.startswith("--") and o != "--help"]
    assert [f for f in flags if f not in text] == []
