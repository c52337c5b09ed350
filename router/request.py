"""A request to the router: one command, its database and the connection it came on.

Router command handlers take `(router, req)`; `req.op_time_key` is how a
handler that wrote says which optime the reply's `operationTime` names.
`GENERIC_FIELDS` are the generic arguments every command may carry (the
server's generic_argument.idl), which handlers do not treat as options.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Callable

from mongosim.router.server import ConnState

GENERIC_FIELDS = {
    "$db", "lsid", "$clusterTime", "txnNumber", "autocommit", "startTransaction", "readConcern",
    "writeConcern", "$readPreference", "comment", "maxTimeMS", "apiVersion", "apiStrict",
    "apiDeprecationErrors", "$audit", "$client", "mayBypassWriteBlocking",
}


@dataclass(slots=True)
class Request:
    db: str
    cmd: dict
    conn: ConnState
    name: str
    op_time_key: int = 0  # set by handlers that wrote: the reply's operationTime
    is_change_stream: bool = False
    routing: dict = field(default_factory=dict)  # shard -> the version fields it was targeted by
    internal: bool = False  # made by mongos itself: its `let` may carry mongos's own $$NOW / $$CLUSTER_TIME

    def arg(self, key: str, default: Any = None) -> Any:
        return self.cmd.get(key, default)


# The callables to run once the reply to the client command being answered has left (its
# connection's `after_reply`); set by the router for each command it answers.
AFTER_REPLY: ContextVar[list | None] = ContextVar("mongosim_after_reply", default=None)


def after_reply(fn: Callable[[], None]) -> None:
    """Run `fn` once the current command's reply has been sent; outside a client command, now."""
    hooks = AFTER_REPLY.get()
    if hooks is None:
        fn()
    else:
        hooks.append(fn)
