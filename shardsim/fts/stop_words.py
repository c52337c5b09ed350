"""Stop words (the server's StopWords): the words of a language a text index neither indexes nor
searches for ("the", "and", ...).

A word is a stop word if its lower-cased form (diacritics kept) is in the language's list.
The lists are the Snowball project's (`stop_words/<language>.txt`, BSD-3-Clause; see each
file). The server ships its own files, which for English are exactly Snowball's and for
some other languages add words (French adds "bon", "début", ...); Romanian has no list
on the server and none here; Turkish has one on the server and none here (Snowball
publishes none).
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=None)
def stop_words(language: str) -> frozenset[str]:
    """The stop words of a language's canonical name (empty for "none" and languages without a list)."""
    try:
        text = resources.files(__package__).joinpath("stop_words", f"{language}.txt").read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return frozenset()
    return frozenset(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))
