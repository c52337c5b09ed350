"""start-up: ``mongosim.Cluster(shards=3)`` until pymongo's first ``ping`` succeeds.

Each run is a fresh process (nothing warm).  Imports of ``mongosim`` and
``pymongo`` are done before the clock starts and reported apart; the figure is
``Cluster(shards=3).start()`` + ``MongoClient(uri).admin.command("ping")``.
The median of the runs is the figure (goal <= 0.5 s).
"""

from __future__ import annotations

import json
import subprocess

from benchmarks import harness as H

CHILD = r"""
import json, time
t0 = time.perf_counter()
import pymongo, mongosim
from mongosim import Cluster  # mongosim imports its cluster on first use
t1 = time.perf_counter()
cluster = Cluster(shards=3, port=0).start()
t2 = time.perf_counter()
client = pymongo.MongoClient(cluster.uri)
client.admin.command("ping")
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "start_s": t2 - t1, "startup_s": t3 - t1}), flush=True)
client.close()
cluster.stop()
"""


def run_startup(runs: int, results: dict) -> None:
    H.say(f"start-up: Cluster(shards=3) -> first ping, {runs} fresh processes")
    got = []
    for _ in range(runs):
        out = subprocess.run([H.PYTHON, "-c", CHILD], cwd=H.ROOT, capture_output=True, text=True, timeout=120,
                             env={"PYTHONPATH": str(H.ROOT), "PATH": "/usr/bin:/bin"}, check=False)
        if out.returncode:
            raise RuntimeError(f"start-up child failed:\n{out.stderr}")
        got.append(json.loads(out.stdout.strip().splitlines()[-1]))
    s = H.median([g["startup_s"] for g in got])
    H.say(f"  startup {s:.3f}s (Cluster.start {H.median([g['start_s'] for g in got]):.3f}s, then the first ping);"
          f" imports before it {H.median([g['import_s'] for g in got]):.3f}s;"
          f" runs {[round(g['startup_s'], 3) for g in got]}   (goal <= 0.5 s)")
    results["startup_s"] = round(s, 3)
    results["startup_import_s"] = round(H.median([g["import_s"] for g in got]), 3)
