"""The HTML timeline of a scenario: one lane per shard, the merged output, and the merge's state step by step.

x is time in seconds (virtual time since the cluster started; an event sits at
its cluster time, which follows the same clock).  Each shard lane (and the
config server's) shows its events where they happened, its periodic noops,
and — for the selected step — its promise (postBatchResumeToken) as a line:
nothing it sends later will sort before that line.  The dashed line is the
lowest promise of all: events left of it may leave the router.  The output
lane shows each event where it was released to the client, with a red bar
for the time it waited at the gate, and, while the gate is closed, the gate
itself and the remotes it waits on.

The page is self-contained (inline CSS, SVG and a small script; no network)
and readable without the script: the SVG is drawn at the scenario's focus
step.  The script only moves the per-step elements (`data` below) when the
reader steps through the story.  `render_svg` gives the same picture alone
(for docs).
"""

from __future__ import annotations

import html
import json
import math
import re
from typing import Any

from mongosim.demo.base import DemoResult
from mongosim.demo.fmt import key_info, key_label, promise_label, ts_label, ts_seconds
from mongosim.demo.story import Step, Story, explain_wait
from mongosim.demo.terminal import HOW_TO_READ, lane_colour

W = 1180
X0 = 200  # left edge of the plot (lane labels live left of it)
X1 = W - 40
LEGEND_H = 58
AXIS_Y = LEGEND_H + 26
LANE_H = 66
OUT_H = 104
GAP = 22
MARK_R = 8
MIN_DX = 20  # marks closer than this are pushed apart


def esc(s: Any) -> str:
    return html.escape(str(s), quote=True)


class Layout:
    """Where everything goes: the time scale and the lanes."""

    def __init__(self, story: Story) -> None:
        self.story = story
        zero = story.zero
        xs = [story.end_t]
        for ev in story.events.values():
            xs.append(ts_seconds(ev.ts, zero))
            for p in ev.passages.values():
                xs.extend(t for t in (p.released_t, p.delivered_t) if t is not None)
        span = max(xs) + 0.5
        self.step = next(s for s in (0.5, 1, 2, 5, 10, 20, 50, 100, 200) if span / s <= 14)
        self.t_max = math.ceil(span / self.step) * self.step
        self.lanes = list(story.lanes)
        self.streams = list(story.streams) or [None]
        y = AXIS_Y + 8
        self.lane_y: dict[str, float] = {}
        for lane in self.lanes:
            self.lane_y[lane] = y
            y += LANE_H
        self.remote_bottom = y
        y += GAP
        self.out_y: dict[Any, float] = {}
        for s in self.streams:
            self.out_y[s] = y
            y += OUT_H
        self.height = y + 14

    def x(self, seconds: float) -> float:
        return round(X0 + (seconds / self.t_max) * (X1 - X0), 1)

    def key_x(self, key: str | None) -> float | None:
        if key is None:
            return None
        return self.x(ts_seconds(key_info(key).ts, self.story.zero))


LABEL_DX = 76  # labels closer than this alternate below / above their marks


def _dodge(items: list[tuple[float, Any]], tie: Any = lambda item: item.key) -> list[tuple[float, Any]]:
    """Spread marks at least MIN_DX apart, left to right by x, then by `tie` (default: the token)."""
    out = []
    last = -1e9
    for x, item in sorted(items, key=lambda p: (p[0], tie(p[1]))):
        x = max(x, last + MIN_DX)
        out.append((x, item))
        last = x
    return out


def _crowded(xs: list[float]) -> list[bool]:
    """Marks with two or more neighbours within LABEL_DX get a short label."""
    return [sum(1 for j, y in enumerate(xs) if j != i and abs(y - x) < LABEL_DX) >= 2 for i, x in enumerate(xs)]


def _short_name(name: str) -> str:
    """`insert _id:12 (txn op 1)` -> `12`; a name without an _id stays as it is."""
    if "_id:" in name:
        return name.split("_id:", 1)[1].split(" ", 1)[0]
    return name


def _label_rows(xs: list[float]) -> list[int]:
    """For marks at xs (sorted): 0 = label below, 1 = above, alternating while labels would collide."""
    rows, last_x, last_row = [], -1e9, 1
    for x in xs:
        row = 1 - last_row if x - last_x < LABEL_DX else 0
        rows.append(row)
        last_x, last_row = x, row
    return rows


