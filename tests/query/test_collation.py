"""The collators (shardsim/query/collation/): against the reference UCA, and ICU's rules.

* Property: for text of non-variable characters (letters, marks, digits) the root
  collation at tertiary strength orders strings exactly as pyuca's own UCA sort keys
  (DUCET 8.0.0) do — the regrouping of variable characters is the only change made to it.
* Properties: a weaker strength never tells apart what a stronger one calls equal;
  numericOrdering orders digit runs as numbers; strength 1 and 2 ignore case.
* The factory: normalised documents with each locale's defaults, and the simple path
  costs nothing (`sort_key_for(None)` is `values.sort_key` itself).
"""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyuca.collator import Collator_8_0_0

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.collation import (
    compare_for,
    hashable_for,
    make_collator,
    sort_key_for,
)
from mongosim.shardsim.query.collation.root_collation import root
from mongosim.shardsim.query.matcher import Matcher
from mongosim.shardsim.query.sorting import sort_key_fn
from mongosim.shardsim.query.values import hashable, sort_key
from tests.query._settings import QUERY_SETTINGS

_PYUCA = Collator_8_0_0()


def _non_variable(ch: str) -> bool:
    variable = root()._remap
    return all(p not in variable for p, _s, _t in _PYUCA.collation_elements(unicodedata.normalize("NFD", ch)))


LETTERS = st.characters(categories=["Lu", "Ll", "Lt", "Mn", "Nd"], max_codepoint=0x2FFF).filter(_non_variable)
WORDS = st.text(LETTERS, max_size=6)
ANY_TEXT = st.text(st.characters(max_codepoint=0x2FFF, exclude_categories=["Cs"]), max_size=6)
OPTIONS = st.fixed_dictionaries({}, optional={
    "caseLevel": st.booleans(), "numericOrdering": st.booleans(),
    "alternate": st.sampled_from(["non-ignorable", "shifted"]), "maxVariable": st.sampled_from(["punct", "space"]),
    "caseFirst": st.sampled_from(["off", "upper", "lower"])})


def _sign(x) -> int:
    return (x > 0) - (x < 0)


@QUERY_SETTINGS
@given(a=WORDS, b=WORDS)
def test_root_collation_orders_as_the_reference_uca(a, b):
    ours = make_collator({"locale": "en"}).compare(a, b)
    ka, kb = _PYUCA.sort_key(a), _PYUCA.sort_key(b)
    assert ours == (ka > kb) - (ka < kb)


@QUERY_SETTINGS
@given(a=ANY_TEXT, b=ANY_TEXT, options=OPTIONS)
def test_weaker_strengths_never_separate_what_stronger_ones_join(a, b, options):
    verdicts = {}
    for strength in range(1, 6):
        spec = {"locale": "en", **options, "strength": strength}
        if spec.get("caseFirst", "off") != "off" and not spec.get("caseLevel") and strength <= 2:
            continue  # (refused: caseFirst needs the tertiary or the case level)
        c = make_collator(spec)
        verdicts[strength] = c.compare(a, b)
        assert verdicts[strength] == -c.compare(b, a)
        assert (verdicts[strength] == 0) == (c.comparison_key(a) == c.comparison_key(b))
    for strength, verdict in verdicts.items():
        if verdict == 0:
            assert all(verdicts[weaker] == 0 for weaker in verdicts if weaker < strength)
        elif not options.get("caseLevel"):  # the first level that differs decides (the case level, which
            # strength 1 already compares, stands after the secondary one of strength 2)
            assert all(verdicts[stronger] == verdict for stronger in verdicts if stronger > strength)


@QUERY_SETTINGS
@given(a=st.integers(0, 10**30), b=st.integers(0, 10**30), zeros=st.integers(0, 3), prefix=st.sampled_from(["", "v", "ä-"]))
def test_numeric_ordering_compares_digit_runs_as_numbers(a, b, zeros, prefix):
    c = make_collator({"locale": "en", "numericOrdering": True})
    assert c.compare(prefix + "0" * zeros + str(a), prefix + str(b)) == _sign(a - b)


@QUERY_SETTINGS
@given(s=st.text(st.characters(min_codepoint=0x41, max_codepoint=0x7A).filter(str.isalpha), max_size=8))
def test_strength_one_and_two_ignore_case(s):
    for strength in (1, 2):
        c = make_collator({"locale": "en", "strength": strength})
        assert c.comparison_key(s) == c.comparison_key(s.swapcase())
    if s != s.swapcase():
        assert make_collator({"locale": "en"}).compare(s, s.swapcase()) != 0


