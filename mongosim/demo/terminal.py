"""The step-by-step account of a scenario, in the terminal (rich)."""

from __future__ import annotations

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from mongosim.demo.base import DemoResult
from mongosim.demo.story import explain_wait

# lane colours, shared with the HTML timeline
PALETTE = ["#2b7bb9", "#8e44ad", "#16a085", "#d35400", "#c0392b", "#2c3e50"]
CONFIG_COLOUR = "#7f8c8d"


def lane_colour(name: str) -> str:
    if name == "config":
        return CONFIG_COLOUR
    digits = "".join(ch for ch in name if ch.isdigit())
    return PALETTE[int(digits) % len(PALETTE)] if digits else PALETTE[-1]


WHO_STYLE = {"client": "bold #1a5276", "router": "bold", "scenario": "italic", "…": "dim"}
KIND_STYLE = {
    "gate": "bold #c0392b",
    "released": "bold #1e8449",
    "reply": "#1a5276",
    "noop": "#b9770e",
    "quiet": "dim",
    "new_shard": "bold #16a085",
    "swallowed": "#6c3483",
    "invalidate": "bold #c0392b",
    "note": "italic",
}
MARK = {"gate": "■ ", "released": "✔ ", "noop": "◆ ", "new_shard": "✚ ", "invalidate": "✖ ", "quiet": ""}

HOW_TO_READ = (
    "t = virtual seconds since the cluster started (the run takes no real time). A cluster time such as 20s#1 "
    "is second 20, increment 1. A shard's promise is its postBatchResumeToken: nothing it sends later sorts "
    "before it. The router may release an event only when every remote (each shard, and the config server, "
    "which tells it about new shards) has promised at least that far."
)


def who_style(who: str) -> str:
    if who in WHO_STYLE:
        return WHO_STYLE[who]
    return f"bold {lane_colour(who)}"


def render(result: DemoResult, console: Console | None = None) -> Console:
    console = console or Console()
    sc = result.scenario
    head = Text()
    head.append(sc.title + "\n", style="bold")
    head.append("Lesson: ", style="bold")
    head.append(sc.lesson + "\n")
    head.append("Setup: ", style="bold")
    head.append(sc.setup + "\n")
    head.append("How to read: ", style="bold")
    head.append(HOW_TO_READ, style="dim")
    console.print(Panel(head, title=f"mongosim demo {sc.name}", title_align="left"))
    story = result.story
    table = Table(box=None, pad_edge=False, show_edge=False, expand=False)
    table.add_column("t", justify="right", no_wrap=True, style="dim")
    table.add_column("where", no_wrap=True)
    table.add_column("what happens", overflow="fold")
    for step in story.steps:
        t = f"{step.t:.1f}" if step.t_end is None else f"{step.t:.0f}–{step.t_end:.0f}"
        text = Text(MARK.get(step.kind, "") + step.text, style=KIND_STYLE.get(step.kind, ""))
        table.add_row(t, Text(step.who, style=who_style(step.who)), text)
    console.print(table)
    parts = []
    for w in story.waits:
        parts.append(Text(explain_wait(w, story.zero)))
    if parts:
        console.print(Panel(Group(*parts), title="why the stream waited", title_align="left", border_style="#c0392b"))
    tail = Text()
    tail.append(sc.lesson + "\n", style="bold")
    if sc.modules:
        tail.append("In the code: ", style="dim")
        tail.append(", ".join(sc.modules), style="dim")
    console.print(Panel(tail, title="what this shows", title_align="left", border_style="#1e8449"))
    return console


def render_text(result: DemoResult, width: int = 110) -> str:
    """The account as plain text (no colours): what tests and docs read."""
    console = Console(record=True, width=width, color_system=None, force_terminal=False, file=_Null())
    render(result, console)
    return console.export_text()


class _Null:
    def write(self, s: str) -> int:
        return len(s)

    def flush(self) -> None:
        pass
