"""The executors' MongoClients: one per connection string in a Spark Python worker, shared by its tasks.

A Python worker runs one task after another (`spark.python.worker.reuse`, on by default), and
each task gets a fresh copy of the reader.  With a client of its own, every task would connect,
handshake, start pymongo's monitor thread, read its part of the micro-batch and close it all again:
in shards mode that is one client per shard per batch.  So on an executor (while a task runs:
`TaskContext.get()`), a reader takes its worker's client from here and leaves it open when it is
done, as the MongoDB Spark connector's executors keep theirs in a client cache.  Elsewhere (the
driver's planning, tests) a reader keeps a client of its own and closes it (`stop()`).

The clients belong to the process that opened them: after a fork the child opens its own (pymongo
clients are not fork-safe).  At most MAX_CLIENTS connection strings are kept; the least recently
used one's client is closed to make room.  (An OrderedDict rather than `functools.lru_cache`: an
evicted client must be closed.)
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Any, Callable

MAX_CLIENTS = 4  # connection strings whose clients a worker keeps open

_lock = threading.Lock()
_clients: OrderedDict[str, Any] = OrderedDict()
_pid = os.getpid()


def on_executor() -> bool:
    """Whether this code runs in a Spark task (a Python worker on an executor)."""
    from pyspark import TaskContext

    return TaskContext.get() is not None


def shared_client(uri: str, open_client: Callable[[], Any]) -> Any:
    """This process's client for `uri`, opened with `open_client()` the first time."""
    global _pid
    with _lock:
        if _pid != os.getpid():  # forked: the clients are the parent's
            _clients.clear()
            _pid = os.getpid()
        client = _clients.pop(uri, None)
        if client is None:
            client = open_client()
        _clients[uri] = client  # (the most recently used last)
        while len(_clients) > MAX_CLIENTS:
            _uri, old = _clients.popitem(last=False)
            old.close()
        return client


def close_all() -> None:
    """Close and forget every shared client (tests; a worker's clients otherwise live as long as it)."""
    with _lock:
        while _clients:
            _uri, client = _clients.popitem()
            client.close()
