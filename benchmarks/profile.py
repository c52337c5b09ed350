"""Profiles of the mongosim server process under a benchmark workload, as small text summaries.

    python -m benchmarks.profile [--workload read|write|ops] [--events N] [--py-spy PATH]

The server runs as in the benchmarks (its own process, 4 shards,
``--instant-hwm``); the setup (sharding, loading) is not sampled: py-spy
attaches to the running server (``record --pid``, raw collapsed stacks,
``--idle`` so that waiting shows as such) only for the timed part, then the
stacks are summarised into ``benchmarks/profiles/<workload>.txt``:

- busy share (samples not parked in trio's epoll wait);
- self time per function, as % of busy samples (where the CPU goes);
- inclusive time per function (which call paths cost the most);
- self time by package (oplog/, shardsim/, router/, trio, bson, stdlib).

py-spy is not a project dependency: install it apart, e.g.
``pip install --target benchmarks/.tools py-spy`` (found there, on PATH or via $PYSPY).
Sampling is blocking (exact stacks), which slows the server: the throughput
printed during a profile is not a benchmark figure.
"""

from __future__ import annotations

import argparse
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime, timezone
from itertools import count
from pathlib import Path

from benchmarks import bench_ops, bench_read, bench_write
from benchmarks import harness as H

OUT_DIR = Path(__file__).resolve().parent / "profiles"
IDLE_FRAMES = ("EpollIOManager.get_events",)
FRAME_RE = re.compile(r"^(.*) \((.*?)(?::(\d+))?\)$")


def parse_frame(frame: str) -> tuple[str, str]:
    """'func (path/file.py:123)' -> ('func', 'path/file.py')."""
    m = FRAME_RE.match(frame)
    return (m.group(1), m.group(2)) if m else (frame, "")


def frame_line(frame: str) -> str:
    m = FRAME_RE.match(frame)
    return m.group(3) or "?" if m else "?"


def package_of(path: str) -> str:
    for top in ("oplog", "shardsim", "router", "mongosim"):
        if path.startswith(top + "/"):
            return top + "/" + (path.split("/")[1] if path.count("/") > 1 else "")
    if path.startswith("trio/") or "/trio/" in path:
        return "trio"
    if path.startswith("bson/") or "/bson/" in path:
        return "bson (pymongo)"
    if path.startswith("sortedcontainers/"):
        return "sortedcontainers"
    return "stdlib/other"


def summarize(raw: str, header: list[str], top: int = 30) -> str:
    """Collapsed stacks (one 'f1;f2;...;fn count' per line) -> the text report."""
    stacks: list[tuple[list[str], int]] = []
    for line in raw.splitlines():
        if not line.strip():
            continue
        frames, _, n = line.rpartition(" ")
        stacks.append((frames.split(";"), int(n)))
    total = sum(n for _, n in stacks)
    idle = sum(n for fs, n in stacks if any(fs[-1].startswith(f) for f in IDLE_FRAMES))
    busy = max(total - idle, 1)
    self_t: Counter = Counter()
    self_lines: dict[str, Counter] = {}
    incl: Counter = Counter()
    pkg: Counter = Counter()
    for fs, n in stacks:
        if any(fs[-1].startswith(f) for f in IDLE_FRAMES):
            continue
        name, path = parse_frame(fs[-1])
        self_t[f"{name}  ({path})"] += n
        self_lines.setdefault(f"{name}  ({path})", Counter())[frame_line(fs[-1])] += n
        pkg[package_of(path)] += n
        seen = set()
        for f in fs:
            name, path = parse_frame(f)
            key = f"{name}  ({path})"
            if key not in seen:
                seen.add(key)
                incl[key] += n
    lines = [*header,
             f"samples: {total}, busy {busy} ({100 * busy / max(total, 1):.1f}%), idle in epoll wait {idle}"
             f" ({100 * idle / max(total, 1):.1f}%)", "",
             f"## Self time, top {top} (% of busy samples; the hottest lines of each)"]
    for k, n in self_t.most_common(top):
        hot = ", ".join(f"{line}: {100 * c / n:.0f}%" for line, c in self_lines[k].most_common(3))
        lines.append(f"{100 * n / busy:6.2f}%  {k}   [lines {hot}]")
    lines += ["", "## Self time by package (% of busy samples)"]
    lines += [f"{100 * n / busy:6.2f}%  {k}" for k, n in pkg.most_common()]
    lines += ["", f"## Inclusive time, top {top + 10} (% of busy samples)"]
    lines += [f"{100 * n / busy:6.2f}%  {k}" for k, n in incl.most_common(top + 10)]
    return "\n".join(lines) + "\n"


