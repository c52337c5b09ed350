"""What every change-stream stage shares: the stream's context, the Event record, PAUSE.

Stages pull from the stage before them (`get_next()`), as the server's
stages do.  Before the transform a document is an oplog entry (a dict); from
the transform on it is an `Event`: the event document plus its resume token,
which stays the sort key even if user stages rewrite `_id`.  `PAUSE` means
"the oplog has no more entries for now" (the server's EOF on a tailable
cursor); the cursor ends its batch there and resumes later.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from mongosim.shardsim.changestream.spec import CLUSTER, COLLECTION, DATABASE, ChangeStreamSpec


class _Pause:
    __slots__ = ()

    def __repr__(self) -> str:
        return "PAUSE"


PAUSE = _Pause()


class Invalidated(Exception):
    """Raised by check-invalidate after the invalidate event: the cursor ends."""


class Event:
    """A change event in flight: the document, its token (sort key) and bookkeeping.

    An event rendered from the oplog's bytes (`render.py`) carries those bytes
    in `raw` and decodes `doc` only if a later stage asks for it; a stage that
    changes the document drops `raw` (`set_field`, or assigning `doc`).
    """

    __slots__ = ("_doc", "raw", "token", "ts_key", "pre_image_id", "raw_update", "uuid", "op_type")

    def __init__(self, doc: dict | None, token: dict, ts_key: int, *, raw: bytes | None = None,
                 op_type: str | None = None) -> None:
        self._doc = doc
        self.raw = raw
        self.op_type = op_type if op_type is not None else doc.get("operationType")
        self.token = token
        self.ts_key = ts_key
        self.pre_image_id: tuple | None = None
        self.raw_update: dict | None = None
        self.uuid: Any = None

    @property
    def doc(self) -> dict:
        if self._doc is None:
            from mongosim.oplog.bsonutil import decode

            self._doc = decode(self.raw)
        return self._doc

    @doc.setter
    def doc(self, value: dict) -> None:
        self._doc = value
        self.raw = None

    def set_field(self, name: str, value: Any) -> None:
        self.doc[name] = value
        self.raw = None

    @property
    def sort_key(self) -> str:
        return self.token["_data"]


class NamespaceFilter:
    """The stream's namespace rules (document_source_change_stream.cpp regexes).

    collection `^<db.coll>$`; database `^<db>\\.` and cluster
    `^(?!(admin|config|local)\\.)[^.]+\\.`, each followed by the collections
    regex: `(?!(\\$|system\\.))` (no `$...` and no `system.*` collection), or with
    showSystemEvents `(?!(\\$|system\\.(?!(js$|resharding\\.|buckets\\.|views$))))`
    (kRegexAllCollectionsShowSystemEvents: `system.js`, `system.resharding.*`,
    `system.buckets.*` and `system.views` are then in the stream; `system.views`
    writes become view events, `transform.py`).  The same collection rules apply
    to the DDL commands' target collections.  Command namespaces:
    `^<db>\\.\\$cmd$`, or any non-internal db's `$cmd`.
    """

    _CLUSTER_NS = re.compile(r"^(?!(admin|config|local)\.)[^.]+\.(?!(\$|system\.))")
    _CLUSTER_CMD = re.compile(r"^(?!(admin|config|local)\.)[^.]+\.\$cmd$")
    _CLUSTER_VIEWS = re.compile(r"^(?!(admin|config|local)\.)[^.]+\.system\.views$")
    _SYSTEM_COLLECTIONS = r"(?!(\$|system\.(?!(js$|resharding\.|buckets\.|views$))))"
    _CLUSTER_NS_SHOW_SYSTEM = re.compile(r"^(?!(admin|config|local)\.)[^.]+\." + _SYSTEM_COLLECTIONS)

    def __init__(self, level: str, db: str, coll: str | None, show_system: bool = False) -> None:
        self.level, self.db, self.coll = level, db, coll
        self.show_system = show_system
        self.target = f"{db}.{coll}" if coll else None
        self._db_prefix = db + "."
        self.cmd_ns = f"{db}.$cmd"
        if show_system and level == DATABASE:
            self._db_show_system = re.compile("^" + re.escape(self._db_prefix) + self._SYSTEM_COLLECTIONS)

    def ns(self, ns: str) -> bool:
        """Does a CRUD namespace belong to this stream?"""
        if self.level == COLLECTION:
            return ns == self.target
        if self.show_system:
            rx = self._db_show_system if self.level == DATABASE else self._CLUSTER_NS_SHOW_SYSTEM
            return rx.match(ns) is not None
        if self.level == DATABASE:
            if not ns.startswith(self._db_prefix):
                return False
            rest = ns[len(self._db_prefix):]
            return not rest.startswith("$") and not rest.startswith("system.")
        return self._CLUSTER_NS.match(ns) is not None

    def views(self, ns: str) -> bool:
        """Is `ns` a `system.views` collection whose writes this stream reports as view events (with
        showExpandedEvents; getViewNsRegexForChangeStream): its database's, or for a whole-cluster stream
        any non-internal database's.  A single-collection stream has none."""
        if self.level == COLLECTION:
            return False
        if self.level == DATABASE:
            return ns == self._db_prefix + "system.views"
        return self._CLUSTER_VIEWS.match(ns) is not None

    def cmd(self, ns: str) -> bool:
        """Is `ns` a command namespace this stream reads?"""
        if self.level == CLUSTER:
            return self._CLUSTER_CMD.match(ns) is not None
        return ns == self.cmd_ns


@dataclass
class ChangeStreamContext:
    node: Any
    spec: ChangeStreamSpec
    level: str
    db: str
    coll: str | None
    needs_merge: bool  # the shard part of a router's stream (vs a replica-set stream)
    start_key: int  # ts key the oplog scan starts at
    nsf: NamespaceFilter = None  # type: ignore[assignment]
    client_token: Any = None  # decoded ResumeTokenData, or None
    trace: Callable[[dict], None] | None = None

    def __post_init__(self) -> None:
        if self.nsf is None:
            self.nsf = NamespaceFilter(self.level, self.db, self.coll, self.spec.show_system_events)

    @property
    def start_key_ts(self):
        from mongosim.oplog.clock import key_ts

        return key_ts(self.start_key)

    def emit(self, step: str, **info: Any) -> None:
        if self.trace is not None:
            self.trace({"where": self.node.name, "step": step, **info})


class Stage:
    """Base of the pull-based stages: `get_next()` returns a doc/Event or PAUSE."""

    name = "$_internalChangeStreamStage"
    bypassable = True  # may a run of CRUD entries ever bypass it? (not: user stages, images)

    def __init__(self, source: "Stage | None", ctx: ChangeStreamContext) -> None:
        self.source = source
        self.ctx = ctx

    def get_next(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def skippable(self) -> bool:
        """Would this stage pass a CRUD event on unchanged, holding nothing back, right now?  Then a
        run of CRUD entries may bypass it (batch_render.RunRenderer)."""
        return True

    def explain(self) -> dict:
        return {self.name: {}}
