"""The operation context: what one command carries while it runs on a node.

The server threads an `OperationContext` through every layer of a command
(its session, transaction, deadline, read timestamp); `OpCtx` is that object
here.  The node builds one per command (`Node.run_command`) and hands it to
the command's handler.
"""

from __future__ import annotations

import math
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

# the client connection the command being answered arrived on (set by the wire server for each
# command: its `id`, `peer` "ip:port" and `client` metadata), for $currentOp's client fields
CLIENT_CONNECTION: ContextVar[Any] = ContextVar("mongosim_client_connection", default=None)


@dataclass(slots=True)
class OpCtx:
    """Per-command context: session info and the optime of the last write made."""

    db: str
    cmd: dict
    lsid: dict | None = None
    txn_number: int | None = None
    op_time_key: int = 0
    # internal flags set by the router for shard-side behaviour
    from_router: bool = False
    txn: Any = None  # the open multi-document transaction this command runs in
    deadline: float = math.inf  # trio time when maxTimeMS runs out (a getMore's maxTimeMS is its await time)
    snapshot: Any = None  # a readConcern snapshot read's view (shardsim.snapshot_reads)
    at_cluster_time: int = 0  # ... and the cluster time it reads at
    variables: dict | None = None  # $$NOW, $$CLUSTER_TIME and `let` (shardsim.query.variables.for_command)
    close_connection: bool = False  # a failpoint closes the client's connection once the command ends
    opid: int = 0  # its id among the node's operations in flight (shardsim.kill_op)

    @property
    def view(self) -> Any:
        """What a read sees: the transaction, a snapshot, or (None) the committed data."""
        return self.txn if self.txn is not None else self.snapshot
