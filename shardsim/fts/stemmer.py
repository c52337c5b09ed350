"""The stemmer (the server's Stemmer over libstemmer): a word reduced to its stem ("running" -> "run").

The server links Snowball's C library, libstemmer; `snowballstemmer` is the same Snowball
algorithms generated as pure Python.  Snowball 3 renamed the classic Dutch algorithm
(the one the server's libstemmer runs) `dutch_porter`, and gave `dutch` a new one: the
classic is used.  Language "none" does not stem.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable

import snowballstemmer

_ALGORITHM = {"dutch": "dutch_porter"}


@lru_cache(maxsize=None)
def stemmer(language: str) -> Callable[[str], str]:
    """`stem(word)` for a language's canonical name."""
    if language == "none":
        return lambda word: word
    name = _ALGORITHM.get(language, language)
    if name not in snowballstemmer.algorithms():
        name = language
    algorithm = snowballstemmer.stemmer(name)
    cache: dict[str, str] = {}

    def stem(word: str) -> str:
        out = cache.get(word)
        if out is None:
            out = algorithm.stemWord(word)
            if len(cache) < 65536:
                cache[word] = out
        return out

    return stem
