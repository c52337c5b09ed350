"""`$text` through pymongo, both topologies (and a collection sharded over two shards): what a text search
finds, its scores (the server's formula, worked by hand below), its errors and its plan."""

from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure, WriteError

ARTICLES = [
    {"_id": 1, "title": "Coffee shop", "body": "The best coffee in town"},
    {"_id": 2, "title": "Tea house", "body": "Green tea and coffee cakes"},
    {"_id": 3, "title": "Bakery", "body": "Fresh bread every morning"},
    {"_id": 4, "title": "Coffee roasting", "body": "How to roast coffee beans at home"},
    {"_id": 5, "title": "Café crème", "body": "un café pour l'élève", "language": "french"},
    {"_id": 6, "title": "Running shoes", "body": "runners run while running"},
]


@pytest.fixture
def coll(client, request):
    db = client[f"tx_{request.node.name.split('[')[0][-24:]}"]
    client.drop_database(db.name)
    c = db.articles
    c.create_index([("title", "text"), ("body", "text")], weights={"title": 10}, name="text")
    c.insert_many([dict(d) for d in ARTICLES])
    return c


def ids(cursor) -> list:
    return sorted(d["_id"] for d in cursor)


def test_terms_are_or_ed_stemmed_and_case_and_diacritic_insensitive(coll):
    assert ids(coll.find({"$text": {"$search": "coffee"}})) == [1, 2, 4]
    assert ids(coll.find({"$text": {"$search": "COFFEE bread"}})) == [1, 2, 3, 4]
    assert ids(coll.find({"$text": {"$search": "runs"}})) == [6]  # run, runs, running: one stem
    assert ids(coll.find({"$text": {"$search": "cafe"}})) == []  # (searched in English: "cafe", indexed "caf")
    assert ids(coll.find({"$text": {"$search": "cafe", "$language": "fr"}})) == [5]  # the diacritic dropped
    assert ids(coll.find({"$text": {"$search": "the and"}})) == []  # stop words only


def test_negations_and_phrases(coll):
    assert ids(coll.find({"$text": {"$search": "coffee -cakes"}})) == [1, 4]
    assert ids(coll.find({"$text": {"$search": '"coffee shop"'}})) == [1]
    assert ids(coll.find({"$text": {"$search": 'coffee -"coffee beans"'}})) == [1, 2]
    assert ids(coll.find({"$text": {"$search": "-coffee"}})) == []  # a negation alone finds nothing


def test_case_and_diacritic_sensitive_searches(coll):
    assert ids(coll.find({"$text": {"$search": "Coffee", "$caseSensitive": True}})) == [1, 4]
    q = {"$language": "french", "$diacriticSensitive": True}
    assert ids(coll.find({"$text": {"$search": "eleve", **q}})) == []
    assert ids(coll.find({"$text": {"$search": "élève", **q}})) == [5]
    assert ids(coll.find({"$text": {"$search": "eleve", "$language": "french"}})) == [5]


def test_scores_follow_the_servers_formula(coll):
    got = {d["_id"]: d["score"] for d in coll.find({"$text": {"$search": "coffee"}}, {"score": {"$meta": "textScore"}})}
    # title "Coffee shop": 2 terms, coffee once -> 10 * 1 * (0.5 * 1/2 + 0.5) = 7.5; body "The best coffee in
    # town" (the, in: stop words): 3 terms -> 1 * (0.5 * 1/3 + 0.5) = 2/3
    assert got[1] == pytest.approx(7.5 + 2 / 3)
    # "Tea house" has no coffee; "Green tea and coffee cakes": 4 terms -> 0.625
    assert got[2] == pytest.approx(0.625)
    # "How to roast coffee beans at home" (how, to, at: stop words): roast, coffe, bean, home -> 0.625
    assert got[4] == pytest.approx(7.5 + 0.625)
    ranked = [d["_id"] for d in coll.find({"$text": {"$search": "coffee"}}).sort({"s": {"$meta": "textScore"}})]
    assert ranked == [1, 4, 2]


