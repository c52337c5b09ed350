"""CLDR tailorings: ICU's rule syntax, the rules applied on the root order, and their properties.

* the parser reads what CLDR's rules use (quotes, escapes, `<*` lists and ranges, `[before N]`,
  expansions, prefixes, settings);
* every locale MongoDB accepts builds, and the attributes its rules set are the defaults the
  collator factory gives it (`locales.py`);
* orderings and equalities of ICU 57's tailorings (the ones the CLDR charts and the ICU
  documentation show);
* properties (hypothesis): the tailored comparison is a total order, the one its keys give,
  weaker strengths never separate what stronger ones join; and a tailoring leaves the order
  of strings made only of characters its rules do not mention as the root orders them.
"""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongosim.shardsim.query.collation import make_collator
from mongosim.shardsim.query.collation.locales import LOCALES, locale_defaults
from mongosim.shardsim.query.collation.tailored_collation import TailoredCollation, table_for
from mongosim.shardsim.query.collation.tailoring_rules import (
    IDENTICAL,
    Relation,
    Reset,
    RuleSyntaxError,
    Setting,
    parse,
    parse_set,
)
from mongosim.shardsim.query.collation.tailorings import TAILORED_LOCALES, rules_of
from tests.query._settings import QUERY_SETTINGS


def _order(locale: str, words: list[str], **options) -> list[str]:
    return sorted(words, key=make_collator({"locale": locale, **options}).comparison_key)


# -- the rule syntax ------------------------------------------------------------------------------

def test_parser_reads_resets_relations_and_settings():
    assert parse("[caseFirst upper]&D<<đ<<<Đ&t<<<þ/h&[before 1]ǀ<å") == [
        Setting("caseFirst", "upper"), Reset("D"), Relation(2, "đ"), Relation(3, "Đ"), Reset("t"),
        Relation(3, "þ", extension="h"), Reset("ǀ", before=1), Relation(1, "å")]
    assert parse("&S<ş=ș &a<<b|c") == [Reset("S"), Relation(1, "ş"), Relation(IDENTICAL, "ș"), Reset("a"),
                                       Relation(2, "c", prefix="b")]
    assert parse("&'='<'≠'&Q<<ĸ<<<K''&x<\\u0022") == [
        Reset("="), Relation(1, "≠"), Reset("Q"), Relation(2, "ĸ"), Relation(3, "K'"), Reset("x"), Relation(1, '"')]
    assert parse("&A<*'\u0020'-'\"'<*xyz") == [Reset("A"), Relation(1, " "), Relation(1, "!"), Relation(1, '"'),
                                              Relation(1, "x"), Relation(1, "y"), Relation(1, "z")]
    assert parse("&[last primary ignorable]<<׳&[before 2]''<<a") == [
        Reset("", special="last primary ignorable"), Relation(2, "׳"), Reset("'", before=2), Relation(2, "a")]
    assert parse("[reorder Latn Cyrl][backwards 2][normalization on][import de-u-co-phonebk]") == [
        Setting("reorder", ("Latn", "Cyrl")), Setting("backwards", 2), Setting("normalization", True),
        Setting("import", "de-u-co-phonebk")]
    assert parse("&\\u0300=\\u0307\\u0300") == [Reset("\u0300"), Relation(IDENTICAL, "\u0307\u0300")]


def test_parser_sets_and_errors():
    assert parse_set("[Ии]") == {"И", "и"}
    assert parse("&\u00A0<<\u200C") == [Reset("\u00A0"), Relation(2, "\u200C")]  # a no-break space is no space
    assert parse_set("[a-c x \\u0300]") == {"a", "b", "c", "x", "\u0300"}
    for bad in ("<a", "&a<", "[bogus 1]", "&a ~ b"):
        with pytest.raises(RuleSyntaxError):
            parse(bad)


# -- the locales ------------------------------------------------------------------------------------

def test_every_accepted_locale_builds():
    for locale in LOCALES:
        assert table_for(locale) is not None
    assert {"sv", "tr", "es", "de", "cs", "da", "en_US_POSIX", "vi", "hr", "ru"} <= TAILORED_LOCALES


@pytest.mark.parametrize("locale", sorted(LOCALES))
def test_the_attributes_the_rules_set_are_the_locales_defaults(locale):
    base, _, keyword = locale.partition("@collation=")
    rules = rules_of(base, keyword or None)
    settings = TailoredCollation(rules).settings if rules else {}
    defaults = locale_defaults(locale)
    assert defaults["caseFirst"] == settings.get("caseFirst", "off")
    assert defaults["backwards"] == (settings.get("backwards") == 2)
    assert defaults["alternate"] == settings.get("alternate", "non-ignorable")


def test_locales_without_rules_of_their_own_take_their_parents_or_the_roots():
    assert rules_of("de_AT", None) == rules_of("root") == ""
    assert rules_of("de_AT", "phonebook") != rules_of("de", "phonebook")
    assert rules_of("sr_Latn") == "[import hr]" and rules_of("nn") == "[import nb-u-co-standard]"
    assert table_for("en") is table_for("en_US") is table_for("fr")


