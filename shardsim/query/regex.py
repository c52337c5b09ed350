"""Regular expressions of queries and expressions: BSON regex options to Python's `re`.

`$regex` (the matcher) and `$regexMatch`/`$regexFind` (expressions) share this:
the server accepts the option letters i, m, s, x and u (51108 otherwise) and
refuses a pattern PCRE cannot compile (51091).
"""

from __future__ import annotations

import re

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.values import regex_flags

_ALLOWED_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE, "u": 0}


def compile_regex(pattern: str, flags: str) -> re.Pattern:
    """Compile `pattern` with BSON option letters `flags`."""
    f = 0
    for ch in flags:
        if ch not in _ALLOWED_FLAGS:
            raise MongoError(51108, f"invalid flag in regex options: {ch}")
        f |= _ALLOWED_FLAGS[ch]
    try:
        return re.compile(pattern, f)
    except re.error as e:
        raise MongoError(51091, f"Regular expression is invalid: {e}") from None


def regex_from(v) -> tuple[re.Pattern, str, str]:
    """(compiled, pattern, flags) of a Regex / re.Pattern value."""
    pattern = v.pattern if isinstance(v.pattern, str) else v.pattern.decode()
    flags = regex_flags(v)
    return compile_regex(pattern, flags), pattern, flags