class Picture:
    """The static SVG content plus the per-step states the script applies."""

    def __init__(self, result: DemoResult) -> None:
        self.result = result
        self.story = story = result.story
        self.L = L = Layout(story)
        self.zero = story.zero
        # shard-lane marks
        self.marks: list[tuple[str, float, float, Any]] = []  # (lane, x, y, EventInfo)
        self.label_row: dict[Any, int] = {}
        self.label: dict[Any, str] = {}
        for lane in L.lanes:
            evs = [(L.x(ts_seconds(ev.ts, self.zero)), ev) for ev in story.events.values() if ev.shard == lane]
            placed = _dodge(evs)
            xs = [x for x, _ev in placed]
            for (x, ev), row, short in zip(placed, _label_rows(xs), _crowded(xs)):
                self.marks.append((lane, x, L.lane_y[lane] + LANE_H / 2 - 2, ev))
                self.label_row[("lane", ev.key)] = row
                self.label[("lane", ev.key)] = _short_name(ev.name) if short else ev.name
        self.mark_pos = {ev.key: (x, y) for _lane, x, y, ev in self.marks}
        # output-lane marks: (stream, x, y, EventInfo, Passage, id)
        self.outs: list[tuple[Any, float, float, Any, Any, str]] = []
        for s in L.streams:
            items = []
            for ev in story.events.values():
                p = ev.passages.get(s)
                if p is not None and p.released_t is not None:
                    items.append((L.x(p.released_t), (ev, p)))
            placed = _dodge(items, tie=lambda evp: evp[0].key)  # a merged stream releases in token order
            xs = [x for x, _ in placed]
            for i, ((x, (ev, p)), row, short) in enumerate(zip(placed, _label_rows(xs), _crowded(xs))):
                self.outs.append((s, x, L.out_y[s] + OUT_H / 2 + 4, ev, p, f"out-{s}-{i}"))
                self.label_row[f"out-{s}-{i}"] = row
                self.label[f"out-{s}-{i}"] = _short_name(ev.name) if short else ev.name

    # -- per-step state --------------------------------------------------------------------------
    def state(self, step: Step) -> dict:
        L, snap = self.L, step.snapshot
        lanes = {}
        blockers = {w.shard for w in snap.gate.waiting_on} if snap.gate else set()
        for lane in L.lanes:
            promise = snap.promises.get(lane) if lane in snap.remotes else None
            lanes[lane] = {
                "present": lane in snap.remotes,
                "promise_x": L.key_x(promise),
                "promise": f"promise {promise_label(promise, self.zero)}" if promise else "",
                "blocking": lane in blockers,
            }
        gate = None
        if snap.gate is not None:
            g = snap.gate
            gx = L.key_x(snap.min_promised) or L.x(step.t)
            names = " and ".join(w.shard for w in g.waiting_on)
            gate = {"stream": str(snap.stream), "x": gx,
                    "text": f"gate closed: {key_label(g.key, self.zero)} waits for {names}"}
        pbrt = {}
        if snap.client_pbrt is not None:
            pbrt[str(snap.stream)] = {"x": L.key_x(snap.client_pbrt),
                                      "label": f"resume token {key_label(snap.client_pbrt, self.zero)}"}
        released = set(snap.released)
        released_keys = {k for _s, k in released}
        marks = {}
        for _lane, _x, _y, ev in self.marks:
            if ev.key in snap.buffered:
                cls = "buffered"
            elif ev.key in released_keys:
                cls = "out"
            elif (ev.ts >> 32) - self.zero <= snap.t + 1e-9:
                cls = "pending"
            else:
                cls = "future"
            marks[ev.key] = cls
        outs = [oid for s, _x, _y, ev, p, oid in self.outs if (s, ev.key) in released]
        return {
            "t": round(step.t, 3), "now_x": L.x(step.t), "now": f"t = {step.t:.1f} s",
            "lanes": lanes, "min_x": L.key_x(snap.min_promised),
            "min_label": f"lowest promise {promise_label(snap.min_promised, self.zero)}" if snap.min_promised else "",
            "gate": gate, "pbrt": pbrt, "marks": marks, "outs": outs,
        }

    def focus_index(self) -> int:
        steps = self.story.steps
        focus = self.result.scenario.focus  # "kind": its first step; "-kind": its last step
        if focus:
            last = focus.startswith("-")
            kind = focus.lstrip("-")
            found = [i for i, s in enumerate(steps) if s.kind == kind]
            if found:
                return found[-1] if last else found[0]
        return len(steps) - 1

    # -- drawing ----------------------------------------------------------------------------------
    def svg(self, index: int, standalone: bool = False) -> str:
        L = self.L
        st = self.state(self.story.steps[index]) if self.story.steps else None
        out: list[str] = []
        a = out.append
        ns = ' xmlns="http://www.w3.org/2000/svg"' if standalone else ""
        a(f'<svg id="timeline"{ns} viewBox="0 0 {W} {L.height:.0f}" width="{W}" height="{L.height:.0f}" '
          f'role="img" aria-label="timeline of the {esc(self.result.scenario.name)} scenario">')
        if standalone:
            a(f"<style>{SVG_CSS}</style>")
            a(f'<rect x="0" y="0" width="{W}" height="{L.height:.0f}" fill="#fff"/>')
        self._legend(a)
        self._axis(a)
        # back to front: lanes, promises and wait bars; the travel lines; the moving lines; the marks
        for lane in L.lanes:
            self._lane(a, lane, st)
        for s in L.streams:
            self._out_lane(a, s, st)
        self._travel(a, st)
        self._dynamic(a, st)
        for lane in L.lanes:
            self._lane_marks(a, lane, st)
        for s in L.streams:
            self._out_marks(a, s, st)
        a("</svg>")
        return "\n".join(out)

    def _legend(self, a) -> None:
        y = 18
        items = [
            ('<circle cx="0" cy="-4" r="6" class="ev out" fill="#888" stroke="#888"/>',
             "event (filled: released to the client)"),
            ('<circle cx="0" cy="-4" r="6" class="ev buffered" fill="#888" stroke="#888"/>', "at the router, waiting"),
            ('<circle cx="0" cy="-4" r="6" class="ev pending" fill="#888" stroke="#888"/>', "still on its shard"),
            ('<path d="M-5,-4 L0,-9 L5,-4 L0,1 Z" class="noop"/>', "periodic noop"),
        ]
        x = 14
        for glyph, text in items:
            a(f'<g transform="translate({x},{y})">{glyph}<text x="12" y="0" class="legend">{esc(text)}</text></g>')
            x += 20 + 7 * len(text)
        y2 = 42
        items2 = [
            ('<line x1="0" y1="-12" x2="0" y2="4" class="promise"/>', "a shard's promise: nothing earlier will come"),
            ('<line x1="0" y1="-12" x2="0" y2="4" class="minline"/>', "lowest promise: left of it may be released"),
            ('<rect x="-3" y="-12" width="6" height="16" class="gatebar"/>', "gate closed"),
            ('<rect x="-10" y="-8" width="20" height="6" class="waitbar"/>', "time an event waited"),
        ]
        x = 14
        for glyph, text in items2:
            a(f'<g transform="translate({x},{y2})">{glyph}<text x="14" y="0" class="legend">{esc(text)}</text></g>')
            x += 26 + 6.6 * len(text)

    def _axis(self, a) -> None:
        L = self.L
        a(f'<line x1="{X0}" y1="{AXIS_Y}" x2="{X1}" y2="{AXIS_Y}" class="axis"/>')
        a(f'<text x="{X0 - 8}" y="{AXIS_Y - 6}" class="axislabel" text-anchor="end">time (s)</text>')
        n = int(round(L.t_max / L.step))
        for i in range(n + 1):
            t = i * L.step
            x = L.x(t)
            label = f"{t:g}"
            a(f'<line x1="{x}" y1="{AXIS_Y - 4}" x2="{x}" y2="{L.height - 8:.0f}" class="grid"/>')
            a(f'<text x="{x}" y="{AXIS_Y - 8}" class="tick" text-anchor="middle">{label}</text>')

    def _lane(self, a, lane: str, st: dict | None) -> None:
        L = self.L
        y = L.lane_y[lane]
        colour = lane_colour(lane)
        ls = st["lanes"][lane] if st else {"present": True, "blocking": False, "promise_x": None, "promise": ""}
        cls = "lane" + (" blocking" if ls["blocking"] else "") + ("" if ls["present"] else " absent")
        a(f'<g class="lanegroup" data-lane="{esc(lane)}">')
        a(f'<rect id="lane-{esc(lane)}" class="{cls}" x="{X0 - 190}" y="{y + 2}" width="{X1 - X0 + 200}" '
          f'height="{LANE_H - 4}" rx="4"/>')
        title = "config server" if lane == "config" else "shard"
        sub = "config.shards: new shards" if lane == "config" else title
        if lane in self.story.added_at and self.story.added_at[lane] > 0:
            sub = f"joins at {self.story.added_at[lane]:.1f} s"
        a(f'<text x="{X0 - 182}" y="{y + LANE_H / 2 - 2}" class="lanelabel" fill="{colour}">{esc(lane)}</text>')
        a(f'<text x="{X0 - 182}" y="{y + LANE_H / 2 + 14}" class="lanesub">{esc(sub)}</text>')
        # promised region and promise line (per step)
        px = ls["promise_x"]
        vis = "" if px is not None else ' style="display:none"'
        a(f'<rect id="promised-{esc(lane)}" class="promised" x="{X0}" y="{y + 4}" '
          f'width="{max(0, (px or X0) - X0)}" height="{LANE_H - 8}"{vis}/>')
        a(f'<line id="promise-{esc(lane)}" class="promise" x1="{px or X0}" y1="{y + 4}" x2="{px or X0}" '
          f'y2="{y + LANE_H - 4}"{vis}/>')
        a(f'<text id="promise-label-{esc(lane)}" class="promiselabel" x="{(px or X0) + 4}" y="{y + 14}"{vis}>'
          f'{esc(ls["promise"])}</text>')
        # noops
        for node, ts, _t in self.story.noops:
            if node != lane:
                continue
            x = L.x(ts_seconds(ts, self.zero))
            yy = y + LANE_H - 12
            a(f'<path class="noop" d="M{x - 5},{yy} L{x},{yy - 5} L{x + 5},{yy} L{x},{yy + 5} Z">'
              f'<title>periodic noop @{esc(ts_label(ts, self.zero))}</title></path>')
        a("</g>")

    def _lane_marks(self, a, lane: str, st: dict | None) -> None:
        colour = lane_colour(lane)
        a(f'<g class="lanemarks" data-lane="{esc(lane)}">')
        for mlane, x, my, ev in self.marks:
            if mlane != lane:
                continue
            ly = my - 13 if self.label_row[("lane", ev.key)] else my + 21
            if ev.filtered:
                a(f'<g class="filteredmark" data-key="{esc(ev.key)}" data-name="{esc(ev.name)}">'
                  f'<path d="M{x - 5},{my - 5} L{x + 5},{my + 5} M{x - 5},{my + 5} L{x + 5},{my - 5}"/>'
                  f'<title>{esc(key_label(ev.key, self.zero))}: dropped on {esc(lane)} — {esc(ev.filtered)}</title>'
                  f'<text class="evlabel dim" x="{x}" y="{ly}" text-anchor="middle">'
                  f'{esc(self.label[("lane", ev.key)])} ✗</text></g>')
                continue
            mcls = st["marks"].get(ev.key, "pending") if st else "out"
            a(f'<g class="mark" data-key="{esc(ev.key)}" data-name="{esc(ev.name)}">'
              f'<circle class="ev {mcls}" cx="{x}" cy="{my}" r="{MARK_R}" fill="{colour}" stroke="{colour}">'
              f'<title>{esc(key_label(ev.key, self.zero))}</title></circle>'
              f'<text class="evlabel" x="{x}" y="{ly}" text-anchor="middle">{esc(self.label[("lane", ev.key)])}'
              f'</text></g>')
        a("</g>")

    def _out_lane(self, a, s: Any, st: dict | None) -> None:
        L = self.L
        y = L.out_y[s]
        sid = str(s)
        a(f'<g class="lanegroup output" data-stream="{esc(sid)}">')
        a(f'<rect id="out-lane-{esc(sid)}" class="lane outlane" x="{X0 - 190}" y="{y + 2}" width="{X1 - X0 + 200}" '
          f'height="{OUT_H - 4}" rx="4"/>')
        label = "merged → client" if len(L.streams) == 1 else f"stream {s} → client"
        a(f'<text x="{X0 - 182}" y="{y + OUT_H / 2 - 2}" class="lanelabel">{esc(label)}</text>')
        a(f'<text x="{X0 - 182}" y="{y + OUT_H / 2 + 14}" class="lanesub">what the router releases</text>')
        for w in self.story.waits:
            if w.stream != s:
                continue
            x1, x2 = L.x(w.received_t), L.x(w.released_t)
            a(f'<rect class="waitbar" x="{x1}" y="{y + 10}" width="{max(2, x2 - x1)}" height="7">'
              f'<title>{esc(explain_wait(w, self.zero))}</title></rect>')
            a(f'<text class="waitlabel" x="{(x1 + x2) / 2}" y="{y + 30}" text-anchor="middle">'
              f'{esc(w.name)} waited {w.waited:.1f} s</text>')
        a("</g>")

    def _out_marks(self, a, s: Any, st: dict | None) -> None:
        L = self.L
        y = L.out_y[s]
        sid = str(s)
        a(f'<g class="outmarks" data-stream="{esc(sid)}">')
        visible = set(st["outs"]) if st else None
        for os_, x, my, ev, p, oid in self.outs:
            if os_ != s:
                continue
            vis = "" if visible is None or oid in visible else ' style="display:none"'
            colour = lane_colour(ev.shard)
            ly = my - 13 if self.label_row[oid] else my + 22
            if p.swallowed:
                a(f'<g id="{oid}" class="outmark swallowedmark" data-key="{esc(ev.key)}"{vis}>'
                  f'<path d="M{x - 5},{my - 5} L{x + 5},{my + 5} M{x - 5},{my + 5} L{x + 5},{my - 5}" '
                  f'stroke="{colour}"/><title>{esc(ev.name)}: swallowed — {esc(p.swallowed)}</title>'
                  f'<text class="evlabel" x="{x}" y="{ly}" text-anchor="middle">{esc(self.label[oid])} swallowed'
                  f'</text></g>')
            else:
                a(f'<g id="{oid}" class="outmark" data-key="{esc(ev.key)}"{vis}>'
                  f'<circle class="ev out" cx="{x}" cy="{my}" r="{MARK_R}" fill="{colour}" stroke="{colour}">'
                  f'<title>{esc(key_label(ev.key, self.zero))}, released at {p.released_t:.1f} s</title></circle>'
                  f'<text class="evlabel" x="{x}" y="{ly}" text-anchor="middle">{esc(self.label[oid])}</text></g>')
        # gate and client's resume token (per step)
        g = st["gate"] if st else None
        show = g is not None and g["stream"] == sid
        gx = g["x"] if show else X0
        vis = "" if show else ' style="display:none"'
        a(f'<g id="gate-{esc(sid)}" class="gate" transform="translate({gx},0)"{vis}>'
          f'<rect class="gatebar" x="-3" y="{y + 6}" width="6" height="{OUT_H - 12}"/>'
          f'<text id="gate-text-{esc(sid)}" class="gatetext" x="8" y="{y + OUT_H / 2 + 8}">'
          f'{esc(g["text"]) if show else ""}</text></g>')
        pb = (st["pbrt"].get(sid) if st else None)
        vis = "" if pb else ' style="display:none"'
        px = pb["x"] if pb else X0
        a(f'<g id="pbrt-{esc(sid)}" class="pbrt" transform="translate({px},0)"{vis}>'
          f'<path d="M0,{y + OUT_H - 6} L0,{y + OUT_H - 22} L9,{y + OUT_H - 18} L0,{y + OUT_H - 14}" class="flag"/>'
          f'<text id="pbrt-label-{esc(sid)}" class="pbrtlabel" x="12" y="{y + OUT_H - 8}">'
          f'{esc(pb["label"]) if pb else ""}</text></g>')
        a("</g>")

    def _travel(self, a, st: dict | None) -> None:
        visible = set(st["outs"]) if st else None
        for _s, x, my, ev, p, oid in self.outs:
            if ev.key not in self.mark_pos or p.swallowed:
                continue
            sx, sy = self.mark_pos[ev.key]
            vis = "" if visible is None or oid in visible else ' style="display:none"'
            mid = (sy + my) / 2
            a(f'<path id="travel-{oid}" class="travel" d="M{sx},{sy + MARK_R} C{sx},{mid} {x},{mid} {x},{my - MARK_R}" '
              f'stroke="{lane_colour(ev.shard)}"{vis}/>')

    def _dynamic(self, a, st: dict | None) -> None:
        L = self.L
        top, bottom = AXIS_Y + 4, L.height - 10
        mx = st["min_x"] if st else None
        vis = "" if mx is not None else ' style="display:none"'
        a(f'<line id="minline" class="minline" x1="{mx or X0}" y1="{top + 4}" x2="{mx or X0}" y2="{bottom}"{vis}/>')
        a(f'<text id="minlabel" class="minlabel" x="{(mx or X0) + 4}" y="{L.remote_bottom + GAP - 6}"{vis}>'
          f'{esc(st["min_label"]) if st else ""}</text>')
        nx = st["now_x"] if st else X0
        a(f'<line id="nowline" class="nowline" x1="{nx}" y1="{top}" x2="{nx}" y2="{bottom}"/>')
        a(f'<text id="nowlabel" class="nowlabel" x="{nx}" y="{AXIS_Y - 20}" text-anchor="middle">'
          f'{esc(st["now"]) if st else ""}</text>')

    # -- the data the script needs -------------------------------------------------------------------
    def data(self) -> dict:
        steps = []
        for st in self.story.steps:
            s = self.state(st)
            s.update({"who": st.who, "kind": st.kind, "text": st.text})
            steps.append(s)
        return {"lanes": self.L.lanes, "streams": [str(s) for s in self.L.streams], "x0": X0,
                "focus": self.focus_index(), "steps": steps}


