"""`mongosim explain`: the two halves of a `watch()` on a sharded cluster — what each shard runs, what mongos runs.

Runs an in-process cluster (no sockets), sends the router the aggregate a
driver's `watch()` sends, with `explain: true`, and shows the router's answer
(`router/merge/explain.py`): the shard part, as each shard built it, and the
merge part, each stage with what it does and the module that implements it.
"""

from __future__ import annotations

import json
from typing import Any

import trio
from bson import json_util
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from mongosim.core import open_cluster
from mongosim.testing import AsyncClient

STAGES: dict[str, tuple[str, str]] = {
    "internalOplogMatch": ("reads this shard's oplog from the start time and keeps the entries this stream may "
                           "need (the filter below); its latest entry read becomes the shard's promise when it "
                           "has nothing to send", "shardsim/changestream/oplog_match.py"),
    "internalUnwindTransaction": ("a committed transaction's applyOps becomes one entry per operation, all at the "
                                  "commit's cluster time, numbered by txnOpIndex",
                                  "shardsim/changestream/unwind_transaction.py"),
    "internalTransform": ("each entry becomes a change event; its _id, the resume token, is also its sort key",
                          "shardsim/changestream/transform.py"),
    "internalCheckInvalidate": ("a drop/rename of the watched namespace: the event, then invalidate, then the end",
                                "shardsim/changestream/check_invalidate.py"),
    "internalCheckResumability": ("fails if the oplog no longer reaches back to the start; swallows the events "
                                  "before the client's token", "shardsim/changestream/check_resumability.py"),
    "internalAddPreImage": ("fullDocumentBeforeChange, from the pre-image store", "shardsim/changestream/images.py"),
    "internalAddPostImage": ("fullDocument: the current document (updateLookup) or pre-image + delta",
                             "shardsim/changestream/images.py"),
    "internalChangeStreamSplitLargeEvent": ("splits events over 16 MiB into fragments",
                                            "shardsim/changestream/split_large_event.py"),
    "$mergeCursors": ("the AsyncResultsMerger: one cursor per shard plus one on the config server; events merged "
                      "by resume token, each released only once every cursor has promised (postBatchResumeToken) "
                      "that nothing earlier is coming", "router/merge/async_results_merger.py"),
    "internalHandleTopologyChange": ("when the config server reports a new shard (an insert into config.shards), "
                                     "opens a cursor on it from that point and swallows the event",
                                     "router/merge/handle_topology_change.py"),
    "internalEnsureResumeTokenPresent": ("the client's resume token must come by: drops it (and anything before "
                                         "it), fails with ChangeStreamFatalError if it was not there",
                                         "router/merge/ensure_resume_token_present.py"),
}
CLASSIC = ("without showExpandedEvents only the classic event types reach the client",
           "shardsim/changestream/user_stages.py")
USER = ("your stage: runs on every shard, before the merge", "shardsim/changestream/user_stages.py")


def parse_ns(ns: str | None) -> tuple[str, Any]:
    """'db.coll' -> collection stream, 'db' -> database stream, None/'cluster' -> the whole cluster."""
    if not ns or ns in ("cluster", "admin"):
        return "admin", 1
    if "." in ns:
        db, coll = ns.split(".", 1)
        return db, coll
    return ns, 1


def watch_command(ns: str | None, pipeline: list, options: dict) -> tuple[str, dict]:
    db, target = parse_ns(ns)
    spec = dict(options)
    if db == "admin" and target == 1:
        spec.setdefault("allChangesForCluster", True)
    return db, {"aggregate": target, "pipeline": [{"$changeStream": spec}, *pipeline], "explain": True}


