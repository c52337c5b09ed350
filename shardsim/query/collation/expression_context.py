"""The collator of the expression being compiled (the server's ExpressionContext::getCollator).

A command's collation reaches everything compiled for it — the filter's leaf tests, `$expr`
and aggregation expressions, nested `$elemMatch` — without each compile function taking it
as an argument: the command compiles its filter or pipeline `with compiling(collator):`,
and the leaf compilers read `current()` once, when they build their closures.  Nothing is
read while documents are tested, so the simple collation (None) costs nothing at run time.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

__all__ = ["current", "compiling"]

_COLLATOR: ContextVar = ContextVar("collator", default=None)


def current():
    """The collator compiling code must honour (None: the simple collation)."""
    return _COLLATOR.get()


@contextmanager
def compiling(collator) -> Iterator[None]:
    token = _COLLATOR.set(collator)
    try:
        yield
    finally:
        _COLLATOR.reset(token)