def test_text_with_other_predicates_count_and_aggregate(coll):
    assert ids(coll.find({"$text": {"$search": "coffee"}, "_id": {"$gt": 1}})) == [2, 4]
    assert ids(coll.find({"$and": [{"_id": {"$lt": 4}}, {"$text": {"$search": "coffee"}}]})) == [1, 2]
    assert coll.count_documents({"$text": {"$search": "coffee bread"}}) == 4
    out = list(coll.aggregate([{"$match": {"$text": {"$search": "coffee"}}},
                               {"$project": {"s": {"$meta": "textScore"}}},
                               {"$sort": {"s": -1}}]))
    assert [d["_id"] for d in out] == [1, 4, 2] and out[2]["s"] == pytest.approx(0.625)
    out = list(coll.aggregate([{"$match": {"$text": {"$search": "coffee"}}},
                               {"$sort": {"score": {"$meta": "textScore"}}}, {"$limit": 1}]))
    assert [d["_id"] for d in out] == [1]


def test_updates_and_deletes_with_text(coll):
    r = coll.update_many({"$text": {"$search": "coffee"}}, {"$set": {"hot": True}})
    assert r.matched_count == 3
    assert coll.delete_many({"$text": {"$search": "bread"}}).deleted_count == 1
    assert ids(coll.find({"hot": True})) == [1, 2, 4]


def test_index_follows_writes(coll):
    coll.insert_one({"_id": 7, "title": "Espresso", "body": "strong coffee"})
    coll.update_one({"_id": 3}, {"$set": {"body": "coffee and bread"}})
    coll.delete_one({"_id": 1})
    assert ids(coll.find({"$text": {"$search": "coffee"}})) == [2, 3, 4, 7]


def test_errors(coll):
    db = coll.database
    db.plain.insert_one({"a": "coffee"})
    with pytest.raises(OperationFailure) as e:
        list(db.plain.find({"$text": {"$search": "coffee"}}))
    assert e.value.code == 27 and e.value.details["errmsg"] == "text index required for $text query"
    cases = [
        ({"$text": {"$search": 1}}, 14, '"$search" had the wrong type. Expected string, found int'),
        ({"$text": {}}, 4, 'Missing expected field "$search"'),
        ({"$text": {"$search": "a", "$foo": 1}}, 2, "extra fields in $text"),
        ({"$text": {"$search": "a", "$caseSensitive": 1}}, 14,
         '"$caseSensitive" had the wrong type. Expected bool, found int'),
        ({"$text": {"$search": "a", "$language": "klingon"}}, 2, 'unsupported language: "klingon" for text index version 3'),
        ({"$text": "coffee"}, 2, "$text expects an object"),
        ({"$nor": [{"$text": {"$search": "a"}}]}, 2, "text expression not allowed in nor"),
        ({"$and": [{"$text": {"$search": "a"}}, {"$text": {"$search": "b"}}]}, 2, "Too many text expressions"),
    ]
    for flt, code, msg in cases:
        with pytest.raises(OperationFailure) as e:
            list(coll.find(flt))
        assert (e.value.code, e.value.details["errmsg"]) == (code, msg), flt
    with pytest.raises(OperationFailure) as e:
        list(coll.find({}, {"s": {"$meta": "textScore"}}))
    assert e.value.code == 40218
    with pytest.raises(OperationFailure) as e:
        list(coll.aggregate([{"$match": {"_id": 1}}, {"$match": {"$text": {"$search": "coffee"}}}]))
    assert e.value.code == 17313
    # a second text index: on the same key pattern ({_fts: "text", _ftsx: 1}) the weights do not name an
    # index, so it is an equivalent one; on another (a compound text index) there can be only one
    with pytest.raises(OperationFailure) as e:
        coll.create_index([("other", "text")])
    assert e.value.code == 85 and e.value.details["errmsg"].startswith(
        'An equivalent index already exists with a different name and options. Requested index: { v: 2, key: '
        '{ _fts: "text", _ftsx: 1 }, name: "other_text", weights: { other: 1 }')
    with pytest.raises(OperationFailure) as e:
        coll.create_index([("k", 1), ("other", "text")])
    assert e.value.code == 67 and e.value.details["errmsg"] == \
        'only one text index per collection allowed, found existing text index "text"'


def test_language_override_is_checked_on_insert(coll):
    with pytest.raises(WriteError) as e:
        coll.insert_one({"_id": 10, "title": "x", "language": "klingon"})
    assert e.value.code == 17262 and e.value.details["errmsg"] == "language override unsupported: klingon"
    with pytest.raises(WriteError) as e:
        coll.insert_one({"_id": 11, "title": "x", "language": 5})
    assert e.value.code == 17261


