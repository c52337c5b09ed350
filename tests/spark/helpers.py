"""Workloads and readers shared by the Spark tests."""

from __future__ import annotations

import json
import time
from pathlib import Path

from bson.raw_bson import RawBSONDocument


def shard_across(client, db: str, coll: str, split_at: int = 50, to: str = "shard01") -> None:
    """`db.coll` sharded on {_id: 1} with the range [split_at, max) on `to` (the other shard is primary)."""
    client.admin.command("enableSharding", db)
    client.admin.command("shardCollection", f"{db}.{coll}", key={"_id": 1})
    client.admin.command("split", f"{db}.{coll}", middle={"_id": split_at})
    primary = client.config.databases.find_one({"_id": db})
    if primary is None or primary.get("primary") != to:
        client.admin.command("moveChunk", f"{db}.{coll}", find={"_id": split_at}, to=to)


def read_events(uri: str, start_token: str, n: int, *, db: str | None = None, coll: str | None = None,
                timeout: float = 30.0, **watch_kw) -> list[bytes]:
    """n events after `start_token` straight from the router (raw BSON): the reference for Spark."""
    import pymongo

    raw_client = pymongo.MongoClient(uri, document_class=RawBSONDocument)
    try:
        target = raw_client[db][coll] if coll else (raw_client[db] if db else raw_client)
        out: list[bytes] = []
        deadline = time.monotonic() + timeout
        with target.watch(start_after={"_data": start_token}, max_await_time_ms=100, **watch_kw) as cs:
            while len(out) < n:
                ev = cs.try_next()
                if ev is not None:
                    out.append(ev.raw)
                    continue
                if not cs.alive:
                    break
                assert time.monotonic() < deadline, f"only {len(out)} of {n} events"
        return out
    finally:
        raw_client.close()


def checkpoint_offsets(checkpoint: Path) -> dict[int, dict]:
    """batch id -> the source's end offset, from `<checkpoint>/offsets/<batch>`."""
    out = {}
    d = Path(checkpoint) / "offsets"
    if not d.exists():
        return out
    for f in d.iterdir():
        if f.name.isdigit():
            lines = f.read_text().splitlines()
            if len(lines) >= 3:
                out[int(f.name)] = json.loads(lines[-1])
    return out


def committed(checkpoint: Path) -> set[int]:
    d = Path(checkpoint) / "commits"
    return {int(f.name) for f in d.iterdir() if f.name.isdigit()} if d.exists() else set()
