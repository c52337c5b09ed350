"""index: point queries through a secondary index, against `_id` lookups and across collection sizes.

mongosim (`serve`, 2 shards) holds two unsharded collections with an index on
``name``: ``big`` (100k documents; 50k in the quick run) and ``small`` (1k).
The client (pymongo, one connection, in this process) runs
``find_one({"name": ...})`` and ``find_one({"_id": ...})`` on random existing
keys, in blocks of 25 calls that alternate between the three kinds (so the
machine's other load falls on each alike), repeated; each figure is the median
rate.

index_point_ratio = find_one by name / find_one by _id        (big collection)
index_scaling     = find_one by name on big / on small          (cost flat in size)
"""

from __future__ import annotations

import random
import time

import pymongo

from benchmarks import harness as H

DB = "bench_index"


def _doc(i: int) -> dict:
    return {"_id": i, "name": f"user-{i:07d}", "region": H.REGIONS[i % 4], "total": i % 997, "note": "n" * 40}


def _load(c: pymongo.MongoClient, coll: str, n: int) -> None:
    col = c[DB][coll]
    col.drop()
    col.create_index("name")
    batch = 5000
    for start in range(0, n, batch):
        col.insert_many([_doc(i) for i in range(start, min(n, start + batch))], ordered=False)


def _interleaved(kinds: dict[str, tuple], seconds: float, block: int = 25) -> dict[str, float]:
    """find_one rates of each kind, measured in small alternating blocks so that the machine's
    other load falls on every kind alike: name -> calls per second."""
    spent = {k: 0.0 for k in kinds}
    calls = {k: 0 for k in kinds}
    pos = {k: 0 for k in kinds}
    deadline = time.perf_counter() + seconds * len(kinds)
    while time.perf_counter() < deadline:
        for name, (col, field, keys) in kinds.items():
            i = pos[name]
            t0 = time.perf_counter()
            for j in range(block):
                if col.find_one({field: keys[(i + j) % len(keys)]}) is None:
                    raise RuntimeError(f"no document with {field} = {keys[(i + j) % len(keys)]!r}")
            spent[name] += time.perf_counter() - t0
            calls[name] += block
            pos[name] = (i + block) % len(keys)
    return {k: calls[k] / spent[k] for k in kinds}


def run_index(big_n: int, seconds: float, reps: int, results: dict) -> None:
    small_n = 1000
    H.say(f"index: find_one by an indexed field vs by _id, {big_n} and {small_n} documents, 2 shards,"
          f" {reps} runs of ~{seconds}s each")
    with H.server(H.mongosim_cmd(2), "mongosim") as ms:
        c = H.client(ms.uri)
        t0 = time.perf_counter()
        _load(c, "big", big_n)
        _load(c, "small", small_n)
        H.say(f"  loaded in {time.perf_counter() - t0:.1f}s")
        rnd = random.Random(7)
        big_ids = [rnd.randrange(big_n) for _ in range(200)]
        small_ids = [rnd.randrange(small_n) for _ in range(200)]
        big, small = c[DB]["big"], c[DB]["small"]
        plan = big.find({"name": _doc(big_ids[0])["name"]}).limit(1).explain()
        stage = _winning_stage(plan)
        H.say(f"  plan of find_one by name: {stage}")
        kinds = {"id_big": (big, "_id", _keys("_id", big_ids)), "name_big": (big, "name", _keys("name", big_ids)),
                 "name_small": (small, "name", _keys("name", small_ids))}
        _interleaved(kinds, 0.2)  # warm (the first query through an index builds it)
        runs: dict[str, list[float]] = {k: [] for k in kinds}
        for _ in range(reps):
            for k, rate in _interleaved(kinds, seconds).items():
                runs[k].append(rate)
        med = {k: H.median(v) for k, v in runs.items()}
        point = med["name_big"] / med["id_big"]
        scaling = med["name_big"] / med["name_small"]
        H.say(f"  find_one by _id   ({big_n}): {med['id_big']:>8.0f} /s")
        H.say(f"  find_one by name  ({big_n}): {med['name_big']:>8.0f} /s   ratio to _id {point:.3f}   (goal >= 0.8)")
        H.say(f"  find_one by name  ({small_n}): {med['name_small']:>8.0f} /s   {big_n} / {small_n}: {scaling:.3f}"
              "   (goal >= 0.8)")
        results["index_id_point_per_s"] = round(med["id_big"])
        results["index_name_point_per_s"] = round(med["name_big"])
        results["index_name_point_small_per_s"] = round(med["name_small"])
        results["index_docs"] = big_n
        results["index_point_ratio"] = round(point, 3)
        results["index_scaling"] = round(scaling, 3)


def _keys(field: str, ids: list[int]) -> list:
    return ids if field == "_id" else [_doc(i)["name"] for i in ids]


def _winning_stage(plan: dict) -> str:
    qp = plan.get("queryPlanner", {})
    wp = qp.get("winningPlan", {})
    if "shards" in wp:
        wp = wp["shards"][0].get("winningPlan", {})
    stages = []
    while wp:
        stages.append(wp.get("stage", "?"))
        wp = wp.get("inputStage")
    return " <- ".join(stages)
