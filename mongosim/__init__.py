"""mongosim: a pure-Python emulator of a sharded MongoDB cluster, built for change streams.

`mongosim.Cluster`, `mongosim.ClusterOptions` and `mongosim.open_cluster` are imported on first use:
`import mongosim` alone (as pytest does when it loads the plugin in every test run) stays cheap.
"""

from typing import Any

__version__ = "0.1.0"
__all__ = ["Cluster", "ClusterOptions", "open_cluster", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "Cluster":
        from mongosim.cluster import Cluster

        return Cluster
    if name in ("ClusterOptions", "open_cluster"):
        import mongosim.core

        return getattr(mongosim.core, name)
    raise AttributeError(f"module 'mongosim' has no attribute {name!r}")
