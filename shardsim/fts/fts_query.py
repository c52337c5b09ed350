"""A `$text` search string, parsed (the server's FTSQueryImpl and FTSQueryParser).

The string is split on spaces and line breaks into words, `-` and `"`:

* `"a phrase"` is a phrase (its words are also search terms);
* `-word` (a `-` after white space, before the word) negates the word, until the next
  white space: `-foo-bar` negates both; `-"a phrase"` negates the phrase, whose words are
  then not search terms; a `-` inside a word or a phrase is a word break.

The positive and negated words are then tokenized in the query's language (stop words
filtered, stemmed).  `terms_for_bounds` are the positive terms as the index holds them
(lower case, no diacritics): the documents holding any of them are the candidates, their
scores summed.  The matcher's terms are the same unless the search is case or diacritic
sensitive, when they keep case or diacritics.  Terms are kept sorted, as the server's sets.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mongosim.shardsim.fts import fts_language
from mongosim.shardsim.fts.fts_language import FTSLanguage
from mongosim.shardsim.fts.fts_tokenizer import tokens

_WHITESPACE = frozenset("\n\v\f\r ")
_DELIMITERS = frozenset('-"')


@dataclass
class FTSQuery:
    query: str
    language: FTSLanguage
    case_sensitive: bool = False
    diacritic_sensitive: bool = False
    positive_terms: list[str] = field(default_factory=list)
    negated_terms: list[str] = field(default_factory=list)
    positive_phrases: list[str] = field(default_factory=list)
    negated_phrases: list[str] = field(default_factory=list)
    terms_for_bounds: list[str] = field(default_factory=list)

    def to_bson(self) -> dict:
        """explain's `parsedTextQuery`."""
        return {"terms": list(self.positive_terms), "negatedTerms": list(self.negated_terms),
                "phrases": list(self.positive_phrases), "negatedPhrases": list(self.negated_phrases)}


def _query_tokens(s: str):
    """FTSQueryParser: (kind, text, offset, preceded by white space) with kind "text" or "delim"."""
    n = len(s)
    pos = 0
    while pos < n and s[pos] in _WHITESPACE:
        pos += 1
    previous_ws = True
    while pos < n:
        start = pos
        c = s[pos]
        pos += 1
        if c in _DELIMITERS:
            kind = "delim"
        else:
            kind = "text"
            while pos < n and s[pos] not in _WHITESPACE and s[pos] not in _DELIMITERS:
                pos += 1
        token = s[start:pos]
        ws_start = pos
        while pos < n and s[pos] in _WHITESPACE:
            pos += 1
        yield kind, token, start, previous_ws
        previous_ws = pos > ws_start


def parse(query: str, language: str, case_sensitive: bool = False, diacritic_sensitive: bool = False,
          version: int = fts_language.TEXT_INDEX_VERSION) -> FTSQuery:
    """FTSQueryImpl::parse."""
    lang = fts_language.make(language, version)
    positive: list[str] = []
    negative: list[str] = []
    phrases: list[str] = []
    negated_phrases: list[str] = []
    in_negation = in_phrase = False
    quote = 0
    for kind, text, offset, previous_ws in _query_tokens(query):
        if kind == "text":
            if in_phrase and in_negation:
                continue
            if in_negation and previous_ws:
                in_negation = False
            (negative if in_negation else positive).append(text)
        elif text == "-":
            if not in_phrase and previous_ws:
                in_negation = True
        else:  # '"'
            if in_phrase:
                phrase = query[quote + 1:offset]
                (negated_phrases if in_negation else phrases).append(phrase)
                in_phrase = False
            else:
                in_phrase = True
                if in_negation and previous_ws:
                    in_negation = False
                quote = offset
    out = FTSQuery(query, lang, case_sensitive, diacritic_sensitive, positive_phrases=phrases,
                   negated_phrases=negated_phrases)
    bounds: set[str] = set()
    for words, target, negated in ((positive, set(), False), (negative, set(), True)):
        sentence = " ".join(words)
        for term in tokens(lang, sentence, filter_stop_words=True):
            if not negated:
                bounds.add(term)
            target.add(term)
        if case_sensitive or diacritic_sensitive:
            target = set(tokens(lang, sentence, filter_stop_words=True, case_sensitive=case_sensitive,
                                diacritic_sensitive=diacritic_sensitive))
        if negated:
            out.negated_terms = sorted(target)
        else:
            out.positive_terms = sorted(target)
    out.terms_for_bounds = sorted(bounds)
    return out
