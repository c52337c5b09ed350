"""BufBuilder's ceiling: a string an expression builds never passes 64 MiB.

The server builds `$concat`, `$replaceOne` and `$replaceAll` results in a StringBuilder,
whose buffer refuses to grow past BufferMaxSize (src/mongo/bson/util/builder.h,
`_growOutOfLineSlowPath`): error 13548 "BufBuilder attempted to grow() to N bytes, past
the 64MB limit.", N being the length the failing append needed.  `StringBuilderSize`
counts the UTF-8 bytes appended so far and raises at that append, before Python builds
anything, so a `$reduce` that doubles a string fails fast instead of exhausting memory.
"""

from __future__ import annotations

from mongosim.oplog.errors import MongoError

__all__ = ["BUFFER_MAX_SIZE", "StringBuilderSize"]

BUFFER_MAX_SIZE = 64 * 1024 * 1024


class StringBuilderSize:
    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0

    def append(self, s: str, times: int = 1) -> None:
        """Account for `times` appends of `s` (raises at the first one that passes the ceiling)."""
        if not s or times <= 0:
            return
        size = len(s) if s.isascii() else len(s.encode("utf-8", "surrogatepass"))
        if self.n + size * times > BUFFER_MAX_SIZE:
            k = (BUFFER_MAX_SIZE - self.n) // size + 1  # the first append that no longer fits
            raise MongoError(13548, f"BufBuilder attempted to grow() to {self.n + size * k} bytes, past the 64MB limit.")
        self.n += size * times