def test_case_level_stands_after_the_accents():
    one = make_collator({"locale": "en", "strength": 1, "caseLevel": True})
    two = make_collator({"locale": "en", "strength": 2, "caseLevel": True})
    assert one.compare("á", "A") == -1 and two.compare("á", "A") == 1


def test_icu_cases():
    """Cases the server's collation jstests and ICU's documentation use."""
    en = make_collator({"locale": "en"})
    assert sorted(["b", "A", "a", "B", "á"], key=en.comparison_key) == ["a", "A", "á", "b", "B"]
    assert make_collator({"locale": "en", "strength": 1}).compare("resume", "Résumé") == 0
    assert make_collator({"locale": "en", "strength": 2}).compare("resume", "Résumé") == -1
    assert make_collator({"locale": "en", "strength": 2}).compare("RESUME", "resume") == 0
    upper = make_collator({"locale": "en", "caseFirst": "upper"})
    assert sorted(["a", "A", "b", "B"], key=upper.comparison_key) == ["A", "a", "B", "b"]
    lower = make_collator({"locale": "en", "caseFirst": "lower"})
    assert sorted(["a", "A", "b", "B"], key=lower.comparison_key) == ["a", "A", "b", "B"]
    case_level = make_collator({"locale": "en", "strength": 1, "caseLevel": True})
    assert case_level.compare("role", "rôle") == 0 and case_level.compare("role", "Role") == -1
    numeric = make_collator({"locale": "en", "numericOrdering": True})
    assert sorted(["10", "9", "-2", "1.5", "1.10"], key=numeric.comparison_key) == ["-2", "1.5", "1.10", "9", "10"]
    shifted = make_collator({"locale": "en", "alternate": "shifted"})
    assert shifted.compare("black-bird", "blackbird") == 0 and shifted.compare("black bird", "Blackbird") == -1
    ident = make_collator({"locale": "en", "strength": 5})
    assert ident.compare("a", "a") == 0 and ident.compare("\u212b", "\u00c5") == 0  # canonically equivalent
    assert make_collator({"locale": "en", "strength": 3}).compare("\u0041\u030a", "\u00c5") == 0
    # ICU's root order of ASCII punctuation and symbols: spaces, punctuation, symbols, currency, digits
    order = sorted(" _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$09aA", key=en.comparison_key)
    assert "".join(order) == " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$09aA"


def test_factory_normalises_with_each_locales_defaults():
    assert make_collator({"locale": "simple"}) is None
    fr_ca = make_collator({"locale": "fr_CA"}).spec
    assert list(fr_ca) == ["locale", "caseLevel", "caseFirst", "strength", "numericOrdering", "alternate",
                           "maxVariable", "normalization", "backwards", "version"]
    assert fr_ca["backwards"] is True and fr_ca["version"] == "57.1"
    assert make_collator({"locale": "da"}).spec["caseFirst"] == "upper"
    assert make_collator({"locale": "th"}).spec["alternate"] == "shifted"
    assert make_collator({"locale": "en", "strength": 2.0}).spec["strength"] == 2
    assert make_collator({"locale": "en"}) is make_collator({"locale": "en", "strength": 3})  # one cached collator
    with pytest.raises(MongoError) as err:
        make_collator({"locale": "en", "caseFirst": "upper", "strength": 1})
    assert err.value.code == 2


def test_simple_collation_uses_the_plain_bson_order():
    assert sort_key_for(None) is sort_key
    assert hashable_for(None) is hashable
    c = make_collator({"locale": "en", "strength": 2})
    assert compare_for(c)({"a": ["X"]}, {"a": ["x"]}) == 0
    assert compare_for(c)("a", 1) == 1  # types keep their canonical order
    assert hashable_for(c)(["Ab"]) == hashable_for(c)(["aB"]) != hashable_for(c)(["áb"])


def test_matcher_and_sort_follow_the_collation():
    c = make_collator({"locale": "en", "strength": 1})
    m = Matcher({"name": {"$in": ["JOSE"]}}, collator=c)
    assert m.matches({"name": "José"}) and not Matcher({"name": {"$in": ["JOSE"]}}).matches({"name": "José"})
    docs = [{"n": "b"}, {"n": "A"}, {"n": "a"}]
    assert [d["n"] for d in sorted(docs, key=sort_key_fn({"n": 1}, make_collator({"locale": "en"})))] == ["a", "A", "b"]
    assert [d["n"] for d in sorted(docs, key=sort_key_fn({"n": 1}))] == ["A", "a", "b"]
