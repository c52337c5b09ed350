"""What every benchmark shares: server processes, the workload's documents, clients, statistics.

The server under test always runs in its own process (``mongosim serve`` or a
reference stub from ``benchmarks.wire_stub``) and the pymongo client in this
one: the machine has two cores, and one process would make the client and
the server share one GIL.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pymongo

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
URI_RE = re.compile(r"(mongodb://\S+)")
READY_TIMEOUT_S = 60.0


@dataclass
class Server:
    """A server process and the URI it printed when ready."""

    proc: subprocess.Popen
    uri: str
    label: str
    lines: list[str] = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.proc.pid


def _drain(proc: subprocess.Popen, lines: list[str]) -> None:
    for line in proc.stdout:  # keep the pipe from filling up; remember the tail for errors
        lines.append(line.rstrip())
        del lines[:-50]


@contextmanager
def server(cmd: list[str], label: str, *, wrap: list[str] | None = None,
           stop_signal: int = signal.SIGTERM) -> Iterator[Server]:
    """Start `cmd` (a server that prints a mongodb:// URI when ready) and stop it on exit.

    `wrap` prefixes the command (a profiler such as ``py-spy record ... --``);
    `stop_signal` is what ends it (SIGINT lets a profiler write its report).
    """
    full = [*(wrap or []), *cmd]
    proc = subprocess.Popen(full, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    lines: list[str] = []
    deadline = time.monotonic() + READY_TIMEOUT_S
    uri = None
    while uri is None:
        line = proc.stdout.readline()
        if not line:
            proc.wait()
            raise RuntimeError(f"{label} exited before it was ready ({proc.returncode}):\n" + "\n".join(lines))
        lines.append(line.rstrip())
        m = URI_RE.search(line)
        if m and ("ready" in line):
            uri = m.group(1)
        elif time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"{label} not ready after {READY_TIMEOUT_S}s:\n" + "\n".join(lines))
    threading.Thread(target=_drain, args=(proc, lines), daemon=True).start()
    srv = Server(proc, uri, label, lines)
    try:
        yield srv
    finally:
        if proc.poll() is None:
            proc.send_signal(stop_signal)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def mongosim_cmd(shards: int, *, instant_hwm: bool = True, noop_interval: float | None = None,
                 event_cache: int | None = None, members: int = 1,
                 election_timeout_ms: int | None = None) -> list[str]:
    cmd = [PYTHON, "-m", "mongosim.cli", "serve", "--port", "0", "--shards", str(shards)]
    if members != 1:
        cmd += ["--members", str(members)]
    if election_timeout_ms is not None:
        cmd += ["--election-timeout-ms", str(election_timeout_ms)]
    if event_cache is not None:
        cmd += ["--event-cache", str(event_cache)]
    if instant_hwm:
        cmd.append("--instant-hwm")
    if noop_interval is not None:
        cmd += ["--noop-interval", str(noop_interval)]
    return cmd


def replica_set_uri(srv: Server, name: str, timeout_s: float = 10.0) -> str:
    """The connection string `mongosim serve` prints for replica set `name` (each shard's, the config server's)."""
    pat = re.compile(rf"^\s*{re.escape(name)}: (mongodb://\S+)")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for line in list(srv.lines):
            m = pat.match(line)
            if m:
                return m.group(1)
        time.sleep(0.01)  # the lines after "ready" arrive through the drain thread
    raise RuntimeError(f"{srv.label} printed no URI for replica set {name}:\n" + "\n".join(srv.lines))


def stub_cmd(mode: str, *args: str) -> list[str]:
    return [PYTHON, "-m", "benchmarks.wire_stub", "--mode", mode, *args]


def client(uri: str, **kwargs: Any) -> pymongo.MongoClient:
    """A pymongo client that survives a server stalled for minutes (a slow figure beats a crash).

    pymongo's monitor gives up on a server whose hello takes connectTimeoutMS (20 s by default)
    and cancels the operations in flight; a server computing one huge batch can stall that long.
    """
    kwargs.setdefault("connectTimeoutMS", 300_000)
    c: pymongo.MongoClient = pymongo.MongoClient(uri, serverSelectionTimeoutMS=300_000, **kwargs)
    c.admin.command("ping")
    return c


# -- the workload ---------------------------------------------------------------------------
REGIONS = ["eu-west", "us-east", "ap-south", "sa-east"]


def make_doc(i: int) -> dict:
    """An order document of 200 BSON bytes: the one event shape of every benchmark."""
    return {
        "_id": i,
        "customer": f"customer-{i % 9973:05d}",
        "region": REGIONS[i % 4],
        "total": round(10 + (i * 7919 % 100_000) / 100, 2),
        "items": [{"sku": f"sku-{i % 257:04d}", "qty": 1 + i % 5}, {"sku": f"sku-{i % 263:04d}", "qty": 2}],
        "status": "placed",
        "note": "n" * 10,
    }


def make_docs(start: int, n: int) -> list[dict]:
    return [make_doc(i) for i in range(start, start + n)]


def shard_hashed(c: pymongo.MongoClient, db: str, coll: str) -> None:
    """Shard `db.coll` on a hashed `_id`: one chunk per shard, documents spread evenly."""
    c.admin.command("enableSharding", db)
    c.admin.command("shardCollection", f"{db}.{coll}", key={"_id": "hashed"})


def shard_ranges(c: pymongo.MongoClient, db: str, coll: str, shards: int, key: str = "s") -> None:
    """Shard `db.coll` on `{key: 1}` with chunk i = [i, i+1) on shard i (the last one open-ended)."""
    c.admin.command("enableSharding", db)
    c.admin.command("shardCollection", f"{db}.{coll}", key={key: 1})
    names = sorted(s["_id"] for s in c.config.shards.find())
    for i in range(1, shards):
        c.admin.command("split", f"{db}.{coll}", middle={key: i})
    for i in range(shards):
        c.admin.command("moveChunk", f"{db}.{coll}", find={key: i}, to=names[i])


# -- statistics -----------------------------------------------------------------------------
def median(xs: list[float]) -> float:
    return statistics.median(xs)


def percentile(xs: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100)."""
    s = sorted(xs)
    k = max(0, min(len(s) - 1, int(round(p / 100 * len(s) + 0.5)) - 1))
    return s[k]


_CLK_TCK = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int | str) -> list[str]:
    """The fields of /proc/<pid>/stat after the command name (state first: fields[0])."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a running process (from /proc; 10 ms resolution)."""
    fields = _stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