def _record(py_spy: str, pid: int, rate: int, out: Path) -> subprocess.Popen:
    proc = subprocess.Popen([py_spy, "record", "--pid", str(pid), "--rate", str(rate), "--format", "raw",
                             "--idle", "--output", str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    time.sleep(1.0)  # attached and sampling
    if proc.poll() is not None:
        raise RuntimeError(f"py-spy failed: {proc.stdout.read()}")
    return proc


def _stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    if proc.returncode not in (0, None) and "Wrote" not in (out or ""):
        raise RuntimeError(f"py-spy failed: {out}")


def profile_read(py_spy: str, n: int, batch: int, reads: int, rate: int) -> str:
    # --event-cache 0, as the read benchmark: every read renders its events
    with H.server(H.mongosim_cmd(4, event_cache=0), "mongosim") as srv, tempfile.TemporaryDirectory() as tmp:
        loaded = bench_read.load(srv, n, 4)
        bench_read.read_rate(loaded.client, loaded.start, min(n, 2000), batch)  # warm
        out = Path(tmp) / "raw.txt"
        spy = _record(py_spy, srv.pid, rate, out)
        rates = [bench_read.read_rate(loaded.client, loaded.start, n, batch) for _ in range(reads)]
        _stop(spy)
        header = [f"# py-spy profile of the mongosim server: read benchmark",
                  f"# {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; 4 shards (--instant-hwm --event-cache 0), {n} insert events"
                  f" (200-byte documents), watch(batch_size={batch}) x {reads}",
                  f"# sampled at {rate} Hz, blocking; events/s while sampled: {[round(r) for r in rates]}",
                  "# the server's main thread is the only thread; 'busy' = samples not in trio's epoll wait"]
        return summarize(out.read_text(), header)


def profile_write(py_spy: str, n: int, batch: int, rate: int) -> str:
    with H.server(H.mongosim_cmd(4), "mongosim") as srv, tempfile.TemporaryDirectory() as tmp:
        c = H.client(srv.uri)
        H.shard_hashed(c, bench_write.DB, bench_write.COLL)
        ids = count()
        bench_write.insert_rate(c, ids, 5 * batch, batch, False)  # warm
        out = Path(tmp) / "raw.txt"
        spy = _record(py_spy, srv.pid, rate, out)
        got = bench_write.insert_rate(c, ids, n, batch, False)
        _stop(spy)
        header = [f"# py-spy profile of the mongosim server: write benchmark",
                  f"# {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; 4 shards (hashed _id), insert_many of {batch}"
                  f" 200-byte documents, ordered=False, {n} documents",
                  f"# sampled at {rate} Hz, blocking; documents/s while sampled: {got:.0f}",
                  "# the server's main thread is the only thread; 'busy' = samples not in trio's epoll wait"]
        return summarize(out.read_text(), header)


def profile_ops(py_spy: str, seconds: float, rate: int) -> str:
    """The ops benchmark's three operations, one after the other, `seconds` each."""
    import itertools

    with H.server(H.mongosim_cmd(2, instant_hwm=False), "mongosim") as srv, tempfile.TemporaryDirectory() as tmp:
        c = H.client(srv.uri)
        c[bench_ops.DB][bench_ops.COLL].insert_many(H.make_docs(0, 1000))
        ids = itertools.count(10**9)
        fns = {name: bench_ops._op(c, name, ids, 1000) for name in bench_ops.OPS}
        for fn in fns.values():
            bench_ops.rate(fn, 0.2)  # warm
        out = Path(tmp) / "raw.txt"
        spy = _record(py_spy, srv.pid, rate, out)
        got = {name: bench_ops.rate(fn, seconds) for name, fn in fns.items()}
        _stop(spy)
        header = ["# py-spy profile of the mongosim server: ops benchmark",
                  f"# {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; 2 shards, unsharded collection of 1000 documents;"
                  f" sequential insert_one, find_one by _id, update_one by _id, {seconds} s each",
                  f"# sampled at {rate} Hz, blocking; ops/s while sampled: { {k: round(v) for k, v in got.items()} }",
                  "# the server's main thread is the only thread; 'busy' = samples not in trio's epoll wait"]
        return summarize(out.read_text(), header)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.profile", description=__doc__.split("\n")[0])
    p.add_argument("--workload", choices=["read", "write", "ops", "all"], default="all")
    p.add_argument("--events", type=int, default=50_000,
                   help="events read (x --reads); documents written: 4x this (writes are faster)")
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--reads", type=int, default=3)
    p.add_argument("--rate", type=int, default=100, help="samples per second")
    p.add_argument("--py-spy", dest="py_spy", default=None)
    args = p.parse_args(argv)
    py_spy = H.find_py_spy(args.py_spy)
    if py_spy is None:
        print("py-spy not found: pip install --target benchmarks/.tools py-spy (or set $PYSPY)", file=sys.stderr)
        return 2
    OUT_DIR.mkdir(exist_ok=True)
    for w in (["read", "write", "ops"] if args.workload == "all" else [args.workload]):
        if w == "read":
            text = profile_read(py_spy, args.events, args.batch, args.reads, args.rate)
        elif w == "write":
            text = profile_write(py_spy, 4 * args.events, args.batch, args.rate)
        else:
            text = profile_ops(py_spy, 5.0, args.rate)
        path = OUT_DIR / f"{w}.txt"
        path.write_text(text)
        H.say(f"wrote {path.relative_to(H.ROOT)}")
        H.say("\n".join(text.splitlines()[:30]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
