"""The dependency graph of a database's views (the server's ViewGraph, views/view_graph.cpp).

A node is a namespace; a view's children are the namespaces it reads — its
`viewOn` and those its pipeline names (`$lookup`/`$graphLookup` `from`,
`$unionWith`, inside `$facet` and sub-pipelines too) — and a namespace's
parents are the views reading it.  Creating or modifying a view inserts its
node and validates what the new node brings, in the server's order:

1. its children, depth first: the start node met again is a cycle
   (GraphContainsCycle, "View cycle detected: db.a => db.a => db.b => db.a", the
   path printed from its end as the server's loop does); deeper than 20 is
   ViewDepthLimitExceeded; a child view of another collation is
   OptionNotSupportedOnView;
2. its parents, the same way (collation, depth);
3. the longest chain through the node (parents' height + children's height - 1)
   over 20 views: ViewDepthLimitExceeded "View depth limit exceeded; maximum
   depth is 20"; the pipelines along it over 16,000,000 bytes:
   ViewPipelineMaxSizeExceeded.

As in the server, a child already visited is skipped without counting its
height (`_validateChildren` continues before taking the maximum), and the
other views are put in the graph unvalidated.  Children are visited in the
order the view names them (the server keeps them in a hash set: its order
for a view naming several namespaces is arbitrary).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mongosim.oplog.errors import MongoError

__all__ = ["MAX_VIEW_DEPTH", "MAX_VIEW_PIPELINE_SIZE_BYTES", "ViewGraph"]

MAX_VIEW_DEPTH = 20
MAX_VIEW_PIPELINE_SIZE_BYTES = 16 * 1000 * 1000


@dataclass
class _Node:
    ns: str
    children: list[str] = field(default_factory=list)  # (a view's; none for a collection)
    parents: list[str] = field(default_factory=list)
    collation: dict | None = None  # a view's default collation (None: simple)
    size: int = 0  # the bytes of a view's pipeline

    def is_view(self) -> bool:
        return bool(self.children)


@dataclass
class _Stats:
    checked: bool = False
    height: int = 0
    size: int = 0


class ViewGraph:
    """The views of one database and what they read; `insert_and_validate` checks a new definition."""

    def __init__(self) -> None:
        self._nodes: dict[str, _Node] = {}

    def _node(self, ns: str) -> _Node:
        node = self._nodes.get(ns)
        if node is None:
            node = self._nodes[ns] = _Node(ns)
        return node

    def insert(self, view_ns: str, refs: list[str], size: int, collation: dict | None) -> None:
        """Add a view's node without validating it (the views already in the catalog)."""
        node = self._node(view_ns)
        node.size, node.collation = size, collation
        for ref in refs:
            if ref not in node.children:
                node.children.append(ref)
                self._node(ref).parents.append(view_ns)

    def insert_and_validate(self, view_ns: str, refs: list[str], size: int, collation: dict | None) -> None:
        """Add the created or modified view `view_ns` and raise the server's error if the graph is then invalid."""
        self.insert(view_ns, refs, size, collation)
        stats: dict[str, _Stats] = {}
        self._validate_children(view_ns, view_ns, 0, stats, [])
        children_height = stats[view_ns].height - 1  # (the children's height counts the leaf collections)
        children_size = stats[view_ns].size
        stats = {}
        self._validate_parents(view_ns, 0, stats)
        if stats[view_ns].height + children_height - 1 > MAX_VIEW_DEPTH:
            raise MongoError("ViewDepthLimitExceeded", f"View depth limit exceeded; maximum depth is {MAX_VIEW_DEPTH}")
        if stats[view_ns].size + children_size - self._nodes[view_ns].size > MAX_VIEW_PIPELINE_SIZE_BYTES:
            raise MongoError("ViewPipelineMaxSizeExceeded", "Operation would result in a resolved view pipeline "
                             f"that exceeds the maximum size of {MAX_VIEW_PIPELINE_SIZE_BYTES} bytes")

    def _validate_children(self, start: str, ns: str, depth: int, stats: dict[str, _Stats], path: list[str]) -> None:
        node = self._nodes[ns]
        path.append(ns)
        if depth > 0 and ns == start:
            trail = "".join(f" => {p}" for p in reversed(path))
            raise MongoError("GraphContainsCycle", f"View cycle detected: {path[-1]}{trail}")
        if depth > MAX_VIEW_DEPTH:
            raise MongoError("ViewDepthLimitExceeded", f"View depth limit exceeded; maximum depth is {MAX_VIEW_DEPTH}")
        height = size = 0
        for child in node.children:
            if stats.setdefault(child, _Stats()).checked:
                continue
            child_node = self._nodes[child]
            if child_node.is_view() and child_node.collation != node.collation:
                raise _collation_mismatch(ns, child)
            self._validate_children(start, child, depth + 1, stats, path)
            height = max(height, stats[child].height)
            size = max(size, stats[child].size)
        path.pop()
        mine = stats.setdefault(ns, _Stats())
        mine.checked, mine.height = True, height + 1
        mine.size += size + node.size

    def _validate_parents(self, ns: str, depth: int, stats: dict[str, _Stats]) -> None:
        node = self._nodes[ns]
        if depth > MAX_VIEW_DEPTH:
            raise MongoError("ViewDepthLimitExceeded", f"View depth limit exceeded; maximum depth is {MAX_VIEW_DEPTH}")
        height = size = 0
        for parent in node.parents:
            if self._nodes[parent].collation != node.collation:
                raise _collation_mismatch(ns, parent)
            if not stats.setdefault(parent, _Stats()).checked:
                self._validate_parents(parent, depth + 1, stats)
            height = max(height, stats[parent].height)
            size = max(size, stats[parent].size)
        mine = stats.setdefault(ns, _Stats())
        mine.checked, mine.height = True, height + 1
        mine.size += size + node.size
        if mine.size > MAX_VIEW_PIPELINE_SIZE_BYTES:
            raise MongoError("ViewPipelineMaxSizeExceeded", "View pipeline is too large and exceeds the maximum "
                             f"size of {MAX_VIEW_PIPELINE_SIZE_BYTES} bytes")


def _collation_mismatch(ns: str, other: str) -> MongoError:
    return MongoError("OptionNotSupportedOnView", f"View {ns} has a collation that does not match the collation "
                                                  f"of view {other}")
