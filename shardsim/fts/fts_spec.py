"""A text index's specification at work (the server's FTSSpec, FTSElementIterator, FTSIndexFormat):
which strings of a document it indexes, in which language, and each term's score.

**Which strings.**  The `weights` name the indexed paths (`$**`: every string of the
document).  The document is walked field by field (arrays are entered once: an array in
an array is skipped, but under `$**`); a string is indexed when its dotted path is a
weight exactly (or under `$**`), a sub-document entered when its path is a prefix of one.
The weight looked up is the first weight not below the path, in name order - under `$**`
even when it is not a match (the server's lower_bound, kept as it is).

**Which language.**  The index's `default_language`, replaced inside any (sub-)document
whose `language_override` field (default "language") holds a language name; that field
must then be a string naming a known language (17261, 17262 at insert).

**Scores** (FTSSpec::_scoreStringV2).  For each indexed string: its terms (stop words
filtered, stemmed); for a term met `count` times among `n` terms, with the k-th
occurrence adding 1/2^(k-1) to `freq`:

    score += weight * freq * (0.5 * count / n + 0.5) * (1.1 if the term is the whole string, else 1)

summed over the document's strings.  The index holds one key per distinct term:
`(prefix fields..., term, score, suffix fields...)`.
"""

from __future__ import annotations

import bisect
from typing import Any, Iterator

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.fts import fts_language
from mongosim.shardsim.fts.fts_language import FTSLanguage
from mongosim.shardsim.fts.fts_tokenizer import tokens
from mongosim.shardsim.query.fmt import bson_str
from mongosim.shardsim.query.values import MISSING

WILDCARD = "$**"
DEFAULT_WEIGHT = 1.0


class FTSSpec:
    """A text index spec as stored by createIndexes (`fix_text_spec`)."""

    def __init__(self, spec: dict) -> None:
        self.spec = spec
        self.version = int(spec.get("textIndexVersion", 3))
        self.default_language = fts_language.make(str(spec.get("default_language", "english")), self.version)
        self.language_override = str(spec.get("language_override", "language"))
        weights = spec.get("weights") or {}
        self.wildcard = WILDCARD in weights
        self.weights = {k: float(v) for k, v in sorted(weights.items()) if k != WILDCARD}
        self._names = list(self.weights)
        before, after, passed = [], [], False
        for f in spec["key"]:
            if f in ("_fts", "_ftsx"):
                passed = True
            elif passed:
                after.append(f)
            else:
                before.append(f)
        self.extra_before, self.extra_after = before, after

    # -- the strings of a document ----------------------------------------------------------
    def language_of(self, obj: dict, current: FTSLanguage) -> FTSLanguage:
        """_getLanguageToUseV2: the language a (sub-)document's override field names, else `current`."""
        v = obj.get(self.language_override, MISSING) if type(obj) is dict else MISSING
        if v is MISSING:
            return current
        if type(v) is not str:
            raise MongoError(17261, "found language override field in document with non-string type")
        lang = fts_language.lookup(v)
        if lang is None:
            raise MongoError(17262, f"language override unsupported: {v}")
        return lang

    def strings(self, doc: dict) -> Iterator[tuple[str, FTSLanguage, float]]:
        """FTSElementIterator: (text, language, weight) of every indexed string, in document order."""
        names = self._names
        wildcard = self.wildcard
        stack: list[tuple[Iterator, FTSLanguage, str, bool]] = [
            (iter(doc.items()), self.language_of(doc, self.default_language), "", False)]
        while stack:
            it, lang, parent, is_array = stack[-1]
            item = next(it, None)
            if item is None:
                stack.pop()
                continue
            name, value = item
            if wildcard and name == self.language_override:
                continue
            dotted = name if not parent else (parent if is_array else f"{parent}.{name}")
            t = type(value)
            i = bisect.bisect_left(names, dotted + "." if t is dict else dotted)
            possible = i < len(names)
            if not wildcard:
                if not possible:
                    continue
                w = names[i]
                if not (w == dotted or w.startswith(dotted + ".")):
                    continue
            exact = possible and names[i] == dotted
            weight = self.weights[names[i]] if possible else DEFAULT_WEIGHT
            if t is str:
                if exact or wildcard:
                    yield value, lang, weight
            elif t is dict:
                if not exact or wildcard:
                    stack.append((iter(value.items()), self.language_of(value, lang), dotted, False))
            elif t is list:
                if not is_array or wildcard:
                    stack.append((iter((str(k), v) for k, v in enumerate(value)), lang, dotted, True))

    # -- scores ------------------------------------------------------------------------------
    def score_document(self, doc: dict) -> dict[str, float]:
        """FTSSpec::scoreDocument: term -> score."""
        scores: dict[str, float] = {}
        for text, lang, weight in self.strings(doc):
            _score_string(lang, text, weight, scores)
        return scores

    def index_keys(self, doc: dict) -> list[tuple]:
        """FTSIndexFormat::getKeys: one key per term, with the prefix and suffix fields' values."""
        before = [_plain(doc, p) for p in self.extra_before]
        after = [_plain(doc, p) for p in self.extra_after]
        return [(*before, term, score, *after) for term, score in self.score_document(doc).items()]


def _score_string(lang: FTSLanguage, raw: str, weight: float, scores: dict[str, float]) -> None:
    terms: dict[str, list] = {}  # term -> [exp, count, freq]
    n = 0
    for term in tokens(lang, raw, filter_stop_words=True):
        data = terms.get(term)
        if data is None:
            data = terms[term] = [1.0, 0, 0.0]
        else:
            data[0] *= 2
        data[1] += 1
        data[2] += 1 / data[0]
        n += 1
    for term in sorted(terms):
        _exp, count, freq = terms[term]
        coeff = 0.5 * count / n + 0.5
        adjustment = 1.1 if len(raw.encode()) == len(term.encode()) and raw.lower() == term.lower() else 1.0
        scores[term] = scores.get(term, 0.0) + weight * freq * coeff * adjustment


def _plain(doc: dict, path: str) -> Any:
    """The value of a text index's non-text field (extractNonFTSKeyElement: no array along its path)."""
    cur: Any = doc
    for part in path.split("."):
        if type(cur) is not dict:
            cur = MISSING
            break
        cur = cur.get(part, MISSING)
        if type(cur) is list:
            raise MongoError("CannotBuildIndexKeys", f"Field '{path}' of text index contains an array in document: "
                                                     f"{bson_str(doc)}")
    return None if cur is MISSING else cur
