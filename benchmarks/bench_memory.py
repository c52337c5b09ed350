"""memory: resident bytes per oplog entry / the entry's BSON size, for 1M entries.

In a fresh process (so nothing else shares the heap): an ``oplog.oplog.Oplog``
is filled with insert entries of a 200-byte document, built exactly as
``Node.log`` builds them (``oplog.entry.insert_op`` + ``finish``, then
``Oplog.append``), with increasing timestamps.  The figure is the growth of
the process's resident set (``/proc/self/statm``) over the BSON bytes stored
(``Oplog.size_bytes``).  The entry dicts are transient: what stays is what
the oplog keeps.

memory_ratio = RSS growth / total BSON bytes (goal <= 2.0)
"""

from __future__ import annotations

import json
import subprocess
import sys

from benchmarks import harness as H

CHILD = r"""
import gc, json, os, sys, time, uuid
from datetime import datetime
from bson import Binary, Timestamp
from mongosim.oplog import entry as E
from mongosim.oplog.oplog import Oplog
from benchmarks.harness import make_doc

PAGE = os.sysconf("SC_PAGE_SIZE")
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE

n = int(sys.argv[1])
ns = "bench.orders"
ui = Binary(uuid.UUID("6f1c2a40-1d2e-4c1b-9a55-0e6d1c2b3a4f").bytes, 4)
base = 1_800_000_000
wall0 = datetime(2027, 1, 15, 12, 0, 0)

def entry(i):
    doc = make_doc(i)
    op = E.insert_op(ns, ui, doc, {"_id": doc["_id"]})
    return E.finish(op, Timestamp(base + i // 4096, i % 4096 + 1), wall0)

log = Oplog()
scratch = Oplog()
for i in range(1000):  # warm the allocator for the transient objects, in a log we then drop
    scratch.append(entry(i))
del scratch
gc.collect()
before = rss()
t0 = time.perf_counter()
for i in range(n):
    log.append(entry(i))
build_s = time.perf_counter() - t0
gc.collect()
after = rss()
stored = log.size_bytes
objects = sum(sys.getsizeof(r) for r in log._raw) + 8 * 4 * len(log)  # bytes objects + 4 column slots
print(json.dumps({"entries": len(log), "bson_bytes": stored, "rss_growth": after - before,
                  "object_bytes": objects, "build_s": build_s}))
"""


def run_memory(n: int, results: dict) -> None:
    H.say(f"memory: an Oplog of {n} insert entries (200-byte documents), in a fresh process")
    out = subprocess.run([H.PYTHON, "-c", CHILD, str(n)], cwd=H.ROOT, capture_output=True, text=True,
                         env={"PYTHONPATH": str(H.ROOT), "PATH": "/usr/bin:/bin"}, check=False)
    if out.returncode:
        raise RuntimeError(f"memory child failed:\n{out.stderr}")
    r = json.loads(out.stdout.strip().splitlines()[-1])
    ratio = r["rss_growth"] / r["bson_bytes"]
    per_entry = r["bson_bytes"] / r["entries"]
    H.say(f"  {r['entries']} entries of {per_entry:.0f} BSON bytes: {r['bson_bytes'] / 2**20:.0f} MiB BSON,"
          f" RSS +{r['rss_growth'] / 2**20:.0f} MiB ({r['rss_growth'] / r['entries']:.0f} B/entry);"
          f" Python objects {r['object_bytes'] / r['bson_bytes']:.2f}x; built in {r['build_s']:.1f}s")
    H.say(f"  memory_ratio {ratio:.3f} (goal <= 2.0)")
    results["memory_ratio"] = round(ratio, 3)
    results["memory_rss_bytes_per_entry"] = round(r["rss_growth"] / r["entries"], 1)
    results["memory_bson_bytes_per_entry"] = round(per_entry, 1)
    results["memory_entries"] = r["entries"]
