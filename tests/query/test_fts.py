"""Text search: the tokenizer, the query parser and the scores against the server's rules, and `$text`
answers against a naive model (split on non-letters, lower case, drop Snowball's stop words, stem with
Snowball, any positive term and no negated one) on random documents."""

from __future__ import annotations

import re

import pytest
import snowballstemmer
from hypothesis import given
from hypothesis import strategies as st

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.canonical_query import CanonicalQuery
from mongosim.shardsim.catalog import Collection
from mongosim.shardsim.fts import fts_language
from mongosim.shardsim.fts.fts_query import parse
from mongosim.shardsim.fts.fts_spec import FTSSpec
from mongosim.shardsim.fts.fts_tokenizer import tokens
from mongosim.shardsim.fts.stop_words import stop_words
from mongosim.shardsim.get_executor import execute
from mongosim.shardsim.index_key_validate import validate_index_spec
from mongosim.shardsim.query.document_metadata import meta_of
from mongosim.shardsim.query.matcher import Matcher
from tests.query._settings import QUERY_SETTINGS

EN = fts_language.make("english")


def test_tokenizer_delimiters_case_and_diacritics():
    assert tokens(EN, "Don't STOP-believing, café!") == ["don't", "stop", "believ", "cafe"]
    assert tokens(EN, "the quick fox", filter_stop_words=True) == ["quick", "fox"]
    fr = fts_language.make("fr")
    assert tokens(fr, "l'élève") == ["l", "elev"]  # the apostrophe splits words outside English
    assert tokens(fr, "l'élève", diacritic_sensitive=True) == ["l", "élev"]
    tr = fts_language.make("turkish")
    assert tokens(tr, "IŞIK") == tokens(tr, "ışık")  # Turkish: I folds to dotless ı
    assert tokens(fts_language.make("none"), "The Running") == ["the", "running"]  # no stemming, no stop words
    assert tokens(EN, "snake_case a^b") == ["snake_cas", "a", "b"]  # _ joins words, ^ splits them


def test_languages_and_aliases():
    assert fts_language.make("EN").name == "english" and fts_language.make("nb").name == "norwegian"
    with pytest.raises(MongoError) as e:
        fts_language.make("latin")
    assert e.value.errmsg == 'unsupported language: "latin" for text index version 3'
    assert stop_words("romanian") == frozenset() and "the" in stop_words("english")


@pytest.mark.parametrize("search,terms,negated,phrases,negated_phrases", [
    ("coffee tea", ["coffe", "tea"], [], [], []),
    ("coffee -tea", ["coffe"], ["tea"], [], []),
    ("-foo-bar baz", ["baz"], ["bar", "foo"], [], []),
    ("coffee - tea", ["coffe", "tea"], [], [], []),
    ('"hot coffee" -"iced tea"', ["coffe", "hot"], [], ["hot coffee"], ["iced tea"]),
    ('a"b c"d', ["b", "c", "d"], [], ["b c"], []),
    ("the and", [], [], [], []),
])
def test_query_parsing(search, terms, negated, phrases, negated_phrases):
    q = parse(search, "english")
    assert (q.positive_terms, q.negated_terms, q.positive_phrases, q.negated_phrases) == \
        (terms, negated, phrases, negated_phrases)


def test_scores_weights_and_wildcard_quirk():
    spec = validate_index_spec({"key": {"title": "text", "body": "text"}, "weights": {"title": 3}})
    fts = FTSSpec(spec)
    # "run" alone is the whole string: 1.1 boost; "runs runs walk": run twice (freq 1.5), 3 terms
    assert fts.score_document({"title": "run"})["run"] == pytest.approx(3 * 1 * 1.0 * 1.1)
    assert fts.score_document({"body": "runs runs walk"})["run"] == pytest.approx(1.5 * (0.5 * 2 / 3 + 0.5))
    # under $** a field's weight is the first weight at or after its name (FTSElementIterator's lower_bound)
    wild = FTSSpec(validate_index_spec({"key": {"$**": "text"}, "weights": {"title": 5}}))
    assert wild.score_document({"body": "walk"})["walk"] == pytest.approx(5 * 1.1)
    assert wild.score_document({"zeta": "walk"})["walk"] == pytest.approx(1 * 1.1)
    # nested documents take their own language
    nested = FTSSpec(validate_index_spec({"key": {"t": "text", "s.t": "text"}}))
    got = nested.score_document({"t": "running", "s": {"language": "spanish", "t": "corriendo"}})
    assert set(got) == {"run", "corr"}


