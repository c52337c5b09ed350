"""Locale tailorings through pymongo, in both topologies: the orders and equalities of CLDR's rules.

Each case is what MongoDB 8.0 (ICU 57) answers for the locale: Swedish å ä ö after z, Spanish
ñ after n, Turkish dotless ı before i (and I/ı, İ/i equal at strength 1), German phonebook
ä = ae at strength 1, Czech ch after h, Danish aa as å, ...  on sort, equality, `$group`,
`distinct`, unique indexes, collection default collations and indexes with the collation;
sharded, the documents live on two shards (the router merges under the collation).
"""

from __future__ import annotations

import pytest
from pymongo.errors import DuplicateKeyError

from tests.crud.conftest import shard_two_ways


def _load(client, words, sharded: bool = False):
    c = client.loc_db.words
    if sharded and client.topology_name == "sharded":
        shard_two_ways(client, "loc_db.words", key="_id", split=len(words) // 2)
    c.insert_many([{"_id": i, "w": w} for i, w in enumerate(words)])
    return c


def _sorted(c, collation, direction=1):
    return [d["w"] for d in c.find({}, sort=[("w", direction), ("_id", 1)], collation=collation)]


@pytest.mark.parametrize("locale, words, expected", [
    ("sv", ["ö", "z", "å", "a", "ä", "o"], ["a", "o", "z", "å", "ä", "ö"]),
    ("fi", ["ö", "z", "å", "ä", "y", "ü"], ["y", "ü", "z", "å", "ä", "ö"]),
    ("da", ["å", "z", "æ", "ø", "aa", "b"], ["b", "z", "æ", "ø", "å", "aa"]),
    ("nb", ["å", "z", "æ", "ø"], ["z", "æ", "ø", "å"]),
    ("es", ["o", "ñ", "n", "nz"], ["n", "nz", "ñ", "o"]),
    ("es@collation=traditional", ["d", "ch", "cz", "ll", "lz", "m"], ["cz", "ch", "d", "lz", "ll", "m"]),
    ("tr", ["j", "i", "ı", "h"], ["h", "ı", "i", "j"]),
    ("cs", ["i", "ch", "h", "c", "č", "d"], ["c", "č", "d", "h", "ch", "i"]),
    ("sk", ["b", "ä", "a", "ô", "o", "p"], ["a", "ä", "b", "o", "ô", "p"]),
    ("pl", ["m", "ł", "l", "ż", "ź", "z"], ["l", "ł", "m", "z", "ź", "ż"]),
    ("hu", ["d", "cz", "cs", "c"], ["c", "cz", "cs", "d"]),
    ("hr", ["e", "đ", "dž", "d", "lj", "m", "l"], ["d", "dž", "đ", "e", "l", "lj", "m"]),
    ("lt", ["j", "y", "i", "k"], ["i", "y", "j", "k"]),
    ("lv", ["d", "č", "c"], ["c", "č", "d"]),
    ("et", ["t", "z", "s", "š"], ["s", "š", "z", "t"]),
    ("is", ["b", "á", "a", "ð", "d", "e"], ["a", "á", "b", "d", "ð", "e"]),
    ("ro", ["b", "â", "ă", "a"], ["a", "ă", "â", "b"]),
    ("vi", ["b", "â", "ă", "a"], ["a", "ă", "â", "b"]),
    ("cy", ["d", "dd", "e", "ch", "c"], ["c", "ch", "d", "dd", "e"]),
    ("en_US_POSIX", ["a", "B", "A", "b", "_"], ["A", "B", "_", "a", "b"]),
    ("ru", ["zebra", "яблоко", "apple", "банан"], ["банан", "яблоко", "apple", "zebra"]),
    ("en", ["zebra", "яблоко", "apple", "банан", "ñ", "o", "å", "z"], ["å", "apple", "ñ", "o", "z", "zebra", "банан", "яблоко"]),
])
def test_each_locale_sorts_in_its_alphabets_order(client, locale, words, expected):
    c = _load(client, words, sharded=True)
    assert _sorted(c, {"locale": locale}) == expected
    assert _sorted(c, {"locale": locale}, -1) == expected[::-1]
    assert [d["w"] for d in c.aggregate([{"$sort": {"w": 1, "_id": 1}}], collation={"locale": locale})] == expected


def test_turkish_dotted_and_dotless_i(client):
    c = _load(client, ["I", "ı", "İ", "i"], sharded=True)
    tr1 = {"locale": "tr", "strength": 1}
    assert sorted(d["w"] for d in c.find({"w": "ı"}, collation=tr1)) == ["I", "ı"]
    assert sorted(d["w"] for d in c.find({"w": "i"}, collation=tr1)) == ["i", "İ"]
    en1 = {"locale": "en", "strength": 1}
    assert sorted(d["w"] for d in c.find({"w": "i"}, collation=en1)) == ["I", "i", "İ"]  # root: ı differs
    assert _sorted(c, {"locale": "tr"}) == ["ı", "I", "i", "İ"]
    assert c.count_documents({"w": {"$lt": "i"}}, collation=tr1) == 2


def test_german_phonebook_reads_umlauts_as_their_e_spellings(client):
    c = _load(client, ["Müller", "Mueller", "Muller", "Mükller", "Mufler"], sharded=True)
    book1 = {"locale": "de@collation=phonebook", "strength": 1}
    assert sorted(d["w"] for d in c.find({"w": "mueller"}, collation=book1)) == ["Mueller", "Müller"]
    assert sorted(d["w"] for d in c.find({"w": "mueller"}, collation={"locale": "de", "strength": 1})) == ["Mueller"]
    # ü weighs as "ue": "Mük" < "Mue" = "Mü"
    assert _sorted(c, {"locale": "de@collation=phonebook"}) == ["Mükller", "Mueller", "Müller", "Mufler", "Muller"]
    assert _sorted(c, {"locale": "de"}) == ["Mueller", "Mufler", "Mükller", "Muller", "Müller"]
    # Austrian phonebook: ü is a letter of its own after u
    assert _sorted(c, {"locale": "de_AT@collation=phonebook"}) == ["Mueller", "Mufler", "Muller", "Mükller", "Müller"]


def test_danish_aa_is_a_and_upper_case_first(client):
    c = _load(client, ["aa", "Å", "å", "AA", "z"])
    da1 = {"locale": "da", "strength": 1, "caseFirst": "off"}  # (da's caseFirst upper needs strength 3)
    assert sorted(d["w"] for d in c.find({"w": "å"}, collation=da1)) == ["AA", "aa", "Å", "å"]
    assert _sorted(c, {"locale": "da"}) == ["z", "Å", "AA", "å", "aa"]  # caseFirst upper is da's default
    assert _sorted(c, {"locale": "nb"}) == ["z", "å", "Å", "aa", "AA"]


def test_group_and_distinct_use_the_tailored_equality(client):
    c = _load(client, ["Müller", "Mueller", "muller", "MÜLLER"], sharded=True)
    book1 = {"locale": "de@collation=phonebook", "strength": 1}
    groups = list(c.aggregate([{"$group": {"_id": "$w", "n": {"$sum": 1}}}], collation=book1))
    assert sorted(g["n"] for g in groups) == [1, 3]
    assert len(c.distinct("w", collation=book1)) == 2
    assert len(c.distinct("w", collation={"locale": "de", "strength": 1})) == 2  # root: ü is u
    assert sorted(d["w"] for d in c.find({"w": "MUELLER"}, collation={"locale": "de", "strength": 1})) == ["Mueller"]


def test_a_unique_index_refuses_what_the_locale_calls_equal(client):
    c = client.loc_db.names
    c.create_index("name", unique=True, collation={"locale": "tr", "strength": 1})
    c.insert_one({"_id": 1, "name": "Isparta"})
    with pytest.raises(DuplicateKeyError):
        c.insert_one({"_id": 2, "name": "ısparta"})
    c.insert_one({"_id": 3, "name": "isparta"})  # dotted i is another letter in Turkish
    with pytest.raises(DuplicateKeyError):
        c.insert_one({"_id": 4, "name": "İSPARTA"})


def test_a_collection_default_collation_and_its_index_keep_the_order(client):
    db = client.loc_db
    db.create_collection("sv", collation={"locale": "sv"})
    db.sv.create_index("w")
    db.sv.insert_many([{"_id": i, "w": w} for i, w in enumerate(["ö", "z", "å", "ä", "a"])])
    assert [d["w"] for d in db.sv.find({}, sort=[("w", 1)])] == ["a", "z", "å", "ä", "ö"]
    assert [d["w"] for d in db.sv.find({"w": {"$gt": "z"}}, sort=[("w", 1)])] == ["å", "ä", "ö"]
    assert [d["w"] for d in db.sv.find({"w": {"$gt": "z"}}, sort=[("w", 1)], hint="w_1")] == ["å", "ä", "ö"]
    info = next(db.list_collections(filter={"name": "sv"}))
    assert info["options"]["collation"]["locale"] == "sv"


def test_comparison_expressions_follow_the_locale(client):
    c = _load(client, ["ñ"])
    [doc] = c.aggregate([{"$project": {"_id": 0, "lt": {"$lt": ["$w", "o"]}, "gt": {"$gt": ["$w", "nz"]},
                                       "min": {"$min": [["$w", "nz", "o"]]}}}], collation={"locale": "es"})
    assert doc == {"lt": True, "gt": True, "min": "nz"}
    [doc] = c.aggregate([{"$project": {"_id": 0, "gt": {"$gt": ["$w", "nz"]}}}], collation={"locale": "en"})
    assert doc == {"gt": False}