def descendants_cpu_s(pid: int) -> dict[str, float]:
    """CPU seconds of the live processes under `pid` (not `pid` itself), by kind: ``jvm`` (a java
    command line) and ``python`` (the rest); each with its reaped children's time, so that a worker
    that exited still counts (from /proc; 10 ms resolution)."""
    procs: dict[int, tuple[int, float, bool]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = _stat_fields(entry)
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                java = b"java" in f.read()
        except OSError:  # (gone meanwhile)
            continue
        cpu = sum(int(v) for v in fields[11:15]) / _CLK_TCK
        procs[int(entry)] = (int(fields[1]), cpu, java)
    under, grew = {pid}, True
    while grew:
        grew = False
        for p, (parent, _cpu, _java) in procs.items():
            if parent in under and p not in under:
                under.add(p)
                grew = True
    under.discard(pid)
    out = {"jvm": 0.0, "python": 0.0}
    for p in under:
        _parent, cpu, java = procs[p]
        out["jvm" if java else "python"] += cpu
    return out


def say(msg: str) -> None:
    print(msg, flush=True)


def find_py_spy(explicit: str | None = None) -> str | None:
    for cand in (explicit, os.environ.get("PYSPY"), shutil.which("py-spy"), str(ROOT / "benchmarks" / ".tools" / "bin" / "py-spy")):
        if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
            return cand
    return None