VOCAB = ["coffee", "Coffee", "coffees", "tea", "teas", "running", "runs", "run", "the", "and", "bread", "BREAD",
         "café", "cafe", "green", "greenery", "a", "is", "roasting", "roasted"]


def naive_terms(text: str) -> set[str]:
    stem = snowballstemmer.stemmer("english").stemWord
    words = [w.lower() for w in re.findall(r"[^\s,.;:!?\"()\-]+", text)]
    out = set()
    for w in words:
        if w in stop_words("english"):
            continue
        out.add(stem(w).replace("é", "e"))
    return out


sentences = st.lists(st.sampled_from(VOCAB), min_size=0, max_size=6).map(" ".join)


@QUERY_SETTINGS
@given(docs=st.lists(sentences, min_size=1, max_size=8),
       positive=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=3),
       negative=st.lists(st.sampled_from(VOCAB), max_size=2))
def test_text_answers_equal_a_naive_model(docs, positive, negative):
    coll = Collection("db", "c")
    coll.add_index(validate_index_spec({"key": {"body": "text"}, "name": "t"}))
    for i, body in enumerate(docs):
        coll.insert({"_id": i, "body": body})
    search = " ".join(positive + ["-" + n for n in negative])
    flt = {"$text": {"$search": search}}
    cq = CanonicalQuery("db.c", flt, Matcher(flt), projection={"s": {"$meta": "textScore"}})
    got, _sol, _ctx = execute(coll, cq)
    pos = set().union(*(naive_terms(p) for p in positive))
    neg = set().union(*(naive_terms(n) for n in negative)) if negative else set()
    expect = [i for i, body in enumerate(docs) if naive_terms(body) & pos and not naive_terms(body) & neg]
    assert sorted(d["_id"] for d in got) == expect
    for d in got:  # each score: the sum over the search's terms of the document's term scores
        body_terms = [t for t in tokens(EN, docs[d["_id"]], filter_stop_words=True)]
        total = 0.0
        for term in pos & set(body_terms):
            k = body_terms.count(term)
            total += sum(0.5 ** j for j in range(k)) * (0.5 * k / len(body_terms) + 0.5) * \
                (1.1 if docs[d["_id"]].lower() == term else 1.0)
        assert d["s"] == pytest.approx(total)


@QUERY_SETTINGS
@given(docs=st.lists(sentences, min_size=1, max_size=6), edits=st.lists(
    st.tuples(st.integers(0, 5), st.one_of(st.none(), sentences)), max_size=6), word=st.sampled_from(VOCAB))
def test_text_index_follows_writes(docs, edits, word):
    """After inserts, replacements and deletes the text index finds what a rebuilt one finds."""
    coll = Collection("db", "c")
    coll.add_index(validate_index_spec({"key": {"body": "text"}, "name": "t"}))
    for i, body in enumerate(docs):
        coll.insert({"_id": i, "body": body})
    flt = {"$text": {"$search": word}}
    execute(coll, CanonicalQuery("db.c", flt, Matcher(flt)))  # (materializes the index before the edits)
    for i, body in edits:
        old = coll.get(i)
        if old is None:
            if body is not None:
                coll.insert({"_id": i, "body": body})
        elif body is None:
            coll.delete(old)
        else:
            coll.replace(old, {"_id": i, "body": body})
    got = sorted(d["_id"] for d in execute(coll, CanonicalQuery("db.c", flt, Matcher(flt)))[0])
    fresh = Collection("db", "d")
    for d in coll.docs.values():
        fresh.insert(dict(d))
    fresh.add_index(validate_index_spec({"key": {"body": "text"}, "name": "t"}))
    assert got == sorted(d["_id"] for d in execute(fresh, CanonicalQuery("db.d", flt, Matcher(flt)))[0])
    assert all(meta_of(d) == {} for d in execute(fresh, CanonicalQuery("db.d", flt, Matcher(flt)))[0])
