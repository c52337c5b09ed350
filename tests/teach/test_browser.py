"""The timeline page in a real headless Chromium: it renders the lanes and events of a known scenario, fits
any width from 360 px (the picture scrolls inside its own box), and opens at a step's anchor.

Needs chromium and chromedriver: found if installed; otherwise installed here (Debian's chromium and
chromium-driver) when the tests run as root, as CI does — and a failed install FAILS the tests; without
root they are skipped, saying why (`make test` needs no root). Screenshots go to $MONGOSIM_ARTIFACTS if
set (else a temp dir).
"""

from __future__ import annotations

import os

import pytest

from mongosim import demo
from mongosim.demo.browser import Browser, BrowserMissing, decode_png, ensure_browser, pixel
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


@pytest.fixture(scope="module")
def chromium():
    try:
        return ensure_browser()
    except BrowserMissing as err:
        if err.tried_install:
            pytest.fail(str(err))
        pytest.skip(f"no headless Chromium for the timeline's browser test: {err}")


@pytest.fixture(scope="module")
def cold_shard_page(tmp_path_factory):
    page = tmp_path_factory.mktemp("timeline") / "cold-shard.html"
    page.write_text(render_html(demo.run("cold-shard")), encoding="utf-8")
    return page


def artifacts(tmp_path) -> str:
    out = os.environ.get("MONGOSIM_ARTIFACTS") or str(tmp_path)
    os.makedirs(out, exist_ok=True)
    return out


def test_cold_shard_timeline_renders_in_chromium(chromium, tmp_path):
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


@pytest.mark.parametrize("width", [360, 1240])
def test_the_page_fits_the_window_and_the_picture_scrolls_in_its_box(chromium, cold_shard_page, tmp_path, width):
    with Browser(width=width, height=900) as b:
        b.open(cold_shard_page.as_uri())
        inner = b.run("return window.innerWidth")
        assert abs(inner - width) <= 20, inner
        page_width = b.run("return document.documentElement.scrollWidth")
        assert page_width <= inner, f"the page scrolls sideways at {width} px: {page_width} > {inner}"
        box = b.run("var e = document.getElementById('timeline-box'); var r = e.getBoundingClientRect();"
                    "return {x: r.x, right: r.right, client: e.clientWidth, scroll: e.scrollWidth};")
        assert box["x"] >= 0 and box["right"] <= inner, box
        svg_width = b.run("return document.getElementById('timeline').getBoundingClientRect().width")
        if width < svg_width:
            assert box["scroll"] > box["client"], "the picture scrolls inside its box"
            b.run("document.getElementById('timeline-box').scrollLeft = 10000")
            assert b.run("return document.getElementById('timeline-box').scrollLeft") > 0
        else:
            assert box["scroll"] <= box["client"] + 1, "nothing to scroll when the picture fits"
        # every step's text stays inside the window
        overflowing = b.run("return Array.prototype.filter.call(document.querySelectorAll('#steps li, #current, "
                            "header p'), function (e) { return e.getBoundingClientRect().right > "
                            "window.innerWidth + 0.5; }).length")
        assert overflowing == 0
        with open(os.path.join(artifacts(tmp_path), f"cold-shard-{width}px.png"), "wb") as f:
            f.write(b.full_page_screenshot())


@pytest.mark.parametrize("width", [360, 1240])
def test_the_page_opens_at_a_steps_anchor(chromium, cold_shard_page, width):
    with Browser(width=width, height=800) as b:
        b.open(cold_shard_page.as_uri() + "#step-21")
        assert b.run("return window.mongosimTimeline.current()") == 20
        assert b.run("return document.getElementById('stepno').textContent").startswith("step 21 of ")
        li = b.run("var e = document.getElementById('step-21'); var r = e.getBoundingClientRect();"
                   "return {cls: e.className, top: r.top, bottom: r.bottom, h: window.innerHeight};")
        assert "current" in li["cls"]
        assert 0 <= li["top"] and li["bottom"] <= li["h"], f"step 21 is not in view: {li}"
        assert b.run("return document.querySelectorAll('#steps li.current').length") == 1
        # stepping on names the step in the address; the anchor of another step selects it
        b.click("#next")
        assert b.run("return window.location.hash") == "#step-22"
        b.run("window.location.hash = '#step-3'")
        assert b.run("return window.mongosimTimeline.current()") == 2
        assert b.run("return document.querySelector('#step-3 a.t').getAttribute('href')") == "#step-3"


def test_a_missing_browser_is_installed_only_as_root(monkeypatch):
    from mongosim.demo import browser

    def missing():
        raise BrowserMissing("chromium not found.")

    monkeypatch.setattr(browser, "find_browser", missing)
    monkeypatch.setattr(browser.shutil, "which", lambda name: "/usr/bin/apt-get" if name == "apt-get" else None)
    installs = []
    monkeypatch.setattr(browser.os, "geteuid", lambda: 1000)
    with pytest.raises(BrowserMissing) as err:
        browser.ensure_browser(installer=lambda: installs.append(1))
    assert not err.value.tried_install and "needs root" in str(err.value) and installs == []
    monkeypatch.setattr(browser.os, "geteuid", lambda: 0)
    with pytest.raises(BrowserMissing) as err:  # installed, still not found: the caller fails
        browser.ensure_browser(installer=lambda: installs.append(1))
    assert err.value.tried_install and installs == [1]
    found = iter([BrowserMissing("chromium not found."), ("/usr/bin/chromium", "/usr/bin/chromedriver")])

    def after_install():
        got = next(found)
        if isinstance(got, Exception):
            raise got
        return got

    monkeypatch.setattr(browser, "find_browser", after_install)
    assert browser.ensure_browser(installer=lambda: installs.append(2)) == ("/usr/bin/chromium", "/usr/bin/chromedriver")
    assert installs == [1, 2]
