"""docs/merge-algorithm.md: its pictures come from the scenarios and are current; its links resolve."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mongosim import demo
from mongosim.demo.timeline import render_svg

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "merge-algorithm.md"


def test_links_and_pictures_exist():
    text = DOC.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#]+)\)", text):
        assert (DOC.parent / target).resolve().exists(), target
    pictures = re.findall(r"!\[[^\]]*\]\(img/([a-z-]+)\.svg\)", text)
    assert sorted(pictures) == sorted(demo.SCENARIOS)


@pytest.mark.parametrize("name", list(demo.SCENARIOS))
def test_pictures_are_current(name):
    r = demo.run(name)
    assert (ROOT / "docs" / "img" / f"{name}.svg").read_text(encoding="utf-8") == render_svg(r), (
        f"docs/img/{name}.svg is out of date: run `mongosim demo --pictures docs/img`")
