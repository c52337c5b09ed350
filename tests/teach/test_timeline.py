"""The HTML timeline, without a browser: structure, self-containment, data for every step."""

from __future__ import annotations

import functools
import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

from mongosim import demo
from mongosim.demo.timeline import render_html, render_svg


@functools.lru_cache(maxsize=None)
def result(name: str) -> demo.DemoResult:
    return demo.run(name)


class Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.data: dict[str, str] = {}
        self._in: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "script" and a.get("id"):
            self._in = a["id"]

    def handle_data(self, data):
        if self._in:
            self.data[self._in] = self.data.get(self._in, "") + data

    def handle_endtag(self, tag):
        if tag == "script":
            self._in = None

    def find(self, tag: str, **attrs) -> list[dict]:
        out = []
        for t, a in self.tags:
            if t != tag:
                continue
            ok = True
            for k, v in attrs.items():
                k = k.rstrip("_").replace("_", "-")
                if k == "class":
                    ok = ok and v in (a.get("class") or "").split()
                else:
                    ok = ok and a.get(k) == v
            if ok:
                out.append(a)
        return out


def parse(page: str) -> Collector:
    c = Collector()
    c.feed(page)
    return c


def test_cold_shard_page_has_the_lanes_events_and_steps():
    r = result("cold-shard")
    page = parse(render_html(r))
    assert len(page.find("svg", id="timeline")) == 1
    lanes = [a["data-lane"] for a in page.find("g", class_="lanegroup") if "data-lane" in a]
    assert lanes == ["shard00", "shard01", "config"]
    assert len(page.find("g", class_="output")) == 1, "one merged output lane"
    marks = page.find("g", class_="mark")
    assert [m["data-name"] for m in marks] == ["insert _id:1"]
    assert len(page.find("g", class_="outmark")) == 1
    assert len(page.find("path", class_="noop")) == 1 + 6, "the legend, and three nodes' noops at 20 and 30 s"
    for el in ("nowline", "minline"):
        assert page.find("line", id=el)
    for lane in lanes:
        assert page.find("line", id=f"promise-{lane}") and page.find("rect", id=f"promised-{lane}")
    assert page.find("g", id="gate-1") and page.find("rect", class_="waitbar")
    # opened at the focus step: the gate is closed, shard01 and config are highlighted as blocking
    assert "display:none" not in page.find("g", id="gate-1")[0].get("style", "")
    blocking = [a["id"] for a in page.find("rect", class_="blocking")]
    assert blocking == ["lane-shard01", "lane-config"]
    data = json.loads(page.data["timeline-data"])
    assert len(data["steps"]) == len(r.story.steps) == len(page.find("li", class_="step"))
    assert r.story.steps[data["focus"]].kind == "gate"
    kinds = [s["kind"] for s in data["steps"]]
    rel = kinds.index("released")
    assert data["steps"][rel]["outs"] and not data["steps"][rel - 1]["outs"]
    assert data["steps"][data["focus"]]["gate"]["text"].startswith("gate closed: insert _id:1")


def test_page_is_self_contained():
    page = render_html(result("new-shard"))
    tags = parse(page).tags
    assert not [a for t, a in tags if t in ("link", "img", "iframe")]
    assert not [a for t, a in tags if t == "script" and "src" in a]
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page)
    assert "@import" not in page and "url(" not in page


@pytest.mark.parametrize("name", list(demo.SCENARIOS))
def test_every_scenario_draws(name):
    r = result(name)
    page = parse(render_html(r))
    lanes = {a["data-lane"] for a in page.find("g", class_="lanegroup") if "data-lane" in a}
    assert set(r.story.lanes) == lanes
    assert len(page.find("g", class_="output")) == len(r.story.streams)
    keys = {m["data-key"] for m in page.find("g", class_="mark")}
    dropped = {m["data-key"] for m in page.find("g", class_="filteredmark")}
    assert keys == {k for k, ev in r.story.events.items() if ev.shard in lanes and not ev.filtered}
    assert dropped == {k for k, ev in r.story.events.items() if ev.shard in lanes and ev.filtered}
    svg = ET.fromstring(render_svg(r).split("\n", 1)[1])  # a standalone SVG parses as XML
    assert svg.tag.endswith("svg")


@pytest.mark.parametrize("name", list(demo.SCENARIOS))
def test_merged_lane_reads_left_to_right_in_token_order(name):
    """A merged stream releases in token order, so its lane must show the events in that order
    (events released by one getMore share a time: the picture must not shuffle them)."""
    r = result(name)
    page = parse(render_html(r))
    lanes: dict[str, list[tuple[float, str]]] = {}
    stream, key = None, None
    for tag, a in page.tags:
        classes = (a.get("class") or "").split()
        if tag == "g" and "outmarks" in classes:
            stream = a["data-stream"]
        elif tag == "g" and "outmark" in classes:
            key = a["data-key"] if "swallowedmark" not in classes else None
        elif tag == "circle" and key is not None and "out" in classes:
            lanes.setdefault(stream, []).append((float(a["cx"]), key))
            key = None
    assert lanes or not any(r.story.released(s) for s in r.story.streams)
    for marks in lanes.values():
        by_x = [k for _x, k in sorted(marks)]
        assert by_x == sorted(by_x)
