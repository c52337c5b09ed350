"""The timeline page in a real headless Chromium: it renders the lanes and events of a known scenario.

Needs chromium and chromedriver (Debian: `apt-get install -y chromium chromium-driver`); without them the
test FAILS, saying how to install them.  Screenshots go to $MONGOSIM_ARTIFACTS if set (else a temp dir).
"""

from __future__ import annotations

import os

import pytest

from mongosim import demo
from mongosim.demo.browser import Browser, BrowserMissing, decode_png, find_browser, pixel
from mongosim.demo.terminal import lane_colour
from mongosim.demo.timeline import render_html


def near(rgb, hex_colour, tol=40):
    want = tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    return all(abs(a - b) <= tol for a, b in zip(rgb, want)), (rgb, want)


def box(b: Browser, css: str):
    return b.run(f"var e = document.querySelector({css!r}); if (!e) return null; "
                 "var r = e.getBoundingClientRect(); return [r.x, r.y, r.width, r.height];")


def inside(inner, outer):
    x, y, w, h = inner
    X, Y, W, H = outer
    return X <= x and Y <= y and x + w <= X + W and y + h <= Y + H


def test_cold_shard_timeline_renders_in_chromium(tmp_path):
    try:
        find_browser()
    except BrowserMissing as err:
        pytest.fail(str(err))
    out = os.environ.get("MONGOSIM_ARTIFACTS") or str(tmp_path)
    os.makedirs(out, exist_ok=True)
    page = tmp_path / "cold-shard.html"
    page.write_text(render_html(demo.run("cold-shard")), encoding="utf-8")
    with Browser(width=1240, height=1400) as b:
        b.open(page.as_uri())
        assert b.run("return document.readyState") == "complete"
        assert b.run("return !!window.mongosimTimeline"), "the page's script ran"
        viewport = b.run("return [0, 0, window.innerWidth, window.innerHeight];")
        # the three remote lanes and the output lane are drawn, full width, inside the window
        lanes = {}
        for lane in ("shard00", "shard01", "config"):
            lanes[lane] = box(b, f"#lane-{lane}")
        lanes["merged"] = box(b, "#out-lane-1")
        for name, r in lanes.items():
            assert r is not None and r[2] > 900 and r[3] > 40 and inside(r, viewport), (name, r)
        ys = [lanes[n][1] for n in ("shard00", "shard01", "config", "merged")]
        assert ys == sorted(ys), "lanes stacked top to bottom"
        # the event: a mark in shard00's lane; the gate is shown closed at the focus step
        mark = box(b, "g.mark circle")
        assert mark[2] >= 12 and inside(mark, lanes["shard00"])
        gate = box(b, "#gate-1 rect")
        assert gate is not None and gate[3] > 40 and inside(gate, lanes["merged"])
        assert "waits for config and shard01" in b.run("return document.getElementById('gate-text-1').textContent")
        assert b.run("return document.querySelector('g.outmark').style.display") == "none", "not released yet"
        png = b.screenshot()
        (tmp_path / "gate.png").write_bytes(png)
        with open(os.path.join(out, "cold-shard-gate.png"), "wb") as f:
            f.write(png)
        img = decode_png(png)
        cx, cy = int(mark[0] + mark[2] / 2), int(mark[1] + mark[3] / 2)
        ring = pixel(img, int(mark[0] + 1), cy)  # waiting at the router: a red ring
        assert near(ring, "#e74c3c", 60)[0], ("the waiting event has a red ring", ring)
        gx, gy = int(gate[0] + gate[2] / 2), int(gate[1] + gate[3] / 2)
        assert near(pixel(img, gx, gy), "#c0392b", 40)[0], "the gate is drawn"
        # step to the release: the event appears in the output lane, filled with shard00's colour
        b.click("#next")
        kinds = b.run("return window.mongosimTimeline.data.steps.map(function (s) { return s.kind; })")
        release = kinds.index("released")
        while b.run("return window.mongosimTimeline.current()") < release:
            b.click("#next")
        assert "current" in b.run(f"return document.querySelector('#steps li[data-step=\"{release}\"]').className")
        assert b.run("return document.querySelector('g.outmark').style.display") == ""
        assert b.run("return document.getElementById('gate-1').style.display") == "none", "the gate opened"
        out_mark = box(b, "g.outmark circle")
        assert inside(out_mark, lanes["merged"]) and out_mark[0] > mark[0] + 300, "released 20 s later"
        png = b.screenshot()
        with open(os.path.join(out, "cold-shard-released.png"), "wb") as f:
            f.write(png)
        img = decode_png(png)
        cx, cy = int(out_mark[0] + out_mark[2] / 2), int(out_mark[1] + out_mark[3] / 2)
        assert near(pixel(img, cx, cy), lane_colour("shard00"))[0], pixel(img, cx, cy)
        # the promise lines moved: shard01 now promises its noop (20 s), right of the event
        p01 = box(b, "#promise-shard01")
        assert p01[0] > mark[0] + 300