@pytest.mark.parametrize("locale, words", [
    ("sv", ["a", "z", "å", "Å", "ä", "Ä", "ö", "Ö"]),
    ("sv", ["v", "w", "x"]),
    ("sv@collation=search", ["v", "V", "w", "W", "x"]),
    ("fi", ["y", "ü", "z", "å", "ä", "æ", "ö", "ø"]),
    ("da", ["z", "Æ", "æ", "Ø", "ø", "Å", "AA", "Aa", "å", "aa"]),
    ("es", ["n", "nz", "ñ", "Ñ", "o"]),
    ("es@collation=traditional", ["c", "cz", "ch", "d", "l", "lz", "ll", "m"]),
    ("tr", ["h", "ı", "I", "i", "İ", "j"]),
    ("az", ["h", "x", "ı", "I", "i", "İ", "j", "k", "q"]),
    ("cs", ["c", "č", "d", "h", "ch", "cH", "Ch", "CH", "i", "r", "ř", "s"]),
    ("hu", ["c", "cz", "cs", "ccs", "d", "dz", "dzz", "dzs", "o", "ö", "ő", "p"]),
    ("hr", ["c", "č", "ć", "d", "dž", "đ", "e", "l", "lj", "m", "n", "nj", "o"]),
    ("lt", ["h", "i", "į", "y", "j"]),
    ("lv", ["c", "č", "d", "g", "ģ", "h"]),
    ("et", ["s", "š", "z", "ž", "t", "w", "õ", "ä", "ö", "ü", "x"]),
    ("is", ["a", "á", "b", "d", "ð", "e", "z", "þ", "æ", "ö", "å"]),
    ("pl", ["l", "ł", "m", "z", "ź", "ż"]),
    ("ro", ["a", "ă", "â", "b", "s", "ș", "t", "ț", "u"]),
    ("vi", ["a", "à", "ả", "ã", "á", "ạ", "ă", "â", "b"]),
    ("en_US_POSIX", [" ", "!", "0", "9", "@", "A", "Z", "[", "_", "`", "a", "z", "{", "~"]),
    ("uk", ["г", "ґ", "д", "і", "ї", "й"]),
    ("ru", ["я", "a"]),
    ("el", ["ω", "a"]),
    ("mt", ["b", "Ċ", "ċ", "c", "g", "għ", "h", "ħ", "i"]),
    ("cy", ["c", "ch", "d", "dd", "e", "g", "ng", "h"]),
    ("ur", ["ا", "آ", "ب", "بھ", "پ"]),
    ("fa", ["آ", "ا", "ء", "ب"]),
    ("yi", ["ב", "בֿ", "ג", "כּ", "כ"]),
    ("ug", ["ا", "ە", "ب"]),
    ("th", ["\u0E44", "\u0E3A"]),
    ("hi", ["\u0950", "\u0902", "\u0901", "\u0903", "क", "a"]),
])
def test_tailored_orders(locale, words):
    assert _order(locale, words[::-1]) == words
    assert _order(locale, sorted(words)) == words


@pytest.mark.parametrize("locale, strength, equal, different", [
    ("tr", 1, [("I", "ı"), ("İ", "i")], [("I", "i"), ("ı", "i")]),
    ("de@collation=phonebook", 1, [("ä", "ae"), ("Ö", "oe"), ("Müller", "MUELLER")], [("ä", "a")]),
    ("de@collation=phonebook", 2, [("Ä", "ä")], [("ä", "ae")]),
    ("de", 1, [("ä", "a")], [("ä", "ae")]),
    ("da", 3, [], [("aa", "å"), ("aa", "AA")]),
    ("ro", 3, [("ș", "ş"), ("Ț", "Ţ")], [("s", "ș")]),
    ("es", 1, [("ñ", "Ñ")], [("ñ", "n")]),
    ("sv@collation=search", 1, [("v", "w")], []),
    ("sv", 1, [], [("v", "w")]),
    ("en", 1, [("ñ", "n"), ("å", "a"), ("İ", "i")], [("ı", "i")]),
    ("ca@collation=search", 3, [("ŀ", "l·")], []),
])
def test_tailored_equalities(locale, strength, equal, different):
    c = make_collator({"locale": locale, "strength": strength})
    for a, b in equal:
        assert c.compare(a, b) == 0, (a, b)
    for a, b in different:
        assert c.compare(a, b) != 0, (a, b)


def test_danish_aa_sorts_as_a_ring():
    assert _order("da", ["aa", "å", "z"], caseFirst="off") == ["z", "å", "aa"]
    assert make_collator({"locale": "da", "strength": 1, "caseFirst": "off"}).compare("aa", "Å") == 0
    assert _order("en", ["aa", "å", "z"]) == ["å", "aa", "z"]


