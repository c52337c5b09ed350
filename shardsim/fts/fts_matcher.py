"""Whether a document satisfies a `$text` search (the server's FTSMatcher).

A document matches when one of its indexed strings holds a positive term (checked only
for case or diacritic sensitive searches: otherwise the index found it through one), none
holds a negated term, every phrase occurs in one of its strings and no negated phrase
does.  Terms are compared after tokenizing the strings without dropping stop words; a
phrase is a substring match after case folding and diacritic removal (unless the search
is sensitive to them; Turkish always folds case).
"""

from __future__ import annotations

from mongosim.shardsim.fts.fts_query import FTSQuery
from mongosim.shardsim.fts.fts_spec import FTSSpec
from mongosim.shardsim.fts.fts_tokenizer import tokens
from mongosim.shardsim.fts.unicode_string import substr_match


class FTSMatcher:
    def __init__(self, query: FTSQuery, spec: FTSSpec) -> None:
        self.query = query
        self.spec = spec
        self._positive = frozenset(query.positive_terms)
        self._negated = frozenset(query.negated_terms)

    def _tokens(self, text: str, lang) -> list[str]:
        q = self.query
        return tokens(lang, text, case_sensitive=q.case_sensitive, diacritic_sensitive=q.diacritic_sensitive)

    def can_skip_positive_term_check(self) -> bool:
        return not self.query.case_sensitive and not self.query.diacritic_sensitive

    def has_positive_term(self, doc: dict) -> bool:
        return any(not self._positive.isdisjoint(self._tokens(text, lang)) for text, lang, _w in self.spec.strings(doc))

    def has_negative_term(self, doc: dict) -> bool:
        if not self._negated:
            return False
        return any(not self._negated.isdisjoint(self._tokens(text, lang)) for text, lang, _w in self.spec.strings(doc))

    def _phrase_match(self, phrase: str, doc: dict) -> bool:
        q = self.query
        return any(substr_match(text, phrase, q.case_sensitive, q.diacritic_sensitive, lang.turkish)
                   for text, lang, _w in self.spec.strings(doc))

    def matches(self, doc: dict, *, found_by_index: bool = True) -> bool:
        if not (found_by_index and self.can_skip_positive_term_check()) and not self.has_positive_term(doc):
            return False
        if self.has_negative_term(doc):
            return False
        if not all(self._phrase_match(p, doc) for p in self.query.positive_phrases):
            return False
        return not any(self._phrase_match(p, doc) for p in self.query.negated_phrases)