SVG_CSS = """
text { font-family: -apple-system, "Segoe UI", "DejaVu Sans", Arial, sans-serif; }
.legend { font-size: 12px; fill: #333; }
.axis { stroke: #444; stroke-width: 1; }
.grid { stroke: #eee; stroke-width: 1; }
.tick, .axislabel { font-size: 11px; fill: #555; }
.lane { fill: #f7f9fb; stroke: #dde3ea; }
.lane.outlane { fill: #f3f8f1; stroke: #cfe3c9; }
.lane.blocking { fill: #fdecea; stroke: #e74c3c; stroke-width: 2; }
.lane.absent { fill: #fafafa; stroke-dasharray: 4 3; opacity: .5; }
.lanelabel { font-size: 15px; font-weight: 700; fill: #222; }
.lanesub { font-size: 11px; fill: #777; }
.promised { fill: #f39c12; opacity: .12; }
.promise { stroke: #e67e22; stroke-width: 3; }
.promiselabel { font-size: 11px; fill: #b9650f; font-weight: 600; }
.minline { stroke: #2c3e50; stroke-width: 1.5; stroke-dasharray: 6 4; }
.minlabel { font-size: 11px; fill: #2c3e50; font-weight: 600; }
.nowline { stroke: #7f8c8d; stroke-width: 1; }
.nowlabel { font-size: 12px; fill: #2c3e50; font-weight: 700; }
.ev { stroke-width: 2.5; }
.ev.out { fill-opacity: 1; }
.ev.buffered { fill-opacity: .35; stroke: #e74c3c !important; stroke-width: 3.5; }
.ev.pending { fill-opacity: 0; }
.ev.future { fill-opacity: 0; stroke-opacity: .2; }
.evlabel { font-size: 10.5px; fill: #333; }
.noop { fill: #b9770e; }
.waitbar { fill: #e74c3c; opacity: .75; }
.waitlabel { font-size: 11px; fill: #c0392b; font-weight: 600; }
.gatebar { fill: #c0392b; }
.gatetext { font-size: 12px; fill: #c0392b; font-weight: 700; }
.travel { fill: none; stroke-width: 1.2; stroke-dasharray: 3 3; opacity: .55; }
.flag { fill: #1a5276; stroke: #1a5276; stroke-width: 1.5; }
.pbrtlabel { font-size: 11px; fill: #1a5276; }
.swallowedmark path { stroke-width: 2.5; }
.filteredmark path { stroke: #999; stroke-width: 2; }
.evlabel.dim { fill: #999; }
"""

