"""The text tokenizer (the server's UnicodeFTSTokenizer, text index version 3): a string to its terms.

Words are the runs between delimiters (`unicode_string.words`).  Each word is lower-cased
(diacritics kept) and, when stop words are filtered, dropped if it is one; then - from
the original word when the tokens are to be case sensitive - it is stemmed (the stemmer
sees diacritics), and its diacritics are removed unless the tokens are to be diacritic
sensitive.  Indexing and a query's terms filter stop words; the matcher does not.
"""

from __future__ import annotations

from mongosim.shardsim.fts.fts_language import FTSLanguage
from mongosim.shardsim.fts.unicode_string import strip_diacritics, to_lower, words


def tokens(language: FTSLanguage, text: str, *, filter_stop_words: bool = False, case_sensitive: bool = False,
           diacritic_sensitive: bool = False) -> list[str]:
    """The terms of `text` in order (repeats kept)."""
    stop = language.stop_words if filter_stop_words else ()
    stem = language.stem
    turkish = language.turkish
    out = []
    for word in words(text, language.english):
        lower = to_lower(word, turkish)
        if stop and lower in stop:
            continue
        term = stem(word if case_sensitive else lower)
        if not diacritic_sensitive:
            term = strip_diacritics(term)
        out.append(term)
    return out