def explain_watch(ns: str | None, pipeline: list | None = None, options: dict | None = None, shards: int = 2,
                  shard_collection: bool = True) -> dict:
    """Run a cluster in-process and return the router's explain of `watch()` on `ns`."""
    db, cmd = watch_command(ns, pipeline or [], options or {})

    async def main() -> dict:
        async with open_cluster(shards=shards, listen=False, epoch=1_700_000_000) as core:
            c = AsyncClient(core.router)
            if shard_collection and isinstance(cmd["aggregate"], str) and db not in ("admin", "config", "local"):
                await c.admin({"enableSharding": db})
                await c.admin({"shardCollection": f"{db}.{cmd['aggregate']}", "key": {"_id": "hashed"}})
            reply = await c.command(db, cmd)
            return {k: v for k, v in reply.items() if k not in ("$clusterTime", "operationTime")}

    return trio.run(main)


def _describe(stage: dict) -> tuple[str, str, str, str]:
    """(name, arguments, what it does, module) of one explained stage."""
    name, args = next(iter(stage.items()))
    if name == "$changeStream":
        short = args.get("stage", "?")
        rest = {k: v for k, v in args.items() if k != "stage"}
        what, module = STAGES.get(short, ("", ""))
        return f"$_internalChangeStream{short[len('internal'):]}", _short(rest), what, module
    if name in STAGES:
        what, module = STAGES[name]
        return name, _short(args), what, module
    if name == "$match" and set(args) == {"operationType"} and "$nin" in args["operationType"]:
        return name, "operationType not in the expanded-only types", *CLASSIC
    return name, _short(args), *USER


def _short(v: Any, limit: int = 150) -> str:
    if not v:
        return ""
    s = json_util.dumps(v, json_options=json_util.RELAXED_JSON_OPTIONS)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _table(stages: list[dict], numbered_from: int = 1) -> Table:
    t = Table(box=None, pad_edge=False, show_header=False, padding=(0, 1, 1, 0))
    t.add_column("#", justify="right", style="dim")
    t.add_column("stage")
    for i, st in enumerate(stages, start=numbered_from):
        name, args, what, module = _describe(st)
        body = Text()
        body.append(name, style="bold")
        if module:
            body.append(f"   {module}", style="dim")
        body.append("\n" + what)
        if args:
            body.append("\n" + args, style="dim")
        t.add_row(str(i), body)
    return t


def render(ns: str | None, pipeline: list, options: dict, explain: dict, console: Console | None = None) -> Console:
    console = console or Console()
    db, target = parse_ns(ns)
    what = (f"{db}.{target}" if isinstance(target, str) else ("the whole cluster" if db == "admin" else f"database {db}"))
    head = Text()
    head.append(f"watch() on {what}", style="bold")
    if pipeline:
        head.append(f"  pipeline: {_short(pipeline, 300)}")
    if options:
        head.append(f"  options: {_short(options, 300)}")
    head.append("\nmongos expands $changeStream into internal stages and splits them above "
                "$_internalChangeStreamHandleTopologyChange: the shard part runs on every shard, each on its own "
                "oplog; the merge part runs on mongos, fed by $mergeCursors.", style="dim")
    console.print(Panel(head, title="mongosim explain", title_align="left"))
    split = explain["splitPipeline"]
    shard_names = ", ".join(explain["shards"])
    console.print(Panel(_table(split["shardsPart"]), title=f"shard part — on every shard ({shard_names})",
                        title_align="left", border_style="#2b7bb9"))
    config_note = Text("plus, on the config server: a $changeStream on config.shards (allowToRunOnConfigDB), "
                       "started at the same time, so that the merge hears of new shards", style="dim")
    console.print(Panel(Group(_table(split["mergerPart"]), config_note), title="merge part — on mongos",
                        title_align="left", border_style="#1e8449"))
    return console


def render_json(explain: dict) -> str:
    return json_util.dumps(explain, indent=2, json_options=json_util.RELAXED_JSON_OPTIONS)


def parse_json_arg(text: str | None, what: str) -> Any:
    if not text:
        return None
    try:
        return json_util.loads(text)
    except (ValueError, json.JSONDecodeError) as err:
        raise SystemExit(f"mongosim explain: {what} is not valid (extended) JSON: {err}") from None