PAGE_CSS = """
*, *::before, *::after { box-sizing: border-box; }
body { font-family: -apple-system, "Segoe UI", "DejaVu Sans", Arial, sans-serif; margin: 18px 24px; color: #222;
       background: #fff; }
.timeline-box { max-width: 100%; overflow-x: auto; overflow-y: hidden; -webkit-overflow-scrolling: touch; }
.timeline-box svg { display: block; }
h1 { font-size: 22px; margin: 0 0 6px; }
header p { margin: 4px 0; max-width: 1180px; line-height: 1.35; }
.lesson { font-size: 16px; }
.setup, .how { font-size: 13px; color: #555; }
.controls { margin: 12px 0 6px; display: flex; flex-wrap: wrap; gap: 10px; align-items: center; }
.controls button { font-size: 14px; padding: 4px 12px; cursor: pointer; }
.hint { font-size: 12px; color: #777; }
#current { font-size: 15px; min-height: 2.6em; max-width: 1180px; padding: 6px 10px; border-left: 4px solid #2c3e50;
           background: #f7f9fb; }
#current .who { font-weight: 700; }
#current, .why p, ol#steps li, header p { overflow-wrap: anywhere; }
.why { max-width: 1180px; border-left: 4px solid #c0392b; padding: 4px 10px; background: #fdf2f1; margin: 10px 0; }
.why p { margin: 4px 0; font-size: 14px; }
ol#steps { font-size: 13px; max-width: 1180px; padding-left: 0; list-style: none; }
ol#steps li { display: grid; grid-template-columns: 64px 84px 1fr; gap: 8px; padding: 3px 6px; cursor: pointer;
              border-radius: 3px; }
ol#steps li:hover { background: #f0f3f6; }
ol#steps li.current { background: #fff3d6; outline: 1px solid #f0c36d; }
ol#steps .t { color: #777; text-align: right; text-decoration: none; }
ol#steps .t:hover { text-decoration: underline; }
ol#steps .who { font-weight: 700; }
ol#steps li.kind-gate .what { color: #c0392b; font-weight: 600; }
ol#steps li.kind-released .what { color: #1e8449; font-weight: 600; }
ol#steps li.kind-quiet .what { color: #888; }
footer { font-size: 12px; color: #777; margin-top: 12px; }
@media (max-width: 640px) {
  body { margin: 10px; }
  h1 { font-size: 18px; }
  ol#steps li { grid-template-columns: 58px 1fr; }
  ol#steps li .what { grid-column: 2; }
}
"""

