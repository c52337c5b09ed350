"""Text search languages (the server's FTSLanguage): the names and two-letter aliases a text index,
a `$text` query or a document's language field may use.

Text index version 3 knows "none" and fifteen languages (danish "da", dutch "nl", english
"en", finnish "fi", french "fr", german "de", hungarian "hu", italian "it", norwegian "nb",
portuguese "pt", romanian "ro", russian "ru", spanish "es", swedish "sv", turkish "tr");
names are matched without regard to ASCII case.  A language brings its stop words, its
stemmer and two tokenizer rules: the apostrophe is a word character in English, and
Turkish folds "I" to dotless "ı".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.fts.stemmer import stemmer
from mongosim.shardsim.fts.stop_words import stop_words

TEXT_INDEX_VERSION = 3
LANGUAGES = {"danish": "da", "dutch": "nl", "english": "en", "finnish": "fi", "french": "fr", "german": "de",
             "hungarian": "hu", "italian": "it", "norwegian": "nb", "portuguese": "pt", "romanian": "ro",
             "russian": "ru", "spanish": "es", "swedish": "sv", "turkish": "tr"}
_BY_NAME = {"none": "none", **{n: n for n in LANGUAGES}, **{a: n for n, a in LANGUAGES.items()}}


@dataclass(frozen=True)
class FTSLanguage:
    name: str  # the canonical name ("english")
    english: bool = field(init=False)
    turkish: bool = field(init=False)
    stop_words: frozenset = field(init=False, repr=False, compare=False)
    stem: Callable[[str], str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "english", self.name == "english")
        object.__setattr__(self, "turkish", self.name == "turkish")
        object.__setattr__(self, "stop_words", stop_words(self.name))
        object.__setattr__(self, "stem", stemmer(self.name))


_CACHE: dict[str, FTSLanguage] = {}


def lookup(name: str) -> FTSLanguage | None:
    """The language a name or alias stands for (ASCII case ignored), None if unknown."""
    canonical = _BY_NAME.get(name.lower() if name.isascii() else _ascii_lower(name))
    if canonical is None:
        return None
    lang = _CACHE.get(canonical)
    if lang is None:
        lang = _CACHE[canonical] = FTSLanguage(canonical)
    return lang


def make(name: str, version: int = TEXT_INDEX_VERSION) -> FTSLanguage:
    """FTSLanguage::make: the language, or BadValue naming it."""
    lang = lookup(name)
    if lang is None:
        raise MongoError("BadValue", f'unsupported language: "{name}" for text index version {version}')
    return lang


def _ascii_lower(s: str) -> str:
    return "".join(c.lower() if c.isascii() else c for c in s)
