"""mongosim: a pure-Python emulator of a sharded MongoDB cluster, built for change streams.

`mongosim.Cluster`, `mongosim.ClusterOptions` and `mongosim.open_cluster` are
loaded on first use, so importing one layer (say `mongosim.oplog`, as Spark's
workers do) does not import the whole cluster, and `import mongosim` alone (as
pytest does when it loads the plugin in every test run) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Cluster", "ClusterOptions", "open_cluster", "__version__"]

if TYPE_CHECKING:
    from mongosim.cluster import Cluster
    from mongosim.core import ClusterOptions, open_cluster

_LAZY = {"Cluster": "mongosim.cluster", "ClusterOptions": "mongosim.core", "open_cluster": "mongosim.core"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'mongosim' has no attribute {name!r}")