SCRIPT = r"""
(function () {
  var D = JSON.parse(document.getElementById('timeline-data').textContent);
  var cur = D.focus;
  function $(id) { return document.getElementById(id); }
  function vis(el, on) { if (el) { el.style.display = on ? '' : 'none'; } }
  function show(i) {
    if (i < 0 || i >= D.steps.length) { return; }
    cur = i;
    var s = D.steps[i];
    $('nowline').setAttribute('x1', s.now_x); $('nowline').setAttribute('x2', s.now_x);
    var box = $('timeline-box');  // on a narrow screen the picture scrolls: keep the step's time in view
    if (box.scrollWidth > box.clientWidth) { box.scrollLeft = Math.max(0, s.now_x - box.clientWidth / 2); }
    $('nowlabel').setAttribute('x', s.now_x); $('nowlabel').textContent = s.now;
    D.lanes.forEach(function (lane) {
      var l = s.lanes[lane], px = l.promise_x;
      var line = $('promise-' + lane), rect = $('promised-' + lane), lab = $('promise-label-' + lane);
      vis(line, px !== null); vis(rect, px !== null); vis(lab, px !== null);
      if (px !== null) {
        line.setAttribute('x1', px); line.setAttribute('x2', px);
        rect.setAttribute('width', Math.max(0, px - D.x0));
        lab.setAttribute('x', px + 4); lab.textContent = l.promise;
      }
      var bg = $('lane-' + lane);
      bg.classList.toggle('blocking', l.blocking);
      bg.classList.toggle('absent', !l.present);
    });
    var ml = $('minline'), mlab = $('minlabel');
    vis(ml, s.min_x !== null); vis(mlab, s.min_x !== null);
    if (s.min_x !== null) {
      ml.setAttribute('x1', s.min_x); ml.setAttribute('x2', s.min_x);
      mlab.setAttribute('x', s.min_x + 4); mlab.textContent = s.min_label;
    }
    D.streams.forEach(function (sid) {
      var g = $('gate-' + sid), on = s.gate !== null && s.gate.stream === sid;
      vis(g, on);
      if (on) {
        g.setAttribute('transform', 'translate(' + s.gate.x + ',0)');
        $('gate-text-' + sid).textContent = s.gate.text;
      }
      var p = s.pbrt[sid], pg = $('pbrt-' + sid);
      vis(pg, !!p);
      if (p) {
        pg.setAttribute('transform', 'translate(' + p.x + ',0)');
        $('pbrt-label-' + sid).textContent = p.label;
      }
    });
    Array.prototype.forEach.call(document.querySelectorAll('g.mark'), function (g) {
      var c = g.querySelector('circle'), st = s.marks[g.getAttribute('data-key')] || 'pending';
      c.setAttribute('class', 'ev ' + st);
    });
    var outs = {};
    s.outs.forEach(function (id) { outs[id] = true; });
    Array.prototype.forEach.call(document.querySelectorAll('g.outmark'), function (g) {
      vis(g, !!outs[g.id]);
      vis($('travel-' + g.id), !!outs[g.id]);
    });
    Array.prototype.forEach.call(document.querySelectorAll('#steps li'), function (li) {
      li.classList.toggle('current', +li.getAttribute('data-step') === i);
    });
    $('stepno').textContent = 'step ' + (i + 1) + ' of ' + D.steps.length;
    $('current').innerHTML = '';
    var who = document.createElement('span'); who.className = 'who'; who.textContent = s.who + ': ';
    var what = document.createElement('span'); what.textContent = s.text;
    var t = document.createElement('span'); t.textContent = '[' + s.now + '] ';
    $('current').appendChild(t); $('current').appendChild(who); $('current').appendChild(what);
  }
  // Each step has an anchor (#step-21 is the 21st): the address names the step shown, and a page
  // opened at one shows that step and scrolls to it.
  function fromHash() {
    var m = /^#step-(\d+)$/.exec(window.location.hash);
    var i = m ? +m[1] - 1 : -1;
    return i >= 0 && i < D.steps.length ? i : null;
  }
  function go(i) {
    show(i);
    if (cur === i) {
      try { history.replaceState(null, '', '#step-' + (i + 1)); } catch (err) { /* a sandboxed page */ }
    }
  }
  $('prev').addEventListener('click', function () { go(cur - 1); });
  $('next').addEventListener('click', function () { go(cur + 1); });
  document.addEventListener('keydown', function (e) {
    if (e.key === 'ArrowLeft') { go(cur - 1); } else if (e.key === 'ArrowRight') { go(cur + 1); }
  });
  Array.prototype.forEach.call(document.querySelectorAll('#steps li'), function (li) {
    li.addEventListener('click', function (e) { e.preventDefault(); go(+li.getAttribute('data-step')); });
  });
  window.addEventListener('hashchange', function () {
    var i = fromHash();
    if (i !== null) { show(i); }
  });
  window.mongosimTimeline = { show: show, current: function () { return cur; }, data: D };
  var start = fromHash();
  show(start === null ? cur : start);
  if (start !== null) { $('step-' + (start + 1)).scrollIntoView({ block: 'center' }); }
})();
"""