def test_compound_text_index_needs_its_prefix(coll):
    db = coll.database
    db.shops.create_index([("city", 1), ("name", "text")])
    db.shops.insert_many([{"_id": 1, "city": "Oslo", "name": "coffee bar"}, {"_id": 2, "city": "Rome", "name": "coffee"}])
    assert ids(db.shops.find({"city": "Rome", "$text": {"$search": "coffee"}})) == [2]
    with pytest.raises(OperationFailure) as e:
        list(db.shops.find({"$text": {"$search": "coffee"}}))
    assert "failed to use text index to satisfy $text query" in e.value.details["errmsg"]


def test_explain_shows_the_text_plan(coll):
    plan = coll.find({"$text": {"$search": "coffee tea"}}, {"s": {"$meta": "textScore"}}).explain()
    wp = plan["queryPlanner"]["winningPlan"]
    wp = wp["shards"][0]["winningPlan"] if "shards" in wp else wp
    names = []
    node = wp
    while node:
        names.append(node["stage"])
        node = node.get("inputStage") or (node.get("inputStages") or [None])[0]
    assert names[-3:] == ["TEXT_MATCH", "TEXT_OR", "IXSCAN"]
    match = wp
    while match["stage"] != "TEXT_MATCH":
        match = match["inputStage"]
    assert match["parsedTextQuery"] == {"terms": ["coffe", "tea"], "negatedTerms": [], "phrases": [],
                                        "negatedPhrases": []}
    assert match["indexName"] == "text" and match["textIndexVersion"] == 3
    scans = match["inputStage"]["inputStages"]
    assert len(scans) == 2 and scans[0]["direction"] == "backward" and scans[0]["indexBounds"] == {}
    plan = coll.find({"$text": {"$search": "coffee"}}).explain()
    wp = plan["queryPlanner"]["winningPlan"]
    wp = wp["shards"][0]["winningPlan"] if "shards" in wp else wp
    assert wp["stage"] == "TEXT_MATCH" and wp["inputStage"]["stage"] == "FETCH"  # (no score wanted)
    assert wp["inputStage"]["inputStage"]["stage"] == "OR"


def test_sharded_collection_merges_scores(sharded_client):
    db = sharded_client.tx_sharded
    sharded_client.drop_database(db.name)
    sharded_client.admin.command("enableSharding", db.name)
    sharded_client.admin.command("shardCollection", f"{db.name}.a", key={"_id": 1})
    sharded_client.admin.command("split", f"{db.name}.a", middle={"_id": 50})
    shards = [s["_id"] for s in sharded_client.admin.command("listShards")["shards"]]
    sharded_client.admin.command("moveChunk", f"{db.name}.a", find={"_id": 60}, to=shards[1])
    coll = db.a
    coll.create_index([("body", "text")])
    docs = [{"_id": i, "body": " ".join(["coffee"] * (i % 4 + 1) + ["tea"] * (i % 3))} for i in range(100)]
    coll.insert_many(docs)
    got = list(coll.find({"$text": {"$search": "coffee"}}, {"s": {"$meta": "textScore"}})
               .sort({"s": {"$meta": "textScore"}, "_id": 1}).limit(10))
    scores = [d["s"] for d in got]
    assert scores == sorted(scores, reverse=True) and {d["_id"] for d in got} & set(range(50, 100))
    everything = list(coll.find({"$text": {"$search": "coffee"}}, {"s": {"$meta": "textScore"}}))
    best = sorted(everything, key=lambda d: (-d["s"], d["_id"]))[:10]
    assert got == best
    agg = list(coll.aggregate([{"$match": {"$text": {"$search": "tea"}}}, {"$addFields": {"s": {"$meta": "textScore"}}},
                               {"$sort": {"s": -1, "_id": 1}}, {"$limit": 3}]))
    assert [d["_id"] for d in agg] == [d["_id"] for d in sorted(
        (d for d in everything if d["_id"] % 3), key=lambda d: (-_tea_score(d["_id"]), d["_id"]))[:3]]


def _tea_score(i: int) -> float:
    coffee, tea = i % 4 + 1, i % 3
    n = coffee + tea
    freq = sum(1 / 2 ** k for k in range(tea))
    return freq * (0.5 * tea / n + 0.5)