def test_contractions_match_through_other_accents():
    # ñ with a dot below: NFD puts the dot first; the contraction n + tilde still matches (discontiguous)
    es = make_collator({"locale": "es", "strength": 1})
    assert es.compare("n\u0323\u0303", "ñ") == 0
    assert es.compare("ñ", "n") != 0
    cs = make_collator({"locale": "cs"})
    assert cs.compare("chata", "hrad") > 0 and cs.compare("chata", "i") < 0


def test_numeric_ordering_and_shifted_work_on_a_tailored_table():
    assert _order("sv", ["å10", "å9", "z2"], numericOrdering=True) == ["z2", "å9", "å10"]
    sv = make_collator({"locale": "sv", "alternate": "shifted"})
    assert sv.compare("å-ö", "åö") == 0 and sv.compare("å ö", "zz") > 0


def test_case_bits_of_tailored_letters():
    # "Ch" and "cH" are mixed case (ICU's setCaseBits): between the upper and the lower, in the rules' order
    assert _order("cs", ["Ch", "ch", "CH", "cH"], caseFirst="upper") == ["CH", "cH", "Ch", "ch"]
    assert _order("cs", ["Ch", "ch", "CH", "cH"], caseFirst="lower") == ["ch", "cH", "Ch", "CH"]
    cl = make_collator({"locale": "tr", "strength": 1, "caseLevel": True})
    assert cl.compare("ı", "I") != 0 and cl.compare("ı", "i") != 0


# -- properties -------------------------------------------------------------------------------------

_LATIN = "aAbBcCdDeEgGhHiIlLnNoOsStTuUyYzZ"
_TAILORED = "åäöæøñçğıİşüčšžřłőűďťě"
_MARKS = "\u0300\u0301\u0303\u0308\u030a\u0323"
_CHARS = st.sampled_from(list(_LATIN + _TAILORED + _MARKS + " -'09"))
_WORDS = st.text(_CHARS, max_size=6)
_SAMPLE_LOCALES = sorted(loc for loc in LOCALES if rules_of(*loc.split("@collation=")))


@QUERY_SETTINGS
@given(a=_WORDS, b=_WORDS, c=_WORDS, locale=st.sampled_from(_SAMPLE_LOCALES),
       options=st.fixed_dictionaries({}, optional={"numericOrdering": st.booleans(),
                                                   "alternate": st.sampled_from(["non-ignorable", "shifted"])}))
def test_a_tailored_comparison_is_a_total_order_its_keys_give(a, b, c, locale, options):
    verdicts = {}
    for strength in range(1, 6):
        spec = {"locale": locale, **options, "strength": strength}
        if locale_defaults(locale)["caseFirst"] != "off" and strength <= 2:
            spec["caseFirst"] = "off"
        if locale_defaults(locale)["backwards"] and strength == 1:
            spec["backwards"] = False
        coll = make_collator(spec)
        ka, kb, kc = (coll.comparison_key(x) for x in (a, b, c))
        verdicts[strength] = coll.compare(a, b)
        assert verdicts[strength] == (ka > kb) - (ka < kb) == -coll.compare(b, a)
        if ka <= kb <= kc:
            assert coll.compare(a, c) <= 0
    for strength, verdict in verdicts.items():
        if verdict == 0:
            assert all(verdicts[weaker] == 0 for weaker in verdicts if weaker < strength)
        else:
            assert all(verdicts[stronger] == verdict for stronger in verdicts if stronger > strength)


def _mentioned(locale: str) -> set[str]:
    """Every character the rules of `locale` (and what they import) name, in NFD."""
    base, _, keyword = locale.partition("@collation=")
    out: set[str] = set()
    pending = [rules_of(base, keyword or None)]
    while pending:
        for instr in parse(pending.pop()):
            if isinstance(instr, Setting) and instr.name == "import":
                target, _, kind = instr.value.partition("-u-co-")
                target = "root" if target == "und" else target
                kind = {"phonebk": "phonebook", "trad": "traditional"}.get(kind, kind)
                pending.append(rules_of(target, kind or None))
            elif isinstance(instr, Setting) and instr.name == "suppressContractions":
                out.update(instr.value)
            elif isinstance(instr, (Reset, Relation)):
                text = instr.text + (instr.extension if isinstance(instr, Relation) else "")
                out.update(unicodedata.normalize("NFD", text))
    return out


@QUERY_SETTINGS
@given(a=_WORDS, b=_WORDS, locale=st.sampled_from(_SAMPLE_LOCALES), strength=st.integers(1, 3))
def test_a_tailoring_keeps_the_root_order_of_what_it_does_not_mention(a, b, locale, strength):
    mentioned = _mentioned(locale)
    if set(unicodedata.normalize("NFD", a + b)) & mentioned:
        return
    spec = {"locale": locale, "strength": strength}
    if locale_defaults(locale)["caseFirst"] != "off" or locale_defaults(locale)["backwards"]:
        spec.update(caseFirst="off", backwards=False)  # the same attributes on both sides
    if locale_defaults(locale)["alternate"] == "shifted":
        spec["alternate"] = "shifted"
    root_spec = {**spec, "locale": "en"}
    assert make_collator(spec).compare(a, b) == make_collator(root_spec).compare(a, b)
