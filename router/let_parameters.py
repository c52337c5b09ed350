"""mongos's `let`: evaluated once at the router, sent on to the shards as constants.

A command's `let` may hold expressions (`{$rand: {}}`, `"$$NOW"`, ...).  mongos
evaluates them itself (cluster_write's freezeLet, cluster_bulk_write_cmd) with
its own $$NOW and $$CLUSTER_TIME, and sends each shard the values as
`$literal`s together with those two constants: every shard then sees the same
variables, and a bad `let` fails at the router before any shard is asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mongosim.router.request import Request
from mongosim.shardsim.query.variables import frozen_let, runtime_constants, seed_let

if TYPE_CHECKING:
    from mongosim.router.mongos import Router


def router_variables(router: Router, req: Request) -> dict:
    """The command's variables at the router ($$NOW, $$CLUSTER_TIME and its `let`); a command with
    `let` is rewritten to carry the evaluated values to the shards."""
    variables = runtime_constants(router.config.wall.wall(), router.clock.now())
    let = req.cmd.get("let")
    if let is None:
        return variables
    variables = seed_let(let, variables, internal=req.internal, command=req.name)
    req.cmd = {**req.cmd, "let": frozen_let(let, variables)}
    return variables


def freeze_let(router: Router, req: Request) -> None:
    """`router_variables` for a command that reads no variable at the router (a write): a command
    without `let` has nothing to evaluate or rewrite, so no $$NOW or $$CLUSTER_TIME is read."""
    if req.cmd.get("let") is not None:
        router_variables(router, req)
