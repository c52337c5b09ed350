"""A database's views: their definitions in `<db>.system.views` (the server's ViewCatalog).

`definition(node, db, name)` is the `system.views` document of a view (None for a
collection); `resolve(node, db, name)` follows a view on a view down to its backing
collection and returns it with the whole pipeline (the innermost view's stages
first), at most 20 deep (ViewDepthLimitExceeded).  Reads on views are served by
`views.py`; `$lookup` and its kind resolve their foreign views here too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mongosim.oplog.errors import MongoError

if TYPE_CHECKING:
    from mongosim.shardsim.node import Node

__all__ = ["definition", "resolve", "MAX_VIEW_DEPTH"]

MAX_VIEW_DEPTH = 20


def definition(node: Node, db: str, name: str) -> dict | None:
    """The system.views document of `db.name`, or None when it is not a view."""
    views = node.catalog.collection(db, "system.views")
    return views.get(f"{db}.{name}") if views is not None else None


def resolve(node: Node, db: str, name: str) -> tuple[str, list] | None:
    """(backing collection, the whole pipeline) of the view `db.name`; None if it is not a view."""
    view = definition(node, db, name)
    if view is None:
        return None
    pipelines: list[list] = []
    depth = 0
    while view is not None:
        depth += 1
        if depth > MAX_VIEW_DEPTH:
            raise MongoError("ViewDepthLimitExceeded", f"View depth too deep or view cycle detected; maximum depth is {MAX_VIEW_DEPTH}")
        pipelines.append(list(view.get("pipeline") or []))
        name = view["viewOn"]
        view = definition(node, db, name)
    pipeline = [stage for p in reversed(pipelines) for stage in p]
    return name, pipeline
