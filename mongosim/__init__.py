"""mongosim: a pure-Python emulator of a sharded MongoDB cluster, built for change streams."""

from mongosim.cluster import Cluster  # noqa: F401
from mongosim.core import ClusterOptions, open_cluster  # noqa: F401

__version__ = "0.1.0"