def render_html(result: DemoResult) -> str:
    """The whole page for a scenario run."""
    pic = Picture(result)
    sc = result.scenario
    story = result.story
    focus = pic.focus_index()
    parts: list[str] = []
    a = parts.append
    a('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">')
    a(f"<title>mongosim demo {esc(sc.name)} — {esc(sc.title)}</title>")
    a(f"<style>{PAGE_CSS}{SVG_CSS}</style>\n</head>\n<body>")
    a(f'<header><h1>mongosim demo {esc(sc.name)}: {esc(sc.title)}</h1>'
      f'<p class="lesson"><b>Lesson:</b> {esc(sc.lesson)}</p>'
      f'<p class="setup"><b>Setup:</b> {esc(sc.setup)}</p>'
      f'<p class="how"><b>How to read:</b> {esc(HOW_TO_READ)} In the picture, time runs left to right; each '
      f'event sits at its cluster time in its shard\'s lane, and in the bottom lane where the router released '
      f'it.</p></header>')
    a('<nav class="controls"><button id="prev" type="button">◀ previous</button>'
      f'<span id="stepno">step {focus + 1} of {len(story.steps)}</span>'
      '<button id="next" type="button">next ▶</button>'
      '<span class="hint">← → keys, or click a step in the list below</span></nav>')
    if story.steps:
        s = story.steps[focus]
        a(f'<div id="current"><span>[t = {s.t:.1f} s] </span><span class="who">{esc(s.who)}: </span>'
          f'<span>{esc(s.text)}</span></div>')
    a('<div class="timeline-box" id="timeline-box">')  # the picture scrolls inside its box on narrow screens
    a(pic.svg(focus))
    a("</div>")
    if story.waits:
        a('<section class="why"><h2 style="font-size:15px;margin:4px 0">Why the stream waited</h2>')
        for w in story.waits:
            a(f"<p>{esc(explain_wait(w, story.zero))}</p>")
        a("</section>")
    a('<ol id="steps">')
    for i, s in enumerate(story.steps):
        cur = " current" if i == focus else ""
        t = f"{s.t:.1f}" if s.t_end is None else f"{s.t:.0f}–{s.t_end:.0f}"
        colour = lane_colour(s.who) if s.who not in ("client", "router", "scenario", "…") else "#1a5276" \
            if s.who == "client" else "#222"
        a(f'<li id="step-{i + 1}" data-step="{i}" class="step kind-{esc(s.kind)}{cur}">'
          f'<a class="t" href="#step-{i + 1}" title="a link to this step">{t} s</a>'
          f'<span class="who" style="color:{colour}">{esc(s.who)}</span><span class="what">{esc(s.text)}</span></li>')
    a("</ol>")
    if sc.modules:
        a(f"<footer>In the code: {esc(', '.join(sc.modules))}. Made by <code>mongosim demo {esc(sc.name)} "
          f"--html</code>.</footer>")
    data = json.dumps(pic.data(), separators=(",", ":")).replace("</", "<\\/")
    a(f'<script type="application/json" id="timeline-data">{data}</script>')
    a(f"<script>{SCRIPT}</script>")
    a("</body>\n</html>\n")
    return "\n".join(parts)


def render_svg(result: DemoResult, step: int | None = None) -> str:
    """The timeline picture alone (at the focus step unless `step` is given), for docs.

    Without the page's script it needs no `data-key` attributes; leaving them out (resume tokens hold the
    collection's random UUID) makes the picture the same on every run.
    """
    pic = Picture(result)
    svg = pic.svg(pic.focus_index() if step is None else step, standalone=True)
    svg = re.sub(r' data-key="[^"]*"', "", svg)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + svg + "\n"
